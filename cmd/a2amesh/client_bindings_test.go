package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// The client commands speak every binding the card lists: --binding rest
// and grpc send, stream, get and cancel through the HTTP+JSON and gRPC
// interfaces of a real mesh, with the answers JSON-RPC gets.
func TestCLIBindings(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	taskLine := regexp.MustCompile(`(?m)^task\s+(\S+)$`)
	wire := map[string]string{"jsonrpc": a2a.BindingJSONRPC, "rest": a2a.BindingHTTPJSON, "grpc": a2a.BindingGRPC}
	for _, b := range []string{"jsonrpc", "rest", "grpc"} {
		t.Run(b, func(t *testing.T) {
			// The client the commands use speaks the binding asked for,
			// for an agent's endpoint and for the mesh endpoint.
			for _, ep := range []string{m.URL + "/agents/echo", m.URL + "/a2a"} {
				cl, err := (&commonFlags{binding: b}).newClient(context.Background(), ep)
				require.NoError(t, err)
				assert.Equal(t, wire[b], cl.Binding(), ep)
				require.NoError(t, cl.Close())
			}
			out, _, err := runCLI(t, cliSend, "", "--url", m.URL, "--binding", b, "hi over "+b)
			require.NoError(t, err)
			assert.Contains(t, out, "status   completed")
			assert.Contains(t, out, "artifact echo: hi over "+b)
			id := taskLine.FindStringSubmatch(out)
			require.Len(t, id, 2, out)

			// get through the mesh endpoint (no agent: found by id)
			out, _, err = runCLI(t, cliGet, "", "--url", m.URL, "--binding", b, id[1])
			require.NoError(t, err)
			assert.Contains(t, out, "status   completed")

			// a finished task cannot be canceled: the binding's error
			// comes back as the A2A code
			_, _, err = runCLI(t, cliCancel, "", "--url", m.URL, "--binding", b, id[1])
			var ae *a2a.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, a2a.CodeTaskNotCancelable, ae.Code)

			out, _, err = runCLI(t, cliStream, "", "--url", m.URL, "--binding", b, "--agent", "slow", "chunks=2 delay=10ms")
			require.NoError(t, err)
			assert.Contains(t, out, "chunk 2/2")
			assert.Contains(t, out, "status   completed")

			_, _, err = runCLI(t, cliGet, "", "--url", m.URL, "--binding", b, "no-such-task")
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, a2a.CodeTaskNotFound, ae.Code)
		})
	}
}

// A binding the card does not list is an error saying so, not a silent
// fall back to JSON-RPC.
func TestCLIBindingNotOffered(t *testing.T) {
	m := meshtest.Start(t) // no gRPC
	_, _, err := runCLI(t, cliSend, "", "--url", m.URL, "--binding", "grpc", "hi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lists no GRPC interface")
}

// --extensions requests extensions on every binding, and stderr says
// which the answer named: here the mesh's own trace extension.
func TestCLIExtensions(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	for _, b := range []string{"jsonrpc", "rest", "grpc"} {
		t.Run(b, func(t *testing.T) {
			_, errOut, err := runCLI(t, cliSend, "", "--url", m.URL, "--binding", b,
				"--extensions", "urn:none, "+tracing.ExtensionURI, "hi")
			require.NoError(t, err)
			assert.Contains(t, errOut, "extensions activated: "+tracing.ExtensionURI+"\n")

			_, errOut, err = runCLI(t, cliStream, "", "--url", m.URL, "--binding", b, "--agent", "slow",
				"--extensions", "urn:none", "chunks=1 delay=10ms")
			require.NoError(t, err)
			assert.Contains(t, errOut, "extensions activated: none\n")
		})
	}
}
