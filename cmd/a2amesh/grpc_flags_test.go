package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// freeAddr is a loopback address nobody listens on (for a moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func grpcA2A(t *testing.T, addr string) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// cardGRPC is the URL of the gRPC interface of the mesh card at base.
func cardGRPC(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var card a2a.AgentCard
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == a2a.BindingGRPC {
			return i.URL
		}
	}
	return ""
}

// `dev --grpc-listen` serves the gRPC binding: a send reaches the echo
// agent, and the card advertises the listen address.
func TestDevGRPCListen(t *testing.T) {
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, []string{"--listen", httpAddr, "--grpc-listen", grpcAddr, "--data", t.TempDir(),
			"--log-level", "error", "--metrics=false", "--push=false"})
	}()
	cl := grpcA2A(t, grpcAddr)
	var res *a2apb.SendMessageResponse
	require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		var err error
		res, err = cl.SendMessage(cctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: "dev-grpc-1", Role: a2apb.Role_ROLE_USER,
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "over grpc"}}}}})
		return err == nil
	}), "a send over gRPC")
	require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, res.GetTask().GetStatus().GetState())
	require.Equal(t, grpcAddr, cardGRPC(t, "http://"+httpAddr))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("dev did not stop")
	}
}

// `edge --grpc-listen` answers gRPC at once, UNAVAILABLE until NATS
// answers (here: at once), and cards advertise --public-grpc-url.
func TestEdgeGRPCListen(t *testing.T) {
	nd := natstest.StartSingle(t)
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runEdge(ctx, []string{"--nats", nd.URL(), "--listen", httpAddr, "--grpc-listen", grpcAddr,
			"--public-grpc-url", "grpc.example.com:443", "--log-level", "error", "--metrics=false", "--push=false"})
	}()
	cl := grpcA2A(t, grpcAddr)
	var last error
	require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		_, last = cl.GetTask(cctx, &a2apb.GetTaskRequest{Id: "no-such-task"})
		return status.Code(last) == codes.NotFound
	}), "the edge serves gRPC once NATS answers; last: %v", last)
	require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool {
		return cardGRPC(t, "http://"+httpAddr) == "grpc.example.com:443"
	}), "the card advertises --public-grpc-url")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("edge did not stop")
	}
}

// dev serves gRPC without being asked, at its default address; when that
// is taken it runs without gRPC (its card offers none), and --grpc-listen
// off turns it off.
func TestDevGRPCDefault(t *testing.T) {
	t.Setenv("A2AMESH_GRPC_LISTEN", "") // TestMain turns it off for the other tests
	def := freeAddr(t)
	old := devGRPCListen
	devGRPCListen = def
	t.Cleanup(func() { devGRPCListen = old })

	// run starts dev with args, returns the gRPC URL its card lists, and
	// stops it.
	run := func(t *testing.T, args ...string) string {
		httpAddr := freeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- runDev(ctx, append([]string{"--listen", httpAddr, "--data", t.TempDir(),
				"--log-level", "error", "--metrics=false", "--push=false"}, args...))
		}()
		var got string
		require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool {
			resp, err := http.Get("http://" + httpAddr + "/.well-known/agent-card.json")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
			got = cardGRPC(t, "http://"+httpAddr)
			return true
		}), "dev serves its card")
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("dev did not stop")
		}
		return got
	}

	t.Run("default", func(t *testing.T) {
		require.Equal(t, def, run(t))
	})
	t.Run("off", func(t *testing.T) {
		require.Empty(t, run(t, "--grpc-listen", "off"))
	})
	t.Run("taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", def)
		require.NoError(t, err)
		defer ln.Close()
		require.Empty(t, run(t), "no gRPC in the card when the default port is taken")
	})
}
