package snapshot

import "syscall"

// releasePages drops b's pages (page-aligned) from the process's page
// tables. On the shared read-only file mapping of mapFile the page cache
// keeps the data, and the next access re-faults it from there: madvise(2)
// states that after MADV_DONTNEED a shared file mapping is repopulated
// from the up-to-date contents of the file (a private one is specified
// only for anonymous memory, hence MAP_SHARED). The mapping stays valid
// and reads the same bytes; only the process's resident set shrinks.
func releasePages(b []byte) { syscall.Madvise(b, syscall.MADV_DONTNEED) }
