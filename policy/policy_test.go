package policy

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const example = `
# who                agents        actions
allow principal:alice  echo,slow   send,read,cancel
allow scope:a2a.call   *           send,read   # any caller with the scope
allow role:operators   *           ops,read
allow principal:bob    billing-*   *
allow *                public-?    read
`

func TestAllows(t *testing.T) {
	p, err := Parse(example)
	require.NoError(t, err)
	alice := Caller{Principal: "alice"}
	bob := Caller{Principal: "bob"}
	svc := Caller{Principal: "svc", Grants: []string{"a2a.call"}}
	ops := Caller{Principal: "olga", Grants: []string{"operators"}}
	anon := Caller{}
	for _, tc := range []struct {
		c     Caller
		a     Action
		agent string
		want  bool
	}{
		{alice, Send, "echo", true},
		{alice, Cancel, "slow", true},
		{alice, Push, "echo", false},
		{alice, Send, "upper", false},
		{bob, Push, "billing-eu", true},
		{bob, ExtendedCard, "billing-eu", true},
		{bob, Send, "echo", false},
		{svc, Send, "anything", true},
		{svc, Cancel, "anything", false},
		{ops, Ops, "echo", true},
		{ops, Send, "echo", false},
		{anon, Read, "public-1", true},
		{anon, Read, "public-12", false},
		{anon, Send, "public-1", false},
		{Caller{Principal: "mallory", Grants: []string{"alice"}}, Send, "echo", false}, // a grant is not a principal
	} {
		assert.Equal(t, tc.want, p.Allows(tc.c, tc.a, tc.agent), "%+v %s %s", tc.c, tc.a, tc.agent)
	}
	assert.True(t, p.Sees(alice, "slow"))
	assert.False(t, p.Sees(alice, "upper"))
	assert.True(t, p.Sees(anon, "public-x"))
	assert.True(t, p.AllowsAny(ops, Ops))
	assert.False(t, p.AllowsAny(alice, Ops))
	assert.False(t, p.AllowsAny(alice, Audit))

	var none *Policy
	assert.True(t, none.Allows(anon, Send, "echo"), "no policy: today's behaviour")
	assert.True(t, none.Sees(anon, "echo"))
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"allow alice echo send", `line 1: who "alice"`},
		{"\nallow principal:alice echo fly", `line 2: action "fly"`},
		{"deny principal:alice echo send", "line 1: want"},
		{"allow principal:alice echo", "line 1: want"},
		{"allow principal:alice [echo send", `line 1: agents "[echo": bad pattern`},
		{"allow principal: echo send", `line 1: who "principal:"`},
		{"# only a comment\n", "no rules"},
	} {
		_, err := Parse(tc.text)
		require.Error(t, err, tc.text)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// A file that changes is read again; one that stops parsing keeps the
// last good policy and says why.
func TestFileReloadKeepsTheLastGoodPolicy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow principal:alice echo send\n"), 0o600))
	var logs bytes.Buffer
	f, err := Load(path, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	alice := Caller{Principal: "alice"}
	require.True(t, f.Policy().Allows(alice, Send, "echo"))

	require.NoError(t, os.WriteFile(path, []byte("allow principal:alice slow send\n"), 0o600))
	require.NoError(t, f.Reload())
	assert.False(t, f.Policy().Allows(alice, Send, "echo"))
	assert.True(t, f.Policy().Allows(alice, Send, "slow"))

	require.NoError(t, os.WriteFile(path, []byte("allow principal:alice slow launch\n"), 0o600))
	require.Error(t, f.Reload())
	assert.True(t, f.Policy().Allows(alice, Send, "slow"), "a bad file keeps the last good policy")
	assert.Contains(t, logs.String(), "does not parse; keeping the policy in force")
	assert.Contains(t, logs.String(), `action \"launch\"`)

	// An unparsable file at start is an error: the edge does not start.
	require.NoError(t, os.WriteFile(path, []byte("allow everyone\n"), 0o600))
	_, err = Load(path, nil)
	require.Error(t, err)
	_, err = Load(filepath.Join(dir, "missing"), nil)
	require.Error(t, err)

	var nf *File
	assert.Nil(t, nf.Policy(), "a nil File is no policy")
}

// BenchmarkAllows is the policy's cost per call: a 20-rule policy, the
// caller matched by the last rule.
func BenchmarkAllows(b *testing.B) {
	text := ""
	for i := 0; i < 19; i++ {
		text += "allow principal:user-" + string(rune('a'+i)) + " team-" + string(rune('a'+i)) + "-* send,read\n"
	}
	text += "allow scope:a2a.call echo,billing-* send,read,cancel\n"
	p, err := Parse(text)
	require.NoError(b, err)
	c := Caller{Principal: "svc", Grants: []string{"openid", "a2a.call"}}
	for i := 0; i < b.N; i++ {
		if !p.Allows(c, Send, "billing-eu") {
			b.Fatal("denied")
		}
	}
}
