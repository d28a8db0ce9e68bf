package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// WellKnownCardPath is where a card is served: A2A 1.0 §8.2 puts it at a
// server's root, and the mesh also serves each agent's card under the
// agent's own URL.
const WellKnownCardPath = "/.well-known/agent-card.json"

// CardURL returns the URL of the card of the agent at agentURL:
// <agentURL>/.well-known/agent-card.json. A URL whose path already has a
// /.well-known/ segment is returned unchanged; a query string is kept.
func CardURL(agentURL string) string {
	u, err := url.Parse(agentURL)
	if err != nil {
		if strings.Contains(agentURL, "/.well-known/") {
			return agentURL
		}
		return strings.TrimRight(agentURL, "/") + WellKnownCardPath
	}
	if IsCardURL(u.Path) {
		return agentURL
	}
	u.Path = strings.TrimRight(u.Path, "/") + WellKnownCardPath
	u.RawPath = ""
	return u.String()
}

// IsCardURL reports whether a URL or path points into a /.well-known/
// directory, so it names a card rather than an agent.
func IsCardURL(s string) bool {
	if u, err := url.Parse(s); err == nil {
		s = u.Path
	}
	return strings.Contains(s+"/", "/.well-known/")
}

// Card fetches and decodes the agent card at cardURL. Options set the HTTP
// client, headers and size bound as for New.
func Card(ctx context.Context, cardURL string, opts ...Option) (*a2a.AgentCard, error) {
	card, _, err := New(cardURL, opts...).fetchCard(ctx, cardURL)
	return card, err
}

// CardJSON fetches the agent card at cardURL and returns the document as
// served, after checking that it decodes as a card. Use it to show or keep
// a card with fields the a2a types do not model (e.g. signatures).
func CardJSON(ctx context.Context, cardURL string, opts ...Option) ([]byte, error) {
	_, raw, err := New(cardURL, opts...).fetchCard(ctx, cardURL)
	return raw, err
}

// Card fetches the card of the client's agent, from CardURL(c.URL()). A
// gRPC client, whose URL is no HTTP URL, has no such card: it fails with
// ErrUnsupported.
func (c *Client) Card(ctx context.Context) (*a2a.AgentCard, error) {
	if c.binding == a2a.BindingGRPC {
		return nil, fmt.Errorf("client: %w: the card of a gRPC address", ErrUnsupported)
	}
	card, _, err := c.fetchCard(ctx, CardURL(c.url))
	return card, err
}

func (c *Client) fetchCard(ctx context.Context, cardURL string) (*a2a.AgentCard, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, nil, err
	}
	c.setHeaders(req, "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	limit := c.maxBody
	if resp.StatusCode != http.StatusOK && limit > errorBodyBytes {
		limit = errorBodyBytes
	}
	body, err := readBounded(resp.Body, limit)
	if resp.StatusCode != http.StatusOK {
		return nil, nil, newHTTPError(resp, body)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading card (HTTP %s): %w", status(resp), err)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil || card.Name == "" {
		he := newHTTPError(resp, body)
		he.Problem = "not an agent card"
		return nil, nil, he
	}
	return &card, body, nil
}
