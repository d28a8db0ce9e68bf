package cardsig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize returns the RFC 8785 (JCS) form of the JSON document doc:
// no insignificant whitespace, object members sorted by the UTF-16 code
// units of their names, strings escaped only where JSON requires it (the
// short escapes, else \u00xx in lower case), numbers written the way
// ECMAScript's Number.prototype.toString writes a double. Duplicate member
// names and numbers outside the range of a double are refused.
func Canonicalize(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("cardsig: canonicalize: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("cardsig: canonicalize: data after the JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, fmt.Errorf("cardsig: canonicalize: %w", err)
	}
	return buf.Bytes(), nil
}

// member is one object member, in document order until sorted.
type member struct {
	name  string
	value any
}

// decodeValue reads one value with its object members as []member, so
// that duplicates are seen (a map would keep the last silently).
func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				name := k.(string)
				if seen[name] {
					return nil, fmt.Errorf("duplicate member %q", name)
				}
				seen[name] = true
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				ms = append(ms, member{name, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if ms == nil {
				ms = []member{}
			}
			return ms, nil
		case '[':
			vs := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				vs = append(vs, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return vs, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil // string, json.Number, bool, nil
	}
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case string:
		writeString(buf, t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("number %s is not an IEEE 754 double", t)
		}
		buf.WriteString(FormatNumber(f))
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return errors.New("NaN and infinity have no JSON form")
		}
		buf.WriteString(FormatNumber(t))
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case []member:
		ms := slices.Clone(t)
		slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.name, b.name) })
		buf.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, m.name)
			buf.WriteByte(':')
			if err := writeCanonical(buf, m.value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3),
// which differs from byte order for characters above U+FFFF against
// U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

// writeString writes s as RFC 8785 §3.2.2.2 asks: '"' and '\' escaped,
// the control characters with a short escape where JSON has one and
// \u00xx otherwise; every other character as its UTF-8 bytes.
func writeString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			buf.WriteRune(r) // invalid UTF-8 becomes U+FFFD, as a decoder would read it
			i += n
			continue
		}
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if c < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			} else {
				buf.WriteByte(c)
			}
		}
		i++
	}
	buf.WriteByte('"')
}

// FormatNumber writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262 Number::toString, radix 10), which RFC 8785 §3.2.2.3 adopts:
// the shortest digits that read back as f, in plain notation for decimal
// exponents from -6 to 20 and in exponent notation outside them.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0" // also -0
	}
	neg := f < 0
	if neg {
		f = -f
	}
	// The shortest round-tripping digits and their exponent: d.ddde±x.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k := len(digits)
	n := x + 1 // the decimal point sits after n digits
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		s += "e" + sign + strconv.Itoa(abs(n-1))
	}
	if neg {
		s = "-" + s
	}
	return s
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
