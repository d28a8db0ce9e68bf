package a2a

import (
	"encoding/json"
	"unicode/utf8"
)

// A fast path for the shapes the mesh reads most: a 1.0 message and its
// parts as the mesh itself stores them and as 1.0 clients send them
// (camelCase keys, each once, no nulls), 0.3 text parts, and 1.0 send
// params. The lenient decoders (lenient.go, part.go) read such input by
// decoding each object two or three times through encoding/json. The fast
// path reads it once; on anything else — another key or spelling, a
// repeated key, a null, a value of an unexpected type, malformed JSON, a
// value the lenient decoder would refuse — it gives up and the lenient
// decoder reads the input from the start, so what is decoded, and every
// error, is exactly what the lenient decoder alone gives
// (TestFastDecodeMatchesLenient).

// fastDecode switches the fast path off when false (tests compare both).
var fastDecode = true

// fscan reads one JSON value from b. Its methods report false on anything
// they do not read, and the caller gives up.
type fscan struct {
	b []byte
	i int
}

func (s *fscan) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// byte reads c after optional whitespace.
func (s *fscan) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek returns the next non-space byte (0 at the end).
func (s *fscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (s *fscan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// rawString returns the quoted string at the cursor (quotes included) and
// whether it is plain: no escapes, no control bytes, ASCII only (plainUTF8:
// valid UTF-8, so its text is its bytes, as encoding/json reads it).
func (s *fscan) rawString() (raw []byte, plainUTF8, ok bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i
	ascii, esc := true, false
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			raw = s.b[start:s.i]
			if esc {
				return raw, false, true
			}
			if !ascii && !utf8.Valid(raw[1:len(raw)-1]) {
				return raw, false, true
			}
			return raw, true, true
		case c == '\\':
			esc = true
			j++ // skip the escaped byte; a \" does not end the string
		case c < 0x20:
			return nil, false, false // invalid JSON
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, false
}

// str reads a JSON string value.
func (s *fscan) str() (string, bool) {
	raw, plain, ok := s.rawString()
	if !ok {
		return "", false
	}
	if plain {
		return string(raw[1 : len(raw)-1]), true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// key reads an object key and its colon; the key is returned as it is
// written (a key with escapes is not one the fast path knows).
func (s *fscan) key() ([]byte, bool) {
	raw, plain, ok := s.rawString()
	if !ok || !plain || !s.byte(':') {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// value returns the text of the JSON value at the cursor, checked to be
// valid JSON.
func (s *fscan) value() ([]byte, bool) {
	s.ws()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			if _, _, ok := s.rawString(); !ok {
				return nil, false
			}
			if depth == 0 {
				return s.checked(start)
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return s.checked(start) // the end of a scalar
			}
			depth--
			if depth == 0 {
				s.i++
				return s.checked(start)
			}
		case depth == 0 && (c == ',' || isSpace(c)):
			return s.checked(start)
		}
		s.i++
	}
	if depth == 0 && s.i > start {
		return s.checked(start)
	}
	return nil, false
}

func (s *fscan) checked(start int) ([]byte, bool) {
	v := s.b[start:s.i]
	if len(v) == 0 || !json.Valid(v) {
		return nil, false
	}
	return v, true
}

// object reads a JSON object member by member: member is called with each
// key, the cursor on its value, and must read the value.
func (s *fscan) object(member func(key []byte) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		k, ok := s.key()
		if !ok || !member(k) {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// metadata reads a Metadata object (not null: the lenient decoder keeps a
// null as no metadata, which the fast path leaves to it).
func (s *fscan) metadata() (Metadata, bool) {
	if s.peek() != '{' {
		return nil, false
	}
	v, ok := s.value()
	if !ok {
		return nil, false
	}
	var md Metadata
	if json.Unmarshal(v, &md) != nil {
		return nil, false
	}
	return md, true
}

// strings reads an array of strings.
func (s *fscan) strings() ([]string, bool) {
	if s.peek() != '[' {
		return nil, false
	}
	s.i++
	out := []string{}
	if s.byte(']') {
		return out, true
	}
	for {
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if s.byte(',') {
			continue
		}
		return out, s.byte(']')
	}
}

// seen tracks the keys of one object; a repeated key gives up.
type seen uint16

func (m *seen) first(bit int) bool {
	if *m&(1<<bit) != 0 {
		return false
	}
	*m |= 1 << bit
	return true
}

// fastRole reads the role spellings of Role.UnmarshalJSON that are not
// errors and not ROLE_UNSPECIFIED.
func fastRole(raw []byte) (Role, bool) {
	switch string(raw) {
	case `"ROLE_USER"`, `"user"`:
		return RoleUser, true
	case `"ROLE_AGENT"`, `"agent"`:
		return RoleAgent, true
	}
	return "", false
}

// fastMessage reads a message.
func fastMessage(s *fscan, m *Message) bool {
	var keys seen
	ok := s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "messageId":
			ok = keys.first(0)
			m.MessageID, ok = s.strIf(ok)
		case "contextId":
			ok = keys.first(1)
			m.ContextID, ok = s.strIf(ok)
		case "taskId":
			ok = keys.first(2)
			m.TaskID, ok = s.strIf(ok)
		case "role":
			if !keys.first(3) {
				return false
			}
			raw, _, rok := s.rawString()
			if !rok {
				return false
			}
			m.Role, ok = fastRole(raw)
		case "parts":
			ok = keys.first(4) && fastParts(s, &m.Parts)
		case "metadata":
			if !keys.first(5) {
				return false
			}
			m.Metadata, ok = s.metadata()
		case "extensions":
			if !keys.first(6) {
				return false
			}
			m.Extensions, ok = s.strings()
		case "referenceTaskIds":
			if !keys.first(7) {
				return false
			}
			m.ReferenceTaskIDs, ok = s.strings()
		case "kind": // 0.3's "message", ignored
			if !keys.first(8) {
				return false
			}
			_, ok = s.str()
		}
		return ok
	})
	return ok
}

// strIf reads a string when ok.
func (s *fscan) strIf(ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	return s.str()
}

func fastParts(s *fscan, parts *[]Part) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	out := []Part{}
	if s.byte(']') {
		*parts = out
		return true
	}
	for {
		out = append(out, Part{})
		if !fastPart(s, &out[len(out)-1]) {
			return false
		}
		if s.byte(',') {
			continue
		}
		*parts = out
		return s.byte(']')
	}
}

// fastPart reads a 1.0 part, or a 0.3 text part.
func fastPart(s *fscan, p *Part) bool {
	var (
		keys                seen
		text, raw, url      *string
		data                []byte
		filename, mediaType string
		kind                string
		md                  Metadata
	)
	ok := s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "text":
			var v string
			if v, ok = s.strIf(keys.first(0)); ok {
				text = &v
			}
		case "raw":
			var v string
			if v, ok = s.strIf(keys.first(1)); ok {
				raw = &v
			}
		case "url":
			var v string
			if v, ok = s.strIf(keys.first(2)); ok {
				url = &v
			}
		case "data":
			if !keys.first(3) || s.peek() == 'n' {
				return false // null: the lenient decoder's
			}
			data, ok = s.value()
		case "filename":
			filename, ok = s.strIf(keys.first(4))
		case "mediaType":
			mediaType, ok = s.strIf(keys.first(5))
		case "metadata":
			if !keys.first(6) {
				return false
			}
			md, ok = s.metadata()
		case "kind":
			kind, ok = s.strIf(keys.first(7))
		}
		return ok
	})
	if !ok {
		return false
	}
	if keys&(1<<7) != 0 {
		// 0.3: only {"kind":"text","text":...,"metadata":...}.
		if kind != "text" || text == nil || keys&^(1<<0|1<<6|1<<7) != 0 {
			return false
		}
		*p = Part{Kind: PartText, Text: *text, Metadata: md}
		return true
	}
	*p = Part{Filename: filename, MediaType: mediaType, Metadata: md}
	n := 0
	if text != nil {
		n++
		p.Kind, p.Text = PartText, *text
	}
	if raw != nil {
		n++
		b, err := decodeBase64(*raw)
		if err != nil {
			return false
		}
		p.Kind, p.Raw = PartRaw, b
	}
	if url != nil {
		n++
		p.Kind, p.URL = PartURL, *url
	}
	if data != nil {
		n++
		p.Kind, p.Data = PartData, compactJSON(append(json.RawMessage(nil), data...))
	}
	return n == 1
}

