//go:build !linux

package snapshot

// releasePages does nothing here: MADV_DONTNEED's meaning for file
// mappings differs between systems, and the pages stay the page cache's.
func releasePages([]byte) {}
