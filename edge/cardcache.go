package edge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Card routes answer with the caching headers of spec §8.6.1: an ETag,
// the SHA-256 of the exact bytes of the body (so it changes with the
// registry, the signatures and the rewritten URLs, and is the same at
// every edge that serves the same bytes: signatures are deterministic),
// and Cache-Control with a short max-age. A request whose If-None-Match
// names the ETag gets 304 Not Modified with no body.

// cardMaxAge is how long clients may cache a card or the card list:
// short, because the mesh card lists the live agents.
const cardMaxAge = 60 * time.Second

// jwksMaxAge is how long clients may cache the JWK Set: the time between
// a key rotation and retiring the old key must exceed it.
const jwksMaxAge = 300 * time.Second

// writeCached serves v as JSON with an ETag over its bytes and
// Cache-Control max-age, answering 304 when If-None-Match matches.
func (e *Edge) writeCached(w http.ResponseWriter, r *http.Request, v any, maxAge time.Duration) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(maxAge.Seconds())))
	h.Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// etagMatches reports whether an If-None-Match header matches etag
// (weak comparison, as RFC 9110 asks for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
