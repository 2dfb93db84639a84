//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshot

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only (see cachedFile for
// why passes may read the mapping in place).
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.New("snapshot: the row cache cannot be mapped")
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile releases a mapping of mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }
