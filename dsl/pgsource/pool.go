package pgsource

// Sessions: a call opens its table twice, for the catalog check before
// the charge and for the run after it, and a process (a notebook's
// kernel, the data service) makes many calls. A new PostgreSQL session
// costs a connection, an authentication and a backend whose catalog
// caches start cold (the catalog check on a new session took 0.1–0.2 s of
// a call's fixed cost); a pool per registered dataset keeps sessions warm
// between them.
//
// A pool is the dataset's own: it is keyed by the dataset's password file
// (one per registered name in the store) and by a fingerprint of the URL
// and password it was made with, so that a session is never handed to
// another dataset, nor kept after a new registration or password: a
// change closes the old pool, and a wrong new password is refused as a
// new connection's would be. The password stays in memory only, in the
// pool's connection settings, as it was in the session's.

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// poolIdle is how long a dataset's pool outlives its last call: then its
// sessions end, so a removed dataset's server keeps none of ours open
// for long.
const poolIdle = time.Minute

// poolMaxConns bounds one dataset's sessions: a process runs few calls
// on a dataset at once.
const poolMaxConns = 4

// pools is the process's pools, by dataset.
var pools = &poolSet{m: map[string]*poolEntry{}}

// poolSet holds one pool per dataset, by the path of its password file.
type poolSet struct {
	mu sync.Mutex
	m  map[string]*poolEntry
}

// poolEntry is one dataset's pool: sum fingerprints the URL and password
// its sessions were opened with, users counts the open Sources, idle
// closes it after poolIdle without one, and retired marks a pool that a
// new registration replaced while it was in use.
type poolEntry struct {
	sum     [sha256.Size]byte
	pool    *pgxpool.Pool
	users   int
	idle    *time.Timer
	retired bool
}

// lease is one Source's use of a pool.
type lease struct {
	set  *poolSet
	key  string
	e    *poolEntry
	pool *pgxpool.Pool
}

// fingerprint identifies the server, user and password a pool's sessions
// were opened with.
func fingerprint(url, password string) [sha256.Size]byte {
	return sha256.Sum256([]byte(url + "\x00" + password))
}

// take leases the pool of the dataset whose password file is key, made
// for url and password; a pool made for another URL or password is
// closed (once its sessions are back) and replaced.
func (ps *poolSet) take(key, url, password string) (*lease, error) {
	sum := fingerprint(url, password)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e := ps.m[key]
	if e != nil && e.sum != sum {
		delete(ps.m, key)
		if ps.retire(e) {
			go e.pool.Close()
		}
		e = nil
	}
	if e == nil {
		pool, err := newPool(url, password)
		if err != nil {
			return nil, err
		}
		e = &poolEntry{sum: sum, pool: pool}
		ps.m[key] = e
	}
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	e.users++
	return &lease{set: ps, key: key, e: e, pool: e.pool}, nil
}

// retire takes e out of use: its pool is closed when the last Source
// holding it is done, and it reports whether none holds it now, when the
// caller is to close it (once ps.mu is released: a close ends the
// sessions over the network). ps.mu is held.
func (ps *poolSet) retire(e *poolEntry) (unused bool) {
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	e.retired = true
	return e.users == 0
}

// done ends the lease: the last user of a retired pool closes it, and an
// idle pool is closed after poolIdle unless a call takes it again.
func (l *lease) done() {
	ps, e := l.set, l.e
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e.users--
	if e.users > 0 {
		return
	}
	if e.retired {
		go e.pool.Close()
		return
	}
	e.idle = time.AfterFunc(poolIdle, func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if ps.m[l.key] == e && e.users == 0 && e.idle != nil {
			delete(ps.m, l.key)
			if ps.retire(e) {
				go e.pool.Close()
			}
		}
	})
}

// Close ends the pool of the dataset whose password file is secretPath
// (ledger.Store.EngineSecretPath): for a dataset that is removed or
// registered anew, whose server is then to keep none of the process's
// sessions. Idle sessions end before Close returns; one a Source holds
// ends when that Source is closed. A later Open makes a new pool.
func Close(secretPath string) { pools.close(secretPath) }

// CloseAll is Close for every dataset: for a process that ends, so that
// its sessions end with a goodbye to the server rather than a dropped
// connection.
func CloseAll() { pools.close("") }

// close closes key's pool, or every pool for key "".
func (ps *poolSet) close(key string) {
	var now []*pgxpool.Pool
	ps.mu.Lock()
	for k, e := range ps.m {
		if key != "" && k != key {
			continue
		}
		delete(ps.m, k)
		if ps.retire(e) {
			now = append(now, e.pool)
		}
	}
	ps.mu.Unlock()
	for _, p := range now {
		p.Close()
	}
}

// newPool makes a dataset's pool; it connects on the first Acquire.
// Every session is pinged when taken: a server that went down since the
// last call is then "cannot be reached" at Open, before or after the
// charge, as it was with a session per Open, and not a failed statement.
func newPool(url, password string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errURL
	}
	connConfig(cfg.ConnConfig, password)
	cfg.MinConns = 0
	cfg.MaxConns = poolMaxConns
	cfg.MaxConnIdleTime = poolIdle
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, errURL
	}
	return pool, nil
}
