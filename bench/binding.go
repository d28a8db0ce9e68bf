package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

// Bindings the load generator can send over. Every binding sends the same
// A2A 1.0 SendMessage (a user message with one text part, blocking) and
// checks the same thing: a completed task whose artifact echoes the text.
const (
	// BindingJSONRPC posts JSON-RPC 2.0 envelopes to Options.URL.
	BindingJSONRPC = "jsonrpc"
	// BindingREST posts the SendMessageRequest JSON to
	// Options.URL + "/message:send" (HTTP+JSON, spec §11).
	BindingREST = "rest"
	// BindingGRPC calls A2AService/SendMessage at Options.URL (host:port),
	// with Options.Tenant as the request's tenant.
	BindingGRPC = "grpc"
)

// loadSender sends one worker's requests, one at a time.
type loadSender interface {
	send(ctx context.Context) error
}

// grpcConnsPerWorkers is how many workers share one gRPC connection: HTTP/2
// multiplexes their calls, as a real client's channel would, without
// funnelling every worker through one connection's flow control.
const grpcConnsPerWorkers = 16

// dialGRPC opens the connections the workers of a gRPC run share.
func dialGRPC(o Options) ([]*grpc.ClientConn, error) {
	n := (o.Concurrency + grpcConnsPerWorkers - 1) / grpcConnsPerWorkers
	conns := make([]*grpc.ClientConn, 0, n)
	target := strings.TrimPrefix(strings.TrimPrefix(o.URL, "grpc://"), "http://")
	for range n {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeGRPC(conns)
			return nil, fmt.Errorf("bench: gRPC %s: %w", target, err)
		}
		conns = append(conns, cc)
	}
	return conns, nil
}

func closeGRPC(conns []*grpc.ClientConn) {
	for _, cc := range conns {
		_ = cc.Close()
	}
}

// restSender posts SendMessage over HTTP+JSON.
type restSender struct {
	client  *http.Client
	url     string
	text    string
	timeout time.Duration
	check   func(body []byte) error
	prefix  []byte
	suffix  []byte
	body    bytes.Buffer
	reply   bytes.Buffer
}

func newRESTSender(client *http.Client, o Options) *restSender {
	s := &restSender{client: client, url: strings.TrimSuffix(o.URL, "/") + "/message:send",
		text: o.Text, timeout: o.RequestTimeout, check: o.Check}
	s.prefix, s.suffix = sendMessageJSON(o.Text, o.Tenant)
	return s
}

// sendMessageJSON is a SendMessageRequest body around its message id:
// prefix + id + suffix.
func sendMessageJSON(text, tenant string) (prefix, suffix []byte) {
	t := jsonString(text)
	head := `{`
	if tenant != "" {
		head += `"tenant":` + jsonString(tenant) + `,`
	}
	return []byte(head + `"message":{"role":"ROLE_USER","messageId":"`),
		[]byte(`","parts":[{"text":` + t + `}]}}`)
}

func (s *restSender) send(ctx context.Context) error {
	s.body.Reset()
	s.body.Write(s.prefix)
	s.body.WriteString(uuid.NewString())
	s.body.Write(s.suffix)
	if err := post(ctx, s.client, s.url, s.timeout, "application/a2a+json", "application/a2a+json, application/json",
		s.body.Bytes(), &s.reply); err != nil {
		return err
	}
	if s.check != nil {
		return s.check(s.reply.Bytes())
	}
	return checkResult(MethodSend10, s.reply.Bytes(), func(p string) bool { return p == s.text }, "no artifact echoes the text")
}

// grpcSender calls SendMessage over gRPC.
type grpcSender struct {
	client  a2apb.A2AServiceClient
	text    string
	tenant  string
	timeout time.Duration
}

func newGRPCSender(cc *grpc.ClientConn, o Options) *grpcSender {
	return &grpcSender{client: a2apb.NewA2AServiceClient(cc), text: o.Text, tenant: o.Tenant, timeout: o.RequestTimeout}
}

func (s *grpcSender) send(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "a2a-version", "1.0")
	resp, err := s.client.SendMessage(ctx, &a2apb.SendMessageRequest{
		Tenant: s.tenant,
		Message: &a2apb.Message{
			MessageId: uuid.NewString(), Role: a2apb.Role_ROLE_USER,
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: s.text}}},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("request: %w", ctx.Err())
		}
		if st, ok := status.FromError(err); ok {
			return fmt.Errorf("gRPC %s: %s", st.Code(), st.Message())
		}
		return fmt.Errorf("request: %w", err)
	}
	t := resp.GetTask()
	if t == nil {
		return errors.New("reply is not a task")
	}
	if t.GetId() == "" {
		return errors.New("task has no id")
	}
	if st := t.GetStatus().GetState(); st != a2apb.TaskState_TASK_STATE_COMPLETED {
		return fmt.Errorf("task state %s, want TASK_STATE_COMPLETED", st)
	}
	for _, a := range t.GetArtifacts() {
		for _, p := range a.GetParts() {
			if p.GetText() == s.text {
				return nil
			}
		}
	}
	return errors.New("no artifact echoes the text")
}

// post sends body to url with the given media types within timeout, and
// reads a 200 answer into reply (bounded, the rest drained so the
// connection is reused).
func post(ctx context.Context, client *http.Client, url string, timeout time.Duration, contentType, accept string, body []byte, reply *bytes.Buffer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("request: %w", ctx.Err())
		}
		return fmt.Errorf("request: %w", err)
	}
	reply.Reset()
	_, rerr := reply.ReadFrom(io.LimitReader(resp.Body, maxReplyBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyBytes))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	if rerr != nil {
		return errors.New("reading reply failed")
	}
	return nil
}
