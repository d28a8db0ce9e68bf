package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind.
// TestMain turns off dev's default gRPC listener (127.0.0.1:9090) for the
// dev processes and commands the tests run, so that which of them gets the
// port does not vary; a test that wants gRPC passes --grpc-listen.
func TestMain(m *testing.M) {
	os.Setenv("A2AMESH_GRPC_LISTEN", "off")
	goleak.VerifyTestMain(m)
}
