package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// ProtoJSON field names. A ProtoJSON parser reads a field under its
// lowerCamelCase JSON name and under its original proto name (task_id and
// taskId), and refuses an object that names one field twice. The decoders
// here do the same, generically: before a type's own decoding, the keys of
// the object that are the proto spelling of one of the type's JSON fields
// are renamed to the JSON spelling. The spellings come from the Go type's
// json tags (snake_case of each lowerCamelCase name), so a field added to a
// type is covered without more code. An integer field may also be given as
// a JSON string holding the integer ("5"), which ProtoJSON accepts too.

// protoFields is what the decoders need to know of a type's JSON fields.
type protoFields struct {
	spell map[string]string // proto (snake_case) name -> JSON name
	ints  map[string]bool   // JSON names of integer fields
}

// fieldsOf returns the JSON fields of struct type t (fields of embedded
// structs count as t's own).
func fieldsOf(t reflect.Type) *protoFields {
	if pf, ok := fieldCache.Load(t); ok {
		return pf.(*protoFields)
	}
	names := map[string]reflect.Type{}
	collectJSONNames(t, names)
	pf := &protoFields{spell: map[string]string{}, ints: map[string]bool{}}
	for name, ft := range names {
		if snake := snakeCase(name); snake != name {
			if _, clash := names[snake]; !clash {
				pf.spell[snake] = name
			}
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			pf.ints[name] = true
		}
	}
	fieldCache.Store(t, pf)
	return pf
}

var fieldCache sync.Map // reflect.Type -> *protoFields

func collectJSONNames(t reflect.Type, into map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-":
		case f.Anonymous && name == "":
			embedded = append(embedded, f.Type)
		case !f.IsExported() || name == "":
		default:
			if _, seen := into[name]; !seen {
				into[name] = f.Type
			}
		}
	}
	// An embedded struct's fields after t's own: the shallower field wins,
	// as in encoding/json.
	for _, e := range embedded {
		collectJSONNames(e, into)
	}
}

// snakeCase returns the proto field name of a lowerCamelCase JSON name:
// taskId -> task_id, referenceTaskIds -> reference_task_ids.
func snakeCase(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteByte(c + 'a' - 'A')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// keySpan is one member of a JSON object: its key's text, where the
// quoted key lies in the input, and, when the value is a string, where
// that lies (vstart == vend == 0 otherwise).
type keySpan struct {
	key          []byte // the key's text, unescaped
	start, end   int    // b[start:end] is the key with its quotes
	vstart, vend int    // b[vstart:vend] is a string value with its quotes
}

func (k *keySpan) name() string { return string(k.key) }

// objectKeys appends to keys the members of the top-level object of b,
// which must be valid JSON (encoding/json has checked it before calling an
// UnmarshalJSON). It returns nil when b is not an object.
func objectKeys(b []byte, keys []keySpan) []keySpan {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) || b[i] != '{' {
		return nil
	}
	if keys == nil {
		keys = []keySpan{}
	}
	depth, expectKey := 0, false
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			start := i
			i = stringEnd(b, i)
			switch {
			case depth == 1 && expectKey:
				keys = append(keys, keySpan{key: keyText(b[start : i+1]), start: start, end: i + 1})
				expectKey = false
			case depth == 1 && len(keys) > 0:
				keys[len(keys)-1].vstart, keys[len(keys)-1].vend = start, i+1
			}
		case '{', '[':
			depth++
			if depth == 1 {
				expectKey = true
			}
		case '}', ']':
			depth--
			if depth == 0 {
				return keys
			}
		case ',':
			if depth == 1 {
				expectKey = true
			}
		}
	}
	return keys
}

// stringEnd returns the index of the quote closing the string that opens
// at b[open] (len(b)-1 if there is none).
func stringEnd(b []byte, open int) int {
	i := open + 1
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b) - 1
		}
		i += j
		n := 0 // backslashes right before the quote: odd escapes it
		for k := i - 1; k > open && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
		i++
	}
}

