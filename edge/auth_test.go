package edge

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	secretA = "alice-0123456789abcdef"
	secretB = "bob-0123456789abcdef00"
	secretC = "carol-0123456789abcdef"
)

func TestParseCredentialsFormat(t *testing.T) {
	text := strings.Join([]string{
		"# the mesh's clients",
		"",
		"   ",
		"alice " + secretA,
		"\tbob:" + secretB + "  ",
		"  # indented comment",
		"carol=" + secretC,
		"alice\t" + secretA + "-rotated",
	}, "\n")
	got, err := ParseCredentials(text)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{
		"alice": {secretA, secretA + "-rotated"},
		"bob":   {secretB},
		"carol": {secretC},
	}, got)
}

func TestParseCredentialsBadLine(t *testing.T) {
	for _, line := range []string{"alice", "alice:", ":" + secretA, "= " + secretA} {
		_, err := ParseCredentials("# ok\n" + line + "\n")
		require.Error(t, err, "line %q", line)
		require.Contains(t, err.Error(), "line 2", "the error names the line of %q", line)
	}
}

func TestParseCredentialsNothing(t *testing.T) {
	for _, text := range []string{"", "\n\n", "# only a comment\n   # another\n\n"} {
		got, err := ParseCredentials(text)
		require.NoError(t, err)
		require.Empty(t, got, "%q", text)
	}
}

func TestNewAuthRules(t *testing.T) {
	_, err := NewAuth(map[string][]string{"alice": {"short"}})
	require.ErrorContains(t, err, "at least 16")
	_, err = NewAuth(map[string][]string{"alice": {strings.Repeat("x", 15)}})
	require.ErrorContains(t, err, "at least 16")
	a, err := NewAuth(map[string][]string{"alice": {strings.Repeat("x", 16)}})
	require.NoError(t, err)
	require.Equal(t, 1, a.Principals())

	_, err = NewAuth(map[string][]string{"alice": {secretA}, "bob": {secretA}})
	require.ErrorContains(t, err, "share a secret")
	// The same secret twice for one principal is harmless.
	a, err = NewAuth(map[string][]string{"alice": {secretA, secretA}, "bob": {secretB}})
	require.NoError(t, err)
	require.Equal(t, 2, a.Principals())

	_, err = NewAuth(map[string][]string{})
	require.ErrorContains(t, err, "no credentials")
	_, err = NewAuth(map[string][]string{"alice": nil})
	require.ErrorContains(t, err, "no credentials")
	require.Equal(t, 0, (*Auth)(nil).Principals())
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestLoadAuthFile(t *testing.T) {
	a, err := LoadAuthFile(writeFile(t, "# keys\nalice "+secretA+"\nbob:"+secretB+"\nalice="+secretA+"-2\n"))
	require.NoError(t, err)
	require.Equal(t, 2, a.Principals())
	for secret, want := range map[string]string{secretA: "alice", secretA + "-2": "alice", secretB: "bob"} {
		r := httptest.NewRequest("POST", "/a2a", nil)
		r.Header.Set(APIKeyHeader, secret)
		p, ok := a.Authenticate(r)
		require.True(t, ok)
		require.Equal(t, want, p)
		r = httptest.NewRequest("POST", "/a2a", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		p, ok = a.Authenticate(r)
		require.True(t, ok)
		require.Equal(t, want, p)
	}
	r := httptest.NewRequest("POST", "/a2a", nil)
	r.Header.Set(APIKeyHeader, secretC)
	_, ok := a.Authenticate(r)
	require.False(t, ok)

	for name, text := range map[string]string{"empty": "", "comments only": "# nobody yet\n\n  # still nobody\n"} {
		path := writeFile(t, text)
		_, err := LoadAuthFile(path)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "no credentials", name)
		require.Contains(t, err.Error(), path, name)
	}

	_, err = LoadAuthFile(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = LoadAuthFile(writeFile(t, "alice tooshort\n"))
	require.ErrorContains(t, err, "at least 16")
	_, err = LoadAuthFile(writeFile(t, "alice "+secretA+"\nbob "+secretA+"\n"))
	require.ErrorContains(t, err, "share a secret")
	_, err = LoadAuthFile(writeFile(t, "alice "+secretA+"\njust-a-name\n"))
	require.ErrorContains(t, err, "line 2")
}
