package ledger

// Statements prepared once per Store.
//
// Every private call runs the same dozen statements: the charge's
// transaction (the registration, the totals, the live reservations, the
// chain head, the record, the release row), the seal's, and the registry
// lookups of the call's source. Run as text through database/sql, the
// driver compiles each of them again on every call (sqlite3_prepare_v2),
// which was a third of a charge's CPU outside the commit. Prepared once,
// each connection keeps its compiled copy (database/sql prepares a
// statement again on a connection that has not seen it) and a call only
// binds and steps. The statements and what they read and write are the
// same: nothing stored changes, and a prepared statement sees the same
// transaction as the text would (it runs on the transaction's
// connection).

import (
	"context"
	"database/sql"
)

// The statements of a call's path, by their text.
const (
	qDatasetRow   = `SELECT schema, rows, users, dropped, source, data_salt, data_hash, created FROM datasets WHERE name = ?`
	qTotals       = `SELECT state FROM totals WHERE dataset = ?`
	qPutTotals    = `INSERT INTO totals(dataset, state) VALUES (?, ?) ON CONFLICT(dataset) DO UPDATE SET state = excluded.state`
	qHeld         = `SELECT call_id, event, expires FROM reservations WHERE dataset = ? AND state = 'held' AND expires > ? AND call_id <> ? ORDER BY call_id`
	qHead         = `SELECT id, hash FROM ledger ORDER BY id DESC LIMIT 1`
	qAppend       = `INSERT INTO ledger(id, kind, dataset, mechanism, params, event, cell, time, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qReleaseName  = `SELECT record FROM releases WHERE dataset = ? AND name = ?`
	qReserveRel   = `INSERT INTO releases(record, dataset, name, call) VALUES (?, ?, ?, ?)`
	qReleaseOf    = releaseCols + `WHERE r.record = ? ORDER BY r.record`
	qRecordHash   = `SELECT hash FROM ledger WHERE id = ?`
	qSeal         = `UPDATE releases SET value = ?, value_hash = ?, hash = ? WHERE record = ?`
	qVersion      = `SELECT version FROM schema_version`
	qEngineRef    = `SELECT ref FROM engines WHERE dataset = ?`
	qSnapshotFile = `SELECT path, hash FROM snapshots WHERE dataset = ?`
)

// hotQueries are prepared at open. Each is run to its end (a row scanned,
// its rows closed) before it runs again on the same connection, as a
// prepared SQLite statement must be: none is run inside a loop over its
// own rows.
var hotQueries = []string{qDatasetRow, qTotals, qPutTotals, qHeld, qHead, qAppend, qReleaseName, qReserveRel,
	qReleaseOf, qRecordHash, qSeal, qVersion, qEngineRef, qSnapshotFile, qDataVersion}

// prepareHot prepares hotQueries on db. A statement that cannot be
// prepared (a database opened read-only at an older layout) is left out
// and runs as text, as before: preparing is an optimisation only.
func prepareHot(db *sql.DB) map[string]*sql.Stmt {
	m := make(map[string]*sql.Stmt, len(hotQueries))
	for _, q := range hotQueries {
		if st, err := db.PrepareContext(context.Background(), q); err == nil {
			m[q] = st
		}
	}
	return m
}

// txStmts runs the prepared statements of stmts on tx, and any other
// statement as text: a queryer and execer for the Store's write and read
// transactions.
type txStmts struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt // read only after open
}

// on returns tx with the Store's prepared statements.
func (s *Store) on(tx *sql.Tx) txStmts { return txStmts{tx: tx, stmts: s.stmts} }

func (t txStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t txStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t txStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.stmts[query]; ok {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// execer is what the writers need of a write transaction: *sql.Tx, or
// txStmts over one.
type execer interface {
	queryer
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}
