//go:build unix

package chaos

import (
	"os"
	"syscall"
)

// pauseProcess stops p (SIGSTOP): it holds its sockets but answers nothing.
func pauseProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// resumeProcess continues a paused p (SIGCONT).
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// terminateProcess asks p to stop (SIGTERM).
func terminateProcess(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

const faultsSupported = true
