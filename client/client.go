package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc"

	"github.com/a2amesh/a2amesh/a2a"
)

const (
	// ProtocolVersion is the A2A version the client speaks, sent in the
	// A2A-Version header of every call.
	ProtocolVersion = "1.0"

	// DefaultMaxResponseBytes bounds a response body, and each event of a
	// stream, unless WithMaxResponseBytes says otherwise.
	DefaultMaxResponseBytes = 16 << 20

	// errorBodyBytes bounds how much of a failed response is read: enough
	// for a JSON-RPC error or a short diagnostic, never a whole page.
	errorBodyBytes = 64 << 10
	// snippetBytes is how much of an unusable body an error quotes.
	snippetBytes = 200
)

// The JSON-RPC method names the client calls, in 1.0 and 0.3.
const (
	methodSend      = "SendMessage"
	methodStream    = "SendStreamingMessage"
	methodGet       = "GetTask"
	methodList      = "ListTasks"
	methodCancel    = "CancelTask"
	methodSubscribe = "SubscribeToTask"
	methodExtCard   = "GetExtendedAgentCard"

	methodSendV03      = "message/send"
	methodStreamV03    = "message/stream"
	methodGetV03       = "tasks/get"
	methodCancelV03    = "tasks/cancel"
	methodSubscribeV03 = "tasks/resubscribe"
	methodExtCardV03   = "agent/getAuthenticatedExtendedCard"
)

// method returns the name of a 1.0 method in the client's version.
func (c *Client) method(m string) string {
	if !c.v03 {
		return m
	}
	switch m {
	case methodSend:
		return methodSendV03
	case methodStream:
		return methodStreamV03
	case methodGet:
		return methodGetV03
	case methodCancel:
		return methodCancelV03
	case methodSubscribe:
		return methodSubscribeV03
	case methodExtCard:
		return methodExtCardV03
	}
	return m
}

// ErrUnsupported is returned for a call the client's protocol version
// lacks (ListTasks in 0.3).
var ErrUnsupported = errors.New("client: not supported in this protocol version")

var (
	// ErrResponseTooLarge is wrapped by errors for a response body, or a
	// stream event, larger than the client's bound.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrInvalidResponse is wrapped by errors for a well-formed JSON-RPC
	// response whose result does not have the shape the method promises.
	ErrInvalidResponse = errors.New("invalid response")
)

// Client calls one agent's A2A endpoint over one binding: JSON-RPC (the
// default, in 1.0 unless WithProtocolVersion says 0.3), HTTP+JSON or gRPC
// (both 1.0), as WithBinding says. Every binding has the same methods and
// returns the same errors: an error the agent answered with is an
// *a2a.Error carrying the A2A code. It is safe for concurrent use.
type Client struct {
	v03     bool // speak A2A 0.3 (message/send, ...) instead of 1.0
	binding string
	tr      transport // HTTP+JSON or gRPC; nil for JSON-RPC
	url     string
	hc      *http.Client
	header  http.Header
	tenant  string
	maxBody int64
	lastID  atomic.Int64

	dial     Dialer            // gRPC: how connections are opened
	grpcOpts []grpc.DialOption // gRPC: more connection options
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc instead of a
// plain &http.Client{} (which has no timeout: streams may be long; bound
// calls with their context).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithHeader sets a header on every request (for example Authorization or
// A2A-Extensions); a gRPC client sends it as metadata, its key in lower
// case. The protocol's own headers (Content-Type, Accept, A2A-Version,
// Last-Event-ID) cannot be overridden this way.
func WithHeader(key, value string) Option {
	return func(c *Client) { c.header.Set(key, value) }
}

// WithTenant sets the 1.0 "tenant" parameter on every request that does not
// already name one.
func WithTenant(tenant string) Option {
	return func(c *Client) { c.tenant = tenant }
}

// WithBinding makes the client speak the given binding, as a card's
// protocolBinding names it: a2a.BindingJSONRPC (the default),
// a2a.BindingHTTPJSON (spec §11: REST routes under the base URL, with the
// tenant as the first path segment) or a2a.BindingGRPC (spec §10: the
// A2AService over HTTP/2). The names are matched without regard to case.
// A gRPC client's URL is the server's address: host:port, with plain
// (unencrypted) HTTP/2, or https://host:port or grpcs://host:port for TLS
// (http:// and grpc:// say plain explicitly); it must be closed with
// Close. HTTP+JSON and gRPC are spoken in A2A 1.0 only. A client given an
// unknown binding fails every call with ErrUnsupported.
func WithBinding(binding string) Option {
	return func(c *Client) {
		c.binding = binding
		if b := canonicalBinding(binding); b != "" {
			c.binding = b
		}
	}
}

// WithProtocolVersion makes the client speak the given A2A version: "1.0"
// (the default) or "0.3" (any 0.3.x, also "0.3.0"): 0.3 method names
// (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe) and 0.3 wire shapes for sent messages. Results of
// either version are read into the same types. A 0.3 client sends no
// tenant, and ListTasks, which 0.3 lacks, fails without a call.
func WithProtocolVersion(v string) Option {
	return func(c *Client) { c.v03 = strings.HasPrefix(v, "0.") }
}

// WithMaxResponseBytes bounds a response body and each stream event to n
// bytes (n <= 0 keeps DefaultMaxResponseBytes).
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// New returns a client for the agent whose endpoint is baseURL: for
// JSON-RPC and HTTP+JSON its URL, e.g. http://127.0.0.1:8080/agents/echo;
// for gRPC its address, host:port (see WithBinding).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		url:     baseURL,
		binding: a2a.BindingJSONRPC,
		hc:      &http.Client{},
		header:  http.Header{},
		maxBody: DefaultMaxResponseBytes,
	}
	for _, o := range opts {
		o(c)
	}
	if c.v03 {
		c.tenant = ""
	}
	switch {
	case c.binding == a2a.BindingJSONRPC:
	case c.v03:
		c.tr = failing{fmt.Errorf("client: %w: A2A 0.3 over %s", ErrUnsupported, c.binding)}
	case c.binding == a2a.BindingHTTPJSON:
		c.tr = &restTransport{c: c}
	case c.binding == a2a.BindingGRPC:
		c.tr = newGRPCTransport(c)
	default:
		c.tr = failing{fmt.Errorf("client: %w: binding %q", ErrUnsupported, c.binding)}
	}
	return c
}

