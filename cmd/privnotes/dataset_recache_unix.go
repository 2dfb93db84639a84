//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileOwner returns the user that owns a file.
func fileOwner(st os.FileInfo) (int, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
