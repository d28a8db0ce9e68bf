//go:build !(linux || darwin || freebsd)

package natsnode

// diskFree cannot tell the free space here: -1, and JetStream is restarted
// after a write fault without waiting for space (bus/storewatch.go).
func diskFree(string) int64 { return -1 }
