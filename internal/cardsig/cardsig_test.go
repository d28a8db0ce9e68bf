package cardsig

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestFormatNumber checks the number serialization against the table of
// RFC 8785 Appendix B (IEEE 754 bit patterns and their JCS form).
func TestFormatNumber(t *testing.T) {
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		if got := FormatNumber(math.Float64frombits(c.bits)); got != c.want {
			t.Errorf("%#016x: got %s, want %s", c.bits, got, c.want)
		}
	}
}

// TestCanonicalize runs the examples of RFC 8785 §3.2.2 (values) and
// §3.2.3 (member order by UTF-16 code units).
func TestCanonicalize(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonicalize([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("got %s (%v)\nwant %s", got, err, want)
	}

	in = `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	got, err = Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	dec := json.NewDecoder(bytes.NewReader(got))
	_, _ = dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		v, _ := dec.Token()
		_ = k
		order = append(order, v.(string))
	}
	wantOrder := []string{"Carriage Return", "One", "Control", "Latin Small Letter O With Diaeresis",
		"Euro Sign", "Emoji: Grinning Face", "Hebrew Letter Dalet With Dagesh"}
	if strings.Join(order, "|") != strings.Join(wantOrder, "|") {
		t.Fatalf("member order %q, want %q", order, wantOrder)
	}

	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1e400}`, `{"a":1} x`, `{`} {
		if _, err := Canonicalize([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestPayloadDefaults is the example of spec §8.4.1: defaults of fields
// without presence are left out, optional fields set to false stay, the
// signatures and fields outside the 1.0 schema are not covered.
func TestPayloadDefaults(t *testing.T) {
	in := `{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]},"skills":[],
		"url":"http://legacy.example/0.3-field","signatures":[{"protected":"x","signature":"y"}]}`
	got, err := Payload([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}`
	if string(got) != want {
		t.Fatalf("payload %s\nwant %s", got, want)
	}
	if _, err := Payload([]byte(`{"name":`)); err == nil {
		t.Fatal("a truncated card has a payload")
	}
}

const testCard = `{"name":"echo","description":"says it back","version":"1.0.0",
	"supportedInterfaces":[{"url":"https://mesh.example/agents/echo","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
	"capabilities":{"streaming":true,"extensions":[{"uri":"urn:x","params":{"n":1.5,"s":"v"}}]},
	"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
	"skills":[{"id":"echo","name":"echo","description":"echo","tags":["t"]}]}`

func signed(t *testing.T, k *Keys, card string) []byte {
	t.Helper()
	sigs, err := k.SignCard([]byte(card), "https://mesh.example/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(card), &m); err != nil {
		t.Fatal(err)
	}
	m["signatures"] = sigs
	b, _ := json.Marshal(m)
	return b
}

func TestSignVerify(t *testing.T) {
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	doc := signed(t, k, testCard)
	hs, err := VerifyCard(doc, k.JWKS())
	if err != nil || len(hs) != 1 || hs[0].Kid != k.KeyIDs()[0] || hs[0].Typ != "JOSE" || hs[0].JKU == "" {
		t.Fatalf("verify: %v %+v", err, hs)
	}
	// Deterministic: the same card signs to the same bytes.
	if again := signed(t, k, testCard); !bytes.Equal(again, doc) {
		t.Fatal("signing the same card twice gave different signatures")
	}

	// A changed skill, a changed URL: the signature no longer holds.
	for _, tamper := range []func(string) string{
		func(s string) string { return strings.Replace(s, `"says it back"`, `"says something else"`, 1) },
		func(s string) string { return strings.Replace(s, "mesh.example/agents", "evil.example/agents", 1) },
		func(s string) string { return strings.Replace(s, `"n":1.5`, `"n":2`, 1) },
	} {
		bad := tamper(string(doc))
		if _, err := VerifyCard([]byte(bad), k.JWKS()); !errors.Is(err, ErrSignature) {
			t.Errorf("tampered card: %v, want ErrSignature", err)
		}
	}
	// Another key set, no signature, another algorithm.
	other, _ := Generate()
	if _, err := VerifyCard(doc, other.JWKS()); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := VerifyCard([]byte(testCard), k.JWKS()); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v", err)
	}
	none := `{"name":"x","signatures":[{"protected":"` + b64.EncodeToString([]byte(`{"alg":"none","kid":"`+k.KeyIDs()[0]+`"}`)) + `","signature":""}]}`
	if _, err := VerifyCard([]byte(none), k.JWKS()); !errors.Is(err, ErrMalformed) {
		t.Errorf("alg none: %v", err)
	}
}

func TestRotation(t *testing.T) {
	k, _ := Generate()
	r, err := k.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	ids := r.KeyIDs()
	if len(ids) != 2 || ids[0] != k.KeyIDs()[0] {
		t.Fatalf("rotated ids %v", ids)
	}
	sigs, err := r.SignCard([]byte(testCard), "")
	if err != nil || len(sigs) != 2 {
		t.Fatalf("%d signatures, %v", len(sigs), err)
	}
	payload, _ := Payload([]byte(testCard))
	// Each signature verifies on its own with the key set of its key.
	for i, s := range sigs {
		one, _ := NewKeys(r.priv[i])
		if h, err := Verify(payload, s, one.JWKS()); err != nil || h.Kid != ids[i] {
			t.Fatalf("signature %d: %v", i, err)
		}
	}
	stored, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(stored)
	if err != nil || strings.Join(back.KeyIDs(), ",") != strings.Join(ids, ",") {
		t.Fatalf("decode: %v %v", err, back)
	}
	if got := r.Retire().KeyIDs(); len(got) != 1 || got[0] != ids[1] {
		t.Fatalf("retire kept %v", got)
	}
	r3, _ := r.Rotate()
	if got := r3.KeyIDs(); len(got) != 2 || got[0] != ids[1] {
		t.Fatalf("a second rotation kept %v", got)
	}
}

// FuzzVerifyCard: whatever a card document holds (a proxy reads it from
// the network), canonicalizing and verifying it returns, without panic.
func FuzzVerifyCard(f *testing.F) {
	k, err := Generate()
	if err != nil {
		f.Fatal(err)
	}
	sigs, err := k.SignCard([]byte(testCard), "https://mesh.example/.well-known/jwks.json")
	if err != nil {
		f.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(testCard), &m)
	m["signatures"] = sigs
	signedDoc, _ := json.Marshal(m)
	f.Add(signedDoc)
	f.Add([]byte(testCard))
	f.Add([]byte(`{"a":[1e400]}`))
	f.Add([]byte(`{"signatures":[{"protected":"e30","signature":"AA"}]}`))
	set := k.JWKS()
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, _ = Canonicalize(doc)
		_, _ = VerifyCard(doc, set)
	})
}
