package browser

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/oidctest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/tokens"
)

// A token holder uses the console as a key holder does: the edge takes
// bearer tokens of an OpenID Connect issuer (and no API keys); the user
// pastes an access token in the field, and the page shows the fleet the
// policy lets the token's scope see, chats with echo and lists the task.
func TestConsoleBrowserBearerToken(t *testing.T) {
	is := oidctest.Start(t)
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow scope:a2a.console echo send,read,ops\n"), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Tokens, c.Edge.Policy = v, pf }))
	resp, err := http.Get(m.URL + "/ops/v1/fleet")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	tok := is.Token(t, oidctest.Claims{"sub": "dana", "aud": "a2amesh", "scope": "a2a.console"})
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("the page to ask for a credential", `document.querySelector('#fleet-state').textContent.includes('token')`)
	b.do(chromedp.SendKeys(chromedp.CSS("#key-input"), tok), chromedp.Click(chromedp.CSS("#key-save")))
	b.waitFor("echo with 1 worker", fleetCell("echo", "workers")+` === "1"`)
	var rows int
	b.eval(`document.querySelectorAll('#fleet-body tr').length`, &rows)
	require.Equal(t, 1, rows, "the policy lets the token see echo only")

	b.chat("echo", "with a token", 1)
	require.Equal(t, "with a token", b.text(`#chat-log li.agent .artifact`))
	b.do(chromedp.Click(chromedp.CSS("#tab-tasks")))
	b.waitFor("the token's task listed", `document.querySelectorAll('#tasks-body tr').length === 1`)
	b.noCSPViolations()
}
