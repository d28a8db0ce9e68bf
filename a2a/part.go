package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// PartKind says which member of a Part's content is set.
type PartKind uint8

// Part kinds, one per member of the 1.0 Part.content oneof.
const (
	PartText PartKind = iota + 1
	PartRaw
	PartURL
	PartData
)

func (k PartKind) String() string {
	switch k {
	case PartText:
		return "text"
	case PartRaw:
		return "raw"
	case PartURL:
		return "url"
	case PartData:
		return "data"
	}
	return "unknown"
}

// Part is one piece of content: text, raw bytes, a URL or structured data.
// Exactly one of Text, Raw, URL, Data is meaningful, as told by Kind.
type Part struct {
	Kind      PartKind
	Text      string
	Raw       []byte
	URL       string
	Data      json.RawMessage
	Filename  string
	MediaType string
	Metadata  Metadata
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: PartText, Text: s} }

// DataPart returns a structured-data part holding v marshalled to JSON.
// It panics only if v cannot be marshalled, which is a programming error.
func DataPart(v any) Part {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("a2a.DataPart: %v", err))
	}
	return Part{Kind: PartData, Data: b, MediaType: "application/json"}
}

// ErrInvalidPart is returned when a part carries no or several contents.
var ErrInvalidPart = errors.New("part must carry exactly one of text, raw, url, data")

// partV1 is the 1.0 ProtoJSON shape of a Part.
type partV1 struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  Metadata        `json:"metadata,omitempty"`
}

// MarshalJSON encodes p in the 1.0 ProtoJSON shape.
func (p Part) MarshalJSON() ([]byte, error) {
	if p.Kind == PartData {
		return p.marshalReflect()
	}
	// Every part the mesh stores, sends and answers with goes through
	// here: append it directly, as encoding/json would encode partV1
	// (HTML-escaped strings, fields in order, empty ones left out).
	buf := make([]byte, 0, 48+len(p.Text)+len(p.URL)+len(p.Filename)+len(p.MediaType)+len(p.Raw)*4/3)
	buf = append(buf, '{')
	switch p.Kind {
	case PartText:
		buf = append(buf, `"text":`...)
		buf = appendJSONString(buf, p.Text)
	case PartRaw:
		buf = append(buf, `"raw":"`...) // base64 needs no escaping
		buf = base64.StdEncoding.AppendEncode(buf, p.Raw)
		buf = append(buf, '"')
	case PartURL:
		buf = append(buf, `"url":`...)
		buf = appendJSONString(buf, p.URL)
	default:
		return nil, ErrInvalidPart
	}
	if p.Filename != "" {
		buf = append(buf, `,"filename":`...)
		buf = appendJSONString(buf, p.Filename)
	}
	if p.MediaType != "" {
		buf = append(buf, `,"mediaType":`...)
		buf = appendJSONString(buf, p.MediaType)
	}
	if len(p.Metadata) > 0 {
		md, err := json.Marshal(p.Metadata)
		if err != nil {
			return nil, err
		}
		buf = append(buf, `,"metadata":`...)
		buf = append(buf, md...)
	}
	return append(buf, '}'), nil
}

// appendJSONString appends s quoted as json.Marshal quotes it.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // escapes, and the HTML and line separators json.Marshal escapes
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// marshalReflect encodes p through partV1 and encoding/json.
func (p Part) marshalReflect() ([]byte, error) {
	w := partV1{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
	switch p.Kind {
	case PartText:
		w.Text = &p.Text
	case PartRaw:
		s := base64.StdEncoding.EncodeToString(p.Raw)
		w.Raw = &s
	case PartURL:
		w.URL = &p.URL
	case PartData:
		w.Data = p.Data
		if len(w.Data) == 0 {
			w.Data = json.RawMessage("null")
		}
	default:
		return nil, ErrInvalidPart
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts the 1.0 shape and, leniently, the 0.3 shape
// (kind/type discriminator, file object, bytes_data), so a part stored or
// received in either form decodes to the same value.
func (p *Part) UnmarshalJSON(b []byte) error {
	if decodePartFast(b, p) {
		return nil
	}
	var probe struct {
		Kind *string `json:"kind"`
		Type *string `json:"type"`
		File *json.RawMessage
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Kind != nil || probe.Type != nil || probe.File != nil {
		return p.unmarshalV03(b)
	}
	var w partV1
	if err := unmarshalProto(b, "part", &w); err != nil { // media_type too
		return err
	}
	*p = Part{Filename: w.Filename, MediaType: w.MediaType, Metadata: w.Metadata}
	n := 0
	if w.Text != nil {
		n++
		p.Kind, p.Text = PartText, *w.Text
	}
	if w.Raw != nil {
		n++
		raw, err := decodeBase64(*w.Raw)
		if err != nil {
			return &FieldError{Field: "part.raw", Reason: "not valid base64"}
		}
		p.Kind, p.Raw = PartRaw, raw
	}
	if w.URL != nil {
		n++
		p.Kind, p.URL = PartURL, *w.URL
	}
	if len(w.Data) > 0 {
		n++
		p.Kind, p.Data = PartData, compactJSON(w.Data)
	}
	if n != 1 {
		return ErrInvalidPart
	}
	return nil
}

// decodeBase64 accepts standard and URL-safe alphabets, padded or not.
func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not valid base64")
}

// compactJSON returns b in the form encoding/json emits a RawMessage in
// (compact, with <, >, &, U+2028 and U+2029 escaped in strings), so a part
// decodes to the same Data before and after a marshal round trip.
func compactJSON(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, buf.Bytes())
	return out.Bytes()
}
