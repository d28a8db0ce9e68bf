package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// The media types of the HTTP+JSON binding: A2A's own, and plain JSON,
// which servers also answer with.
const (
	mediaA2AJSON = "application/a2a+json"
	acceptJSON   = mediaA2AJSON + ", application/json"
	acceptSSE    = "text/event-stream, " + acceptJSON
)

// restTransport speaks the HTTP+JSON binding (spec §11): one route per
// operation under the client's base URL, "/{tenant}" first when a tenant
// is set, bodies in the same JSON as JSON-RPC params and results but
// without the envelope, errors as google.rpc.Status JSON.
type restTransport struct{ c *Client }

func (t *restTransport) send(ctx context.Context, req *a2a.SendMessageRequest) (*a2a.StreamResponse, error) {
	tenant, body := req.Tenant, *req
	body.Tenant = "" // in the path
	var raw json.RawMessage
	if err := t.do(ctx, methodSend, http.MethodPost, tenant, "/message:send", nil, &body, &raw); err != nil {
		return nil, err
	}
	res, err := decodeStreamResult(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", methodSend, err)
	}
	return res, nil
}

func (t *restTransport) stream(ctx context.Context, req *a2a.SendMessageRequest) (*Stream, error) {
	tenant, body := req.Tenant, *req
	body.Tenant = ""
	return t.openStream(ctx, methodStream, http.MethodPost, tenant, "/message:stream", &body, "")
}

func (t *restTransport) subscribe(ctx context.Context, req *a2a.TaskIDRequest, lastEventID string) (*Stream, error) {
	path := "/tasks/" + url.PathEscape(req.ID) + ":subscribe"
	// a2a.proto routes SubscribeToTask as GET; the specification's prose
	// (and some servers) as POST: a server refusing GET with 405 is asked
	// again with POST.
	s, err := t.openStream(ctx, methodSubscribe, http.MethodGet, req.Tenant, path, nil, lastEventID)
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusMethodNotAllowed {
		s, err = t.openStream(ctx, methodSubscribe, http.MethodPost, req.Tenant, path, struct{}{}, lastEventID)
	}
	return s, err
}

func (t *restTransport) getTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	q := url.Values{}
	if req.HistoryLength != nil {
		q.Set("historyLength", strconv.Itoa(*req.HistoryLength))
	}
	var task a2a.Task
	if err := t.do(ctx, methodGet, http.MethodGet, req.Tenant, "/tasks/"+url.PathEscape(req.ID), q, nil, &task); err != nil {
		return nil, err
	}
	return &task, nil
}

