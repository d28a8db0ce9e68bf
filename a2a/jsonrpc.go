package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// MaxDepth is the deepest nesting of objects and arrays a request may have.
const MaxDepth = 64

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// MarshalJSON emits exactly one of result and error, as JSON-RPC 2.0
// requires: a success response carries "result" even when it is null.
func (r Response) MarshalJSON() ([]byte, error) {
	id := idOrNull(r.ID)
	if r.Error != nil {
		return json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{r.JSONRPC, id, r.Error})
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{r.JSONRPC, id, r.Result})
}

// EncodeTo writes r and a newline to buf: what a json.Encoder writes for
// r, in one pass (MarshalJSON's output is compacted again by the encoder
// that calls it; here the result is encoded straight into buf).
func (r *Response) EncodeTo(buf *bytes.Buffer) error {
	if r.Error != nil {
		return json.NewEncoder(buf).Encode(r)
	}
	start := buf.Len()
	buf.WriteString(`{"jsonrpc":`)
	buf.Write(appendJSONString(buf.AvailableBuffer(), r.JSONRPC))
	buf.WriteString(`,"id":`)
	if id := idOrNull(r.ID); plainID(id) {
		buf.Write(id)
	} else {
		b, err := json.Marshal(id) // compacted, HTML-escaped, checked
		if err != nil {
			buf.Truncate(start)
			return err
		}
		buf.Write(b)
	}
	buf.WriteString(`,"result":`)
	if err := json.NewEncoder(buf).Encode(r.Result); err != nil { // HTML-escaped, as json.Marshal
		buf.Truncate(start)
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteString("}\n")
	return nil
}

// plainID reports whether id is written as it is: digits, or a string of
// printable ASCII that needs no escaping.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	if id[0] == '"' {
		if len(id) < 2 || id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// NullID is the id of a response to a request whose id could not be read.
var NullID = json.RawMessage("null")

// NewResult returns a success response.
func NewResult(id json.RawMessage, result any) *Response {
	return &Response{JSONRPC: "2.0", ID: idOrNull(id), Result: result}
}

// NewError returns an error response.
func NewError(id json.RawMessage, err *Error) *Response {
	return &Response{JSONRPC: "2.0", ID: idOrNull(id), Error: err}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return NullID
	}
	return id
}

// ParseRequest decodes and validates one JSON-RPC request. On failure it
// returns the error to send and whatever id it could read (possibly nil).
func ParseRequest(body []byte) (*Request, *Error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, ErrInvalidRequest.With("empty request body")
	}
	// Depth first: it is cheap, and encoding/json's own nesting limit would
	// otherwise report a very deep but valid body as a parse error.
	if depthExceeds(body, MaxDepth) {
		return nil, ErrInvalidRequest.With("request nested deeper than %d levels", MaxDepth)
	}
	if body[0] != '{' {
		switch {
		case !json.Valid(body):
			return nil, ErrParse
		case body[0] == '[':
			return nil, ErrInvalidRequest.With("batch requests are not supported")
		}
		return nil, ErrInvalidRequest.With("request must be a JSON object")
	}
	var raw struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"`
		Method  *json.RawMessage `json:"method"`
		Params  json.RawMessage  `json:"params"`
	}
	// Unmarshal checks the whole body is valid JSON before it decodes:
	// a syntax error is a parse error, anything else an invalid request.
	if err := json.Unmarshal(body, &raw); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, ErrParse
		}
		return nil, ErrInvalidRequest
	}
	req := &Request{JSONRPC: "2.0", Params: raw.Params}
	if validID(raw.ID) {
		req.ID = raw.ID
	} else if len(raw.ID) > 0 {
		return nil, ErrInvalidRequest.With("id must be a string, number or null")
	}
	if raw.JSONRPC == nil || string(*raw.JSONRPC) != `"2.0"` {
		return req, ErrInvalidRequest.With(`jsonrpc must be "2.0"`)
	}
	if raw.Method == nil || json.Unmarshal(*raw.Method, &req.Method) != nil || req.Method == "" {
		return req, ErrInvalidRequest.With("method must be a non-empty string")
	}
	if len(raw.ID) == 0 {
		return req, ErrInvalidRequest.With("id is required")
	}
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")) {
		return req, ErrInvalidParams.With("params must be an object")
	}
	return req, nil
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// depthExceeds reports whether valid JSON b nests objects/arrays deeper than max.
func depthExceeds(b []byte, max int) bool {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// DecodeParams unmarshals params into v, mapping failures to invalid params.
func DecodeParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		if e := AsError(err); e.Code == CodeInvalidParams {
			return e
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			if f := publicFieldPath(ute.Field); f != "" {
				return ErrInvalidParams.With("Invalid parameters: %s has the wrong type", f)
			}
			return ErrInvalidParams.With("Invalid parameters: params must be a JSON object")
		}
		if errors.Is(err, ErrInvalidPart) {
			return ErrInvalidParams.With("Invalid parameters: %s", ErrInvalidPart.Error())
		}
		return ErrInvalidParams
	}
	return nil
}

// publicFieldPath turns encoding/json's field path into the JSON path the
// caller sent: the decoders in lenient.go embed a local type named plain,
// whose Go name encoding/json includes in the path ("plain.message.plain.parts").
func publicFieldPath(path string) string {
	segs := strings.Split(path, ".")
	out := segs[:0]
	for _, s := range segs {
		if s != "" && s != "plain" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ".")
}