// decodeMessageFast decodes b as a whole message; false: use the lenient
// decoder.
func decodeMessageFast(b []byte, m *Message) bool {
	if !fastDecode {
		return false
	}
	s := fscan{b: b}
	var v Message
	if !fastMessage(&s, &v) || !s.end() {
		return false
	}
	*m = v
	return true
}

func decodePartFast(b []byte, p *Part) bool {
	if !fastDecode {
		return false
	}
	s := fscan{b: b}
	var v Part
	if !fastPart(&s, &v) || !s.end() {
		return false
	}
	*p = v
	return true
}

// decodeSendFast reads 1.0 send params: tenant, message (with its role),
// configuration (through its own decoder) and metadata.
func decodeSendFast(b []byte, r *SendMessageRequest) bool {
	if !fastDecode {
		return false
	}
	s := fscan{b: b}
	var (
		v    SendMessageRequest
		keys seen
	)
	ok := s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "tenant":
			v.Tenant, ok = s.strIf(keys.first(0))
		case "message":
			if !keys.first(1) {
				return false
			}
			m := &Message{}
			ok = fastMessage(&s, m)
			v.Message = m
		case "configuration":
			if !keys.first(2) || s.peek() != '{' {
				return false
			}
			var raw []byte
			if raw, ok = s.value(); ok {
				v.Configuration = &SendMessageConfiguration{}
				ok = v.Configuration.UnmarshalJSON(raw) == nil
			}
		case "metadata":
			if !keys.first(3) {
				return false
			}
			v.Metadata, ok = s.metadata()
		}
		return ok
	})
	if !ok || !s.end() {
		return false
	}
	if v.Message != nil && v.Message.Role == "" {
		return false // the lenient decoder says role is required
	}
	*r = v
	return true
}

