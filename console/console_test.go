package console

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// get asks the console served by srv for path, without following
// redirects.
func get(t *testing.T, srv *httptest.Server, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// Every answer of the console, pages, assets, redirects and 404s alike,
// carries the strict CSP, nosniff and no framing; each asset has its
// content type and is revalidated by its ETag.
func TestConsoleHeaders(t *testing.T) {
	srv := httptest.NewServer(New())
	defer srv.Close()

	for path, ctype := range map[string]string{
		"/console/":            "text/html; charset=utf-8",
		"/console/app.js":      "text/javascript; charset=utf-8",
		"/console/fleet.js":    "text/javascript; charset=utf-8",
		"/console/console.css": "text/css; charset=utf-8",
		"/console/favicon.svg": "image/svg+xml",
	} {
		resp, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, ctype, resp.Header.Get("Content-Type"), path)
		require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), path)
		requireStrict(t, resp, path)
		require.NotEmpty(t, body, path)
		etag := resp.Header.Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{24}(-gz)?"$`, etag, path)
		again, body := get(t, srv, path, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, again.StatusCode, path)
		require.Empty(t, body, path)
	}

	// Gzipped for a browser that takes it: another representation, with
	// its own ETag.
	plain, body := get(t, srv, "/console/chat.js", "Accept-Encoding", "identity")
	require.Empty(t, plain.Header.Get("Content-Encoding"))
	zipped, zbody := get(t, srv, "/console/chat.js", "Accept-Encoding", "gzip, deflate")
	require.Equal(t, "gzip", zipped.Header.Get("Content-Encoding"))
	require.Contains(t, zipped.Header.Values("Vary"), "Accept-Encoding")
	require.NotEqual(t, plain.Header.Get("ETag"), zipped.Header.Get("ETag"))
	zr, err := gzip.NewReader(strings.NewReader(zbody))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, body, string(unzipped))
	requireStrict(t, zipped, "/console/chat.js gzipped")
	again, _ := get(t, srv, "/console/chat.js", "Accept-Encoding", "gzip", "If-None-Match", zipped.Header.Get("ETag"))
	require.Equal(t, http.StatusNotModified, again.StatusCode)

	resp, _ := get(t, srv, "/console")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "console/", resp.Header.Get("Location"), "relative: the console works under a proxy's path")
	requireStrict(t, resp, "/console")

	for _, path := range []string{"/console/nope.js", "/console/assets/app.js", "/console/../console.go"} {
		resp, _ := get(t, srv, path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		requireStrict(t, resp, path)
	}

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/console/", nil)
	require.NoError(t, err)
	resp, err = srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func requireStrict(t *testing.T, resp *http.Response, path string) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
		"frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		require.Contains(t, csp, want, path)
	}
	require.NotContains(t, csp, "unsafe-", path)
	require.NotContains(t, csp, "*", path)
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
	require.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), path)
}

// The page has no inline script or style (the CSP would block it), and
// the scripts never turn a string into markup or code: agent output can
// only ever be text.
func TestConsoleAssetsHaveNoInlineCodeNorHTMLSinks(t *testing.T) {
	h := New()
	page := string(h.files["index.html"].body)
	for _, m := range regexp.MustCompile(`(?is)<script\b[^>]*>`).FindAllString(page, -1) {
		require.Contains(t, m, ` src="`, "inline script: %s", m)
	}
	require.NotRegexp(t, `(?i)<style\b|\sstyle\s*=|\son[a-z]+\s*=|javascript:`, page)
	require.NotRegexp(t, `(?i)https?://`, page, "nothing from elsewhere")
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(\s*['"]|import\(\s*['"]https?:`)
	n := 0
	for name, f := range h.files {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		n++
		require.NotRegexp(t, sinks, string(f.body), name)
		require.NotRegexp(t, `https?://`, string(f.body), "%s: nothing from elsewhere", name)
	}
	require.GreaterOrEqual(t, n, 4, "the page's modules")
	t.Logf("assets: %d files, %d bytes, %d gzipped", len(h.files), h.Size(), h.GzipSize())
}
