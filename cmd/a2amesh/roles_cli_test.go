package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/agentrt"
)

const testSecret = "s3cret-0123456789abcdef"

func keyFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	require.NoError(t, os.Chmod(p, mode))
	return p
}

// textLog returns a logger writing logfmt into the returned buffer.
func textLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// A key file or key list that is given but holds no credentials stops the
// edge from starting: it must not run open.
func TestLoadAuthFailsClosed(t *testing.T) {
	log, _ := textLog()
	for name, text := range map[string]string{"empty": "", "comments only": "# keys go here\n\n# alice xxx\n"} {
		path := keyFile(t, text, 0o600)
		a, err := loadAuth(path, "", log)
		require.Error(t, err, name)
		require.Nil(t, a, name)
		require.Contains(t, err.Error(), "no credentials", name)
		require.Contains(t, err.Error(), path, name)
	}
	for _, list := range []string{",", " , ,", "   "} {
		_, err := loadAuth("", list, log)
		require.ErrorContains(t, err, "A2AMESH_API_KEYS is set but holds no credentials", "list %q", list)
	}
	_, err := loadAuth(filepath.Join(t.TempDir(), "missing"), "", log)
	require.ErrorIs(t, err, os.ErrNotExist)

	// Neither given: no auth, no error.
	a, err := loadAuth("", "", log)
	require.NoError(t, err)
	require.Nil(t, a)

	// Both given: the principals of both.
	a, err = loadAuth(keyFile(t, "alice "+testSecret+"\n", 0o600), "bob:"+testSecret+"-bob,carol:"+testSecret+"-carol", log)
	require.NoError(t, err)
	require.Equal(t, 3, a.Principals())
}

// A key file others may read gets a warning naming it and the fix; a
// private one does not.
func TestLoadAuthWarnsOpenFile(t *testing.T) {
	log, buf := textLog()
	path := keyFile(t, "alice "+testSecret+"\n", 0o644)
	_, err := loadAuth(path, "", log)
	require.NoError(t, err)
	require.Contains(t, buf.String(), "level=WARN")
	require.Contains(t, buf.String(), "chmod 600")
	require.Contains(t, buf.String(), path)
	require.Contains(t, buf.String(), "mode=0644")

	buf.Reset()
	_, err = loadAuth(keyFile(t, "alice "+testSecret+"\n", 0o640), "", log)
	require.NoError(t, err)
	require.Contains(t, buf.String(), "chmod 600", "group-readable warns too")

	buf.Reset()
	_, err = loadAuth(keyFile(t, "alice "+testSecret+"\n", 0o600), "", log)
	require.NoError(t, err)
	require.Empty(t, buf.String())
}

// The edge and dev roles refuse to start on a comment-only key file or an
// empty key list, before they touch NATS or the network.
func TestRolesRefuseEmptyAuth(t *testing.T) {
	t.Setenv("A2AMESH_API_KEYS", "")
	path := keyFile(t, "# nobody yet\n", 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, role := range []string{"edge", "dev"} {
		args := []string{"--auth-file", path, "--listen", "127.0.0.1:0", "--log-level", "error"}
		if role == "edge" {
			args = append(args, "--nats", "nats://127.0.0.1:1")
		} else {
			args = append(args, "--data", t.TempDir())
		}
		start := time.Now()
		err := commands[role].run(ctx, args)
		require.Error(t, err, role)
		require.Contains(t, err.Error(), "no credentials", role)
		require.Less(t, time.Since(start), 5*time.Second, "%s: refused at once", role)
	}

	t.Setenv("A2AMESH_API_KEYS", " , ")
	err := commands["edge"].run(ctx, []string{"--listen", "127.0.0.1:0", "--log-level", "error", "--nats", "nats://127.0.0.1:1"})
	require.ErrorContains(t, err, "A2AMESH_API_KEYS")
}

// With credentials, the start-up log says auth is on and for how many
// principals; without, that it is off.
func TestEdgeConfigLogsAuth(t *testing.T) {
	t.Setenv("A2AMESH_API_KEYS", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-file", keyFile(t, "alice "+testSecret+"\nbob "+testSecret+"-b\nalice "+testSecret+"-a\n", 0o600)}, "principals=2"},
		{nil, "auth off"},
	} {
		fs := newFlagSet("edge", "", "test")
		ef := addEdgeFlags(fs, "")
		require.NoError(t, fs.Parse(append(tc.args, "--metrics=false")))
		log, buf := textLog()
		cfg, err := ef.config(log, nil)
		require.NoError(t, err)
		require.Contains(t, buf.String(), tc.want)
		if tc.want == "principals=2" {
			require.Contains(t, buf.String(), "auth on")
			require.NotNil(t, cfg.Auth)
		}
	}
}

// edge -h explains --default-agent: without it, /a2a has no agent.
func TestEdgeHelpDefaultAgent(t *testing.T) {
	fs := newFlagSet("edge", "", "test")
	addEdgeFlags(fs, "")
	f := fs.Lookup("default-agent")
	require.NotNil(t, f)
	require.Contains(t, f.Usage, "POST /a2a")
	require.Contains(t, f.Usage, "this edge has no default agent")
	require.True(t, strings.Contains(f.Usage, "default: none"))
}

// What the roles say about NATS servers names them without credentials,
// and says why a server cannot be reached in a few words.
func TestNATSAddressesShown(t *testing.T) {
	require.Equal(t, "nats://n1:4222,tls://n2:4222,n3", showURLs("nats://alice:pw@n1:4222, tls://s3cret-token@n2:4222,u:p@n3"))
	require.Equal(t, "nats://127.0.0.1:4222", showURLs("nats://127.0.0.1:4222"))
	for in, want := range map[string]string{"nats://h": "h:4222", "h:5": "h:5", "tls://u:p@[::1]:7": "[::1]:7", "nats://:4222": ""} {
		got, err := natsAddr(in)
		if want == "" {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:1")
	require.Error(t, err)
	require.Equal(t, "connection refused", dialReason(err))
	_, err = (&net.Dialer{}).DialContext(ctx, "tcp", "no-such-host.invalid:4222")
	require.Error(t, err)
	require.Contains(t, dialReason(err), "no-such-host.invalid")
}

// --delegate-wait: the default is agentrt's; 0 means "until the task
// timeout", which the worker spells as a negative wait.
func TestDelegateWaitFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, agentrt.DefaultMaxWait},
		{[]string{"--delegate-wait", "5s"}, 5 * time.Second},
		{[]string{"--delegate-wait", "0"}, -1},
	} {
		fs := newFlagSet("worker", "", "test")
		get := addDelegateWaitFlag(fs)
		require.NoError(t, fs.Parse(c.args))
		require.Equal(t, c.want, get(), "%v", c.args)
	}
}
