//go:build linux || darwin || freebsd || openbsd || dragonfly

package store

import "syscall"

// filesystemSpace is the space available to an unprivileged user and the
// total size of the filesystem holding dir, in bytes.
func filesystemSpace(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
