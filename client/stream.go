package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/a2amesh/a2amesh/a2a"
)

// ErrStreamClosed is returned by Next after Close.
var ErrStreamClosed = errors.New("client: stream closed")

// Event is one event of a stream.
type Event struct {
	// ID is the stream's last event ID when the event was dispatched: the
	// value of the latest "id:" field so far, as Server-Sent Events define
	// it. Pass it to Subscribe to resume after this event.
	ID string
	// Response is the event's payload; exactly one member is set.
	Response *a2a.StreamResponse
}

// Stream reads the events of a SendStreamingMessage or SubscribeToTask
// answer: Server-Sent Events for JSON-RPC and HTTP+JSON, a server stream
// for gRPC. Next and Close may be called from different goroutines; Next
// itself is not safe for concurrent use.
type Stream struct {
	body   io.ReadCloser
	sc     *bufio.Scanner
	max    int
	lastID string
	first  bool
	decode func(data []byte) (*a2a.StreamResponse, error) // one event's data
	// recv, when set, gives the events instead of body (gRPC); done
	// releases what it reads from.
	recv   func() (Event, error)
	done   func()
	queued []Event // events known before reading (a JSON answer)
	closed atomic.Bool
}

// oneEventStream is a stream of the one event res.
func oneEventStream(res *a2a.StreamResponse) *Stream {
	return &Stream{body: http.NoBody, sc: bufio.NewScanner(bytes.NewReader(nil)), queued: []Event{{Response: res}}}
}

// openStream posts a streaming call and returns its event stream. An
// application/json answer is read as a unary response: its JSON-RPC error
// is returned, and a result becomes a stream of that one event.
func (c *Client) openStream(ctx context.Context, method string, params any, lastEventID string) (*Stream, error) {
	req, err := c.newRequest(ctx, method, params, "text/event-stream")
	if err != nil {
		return nil, err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	noteExtensions(ctx, resp.Header)
	if resp.StatusCode == http.StatusOK && mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		return newStream(resp.Body, c.maxBody), nil
	}
	defer resp.Body.Close()
	env, err := c.readResponse(resp)
	if err != nil {
		return nil, err
	}
	res, err := decodeStreamResult(env.Result)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return oneEventStream(res), nil
}

// newStream returns a stream reading JSON-RPC Server-Sent Events from
// body, each event's data bounded to max bytes.
func newStream(body io.ReadCloser, max int64) *Stream {
	return newSSEStream(body, max, decodeRPCEvent)
}

// newSSEStream returns a stream reading Server-Sent Events from body, each
// event's data bounded to max bytes and decoded by decode.
func newSSEStream(body io.ReadCloser, max int64, decode func([]byte) (*a2a.StreamResponse, error)) *Stream {
	if max <= 0 || max > 1<<30 {
		max = DefaultMaxResponseBytes
	}
	sc := bufio.NewScanner(body)
	// A line holds at most the event's data plus its "data: " prefix.
	sc.Buffer(make([]byte, 0, 4096), int(max)+64)
	sc.Split(scanLines)
	return &Stream{body: body, sc: sc, max: int(max), first: true, decode: decode}
}

// Next returns the next event. It returns io.EOF when the stream ends, an
// *a2a.Error for an event carrying an A2A error (which ends the stream),
// and ErrStreamClosed after Close. A stream cut inside an event that does
// not decode gives an error wrapping io.ErrUnexpectedEOF; a read error
// ends the stream.
func (s *Stream) Next() (Event, error) {
	if len(s.queued) > 0 {
		ev := s.queued[0]
		s.queued = s.queued[1:]
		return ev, nil
	}
	if s.closed.Load() {
		return Event{}, ErrStreamClosed
	}
	if s.recv != nil {
		ev, err := s.recv()
		if err != nil && s.closed.Load() {
			return Event{}, ErrStreamClosed
		}
		if err == nil {
			s.lastID = ev.ID
		}
		return ev, err
	}
	var data []byte
	hasData := false
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if s.first {
			s.first = false
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			if !hasData {
				continue // an event with no data is not dispatched
			}
			return s.dispatch(data)
		}
		if line[0] == ':' {
			continue // a comment, e.g. a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			if len(data) > s.max {
				return Event{}, fmt.Errorf("stream event: %w: more than %d bytes", ErrResponseTooLarge, s.max)
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
			}
		}
		// "event", "retry" and unknown fields are ignored: A2A streams
		// use unnamed events only.
	}
	if err := s.sc.Err(); err != nil {
		if s.closed.Load() {
			return Event{}, ErrStreamClosed
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("stream event: %w: line longer than %d bytes", ErrResponseTooLarge, s.max)
		}
		return Event{}, err
	}
	if hasData {
		// The stream ended without the blank line closing its last event.
		// Deliver the event if it is whole; a cut one is an error.
		ev, err := s.dispatch(data)
		var rpcErr *a2a.Error
		if err != nil && !errors.As(err, &rpcErr) {
			return ev, fmt.Errorf("stream ended inside an event: %w (%v)", io.ErrUnexpectedEOF, err)
		}
		return ev, err
	}
	return Event{}, io.EOF
}

// dispatch decodes one event's data.
func (s *Stream) dispatch(data []byte) (Event, error) {
	ev := Event{ID: s.lastID}
	res, err := s.decode(data)
	if err != nil {
		return ev, err
	}
	ev.Response = res
	return ev, nil
}

// decodeRPCEvent decodes the data of a JSON-RPC stream event: a JSON-RPC
// response whose result is a StreamResponse (a bare StreamResponse is
// accepted too), or whose error ends the stream.
func decodeRPCEvent(data []byte) (*a2a.StreamResponse, error) {
	var env rpcResponse
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("stream event: %w: %v", ErrInvalidResponse, err)
	}
	if env.Error != nil {
		return nil, env.Error
	}
	result := env.Result
	if !env.hasResult() {
		result = data
	}
	res, err := decodeStreamResult(result)
	if err != nil {
		return nil, fmt.Errorf("stream event: %w", err)
	}
	return res, nil
}

// decodeStreamResult decodes a result of either protocol version holding
// exactly one event.
func decodeStreamResult(b []byte) (*a2a.StreamResponse, error) {
	res, err := a2a.DecodeResult(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidResponse, err)
	}
	return res, nil
}

// LastEventID returns the latest "id:" value the stream carried, for
// resuming with Subscribe.
func (s *Stream) LastEventID() string { return s.lastID }

// Close releases the stream's connection. It is safe to call more than
// once and concurrently with Next, which then returns ErrStreamClosed.
func (s *Stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.done != nil {
		s.done()
		return nil
	}
	return s.body.Close()
}

// scanLines splits Server-Sent Events lines, which end in CRLF, LF or a lone CR.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		switch {
		case data[i] == '\n':
			return i + 1, data[:i], nil
		case i+1 < len(data):
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		case atEOF:
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end: wait to see whether LF follows
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
