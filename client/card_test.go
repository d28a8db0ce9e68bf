package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCardURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":                                         "http://127.0.0.1:8080/.well-known/agent-card.json",
		"http://127.0.0.1:8080/":                                        "http://127.0.0.1:8080/.well-known/agent-card.json",
		"http://127.0.0.1:8080/agents/echo":                             "http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json",
		"http://127.0.0.1:8080/agents/echo/":                            "http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json",
		"http://h/agents/echo?x=1":                                      "http://h/agents/echo/.well-known/agent-card.json?x=1",
		"http://127.0.0.1:8080/.well-known/agent-card.json":             "http://127.0.0.1:8080/.well-known/agent-card.json",
		"http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json": "http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json",
		"http://h/.well-known/agent.json":                               "http://h/.well-known/agent.json",
	} {
		assert.Equal(t, want, CardURL(in), in)
	}
	assert.True(t, IsCardURL("http://h/.well-known/agent-card.json"))
	assert.True(t, IsCardURL("/x/.well-known"))
	assert.False(t, IsCardURL("http://h/agents/well-known"))
}

const cardJSON = `{"name":"echo","description":"Echoes","version":"1.2.3",
 "supportedInterfaces":[{"url":"http://127.0.0.1:8080/agents/echo","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
 "capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"echo","name":"Echo","description":"Says it back","tags":["test"]}]}`

func cardServer(t *testing.T) (*httptest.Server, *http.Header) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		switch r.URL.Path {
		case "/agents/echo/.well-known/agent-card.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, cardJSON)
		case "/agents/html/.well-known/agent-card.json":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html></html>")
		case "/agents/other/.well-known/agent-card.json":
			_, _ = io.WriteString(w, `{"foo":1}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestCard(t *testing.T) {
	srv, got := cardServer(t)
	ctx := context.Background()

	card, err := Card(ctx, srv.URL+"/agents/echo/.well-known/agent-card.json", WithHeader("Authorization", "Bearer k"))
	require.NoError(t, err)
	assert.Equal(t, "echo", card.Name)
	assert.Equal(t, "1.2.3", card.Version)
	require.Len(t, card.Skills, 1)
	assert.Equal(t, "Echo", card.Skills[0].Name)
	require.NotNil(t, card.Capabilities.Streaming)
	assert.True(t, *card.Capabilities.Streaming)
	assert.Equal(t, "Bearer k", got.Get("Authorization"))

	card, err = New(srv.URL + "/agents/echo").Card(ctx)
	require.NoError(t, err)
	assert.Equal(t, "echo", card.Name)

	_, err = New(srv.URL + "/agents/nope").Card(ctx)
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, 404, he.StatusCode)
	assert.Equal(t, "HTTP 404 Not Found: 404 page not found", err.Error())

	_, err = New(srv.URL + "/agents/html").Card(ctx)
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "HTTP 200 OK: not an agent card (text/html): <html></html>", err.Error())

	_, err = New(srv.URL + "/agents/other").Card(ctx)
	require.ErrorAs(t, err, &he)
	assert.Contains(t, err.Error(), "not an agent card")

	raw, err := CardJSON(ctx, srv.URL+"/agents/echo/.well-known/agent-card.json")
	require.NoError(t, err)
	assert.Equal(t, cardJSON, string(raw))
	_, err = CardJSON(ctx, srv.URL+"/agents/other/.well-known/agent-card.json")
	require.ErrorAs(t, err, &he)

	_, err = New(srv.URL+"/agents/echo", WithMaxResponseBytes(64)).Card(ctx)
	require.ErrorIs(t, err, ErrResponseTooLarge)
}
