package ledger

// The connection of a call's writes, and what it knows.
//
// A private call writes twice: its charge (Charge) and its release
// (SealRelease). Each transaction used to read again what the one before
// it had just written or read: the chain head, and for a charge the
// dataset's registration and running totals. Charge and SealRelease run
// on one connection of their own (the writer), which remembers the head
// and each charged dataset's registration and totals as of its last
// commit, and uses them in its next transaction instead of reading them
// only if no other connection has committed since.
//
// That is what PRAGMA data_version says: on one connection, its value
// changes exactly when another connection (of this process's pool or of
// another process: a kernel and a REPL on one state directory) has
// committed to the database since the connection last asked, and not for
// the connection's own commits. The writer asks inside its BEGIN
// IMMEDIATE transaction, under the write lock, so nothing can commit
// between the question and the writes that rely on the answer; on any
// other value, or after any failure, it forgets everything and reads the
// database as before. What is written is what would be written without
// the writer's memory: the same record bytes, hashes and totals.

import (
	"context"
	"database/sql"
	"sync"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// qDataVersion asks for the connection's change counter.
const qDataVersion = `PRAGMA data_version`

// writer is the Store's connection for Charge and SealRelease.
type writer struct {
	mu sync.Mutex // held for a whole transaction: one at a time on conn
	// acquire takes a connection from the Store's pool (sql.DB.Conn); the
	// writer only begins transactions on it.
	acquire func(context.Context) (*sql.Conn, error)
	conn    *sql.Conn // nil until the first write, and after a failure

	// What the writer knows, valid only while known and while the
	// connection's data_version is still version.
	known    bool
	version  int64
	headID   int64
	headHash string
	datasets map[string]knownDataset
	fresh    int64 // transactions that found the memory fresh (for tests)
}

// knownDataset is a dataset's registration and totals as the writer's
// last commit left them.
type knownDataset struct {
	schema Schema
	state  accounting.State
}

// writeTx is one transaction of the writer.
type writeTx struct {
	w   *writer
	sql *sql.Tx
	q   txStmts
	// version is the connection's data_version in this transaction;
	// fresh reports whether the writer's memory holds (no other
	// connection committed since its last commit).
	version int64
	fresh   bool
}

// begin locks the writer and begins a BEGIN IMMEDIATE transaction on its
// connection. The caller ends it with finish.
func (s *Store) begin(ctx context.Context) (*writeTx, error) {
	w := &s.w
	w.mu.Lock()
	if w.conn == nil {
		c, err := w.acquire(ctx)
		if err != nil {
			w.mu.Unlock()
			return nil, err
		}
		w.conn, w.known = c, false
	}
	tx, err := w.conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock=immediate)
	if err != nil {
		w.drop()
		w.mu.Unlock()
		return nil, err
	}
	t := &writeTx{w: w, sql: tx, q: s.on(tx)}
	if err := t.q.QueryRowContext(ctx, qDataVersion).Scan(&t.version); err != nil {
		tx.Rollback()
		w.drop()
		w.mu.Unlock()
		return nil, err
	}
	t.fresh = w.known && t.version == w.version
	if t.fresh {
		w.fresh++
	} else {
		w.forget()
	}
	return t, nil
}

// forget drops the writer's memory: its next transaction reads the
// database.
func (w *writer) forget() { w.known, w.datasets = false, nil }

// drop forgets, and gives back the connection, which a failure may have
// left unusable: the next transaction takes another.
func (w *writer) drop() {
	w.forget()
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// close gives back the writer's connection, for Store.Close.
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop()
}

// head returns the chain head: the writer's memory when fresh, else read
// in the transaction.
func (t *writeTx) head(ctx context.Context) (int64, string, error) {
	if t.fresh {
		return t.w.headID, t.w.headHash, nil
	}
	return readHead(ctx, t.q)
}

// accountant is readAccountant in the transaction, from the writer's
// memory when fresh and it holds the dataset.
func (t *writeTx) accountant(ctx context.Context, name string) (*accounting.Accountant, Schema, error) {
	if d, ok := t.w.datasets[name]; ok && t.fresh {
		mode, err := d.schema.Mode()
		if err != nil {
			return nil, Schema{}, err
		}
		acc, err := accounting.Resume(mode, d.schema.Budget, d.state)
		if err != nil {
			return nil, Schema{}, err
		}
		return acc, d.schema, nil
	}
	return readAccountant(ctx, t.q, name)
}

// finish ends the transaction: commit reports whether to commit (else it
// rolls back). After a commit, the writer remembers head as the chain
// head and, if name is not "", dataset name's registration and totals;
// after a rollback or a failure it forgets everything.
func (t *writeTx) finish(commit bool, head record, name string, d knownDataset) error {
	w := t.w
	defer w.mu.Unlock()
	if !commit {
		// Nothing was written, but what was read may be left half
		// remembered: forget it all.
		t.sql.Rollback()
		w.forget()
		return nil
	}
	if err := t.sql.Commit(); err != nil {
		w.drop()
		return err
	}
	if !t.fresh {
		w.datasets = map[string]knownDataset{}
	}
	w.known, w.version = true, t.version
	w.headID, w.headHash = head.ID, head.Hash
	if name != "" {
		w.datasets[name] = d
	}
	return nil
}
