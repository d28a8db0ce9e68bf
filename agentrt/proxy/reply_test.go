package proxy_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// replyExecutor answers every send with a Message and no task, as an
// a2a-go agent may.
type replyExecutor struct{}

func (replyExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		var text strings.Builder
		for _, p := range ec.Message.Parts {
			if s, ok := p.Content.(goa2a.Text); ok {
				text.WriteString(string(s))
			}
		}
		yield(goa2a.NewMessage(goa2a.MessageRoleAgent, goa2a.NewTextPart("upstream: "+text.String())), nil)
	}
}

func (replyExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {}
}

// A proxy worker forwards an upstream's message reply as the send's
// answer, over every upstream binding (and 0.3 JSON-RPC), to blocking
// sends and streams alike: the client gets the message, not a task.
func TestProxyForwardsMessageReply(t *testing.T) {
	m := meshtest.Start(t)
	cases := []struct {
		name string
		opts upstreamOpts
	}{
		{"jsonrpc", upstreamOpts{version: "1.0"}},
		{"jsonrpc03", upstreamOpts{version: "0.3"}},
		{"httpjson", upstreamOpts{version: "1.0", binding: a2a.BindingHTTPJSON}},
		{"grpc", upstreamOpts{version: "1.0", binding: a2a.BindingGRPC}},
		{"jsonrpc-streaming", upstreamOpts{version: "1.0", streaming: true}},
		{"grpc-streaming", upstreamOpts{version: "1.0", binding: a2a.BindingGRPC, streaming: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, replyExecutor{}, tc.opts)
			name := "replier-" + tc.name
			runProxy(t, m, up.URL, name)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			c := client.New(m.URL + "/agents/" + name)
			card, err := c.Card(ctx)
			require.NoError(t, err)
			assert.True(t, card.RepliesWithMessage(), "the proxy's card declares message replies")

			res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("ping")})
			require.NoError(t, err)
			require.Nil(t, res.Task, "answered with a task: %+v", res.Task)
			require.NotNil(t, res.Message)
			assert.Equal(t, "upstream: ping", res.Message.Text())
			assert.Equal(t, a2a.RoleAgent, res.Message.Role)
			assert.Empty(t, res.Message.TaskID)

			s, err := c.Stream(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("pong")})
			require.NoError(t, err)
			defer s.Close()
			var got []*a2a.StreamResponse
			for i := 0; i < 10; i++ {
				ev, err := s.Next()
				if err != nil {
					break
				}
				got = append(got, ev.Response)
			}
			require.Len(t, got, 1, "the message is the stream's only event")
			require.NotNil(t, got[0].Message)
			assert.Equal(t, "upstream: pong", got[0].Message.Text())
		})
	}
}
