package a2a

import (
	"encoding/json"
	"errors"
	"reflect"
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
// type is covered without more code.

// protoSpellings maps each proto (snake_case) name of t's JSON fields to
// the JSON name. Fields of embedded structs count as t's own.
func protoSpellings(t reflect.Type) map[string]string {
	if m, ok := spellingCache.Load(t); ok {
		return m.(map[string]string)
	}
	names := map[string]bool{}
	collectJSONNames(t, names)
	m := map[string]string{}
	for name := range names {
		if snake := snakeCase(name); snake != name && !names[snake] {
			m[snake] = name
		}
	}
	spellingCache.Store(t, m)
	return m
}

var spellingCache sync.Map // reflect.Type -> map[string]string

func collectJSONNames(t reflect.Type, into map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			collectJSONNames(f.Type, into)
			continue
		}
		if !f.IsExported() || name == "" {
			continue
		}
		into[name] = true
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

// keySpan is one key of a JSON object: its decoded text and where its
// quoted form lies in the input.
type keySpan struct {
	name       string
	start, end int // b[start:end] is the key with its quotes
}

// objectKeys lists the keys of the top-level object of b, which must be
// valid JSON (encoding/json has checked it before calling an
// UnmarshalJSON). It returns nil when b is not an object.
func objectKeys(b []byte) []keySpan {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) || b[i] != '{' {
		return nil
	}
	var keys []keySpan
	depth, expectKey := 0, false
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			start := i
			esc := false
			for i++; i < len(b); i++ {
				if esc {
					esc = false
				} else if b[i] == '\\' {
					esc = true
				} else if b[i] == '"' {
					break
				}
			}
			if depth == 1 && expectKey {
				keys = append(keys, keySpan{name: keyText(b[start : i+1]), start: start, end: i + 1})
				expectKey = false
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func keyText(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(quoted, &s) == nil {
				return s
			}
			break
		}
	}
	return string(inner)
}

// protoKeys rewrites the keys of the JSON object b that are proto field
// names of type t to their JSON names. Naming one field under both
// spellings is refused (as ProtoJSON does) with a FieldError on where.
// b is returned unchanged when no key needs renaming; renamed maps each
// JSON name used in place of a proto name back to it.
func protoKeys(b []byte, t reflect.Type, where string) (_ []byte, renamed map[string]string, _ error) {
	keys := objectKeys(b)
	spell := protoSpellings(t)
	renames := 0
	for _, k := range keys {
		if _, ok := spell[k.name]; ok {
			renames++
		}
	}
	if renames == 0 {
		return b, nil, nil
	}
	renamed = make(map[string]string, renames)
	out := make([]byte, 0, len(b)+8*renames)
	last := 0
	for _, k := range keys {
		camel, ok := spell[k.name]
		if !ok {
			continue
		}
		for _, other := range keys {
			if strings.EqualFold(other.name, camel) {
				return nil, nil, &FieldError{Field: where, Reason: camel + " and " + k.name + " are two spellings of one field; send only one"}
			}
		}
		renamed[camel] = k.name
		out = append(out, b[last:k.start]...)
		out = append(out, '"')
		out = append(out, camel...)
		out = append(out, '"')
		last = k.end
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
