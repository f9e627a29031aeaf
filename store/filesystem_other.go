//go:build !(linux || darwin || freebsd || openbsd || dragonfly)

package store

import "errors"

// filesystemSpace is not measured on this platform; the disk space metrics
// are left out.
func filesystemSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.ErrUnsupported
}
