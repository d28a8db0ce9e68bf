package a2a

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartKindString(t *testing.T) {
	assert.Equal(t, "text", PartText.String())
	assert.Equal(t, "raw", PartRaw.String())
	assert.Equal(t, "url", PartURL.String())
	assert.Equal(t, "data", PartData.String())
	assert.Equal(t, "unknown", PartKind(0).String())
	assert.Equal(t, "unknown", PartKind(99).String())
}

func TestPartConstructors(t *testing.T) {
	assert.Equal(t, Part{Kind: PartText, Text: "hi"}, TextPart("hi"))

	d := DataPart(map[string]any{"a": []int{1, 2}})
	assert.Equal(t, PartData, d.Kind)
	assert.Equal(t, "application/json", d.MediaType)
	assert.JSONEq(t, `{"a":[1,2]}`, string(d.Data))

	assert.Equal(t, json.RawMessage(`"s"`), DataPart("s").Data)
	assert.Panics(t, func() { DataPart(func() {}) }, "unmarshallable value is a programming error")
}

func TestPartMarshalV10(t *testing.T) {
	tests := []struct {
		name string
		part Part
		want string
	}{
		{"text", TextPart("hi"), `{"text":"hi"}`},
		{"empty text is still text", TextPart(""), `{"text":""}`},
		{"text with metadata", Part{Kind: PartText, Text: "x", Metadata: Metadata{"k": "v"}}, `{"text":"x","metadata":{"k":"v"}}`},
		{"raw", Part{Kind: PartRaw, Raw: []byte("hello"), Filename: "h.txt", MediaType: "text/plain"}, `{"raw":"aGVsbG8=","filename":"h.txt","mediaType":"text/plain"}`},
		{"empty raw", Part{Kind: PartRaw}, `{"raw":""}`},
		{"url", Part{Kind: PartURL, URL: "https://x.test/a", MediaType: "image/png"}, `{"url":"https://x.test/a","mediaType":"image/png"}`},
		{"data object", DataPart(map[string]int{"n": 1}), `{"data":{"n":1},"mediaType":"application/json"}`},
		{"data array", Part{Kind: PartData, Data: json.RawMessage(`[1,2]`)}, `{"data":[1,2]}`},
		{"data scalar", Part{Kind: PartData, Data: json.RawMessage(`42`)}, `{"data":42}`},
		{"data empty becomes null", Part{Kind: PartData}, `{"data":null}`},
		{"other members ignored", Part{Kind: PartText, Text: "t", URL: "u", Raw: []byte("r")}, `{"text":"t"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.part)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
			assert.NotContains(t, string(b), `"kind"`, "1.0 parts carry no kind")
		})
	}
}

func TestPartMarshalInvalidKind(t *testing.T) {
	for _, p := range []Part{{}, {Kind: 99, Text: "x"}} {
		_, err := json.Marshal(p)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrInvalidPart)
	}
	_, err := json.Marshal(Message{Parts: []Part{TextPart("ok"), {}}})
	assert.ErrorIs(t, err, ErrInvalidPart, "a zero part inside a message fails the whole marshal")
}

func TestPartUnmarshalV10(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Part
	}{
		{"text", `{"text":"hi"}`, TextPart("hi")},
		{"empty text", `{"text":""}`, TextPart("")},
		{"raw std padded", `{"raw":"aGVsbG8=","filename":"h","mediaType":"text/plain"}`, Part{Kind: PartRaw, Raw: []byte("hello"), Filename: "h", MediaType: "text/plain"}},
		{"raw std unpadded", `{"raw":"aGVsbG8"}`, Part{Kind: PartRaw, Raw: []byte("hello")}},
		{"raw url-safe", `{"raw":"_-8="}`, Part{Kind: PartRaw, Raw: []byte{0xff, 0xef}}},
		{"raw url-safe unpadded", `{"raw":"_-8"}`, Part{Kind: PartRaw, Raw: []byte{0xff, 0xef}}},
		{"raw std alphabet", `{"raw":"/+8="}`, Part{Kind: PartRaw, Raw: []byte{0xff, 0xef}}},
		{"raw empty", `{"raw":""}`, Part{Kind: PartRaw, Raw: []byte{}}},
		{"url", `{"url":"https://x.test","filename":"x"}`, Part{Kind: PartURL, URL: "https://x.test", Filename: "x"}},
		{"data object compacted", `{"data": { "a" : [ 1, 2 ] }}`, Part{Kind: PartData, Data: json.RawMessage(`{"a":[1,2]}`)}},
		{"data null", `{"data":null}`, Part{Kind: PartData, Data: json.RawMessage(`null`)}},
		{"data string", `{"data":"s","mediaType":"application/json"}`, Part{Kind: PartData, Data: json.RawMessage(`"s"`), MediaType: "application/json"}},
		{"metadata", `{"text":"x","metadata":{"k":1}}`, Part{Kind: PartText, Text: "x", Metadata: Metadata{"k": 1.0}}},
		{"kind null is not a discriminator", `{"kind":null,"text":"x"}`, TextPart("x")},
		{"text null plus url", `{"text":null,"url":"u"}`, Part{Kind: PartURL, URL: "u"}},
		{"unknown keys ignored", `{"text":"x","bogus":1}`, TextPart("x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Part
			require.NoError(t, json.Unmarshal([]byte(tc.in), &p))
			assert.Equal(t, tc.want, p)
		})
	}
}

func TestPartRejectsZeroOrSeveralContents(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`null`,
		`{"metadata":{"a":1}}`,
		`{"filename":"x","mediaType":"text/plain"}`,
		`{"text":null}`,
		`{"text":"a","url":"b"}`,
		`{"text":"a","raw":"aGk="}`,
		`{"raw":"aGk=","url":"b"}`,
		`{"url":"b","data":{}}`,
		`{"text":"a","data":null}`,
		`{"text":"a","raw":"aGk=","url":"u","data":1}`,
	} {
		t.Run(in, func(t *testing.T) {
			var p Part
			err := json.Unmarshal([]byte(in), &p)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidPart)
		})
	}
	t.Run("inside a message", func(t *testing.T) {
		var m Message
		err := json.Unmarshal([]byte(`{"messageId":"m","role":"user","parts":[{"text":"ok"},{}]}`), &m)
		assert.ErrorIs(t, err, ErrInvalidPart)
		err = json.Unmarshal([]byte(`{"messageId":"m","role":"user","parts":[null]}`), &m)
		assert.ErrorIs(t, err, ErrInvalidPart)
	})
}

func TestPartInvalidBase64(t *testing.T) {
	for _, in := range []string{
		`{"raw":"!!!!"}`,
		`{"raw":"aGVsbG8=="}`,
		`{"raw":"a"}`,
		`{"raw":"aGV sbG8="}`,
		`{"kind":"file","file":{"bytes":"%%%"}}`,
		`{"kind":"file","file":{"bytes_data":"a"}}`,
	} {
		t.Run(in, func(t *testing.T) {
			var p Part
			err := json.Unmarshal([]byte(in), &p)
			require.Error(t, err)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "want a *FieldError naming the field, got %T %v", err, err)
			assert.Contains(t, fe.Field, "part.")
			assert.Equal(t, "not valid base64", fe.Reason)
			e := AsError(err)
			assert.Equal(t, CodeInvalidParams, e.Code)
		})
	}
}

func TestPartRoundTrip(t *testing.T) {
	for _, p := range []Part{
		TextPart("hello <world> & \u2028"),
		{Kind: PartText, Text: "x", Filename: "f", MediaType: "text/markdown", Metadata: Metadata{"k": "v"}},
		{Kind: PartRaw, Raw: []byte{0, 1, 2, 3, 250, 251, 252, 253, 254, 255}, Filename: "b.bin", MediaType: "application/octet-stream"},
		{Kind: PartRaw, Raw: []byte{}},
		{Kind: PartURL, URL: "https://x.test/a?b=c&d=<e>"},
		DataPart(map[string]any{"nested": map[string]any{"list": []any{1.0, "two", nil, true}}}),
		DataPart([]int{1, 2, 3}),
		DataPart("<script>"),
		DataPart(nil),
	} {
		t.Run(p.Kind.String(), func(t *testing.T) {
			b, err := json.Marshal(p)
			require.NoError(t, err)
			var got Part
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, p, got)
		})
	}
}

// Decoding is canonical: what decodes from a JSON text equals what decodes
// from the re-marshalled value, including data with characters encoding/json
// escapes on output.
func TestPartDecodeStableAcrossRemarshal(t *testing.T) {
	for _, in := range []string{
		`{"data":{"html":"<b>&amp;</b>"}}`,
		"{\"data\":{\"ls\":\"\u2028\u2029\"}}",
		`{"data":{"a":"\u003c"}}`,
		`{"kind":"data","data":{"x":"<y>"}}`,
		`{"data":[ 1 , 2 ]}`,
	} {
		t.Run(in, func(t *testing.T) {
			var first Part
			require.NoError(t, json.Unmarshal([]byte(in), &first))
			b, err := json.Marshal(first)
			require.NoError(t, err)
			var second Part
			require.NoError(t, json.Unmarshal(b, &second))
			assert.Equal(t, first, second)
		})
	}
}
