//go:build linux

package chaos

import "syscall"

// sysProcAttr puts a role in its own process group (a Ctrl-C at the
// terminal reaches the harness, not its children, so a child never "exits
// on its own" because of it) and has the kernel SIGKILL it when the thread
// that started it dies: children are started from one locked thread that
// lives as long as the harness (see spawner), so a harness that dies for
// any reason leaves no role behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
