// Package console serves the mesh's web console: a page, embedded in the
// binary, that shows the fleet and talks to agents through the edge's own
// endpoints (the A2A bindings and the read-only operator API under
// /ops/v1). It fetches nothing from elsewhere.
//
// Every answer carries a Content-Security-Policy that allows scripts,
// styles, images and connections from the page's own origin only (no
// inline script or style, no eval) and forbids framing, with nosniff and
// no-referrer. The assets are served with Cache-Control: no-cache and a
// strong ETag of their content: a browser revalidates each load with a
// request answered 304, and a new binary's assets are seen at once. They
// are gzipped once, at start, for browsers that take it.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console"

// CSP is the Content-Security-Policy of every console answer.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'"

// file is one embedded asset, read once, and gzipped once when that
// saves much.
type file struct {
	body  []byte
	ctype string
	etag  string
	gz    []byte // nil: served as is
}

// Handler serves the console: GET /console redirects to /console/, which
// is the page; /console/<file> are its assets. Any other path under the
// prefix is 404.
type Handler struct {
	files map[string]file // by name under assets/
}

// New returns the console's handler.
func New() *Handler {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		h.files[strings.TrimPrefix(p, "assets/")] = file{body: b, ctype: contentType(p),
			etag: `"` + hex.EncodeToString(sum[:12]) + `"`, gz: gzipped(b)}
		return nil
	})
	if err != nil {
		panic("console: embedded assets: " + err.Error()) // the embed is fixed at build time
	}
	return h
}

// contentType is the media type of an asset, by its extension.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// gzipped is b gzipped, or nil when that does not save a quarter of it.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() > len(b)*3/4 {
		return nil
	}
	return buf.Bytes()
}

// Size is the number of bytes of the console's assets together: what a
// first load of the page transfers, uncompressed.
func (h *Handler) Size() int {
	n := 0
	for _, f := range h.files {
		n += len(f.body)
	}
	return n
}

// SecurityHeaders sets the headers every console answer carries.
func SecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// ServeHTTP serves GET and HEAD requests for the console's paths.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	switch {
	case !ok:
		http.NotFound(w, r)
		return
	case rest == "":
		// The page's relative asset and API paths resolve against
		// /console/. The Location is relative too, so that the console
		// works behind a proxy that mounts the edge under a path.
		w.Header().Set("Location", "console/")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusFound)
		return
	case rest == "/":
		rest = "/index.html"
	}
	f, ok := h.files[strings.TrimPrefix(rest, "/")]
	if !ok {
		w.Header().Set("Cache-Control", "no-store")
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", "no-cache")
	body, etag := f.body, f.etag
	if f.gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			// Another representation, another ETag.
			body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	// A zero modification time: ServeContent answers conditional
	// requests by the ETag alone.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether r's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

// GzipSize is the number of bytes of the console's assets as a browser
// that takes gzip gets them.
func (h *Handler) GzipSize() int {
	n := 0
	for _, f := range h.files {
		if f.gz != nil {
			n += len(f.gz)
		} else {
			n += len(f.body)
		}
	}
	return n
}
