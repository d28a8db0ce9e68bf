package main

import (
	"os"
	"runtime/debug"
)

// serverGCPercent is the Go GC target of a process that embeds the NATS
// server (dev, nats) unless GOGC says otherwise. The server's live heap
// grows with the retained tasks (about 0.5 KiB each), and at Go's default
// of 100 a busy process holds as much again in garbage: at 50, dev under
// load after 3·10^5 tasks held 390 MiB instead of 657–701 MiB, with no
// measurable loss of throughput (docs/measured.md#the-task-store-issue-22).
const serverGCPercent = 50

// tuneGCForServer sets serverGCPercent unless GOGC is set.
func tuneGCForServer() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serverGCPercent)
	}
}
