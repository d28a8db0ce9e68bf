package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/ssetest"
)

// rpcClient speaks A2A 1.0 JSON-RPC to the edges with plain net/http, as
// an outside client would.
type rpcClient struct {
	hc *http.Client
}

func newRPCClient(conns int) *rpcClient {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
	}
	return &rpcClient{hc: &http.Client{Transport: tr}}
}

func (c *rpcClient) close() { c.hc.CloseIdleConnections() }

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) String() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// answer is what one HTTP call gave: a transport error, a JSON-RPC
// error, a result, or an SSE stream to read.
type answer struct {
	transport error // no usable answer (connection refused, reset, bad HTTP)
	bad       string
	rpcErr    *rpcError
	result    json.RawMessage
	sse       *sseReader // a stream; the caller closes body
	body      io.Closer
	status    int
}

// call posts one JSON-RPC request to base/agents/agent. With sse the
// request asks for text/event-stream and lastEventID, when set, is sent
// as Last-Event-ID.
func (c *rpcClient) call(ctx context.Context, base, agent, method string, params any, sse bool, lastEventID uint64) answer {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return answer{transport: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/agents/"+agent, bytes.NewReader(body))
	if err != nil {
		return answer{transport: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if sse {
		req.Header.Set("Accept", "text/event-stream")
		if lastEventID > 0 {
			req.Header.Set("Last-Event-ID", strconv.FormatUint(lastEventID, 10))
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{transport: err}
	}
	if sse && resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return answer{sse: newSSEReader(resp.Body), body: resp.Body, status: resp.StatusCode}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return answer{transport: err, status: resp.StatusCode}
	}
	var r rpcReply
	if err := json.Unmarshal(data, &r); err != nil || (r.Error == nil && len(r.Result) == 0) {
		// Not JSON-RPC: a proxy's or a panic handler's page. Reported,
		// and retried like a transport failure.
		return answer{bad: fmt.Sprintf("HTTP %d, not a JSON-RPC answer: %s", resp.StatusCode, trunc(string(data), 200)), status: resp.StatusCode}
	}
	return answer{rpcErr: r.Error, result: r.Result, status: resp.StatusCode}
}

// sseFrame is one SSE event carrying a JSON-RPC response.
type sseFrame struct {
	ID    uint64
	HasID bool
	Resp  a2a.StreamResponse
	Err   *rpcError
}

// sseReader reads a stream's events (ssetest) as JSON-RPC responses.
type sseReader struct{ r *ssetest.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: ssetest.NewReader(r)} }

// errCleanEOF is a stream the server ended (a complete HTTP response)
// between events.
var errCleanEOF = errors.New("stream ended by the server")

// next reads the next event, skipping comments (keep-alives).
func (r *sseReader) next() (sseFrame, error) {
	var f sseFrame
	ev, err := r.r.Next()
	if errors.Is(err, io.EOF) {
		return f, errCleanEOF
	}
	if err != nil {
		return f, err
	}
	if ev.HasID {
		if f.ID, err = ev.Seq(); err != nil {
			return f, err
		}
		f.HasID = true
	}
	var rep struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(ev.Data, &rep); err != nil {
		return f, fmt.Errorf("undecodable SSE data: %w: %s", err, trunc(string(ev.Data), 200))
	}
	if rep.Error != nil {
		f.Err = rep.Error
		return f, nil
	}
	if err := json.Unmarshal(rep.Result, &f.Resp); err != nil {
		return f, fmt.Errorf("undecodable stream item: %w: %s", err, trunc(string(rep.Result), 200))
	}
	return f, nil
}

// foldArtifacts applies a stream item to a client's view of the task's
// artifacts, as a client does: a chunk without append replaces the
// artifact with its id, one with append extends it.
func foldArtifacts(arts []a2a.Artifact, resp *a2a.StreamResponse) []a2a.Artifact {
	switch {
	case resp.Task != nil:
		return append([]a2a.Artifact(nil), resp.Task.Artifacts...)
	case resp.ArtifactUpdate != nil:
		u := resp.ArtifactUpdate
		for i := range arts {
			if arts[i].ArtifactID != u.Artifact.ArtifactID {
				continue
			}
			if u.Append {
				arts[i].Parts = append(append([]a2a.Part(nil), arts[i].Parts...), u.Artifact.Parts...)
			} else {
				arts[i] = u.Artifact
			}
			return arts
		}
		return append(arts, u.Artifact)
	}
	return arts
}
