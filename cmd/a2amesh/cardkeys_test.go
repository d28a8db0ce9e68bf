package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/internal/pushsig"
)

// TestCardKeysCommand: show creates the key set, rotate adds a key after
// it (two kids, the old first), retire keeps the new one alone.
func TestCardKeysCommand(t *testing.T) {
	nd := natstest.StartSingle(t)
	var out bytes.Buffer
	cardKeysOut = &out
	t.Cleanup(func() { cardKeysOut = os.Stdout })
	run := func(op string) []string {
		t.Helper()
		out.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, runCardKeys(ctx, []string{"--nats", nd.URL(), op}))
		var kids []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			kids = append(kids, strings.Fields(l)[0])
		}
		return kids
	}
	first := run("show")
	require.Len(t, first, 1)
	require.Equal(t, first, run("show"), "show does not change the key set")
	rotated := run("rotate")
	require.Len(t, rotated, 2)
	require.Equal(t, first[0], rotated[0])
	require.Equal(t, rotated, run("show"))
	require.Equal(t, rotated[1:], run("retire"))
	require.Equal(t, rotated[1:], run("show"))

	require.Error(t, runCardKeys(context.Background(), []string{"--nats", nd.URL(), "spin"}))
}

// TestCardSigningKeyFlag: --card-signing-key reads up to two PEM files,
// oldest first, and refuses a bad file or a third key.
func TestCardSigningKeyFlag(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		k, err := pushsig.GenerateKey()
		require.NoError(t, err)
		p, err := pushsig.EncodePEM(k)
		require.NoError(t, err)
		f := filepath.Join(dir, "k"+string(rune('0'+i))+".pem")
		require.NoError(t, os.WriteFile(f, p, 0o600))
		files = append(files, f)
	}
	keys, err := loadCardKeys(files[0] + ", " + files[1])
	require.NoError(t, err)
	require.Len(t, keys.KeyIDs(), 2)
	none, err := loadCardKeys("")
	require.NoError(t, err)
	require.Nil(t, none)
	_, err = loadCardKeys(strings.Join(files, ","))
	require.ErrorContains(t, err, "--card-signing-key")
	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a key"), 0o600))
	_, err = loadCardKeys(bad)
	require.ErrorContains(t, err, "--card-signing-key")
}