// maybeSnakeKey reports whether some key of the JSON text b may hold an
// underscore (a proto field name): an _ whose next quote is followed by a
// colon. It errs on the side of yes; stored messages, whose only
// underscores are in enum values (ROLE_USER), are told apart cheaply.
func maybeSnakeKey(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '_')
		if j < 0 {
			return false
		}
		i += j + 1
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return false
		}
		i += q + 1
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i < len(b) && b[i] == ':' {
			return true
		}
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// keyText returns the text of a quoted key, unescaped.
func keyText(quoted []byte) []byte {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		if json.Unmarshal(quoted, &s) == nil {
			return []byte(s)
		}
	}
	return inner
}

// quotedInt returns the number a JSON string value holds when it is a
// decimal integer ("-12", "007"), ok false if it holds anything else.
func quotedInt(quoted []byte) ([]byte, bool) {
	inner := quoted[1 : len(quoted)-1]
	digits := inner
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 40 {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	i, err := strconv.ParseInt(string(inner), 10, 64)
	if err != nil {
		return nil, false // out of range: left a string, refused as the wrong type
	}
	return strconv.AppendInt(nil, i, 10), true
}

// protoKeys rewrites the JSON object b for decoding into type t: keys that
// are proto field names become the JSON names, and an integer field given
// as a string of digits becomes the number. Naming one field under both
// spellings is refused (as ProtoJSON does) with a FieldError on where.
// b is returned unchanged when nothing needs rewriting; renamed maps each
// JSON name used in place of a proto name back to it.
func protoKeys(b []byte, t reflect.Type, where string) (_ []byte, renamed map[string]string, _ error) {
	pf := fieldsOf(t)
	if len(pf.ints) == 0 && (len(pf.spell) == 0 || !maybeSnakeKey(b)) {
		return b, nil, nil
	}
	var buf [16]keySpan
	keys := objectKeys(b, buf[:0])
	var out []byte
	last := 0
	for _, k := range keys {
		camel, rename := pf.spell[string(k.key)]
		isInt := false
		if rename {
			for _, other := range keys {
				if bytes.EqualFold(other.key, []byte(camel)) {
					return nil, nil, &FieldError{Field: where, Reason: camel + " and " + k.name() + " are two spellings of one field; send only one"}
				}
			}
			isInt = pf.ints[camel]
		} else {
			isInt = pf.ints[string(k.key)]
		}
		var num []byte
		if isInt && k.vend > k.vstart {
			num, _ = quotedInt(b[k.vstart:k.vend])
		}
		if !rename && num == nil {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		if rename {
			if renamed == nil {
				renamed = map[string]string{}
			}
			renamed[camel] = k.name()
			out = append(out, b[last:k.start]...)
			out = append(out, '"')
			out = append(out, camel...)
			out = append(out, '"')
			last = k.end
		}
		if num != nil {
			out = append(out, b[last:k.vstart]...)
			out = append(out, num...)
			last = k.vend
		}
	}
	if out == nil {
		return b, nil, nil
	}
	return append(out, b[last:]...), renamed, nil
}

// unmarshalProto decodes the JSON object b into v (a pointer to a struct,
// usually a method-less copy of the caller's type), accepting each field's
// proto name as well as its JSON name.
func unmarshalProto(b []byte, where string, v any) error {
	b, renamed, err := protoKeys(b, reflect.TypeOf(v), where)
	if err != nil {
		return err
	}
	err = json.Unmarshal(b, v)
	var ute *json.UnmarshalTypeError
	if len(renamed) > 0 && errors.As(err, &ute) {
		// Name the field as the caller spelled it.
		segs := strings.Split(ute.Field, ".")
		for i, s := range segs {
			if s == "plain" {
				continue
			}
			if snake, ok := renamed[s]; ok {
				segs[i] = snake
			}
			break
		}
		ute.Field = strings.Join(segs, ".")
	}
	return err
}

// UnmarshalProtoJSON decodes the JSON object b into v (a pointer to a
// struct) the way this package's own types decode: a field is read under
// its JSON name or its proto (snake_case) name, and both at once are an
// invalid-params error naming where. For request types defined outside
// this package; call it on a method-less copy of the type from its
// UnmarshalJSON.
func UnmarshalProtoJSON(b []byte, where string, v any) error {
	return unmarshalProto(b, where, v)
}
