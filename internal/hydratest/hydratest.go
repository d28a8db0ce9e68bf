// Package hydratest runs a real OpenID Connect provider for a test: Ory
// Hydra v2.3.0 with an in-memory database, its public and admin ports on
// 127.0.0.1, issuing JWT access tokens by the client-credentials grant.
// The binary is the one scripts/hydra.sh builds and caches (.ci/run builds
// it); a test that needs it skips only on the explicit opt-out
// A2AMESH_SKIP_HYDRA=1 and fails when the binary is missing.
package hydratest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testbin"
)

// Version is the Hydra scripts/hydra.sh builds.
const Version = "v2.3.0"

// Binary is where the Hydra binary is: $A2AMESH_HYDRA_BIN, or where
// scripts/hydra.sh caches it ($A2AMESH_CACHE, else the user's cache
// directory under a2amesh/).
func Binary() string {
	if p := os.Getenv("A2AMESH_HYDRA_BIN"); p != "" {
		return p
	}
	return filepath.Join(testbin.CacheDir(), "hydra-"+Version, "hydra")
}

// Hydra is a running Hydra.
type Hydra struct {
	// Issuer is its issuer URL, exactly as its tokens' iss says it.
	Issuer string
	admin  string
	hc     *http.Client
}

// Start runs Hydra until the test ends; it skips the test on
// A2AMESH_SKIP_HYDRA=1 and fails it when the binary is missing or Hydra
// is not ready within 60 s.
func Start(t testing.TB) *Hydra {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_HYDRA") == "1" {
		t.Skip("A2AMESH_SKIP_HYDRA=1: the test against Ory Hydra is skipped")
	}
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("hydratest: no Hydra binary at %s (%v): run scripts/hydra.sh (bash .ci/run does), or set A2AMESH_SKIP_HYDRA=1 to skip on purpose", bin, err)
	}
	pub, adm := freePort(t), freePort(t)
	h := &Hydra{Issuer: "http://127.0.0.1:" + pub, admin: "http://127.0.0.1:" + adm, hc: &http.Client{Timeout: 10 * time.Second}}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	// A clean environment: Hydra reads any variable named like one of its
	// settings.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DSN=memory",
		"SECRETS_SYSTEM=a2amesh-test-system-secret-0123456789",
		"URLS_SELF_ISSUER=" + h.Issuer,
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT=" + pub,
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT=" + adm,
		"STRATEGIES_ACCESS_TOKEN=jwt",
		"LOG_LEVEL=warn",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("hydratest: start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := h.hc.Get(h.admin + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("hydratest: Hydra exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hydratest: Hydra not ready within 60s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return h
}

// Client is an OAuth 2.0 client of the client-credentials grant.
type Client struct {
	ID, Secret string
	// Audience and Scope are what the client may ask for.
	Audience []string
	Scope    string
	// Lifespan of its access tokens ("" for Hydra's default, an hour).
	Lifespan string
}

// CreateClient registers c through the admin API.
func (h *Hydra) CreateClient(t testing.TB, c Client) {
	t.Helper()
	body := map[string]any{
		"client_id": c.ID, "client_secret": c.Secret,
		"grant_types": []string{"client_credentials"}, "response_types": []string{"token"},
		"token_endpoint_auth_method": "client_secret_basic",
		"audience":                   c.Audience, "scope": c.Scope,
	}
	if c.Lifespan != "" {
		body["client_credentials_grant_access_token_lifespan"] = c.Lifespan
	}
	data, _ := json.Marshal(body)
	resp, err := h.hc.Post(h.admin+"/admin/clients", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("hydratest: create client: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("hydratest: create client: HTTP %d: %s", resp.StatusCode, b)
	}
}

// Token gets an access token (a JWT) for c by the client-credentials
// grant, for audience and scope.
func (h *Hydra) Token(t testing.TB, c Client, audience, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "audience": {audience}, "scope": {scope}}
	req, err := http.NewRequest(http.MethodPost, h.Issuer+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatalf("hydratest: token: %v", err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	if resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("hydratest: token: HTTP %d: %s %s", resp.StatusCode, tok.Error, tok.Description)
	}
	return tok.AccessToken
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
