package ledger

// Reads of one consistent snapshot.
//
// A server keeps charging and sealing while its owner audits the ledger,
// and an audit reads several tables: the chain, the releases, the
// registry, the running totals, the reservations. Read in separate
// statements, each sees the database as it is at that moment, so a
// charge or seal committed between two of them gives the audit a ledger
// that never existed (a stored release whose charge record it has not
// read, a sealed release without its seal record, totals one charge ahead
// of the chain) and it reports tampering that is not there.
//
// So every read of more than one statement goes through a View: one
// read-only transaction on one connection. The state database is in WAL
// mode, where a read transaction sees the database as of its first read
// until it ends, whatever other connections and processes commit
// meanwhile, and holds no lock that a writer waits for. View's methods
// read only through the transaction (a View holds nothing else to read
// with), and the Store's read methods are each one View, so an audit
// helper written as a View method cannot read outside the snapshot.
// (TestReadsGoThroughViews fails on a Store method that queries the
// database outside a transaction.)

import (
	"context"
	"database/sql"
)

// View is one consistent snapshot of the state database, for reads that
// need more than one statement (audits, exports, a budget's status). It is
// valid only inside the function given to Store.View.
type View struct {
	ctx context.Context
	q   queryer // the read transaction: every read of the View goes through it
	dir string  // the state directory, for snapshot files
}

// View calls fn with one snapshot of the database: everything fn reads
// through v is the database as it was when View began, whatever is
// committed meanwhile. Writers are not held up (the transaction is
// read-only and takes no write lock); keep fn short all the same, since
// the write-ahead log cannot be checkpointed past an open snapshot.
func (s *Store) View(ctx context.Context, fn func(v *View) error) error {
	// ReadOnly makes the driver begin a deferred transaction, not BEGIN
	// IMMEDIATE (_txlock), so it neither takes nor waits for the write
	// lock. database/sql pins the transaction to one connection.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return dbErr("ledger: starting a read of the state database", err)
	}
	defer tx.Rollback() // nothing to commit: it only reads
	// A deferred transaction takes its snapshot at its first read: read
	// now, so that the snapshot is the one of this moment and not of
	// whenever fn first reads.
	q := s.on(tx)
	var version int
	if err := q.QueryRowContext(ctx, qVersion).Scan(&version); err != nil {
		return dbErr("ledger: starting a read of the state database", err)
	}
	return fn(&View{ctx: ctx, q: q, dir: s.dir})
}

// view is View with the background context, for the Store's read
// methods, whose callers give none.
func (s *Store) view(fn func(v *View) error) error {
	return s.View(context.Background(), fn)
}
