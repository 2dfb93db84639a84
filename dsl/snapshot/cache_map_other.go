//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package snapshot

import (
	"errors"
	"os"
)

// mapFile is not available here: passes read the row cache with pread.
func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("snapshot: no memory maps on this platform")
}

func unmapFile([]byte) error { return nil }
