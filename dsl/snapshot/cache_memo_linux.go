//go:build linux

package snapshot

import (
	"os"
	"syscall"
)

// fileID is what the kernel reports of a file that any change to it, or
// its replacement, alters (see the memo in cache_memo.go).
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// fileIdentity returns st's fileID.
func fileIdentity(st os.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino), size: s.Size,
		mtime: s.Mtim.Nano(), ctime: s.Ctim.Nano()}, true
}