func (t *restTransport) listTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("contextId", req.ContextID)
	set("status", string(req.Status))
	if req.PageSize != nil {
		set("pageSize", strconv.Itoa(*req.PageSize))
	}
	set("pageToken", req.PageToken)
	if req.HistoryLength != nil {
		set("historyLength", strconv.Itoa(*req.HistoryLength))
	}
	set("statusTimestampAfter", req.StatusTimestampAfter)
	if req.IncludeArtifacts != nil {
		set("includeArtifacts", strconv.FormatBool(*req.IncludeArtifacts))
	}
	var res a2a.ListTasksResponse
	if err := t.do(ctx, methodList, http.MethodGet, req.Tenant, "/tasks", q, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (t *restTransport) cancel(ctx context.Context, req *a2a.TaskIDRequest) (*a2a.Task, error) {
	// The id is in the path; the body holds what else the request has.
	body := struct {
		Metadata a2a.Metadata `json:"metadata,omitempty"`
	}{req.Metadata}
	var task a2a.Task
	if err := t.do(ctx, methodCancel, http.MethodPost, req.Tenant, "/tasks/"+url.PathEscape(req.ID)+":cancel", nil, &body, &task); err != nil {
		return nil, err
	}
	return &task, nil
}

func (t *restTransport) extendedCard(ctx context.Context, tenant string) (*a2a.AgentCard, error) {
	var card a2a.AgentCard
	if err := t.do(ctx, methodExtCard, http.MethodGet, tenant, "/extendedAgentCard", nil, nil, &card); err != nil {
		return nil, err
	}
	return &card, nil
}

func (t *restTransport) close() error { return nil }

// url returns the URL of route (already escaped) under the client's base
// URL, after the tenant's path segments when there is a tenant.
func (t *restTransport) url(tenant, route string, q url.Values) (string, error) {
	u, err := url.Parse(t.c.url)
	if err != nil {
		return "", fmt.Errorf("client: base URL: %w", err)
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	if tenant != "" {
		for _, seg := range strings.Split(strings.Trim(tenant, "/"), "/") {
			p += "/" + url.PathEscape(seg)
		}
	}
	p += route
	if u.Path, err = url.PathUnescape(p); err != nil {
		return "", fmt.Errorf("client: base URL: %w", err)
	}
	u.RawPath = p
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

func (t *restTransport) newRequest(ctx context.Context, op, method, tenant, route string, q url.Values, body any, accept string) (*http.Request, error) {
	target, err := t.url(tenant, route, q)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding request: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	t.c.setHeaders(req, accept)
	if body != nil {
		req.Header.Set("Content-Type", mediaA2AJSON)
	}
	return req, nil
}

// do makes one unary call and decodes its 200 answer into result.
func (t *restTransport) do(ctx context.Context, op, method, tenant, route string, q url.Values, body, result any) error {
	req, err := t.newRequest(ctx, op, method, tenant, route, q, body, acceptJSON)
	if err != nil {
		return err
	}
	resp, err := t.c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	noteExtensions(ctx, resp.Header)
	b, err := t.c.readREST(resp)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, result); err != nil {
		return fmt.Errorf("%s: %w: %v", op, ErrInvalidResponse, err)
	}
	return nil
}

// openStream makes a streaming call. An answer that is not an event
// stream is read as a unary one: its error is returned, and a result
// becomes a stream of that one event.
func (t *restTransport) openStream(ctx context.Context, op, method, tenant, route string, body any, lastEventID string) (*Stream, error) {
	req, err := t.newRequest(ctx, op, method, tenant, route, nil, body, acceptSSE)
	if err != nil {
		return nil, err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := t.c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	noteExtensions(ctx, resp.Header)
	if resp.StatusCode == http.StatusOK && mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		return newSSEStream(resp.Body, t.c.maxBody, decodeRESTEvent), nil
	}
	defer resp.Body.Close()
	b, err := t.c.readREST(resp)
	if err != nil {
		return nil, err
	}
	res, err := decodeStreamResult(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return oneEventStream(res), nil
}

// readREST reads an HTTP+JSON answer: the body of a 200 holding a JSON
// object, or the error of any other. A google.rpc.Status error body
// becomes an *a2a.Error; any other failure an *HTTPError.
func (c *Client) readREST(resp *http.Response) ([]byte, error) {
	limit := c.maxBody
	if resp.StatusCode != http.StatusOK && limit > errorBodyBytes {
		limit = errorBodyBytes
	}
	body, err := readBounded(resp.Body, limit)
	if err != nil && (resp.StatusCode == http.StatusOK || !errors.Is(err, ErrResponseTooLarge)) {
		return nil, fmt.Errorf("reading response (HTTP %s): %w", status(resp), err)
	}
	if resp.StatusCode != http.StatusOK {
		if e := decodeStatusError(body); e != nil {
			return nil, e
		}
		return nil, newHTTPError(resp, body)
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		he := newHTTPError(resp, body)
		he.Problem = "not a JSON object"
		return nil, he
	}
	return body, nil
}

// decodeRESTEvent decodes the data of an HTTP+JSON stream event: a bare
// StreamResponse, or {"error": {...}} ending the stream with that error.
func decodeRESTEvent(data []byte) (*a2a.StreamResponse, error) {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("stream event: %w: %v", ErrInvalidResponse, err)
	}
	if len(probe.Error) > 0 && !bytes.Equal(probe.Error, []byte("null")) {
		if e := decodeStatusError(data); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("stream event: %w: unreadable error %s", ErrInvalidResponse, snippet(probe.Error))
	}
	res, err := decodeStreamResult(data)
	if err != nil {
		return nil, fmt.Errorf("stream event: %w", err)
	}
	return res, nil
}