// URL returns the endpoint the client calls.
func (c *Client) URL() string { return c.url }

// Binding returns the binding the client speaks: a2a.BindingJSONRPC,
// a2a.BindingHTTPJSON or a2a.BindingGRPC.
func (c *Client) Binding() string { return c.binding }

// Close releases what the client holds: the connection of a gRPC client.
// A JSON-RPC or HTTP+JSON client holds nothing of its own (its HTTP
// client's idle connections are the HTTP client's). Calls after Close
// fail.
func (c *Client) Close() error {
	if c.tr == nil {
		return nil
	}
	return c.tr.close()
}

// transport is a binding other than JSON-RPC. Requests come with the
// client's tenant filled in; results are checked by the caller.
type transport interface {
	send(ctx context.Context, req *a2a.SendMessageRequest) (*a2a.StreamResponse, error)
	stream(ctx context.Context, req *a2a.SendMessageRequest) (*Stream, error)
	subscribe(ctx context.Context, req *a2a.TaskIDRequest, lastEventID string) (*Stream, error)
	getTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error)
	listTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error)
	cancel(ctx context.Context, req *a2a.TaskIDRequest) (*a2a.Task, error)
	extendedCard(ctx context.Context, tenant string) (*a2a.AgentCard, error)
	close() error
}

// failing is the transport of a client that cannot call: every call
// returns err.
type failing struct{ err error }

func (f failing) send(context.Context, *a2a.SendMessageRequest) (*a2a.StreamResponse, error) {
	return nil, f.err
}
func (f failing) stream(context.Context, *a2a.SendMessageRequest) (*Stream, error) { return nil, f.err }
func (f failing) subscribe(context.Context, *a2a.TaskIDRequest, string) (*Stream, error) {
	return nil, f.err
}
func (f failing) getTask(context.Context, *a2a.GetTaskRequest) (*a2a.Task, error) { return nil, f.err }
func (f failing) listTasks(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, f.err
}
func (f failing) cancel(context.Context, *a2a.TaskIDRequest) (*a2a.Task, error) { return nil, f.err }
func (f failing) extendedCard(context.Context, string) (*a2a.AgentCard, error)  { return nil, f.err }
func (f failing) close() error                                                  { return nil }

// Send calls SendMessage. The result holds either a Task or a Message.
func (c *Client) Send(ctx context.Context, req *a2a.SendMessageRequest) (*a2a.StreamResponse, error) {
	if req == nil || req.Message == nil {
		return nil, errSendNeedsMessage
	}
	var res *a2a.StreamResponse
	if c.tr != nil {
		var err error
		if res, err = c.tr.send(ctx, c.withTenant(req)); err != nil {
			return nil, err
		}
	} else {
		var raw json.RawMessage
		if err := c.call(ctx, c.method(methodSend), c.sendParams(req), &raw); err != nil {
			return nil, err
		}
		var err error
		if res, err = decodeStreamResult(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", c.method(methodSend), err)
		}
	}
	if res.Task == nil && res.Message == nil {
		return nil, fmt.Errorf("%s: %w: result must hold a task or a message", c.method(methodSend), ErrInvalidResponse)
	}
	return res, nil
}

