package edge

import (
	"log/slog"
	"net/http"
	"time"
)

// NewServer returns the http.Server an edge runs behind: header and body
// reads are bounded against slow clients; writes are not, since streams
// stay open for as long as their tasks run.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
