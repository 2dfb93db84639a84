package snapshot

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The per-process memo of verified row caches and snapshots. Hashing a
// cache's payload (8·rows·width bytes) or a snapshot costs about as much
// as a pass over it, and every private call opens its own Reader, so
// without the memo each call paid both again. A file whose hash matched
// is remembered by its identity, and a later open of a file with the same
// identity, checked against the same hashes, skips the hash (a cache's
// header is still read and checked each time). A snapshot is argued the
// same way as a cache below: it is installed read-only by a rename and
// never written in place.
//
// Why that is safe. The identity is the header's snapshot and payload
// hashes together with what the kernel reports for the opened file
// descriptor (the file actually read, not the path): device, inode, size,
// modification time and status-change time (ctime), both in nanoseconds.
// privnotes never modifies a cache in place: WriteCache writes a new file
// and renames it over the old one, which gives a new identity (another
// inode, or a reused inode with the ctime of its new creation). Any
// write into an existing file updates its mtime and ctime, and resetting
// the mtime (utimes, touch -r, cp -p) sets the ctime to the current time;
// no system call sets a ctime to a chosen value. A swapped or edited
// file therefore keeps the remembered identity only if someone writes
// the block device underneath the file system or turns the clock back
// while editing, which needs root on the machine. That adversary also
// defeats the check without the memo: a Reader verifies its cache once,
// then reads the file in every later pass, so an in-place edit after the
// first verification was never caught. The memo lengthens that window
// from a Reader's life to the process's, under a condition (an unchanged
// ctime) that ordinary writes cannot meet.
//
// Two details close the gaps of timestamps. File systems stamp times from
// a coarse clock (a jiffy, or whole seconds), so an edit right after the
// file's last change could keep its ctime: a file is remembered only if
// its ctime is at least memoAge older than the start of its verification,
// so any later change stamps a ctime that differs. And an edit during the
// hash would go unseen by the hash: the identity is read again after it
// and must not have changed. A cache written moments ago is therefore
// hashed again until it is memoAge old. Platforms whose stat gives no
// ctime or inode (fileIdentity reports false) always hash.
//
// The memo holds one small key per distinct cache file, and only for
// files that verified.
var verifiedCaches sync.Map // memoKey → struct{}

// memoAge is how much older than its verification a cache's last change
// must be for the memo to keep it: above the coarsest timestamp
// granularity of the file systems in use (FAT's 2 s). Tests lower it.
var memoAge = 3 * time.Second

// payloadHashes and snapshotHashes count the hashes of cache payloads
// and of snapshot files computed (for tests).
var payloadHashes, snapshotHashes atomic.Int64

// remember stores key, the identity of the opened cache f before its
// payload hash (started at started) matched, when the platform gives
// one, the identity is unchanged after the hash and the file's last
// change is memoAge older than the hash's start.
func remember(f *os.File, key memoKey, memo bool, started time.Time) {
	if !memo {
		return
	}
	after, ok := memoKeyOf(f, key.want)
	if !ok || after != key || time.Unix(0, key.id.ctime).After(started.Add(-memoAge)) {
		return
	}
	verifiedCaches.Store(key, struct{}{})
}

type memoKey struct {
	id   fileID
	want [2][32]byte // the hashes the file was checked against
}

// memoKeyOf returns the memo key of the opened file f checked against
// the hashes want; ok is false when the platform cannot identify the
// file.
func memoKeyOf(f *os.File, want [2][32]byte) (memoKey, bool) {
	st, err := f.Stat()
	if err != nil {
		return memoKey{}, false
	}
	id, ok := fileIdentity(st)
	if !ok {
		return memoKey{}, false
	}
	return memoKey{id: id, want: want}, true
}

// verifiedBefore returns f's memo key for the hashes want, whether the
// platform gives one, and whether this very file verified against them
// before in this process.
func verifiedBefore(f *os.File, want [2][32]byte) (key memoKey, memo, hit bool) {
	key, memo = memoKeyOf(f, want)
	if memo {
		_, hit = verifiedCaches.Load(key)
	}
	return key, memo, hit
}
