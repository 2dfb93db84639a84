package snapshot

// The pool of open readers. Opening a snapshot starts a private DuckDB,
// locks it down and reads the file's metadata (about 0.1 s of CPU and
// hundreds of system calls); an executor that did that per call paid it
// on every call, which dominated small calls. A Pool keeps readers open
// across calls in a process, one per snapshot file and hash, and lends
// them (Lease) to concurrent calls.
//
// What a lent reader shares between calls, and why nothing of one call
// reaches the next. A Reader's DuckDB is in memory, holds no table and
// runs only statements built by this package from the snapshot's public
// schema and its path: scans of read_parquet and metadata queries, each
// on its own connection opened for the pass and closed after it, so
// per-connection state (prepared statements, temporary objects, the
// result of a query) dies with the pass. Its database-wide settings are
// fixed when it opens (lockDown: one readable file, configuration
// locked), so no statement can change them for a later call. What stays
// in the database between passes is its buffer of Parquet pages of that
// one file, which every call reading the snapshot reads anyway, and the
// Reader's own public facts (schema, row-group windows, the verified row
// cache). Whatever a later caller runs on a lent reader is this package's
// code, under the same lock-down; Reader counts its open passes, so a
// reader evicted or closed while passes run is released after the last.
//
// The file behind a lent reader is checked on every lease: Verify of the
// path against the hash, which the process-wide memo (cache_memo.go)
// answers without hashing for the same unchanged file and which hashes
// again, and refuses, a file replaced or changed since. So the pool keeps
// the guarantee of opening per call: a call reads the registered bytes.

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// DefaultPoolSize is the number of readers a Pool keeps open when its
// size is not set: enough for the datasets of a session, few enough that
// the DuckDB instances (each with its buffers, within memoryLimit) stay
// small.
const DefaultPoolSize = 8

// Pool keeps snapshot readers open across calls, up to Size of them (the
// least recently used beyond it are closed once idle). Its zero value is
// ready to use; it is safe for concurrent use. Close closes it.
type Pool struct {
	// Size is the most readers kept open when idle; 0 means
	// DefaultPoolSize.
	Size int

	mu      sync.Mutex
	readers map[poolKey]*pooled
	tick    uint64 // use counter, for least recently used
	closed  bool
}

type poolKey struct{ path, hash string }

type pooled struct {
	r       *Reader
	leases  int    // open leases
	used    uint64 // the pool's tick at its last lease
	evicted bool   // no longer in the pool: closed by its last lease
}

// Lease is a reader lent by a Pool: every method of Reader, and Close,
// which returns it to the pool instead of closing it. A lease must not be
// used after its Close.
type Lease struct {
	*Reader
	pool *Pool
	p    *pooled
	once sync.Once
}

// Open verifies the snapshot at path against hash and lends its reader,
// opening it if the pool holds none. After Close of the pool, Open opens
// readers that are closed with their lease.
func (p *Pool) Open(path, hash string) (*Lease, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	// On every lease: the memo makes it one open and stat for the same
	// unchanged file, and a changed file is hashed again and refused.
	key := poolKey{abs, hash}
	if err := Verify(abs, hash); err != nil {
		p.drop(key) // removed or changed: its reader serves no later call
		return nil, err
	}
	if l := p.lend(key); l != nil {
		return l, nil
	}
	r, err := openVerified(abs, hash)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.readers[key]; e != nil && !p.closed {
		// Another call opened it meanwhile: use theirs.
		r.Close()
		return p.lendLocked(e), nil
	}
	e := &pooled{r: r}
	if p.closed {
		e.evicted = true
	} else {
		if p.readers == nil {
			p.readers = map[poolKey]*pooled{}
		}
		p.readers[key] = e
	}
	l := p.lendLocked(e)
	p.evictLocked()
	return l, nil
}

// drop takes the reader of key out of the pool: closed now if idle, else
// by its last lease.
func (p *Pool) drop(key poolKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.readers[key]
	if e == nil {
		return
	}
	delete(p.readers, key)
	e.evicted = true
	if e.leases == 0 {
		e.r.Close()
	}
}

func (p *Pool) lend(key poolKey) *Lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.readers[key]; e != nil {
		return p.lendLocked(e)
	}
	return nil
}

func (p *Pool) lendLocked(e *pooled) *Lease {
	p.tick++
	e.used = p.tick
	e.leases++
	return &Lease{Reader: e.r, pool: p, p: e}
}

// evictLocked closes the least recently used idle readers beyond the
// pool's size; a reader in use stays until a later eviction finds it
// idle.
func (p *Pool) evictLocked() {
	size := p.Size
	if size <= 0 {
		size = DefaultPoolSize
	}
	for len(p.readers) > size {
		var oldest poolKey
		var victim *pooled
		for k, e := range p.readers {
			if e.leases == 0 && (victim == nil || e.used < victim.used) {
				oldest, victim = k, e
			}
		}
		if victim == nil {
			return // all in use
		}
		delete(p.readers, oldest)
		victim.r.Close()
	}
}

// Close returns the reader to its pool; the last lease of a reader the
// pool no longer holds closes it. A second Close does nothing.
func (l *Lease) Close() error {
	var err error
	l.once.Do(func() {
		l.pool.mu.Lock()
		defer l.pool.mu.Unlock()
		l.p.leases--
		if l.p.leases == 0 {
			if l.p.evicted {
				err = l.p.r.Close()
				return
			}
			l.pool.evictLocked()
		}
	})
	return err
}

// Close closes the pool's idle readers; those lent close with their last
// lease. Later Opens open readers for their lease only.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for k, e := range p.readers {
		delete(p.readers, k)
		e.evicted = true
		if e.leases == 0 {
			errs = append(errs, e.r.Close())
		}
	}
	return errors.Join(errs...)
}
