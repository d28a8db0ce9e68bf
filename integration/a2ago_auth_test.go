package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// keyTransport adds an API key to every request.
type keyTransport struct {
	base http.RoundTripper
	key  string
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Api-Key", k.key)
	return k.base.RoundTrip(r)
}

// withoutSecurityRequirements works around a2a-go issue #430: the SDK
// (v2.4.0) reads SecurityRequirement scopes as bare arrays, while a2a.proto
// makes them StringList messages, {"list": [...]} in ProtoJSON, as the
// mesh (and the spec's own sample card, and @a2a-js/sdk) writes them. Its
// card parsers fail on any card carrying securityRequirements; this strips
// that one field before the SDK parses, the rest is the SDK's.
func withoutSecurityRequirements(parse agentcard.Parser) agentcard.Parser {
	return func(body []byte) (*a2a.AgentCard, error) {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, err
		}
		delete(raw, "securityRequirements")
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		return parse(b)
	}
}

// The official Go SDK reads the security schemes of the mesh's cards with
// both its 1.0 and its 0.3 card parser, and calls through with the key.
func TestA2AGoReadsSecuredCards(t *testing.T) {
	m := startAuthMesh(t)
	for _, tc := range []struct {
		name   string
		parser agentcard.Parser
	}{{"v1.0", agentcard.DefaultCardParser}, {"v0.3", a2av0.NewAgentCardParser()}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := gosdkStepContext(t)
			hc, _ := gosdkHTTPClient()
			resolver := &agentcard.Resolver{Client: hc, CardParser: tc.parser}
			if _, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "echo")); err == nil {
				t.Log("a2a-go now parses spec securityRequirements: drop withoutSecurityRequirements")
			}
			resolver.CardParser = withoutSecurityRequirements(tc.parser)
			card, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "echo"))
			if err != nil {
				t.Fatalf("resolving the secured card: %v", err)
			}
			if len(card.SecuritySchemes) != 2 {
				t.Fatalf("security schemes %v, want apiKey and bearer", card.SecuritySchemes)
			}
			kinds := map[string]bool{}
			for _, s := range card.SecuritySchemes {
				kinds[fmt.Sprintf("%T", s)] = true
			}
			if !kinds["a2a.APIKeySecurityScheme"] || !kinds["a2a.HTTPAuthSecurityScheme"] {
				t.Fatalf("scheme types %v", kinds)
			}
			hc.Transport = keyTransport{base: hc.Transport, key: aliceKey}
			factory := a2aclient.NewFactory(a2aclient.WithJSONRPCTransport(hc))
			if tc.name == "v0.3" {
				factory = gosdkV03Factory(hc)
			}
			client, err := factory.CreateFromCard(ctx, card)
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			defer client.Destroy()
			res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("with a key")),
			})
			if err != nil {
				t.Fatalf("SendMessage with the key: %v", err)
			}
			if task := gosdkAsTask(t, res); task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("state %s", task.Status.State)
			}
		})
	}
}
