//go:build !unix

package chaos

import (
	"errors"
	"os"
	"syscall"
)

var errUnsupported = errors.New("chaos: needs a Unix system (SIGKILL, SIGSTOP)")

func sysProcAttr() *syscall.SysProcAttr { return nil }

func pauseProcess(*os.Process) error { return errUnsupported }

func resumeProcess(*os.Process) error { return errUnsupported }

func terminateProcess(p *os.Process) error { return p.Kill() }

const faultsSupported = false