// Stream calls SendStreamingMessage and returns the stream of its events.
// The caller must Close the stream.
func (c *Client) Stream(ctx context.Context, req *a2a.SendMessageRequest) (*Stream, error) {
	if req == nil || req.Message == nil {
		return nil, errSendNeedsMessage
	}
	if c.tr != nil {
		return c.tr.stream(ctx, c.withTenant(req))
	}
	return c.openStream(ctx, c.method(methodStream), c.sendParams(req), "")
}

// Subscribe calls SubscribeToTask for the task taskID. A non-empty
// lastEventID asks the server to resume after that event (the
// Last-Event-ID header of JSON-RPC and HTTP+JSON, the last-event-id
// metadata of gRPC). The caller must Close the stream.
func (c *Client) Subscribe(ctx context.Context, taskID, lastEventID string) (*Stream, error) {
	req := &a2a.TaskIDRequest{Tenant: c.tenant, ID: taskID}
	if c.tr != nil {
		return c.tr.subscribe(ctx, req, lastEventID)
	}
	return c.openStream(ctx, c.method(methodSubscribe), req, lastEventID)
}

// GetTask calls GetTask. A nil historyLength leaves the history length to
// the server.
func (c *Client) GetTask(ctx context.Context, id string, historyLength *int) (*a2a.Task, error) {
	req := &a2a.GetTaskRequest{Tenant: c.tenant, ID: id, HistoryLength: historyLength}
	var t *a2a.Task
	if c.tr != nil {
		var err error
		if t, err = c.tr.getTask(ctx, req); err != nil {
			return nil, err
		}
	} else {
		t = new(a2a.Task)
		if err := c.call(ctx, c.method(methodGet), req, t); err != nil {
			return nil, err
		}
	}
	if t == nil || t.ID == "" {
		return nil, fmt.Errorf("%s: %w: task without id", c.method(methodGet), ErrInvalidResponse)
	}
	return t, nil
}

// ListTasks calls ListTasks; a nil req lists with the server's defaults.
func (c *Client) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if c.v03 {
		return nil, fmt.Errorf("%s: %w", methodList, ErrUnsupported)
	}
	var p a2a.ListTasksRequest
	if req != nil {
		p = *req
	}
	if p.Tenant == "" {
		p.Tenant = c.tenant
	}
	if c.tr != nil {
		res, err := c.tr.listTasks(ctx, &p)
		if err == nil && res == nil {
			err = fmt.Errorf("%s: %w: no result", methodList, ErrInvalidResponse)
		}
		return res, err
	}
	var res a2a.ListTasksResponse
	if err := c.call(ctx, methodList, &p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Cancel calls CancelTask and returns the task as the server left it.
func (c *Client) Cancel(ctx context.Context, id string) (*a2a.Task, error) {
	req := &a2a.TaskIDRequest{Tenant: c.tenant, ID: id}
	var t *a2a.Task
	if c.tr != nil {
		var err error
		if t, err = c.tr.cancel(ctx, req); err != nil {
			return nil, err
		}
	} else {
		t = new(a2a.Task)
		if err := c.call(ctx, c.method(methodCancel), req, t); err != nil {
			return nil, err
		}
	}
	if t == nil || t.ID == "" {
		return nil, fmt.Errorf("%s: %w: task without id", c.method(methodCancel), ErrInvalidResponse)
	}
	return t, nil
}

// ExtendedCard calls GetExtendedAgentCard (0.3:
// agent/getAuthenticatedExtendedCard): the agent's extended card, as the
// server shows it to the client's credentials.
func (c *Client) ExtendedCard(ctx context.Context) (*a2a.AgentCard, error) {
	var card *a2a.AgentCard
	if c.tr != nil {
		var err error
		if card, err = c.tr.extendedCard(ctx, c.tenant); err != nil {
			return nil, err
		}
	} else {
		card = new(a2a.AgentCard)
		var params any
		if !c.v03 {
			params = &struct {
				Tenant string `json:"tenant,omitempty"`
			}{c.tenant}
		}
		if err := c.call(ctx, c.method(methodExtCard), params, card); err != nil {
			return nil, err
		}
	}
	if card == nil || card.Name == "" {
		return nil, fmt.Errorf("%s: %w: card without name", c.method(methodExtCard), ErrInvalidResponse)
	}
	return card, nil
}

var errSendNeedsMessage = errors.New("client: send needs a message")

// withTenant copies req, filling in the client's tenant.
func (c *Client) withTenant(req *a2a.SendMessageRequest) *a2a.SendMessageRequest {
	p := *req
	if p.Tenant == "" {
		p.Tenant = c.tenant
	}
	return &p
}

// sendParams is req, with the client's tenant, in the JSON-RPC wire shape
// of the client's version.
func (c *Client) sendParams(req *a2a.SendMessageRequest) any {
	if c.v03 {
		return req.ToV03()
	}
	return c.withTenant(req)
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *a2a.Error      `json:"error"`
}

// hasResult reports whether r carries a non-null result.
func (r *rpcResponse) hasResult() bool {
	b := bytes.TrimSpace(r.Result)
	return len(b) > 0 && !bytes.Equal(b, []byte("null"))
}

func (c *Client) newRequest(ctx context.Context, method string, params any, accept string) (*http.Request, error) {
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: c.lastID.Add(1), Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, accept)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func (c *Client) setHeaders(req *http.Request, accept string) {
	for k, vs := range c.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Accept", accept)
	if c.v03 {
		req.Header.Set("A2A-Version", "0.3")
	} else {
		req.Header.Set("A2A-Version", ProtocolVersion)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "a2amesh-client")
	}
	c.setExtensions(req) // extensions.go
}

