package mesh

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

// Close stops the gRPC server too: an open stream is cut after the
// grace, Close returns, and no goroutine is left (TestMain checks).
func TestCloseStopsGRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := Start(ctx, Config{Listen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer m.Close()
	require.NotEmpty(t, m.GRPCAddr())

	conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	s, err := a2apb.NewA2AServiceClient(conn).SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Tenant: "slow",
		Message: &a2apb.Message{MessageId: "close-grpc", Role: a2apb.Role_ROLE_USER,
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "chunks=100 delay=1s"}}}}})
	require.NoError(t, err)
	_, err = s.Recv()
	require.NoError(t, err, "the stream is open")

	start := time.Now()
	m.Close()
	require.Less(t, time.Since(start), 10*time.Second, "Close is bounded")
	for range 200 { // the cut stream ends
		if _, err = s.Recv(); err != nil {
			break
		}
	}
	require.Error(t, err)
	_, err = net.DialTimeout("tcp", m.GRPCAddr(), time.Second)
	require.Error(t, err, "no longer listening")
}
