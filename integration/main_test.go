package integration

import (
	"os"
	"testing"
)

// TestMain turns off the gRPC listener `a2amesh dev` opens by default on
// 127.0.0.1:9090, for every process the tests start: with many meshes
// running at once, which of them got the port would vary from run to run.
// A test that wants gRPC passes --grpc-listen with a free port.
func TestMain(m *testing.M) {
	os.Setenv("A2AMESH_GRPC_LISTEN", "off")
	os.Exit(m.Run())
}