// call does one unary JSON-RPC call and decodes its result into result.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	req, err := c.newRequest(ctx, method, params, "application/json")
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	noteExtensions(ctx, resp.Header)
	env, err := c.readResponse(resp)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(env.Result, result); err != nil {
		return fmt.Errorf("%s: %w: %v", method, ErrInvalidResponse, err)
	}
	return nil
}

// readResponse reads a unary JSON-RPC response. A JSON-RPC error comes back
// as *a2a.Error whatever the HTTP status; any other non-200 answer, or a 200
// answer that is not a JSON-RPC response, as *HTTPError.
func (c *Client) readResponse(resp *http.Response) (*rpcResponse, error) {
	limit := c.maxBody
	if resp.StatusCode != http.StatusOK && limit > errorBodyBytes {
		limit = errorBodyBytes
	}
	body, err := readBounded(resp.Body, limit)
	if err != nil && (resp.StatusCode == http.StatusOK || !errors.Is(err, ErrResponseTooLarge)) {
		return nil, fmt.Errorf("reading response (HTTP %s): %w", status(resp), err)
	}
	var env rpcResponse
	if json.Unmarshal(body, &env) == nil {
		if env.Error != nil {
			return nil, env.Error
		}
		if resp.StatusCode == http.StatusOK && env.hasResult() {
			return &env, nil
		}
	}
	he := newHTTPError(resp, body)
	if resp.StatusCode == http.StatusOK {
		he.Problem = "not a JSON-RPC response"
	}
	return nil, he
}

// readBounded reads all of r, failing with ErrResponseTooLarge beyond max bytes.
// On that failure it returns the first max bytes too.
func readBounded(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > max {
		return b[:max], fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, max)
	}
	return b, nil
}

// HTTPError reports an HTTP answer that carries no JSON-RPC response: a
// non-200 status without a JSON-RPC error body, or a 200 whose body is not
// a JSON-RPC response (or not an agent card).
type HTTPError struct {
	StatusCode  int
	Status      string // e.g. "404 Not Found"
	ContentType string
	Problem     string // what was wrong with a 200 answer; empty otherwise
	Body        string // the start of the body, on one line
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	b.WriteString("HTTP ")
	b.WriteString(e.Status)
	if e.Problem != "" {
		b.WriteString(": ")
		b.WriteString(e.Problem)
		if e.ContentType != "" {
			fmt.Fprintf(&b, " (%s)", e.ContentType)
		}
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

func newHTTPError(resp *http.Response, body []byte) *HTTPError {
	return &HTTPError{
		StatusCode:  resp.StatusCode,
		Status:      status(resp),
		ContentType: resp.Header.Get("Content-Type"),
		Body:        snippet(body),
	}
}

func status(resp *http.Response) string {
	if resp.Status != "" {
		return resp.Status
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

// snippet returns the start of body on one line, for error messages.
func snippet(body []byte) string {
	if len(body) > snippetBytes {
		body = body[:snippetBytes]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
		body = append(body[:len(body):len(body)], "…"...)
	}
	return strings.Join(strings.Fields(string(body)), " ")
}

// mediaType returns the lower-case media type of a Content-Type header.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt
}

// NewID returns a random UUID (version 4), suitable as a message id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// TextMessage returns a user message with a fresh id and one text part.
func TextMessage(text string) *a2a.Message {
	return &a2a.Message{MessageID: NewID(), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}