// quickState reads a TaskState given as its 1.0 name, exactly.
func quickState(b []byte) (TaskState, bool) {
	if n := len(b); n > 2 && b[0] == '"' && b[n-1] == '"' {
		for _, st := range stateNumbers {
			if string(b[1:n-1]) == string(st) {
				return st, true
			}
		}
	}
	return "", false
}

// UnmarshalJSON reads a task. A task is read back from the mesh's own
// store on every load (and every settled blocking send): the shape the
// mesh writes is read in one pass (decodeTaskFast), anything else by
// encoding/json as before.
func (t *Task) UnmarshalJSON(b []byte) error {
	if decodeTaskFast(b, t) {
		return nil
	}
	type plain Task
	return json.Unmarshal(b, (*plain)(t))
}

// decodeTaskFast reads a task in the shape the mesh writes into a zero
// task (encoding/json merges into a task that is not; the fast path
// leaves that to it).
func decodeTaskFast(b []byte, t *Task) bool {
	if !fastDecode || t.ID != "" || t.ContextID != "" || t.Status != (TaskStatus{}) ||
		t.Artifacts != nil || t.History != nil || t.Metadata != nil {
		return false
	}
	s := fscan{b: b}
	var (
		v    Task
		keys seen
	)
	ok := s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "id":
			v.ID, ok = s.strIf(keys.first(0))
		case "contextId":
			v.ContextID, ok = s.strIf(keys.first(1))
		case "status":
			ok = keys.first(2) && fastStatus(&s, &v.Status)
		case "artifacts":
			ok = keys.first(3) && fastArtifacts(&s, &v.Artifacts)
		case "history":
			ok = keys.first(4) && fastHistory(&s, &v.History)
		case "metadata":
			if !keys.first(5) {
				return false
			}
			v.Metadata, ok = s.metadata()
		}
		return ok
	})
	if !ok || !s.end() {
		return false
	}
	*t = v
	return true
}

func fastStatus(s *fscan, st *TaskStatus) bool {
	var keys seen
	return s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "state":
			if !keys.first(0) {
				return false
			}
			raw, _, rok := s.rawString()
			if !rok {
				return false
			}
			st.State, ok = quickState(raw)
		case "message":
			if !keys.first(1) {
				return false
			}
			m := &Message{}
			ok = fastMessage(s, m)
			st.Message = m
		case "timestamp":
			st.Timestamp, ok = s.strIf(keys.first(2))
		}
		return ok
	})
}

func fastHistory(s *fscan, h *[]Message) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	out := []Message{}
	if s.byte(']') {
		*h = out
		return true
	}
	for {
		out = append(out, Message{})
		if !fastMessage(s, &out[len(out)-1]) {
			return false
		}
		if s.byte(',') {
			continue
		}
		*h = out
		return s.byte(']')
	}
}

func fastArtifacts(s *fscan, as *[]Artifact) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	out := []Artifact{}
	if s.byte(']') {
		*as = out
		return true
	}
	for {
		out = append(out, Artifact{})
		if !fastArtifact(s, &out[len(out)-1]) {
			return false
		}
		if s.byte(',') {
			continue
		}
		*as = out
		return s.byte(']')
	}
}

func fastArtifact(s *fscan, a *Artifact) bool {
	var keys seen
	return s.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "artifactId":
			a.ArtifactID, ok = s.strIf(keys.first(0))
		case "name":
			a.Name, ok = s.strIf(keys.first(1))
		case "description":
			a.Description, ok = s.strIf(keys.first(2))
		case "parts":
			ok = keys.first(3) && fastParts(s, &a.Parts)
		case "metadata":
			if !keys.first(4) {
				return false
			}
			a.Metadata, ok = s.metadata()
		case "extensions":
			if !keys.first(5) {
				return false
			}
			a.Extensions, ok = s.strings()
		}
		return ok
	})
}
