//go:build unix && !linux

package chaos

import "syscall"

// sysProcAttr puts a role in its own process group, so a Ctrl-C at the
// terminal reaches the harness, not its children.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
