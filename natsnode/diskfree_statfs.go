//go:build linux || darwin || freebsd

package natsnode

import "syscall"

// diskFree is the space, in bytes, available to unprivileged writers on the
// file system holding dir (-1 when it cannot be told).
func diskFree(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize))
}
