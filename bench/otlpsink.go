package bench

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPSink is an OTLP/HTTP trace receiver on loopback that counts what it
// gets and keeps nothing: the bench's stand-in for a collector (bench
// --otlp-sink: the cost of tracing, without a Jaeger).
type OTLPSink struct {
	// URL is the sink's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
	URL                    string
	srv                    *http.Server
	requests, spans, bytes atomic.Int64
}

// StartOTLPSink starts a sink on a free loopback port.
func StartOTLPSink() (*OTLPSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlp sink: %w", err)
	}
	s := &OTLPSink{URL: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, "decode", http.StatusBadRequest)
			return
		}
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		s.requests.Add(1)
		s.spans.Add(int64(n))
		s.bytes.Add(int64(len(body)))
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Report prints what the sink received and stops it; it runs after the
// tracer provider flushed.
func (s *OTLPSink) Report(w io.Writer) {
	_ = s.srv.Close()
	fmt.Fprintf(w, "otlp sink: %d spans in %d exports (%.1f MiB)\n", s.spans.Load(), s.requests.Load(), float64(s.bytes.Load())/(1<<20))
}
