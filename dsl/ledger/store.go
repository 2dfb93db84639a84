// Package ledger is privnotes' durable state: one SQLite database,
// state.db, in a state directory, holding the registered datasets (public
// schema, budget, accountant, and a copy of the data) and an append-only,
// hash-chained ledger of every privacy charge.
//
// The budget tracker lives here: Charge checks a spend against a dataset's
// budget and records it in one BEGIN IMMEDIATE transaction, committed
// durably (WAL, synchronous=FULL) before it returns, so the mechanism reads
// data only after its cost is on disk. A crash after Charge returns counts
// as spent; two processes sharing a state directory serialise on SQLite's
// write lock and can never together exceed a budget. Each dataset's
// running totals (an exact accounting.State) are kept next to the records
// and updated in the same transaction, so a charge does not replay the
// ledger; Verify re-derives them from the records.
//
// What a notebook may see: Schema (public metadata chosen by the owner)
// and Status (budget, spent, remaining). Load returns the data itself and
// is for compiled mechanism code only; OwnerInfo (row counts, source file)
// is for the owner's CLI only. The DSL runtime must expose neither.
//
// Registration is owner-only and final: Register refuses an existing name
// and no API changes a dataset's budget. An owner who wants to grant more
// budget registers the data again under a new name, which the ledger
// records (a "register" record in the chain); there is deliberately no
// "raise" command.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)
	sqlite3 "modernc.org/sqlite/lib"
)

// DBName is the database file inside the state directory.
const DBName = "state.db"

// ErrNoState is wrapped by OpenExisting's error when the directory holds no
// state database: nothing was ever registered there, or the path is a typo.
var ErrNoState = errors.New("no privnotes state")

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	db  *sql.DB
	dir string
	// stmts are the statements of a call's path, prepared once
	// (prepared.go); read only after open.
	stmts map[string]*sql.Stmt
	// w is the connection of Charge and SealRelease (writer.go).
	w writer
}

// Open opens (creating if needed) the state database in dir.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("ledger: empty state directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: creating state directory: %w", err)
	}
	return open(dir, false)
}

// OpenExisting opens the state database in dir and creates nothing: if
// dir has no state database, the error wraps ErrNoState. It is for the
// commands that only read or audit state.
func OpenExisting(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("ledger: empty state directory")
	}
	switch fi, err := os.Stat(filepath.Join(dir, DBName)); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w in %s", ErrNoState, dir)
	case err != nil:
		return nil, fmt.Errorf("ledger: %w", err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("ledger: %s is not a state database", filepath.Join(dir, DBName))
	}
	return open(dir, true)
}

// Constraints put SQLite's own limits on a state database, so that the
// write paths' failures can be exercised for real, also as root (whom file
// permissions do not bind): the errors come from SQLite, as they would
// from a read-only mount or a full disk, and so does the atomicity of
// what fails.
type Constraints struct {
	// ReadOnly opens the database with mode=ro: SQLite refuses every write
	// with SQLITE_READONLY, as when the state directory's file system was
	// remounted read-only after the database was opened. The database
	// must be at the current schema version (nothing is migrated).
	ReadOnly bool
	// MaxPages caps the database at this many pages (PRAGMA
	// max_page_count on every connection): a write that needs a page
	// beyond it fails with SQLITE_FULL, as on a full disk. A cap below
	// the database's size means its size.
	MaxPages int64
}

// OpenConstrained opens the existing state database in dir under c. It is
// for tests of the write paths (a charge or a seal on a full disk or a
// read-only state directory); the binary never calls it.
func OpenConstrained(dir string, c Constraints) (*Store, error) {
	if _, err := os.Stat(filepath.Join(dir, DBName)); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return openWith(dir, true, c)
}

// busyTimeout is how long a statement waits for another process's write
// lock before failing with ErrLocked. A charge waits for the transaction
// ahead of it (a few milliseconds); half a minute means a stuck writer.
// Tests shorten it.
var busyTimeout = 30 * time.Second

// open opens state.db in dir; mustExist makes SQLite refuse to create it
// (should it vanish after OpenExisting looked) and refuses a database that
// holds no privnotes state.
func open(dir string, mustExist bool) (*Store, error) { return openWith(dir, mustExist, Constraints{}) }

// openWith is open under SQLite's limits c (OpenConstrained).
func openWith(dir string, mustExist bool, c Constraints) (*Store, error) {
	path := filepath.Join(dir, DBName)
	q := url.Values{}
	if mustExist {
		q.Set("mode", "rw")
	}
	if c.ReadOnly {
		q.Set("mode", "ro")
	}
	if c.MaxPages > 0 {
		q.Add("_pragma", fmt.Sprintf("max_page_count(%d)", c.MaxPages))
	}
	// WAL mode is set by migrate, once it knows the file is ours: it is
	// stored in the file, and setting it writes there.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("ledger: opening %s: %w", path, err)
	}
	s := &Store{db: db, dir: dir}
	s.w.acquire = db.Conn
	if c.ReadOnly {
		// Nothing can be written: check that there is nothing to migrate.
		if v, err := schemaVersion(context.Background(), db, true); err != nil || v != SchemaVersion {
			db.Close()
			if err == nil {
				err = fmt.Errorf("schema version %d, not %d: open it writable once to upgrade it", v, SchemaVersion)
			}
			return nil, fmt.Errorf("ledger: %s: %w", path, err)
		}
		s.stmts = prepareHot(db)
		return s, nil
	}
	if err := s.migrate(mustExist); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: %s: %w", path, err)
	}
	s.stmts = prepareHot(db) // after migrate: the tables exist
	return s, nil
}

// Errors a state database can fail with, whatever the operation, matched
// by errors.Is; the error also wraps SQLite's own (*sqlite.Error).
var (
	// ErrCorrupt: state.db is damaged (truncated, overwritten) or is not a
	// privnotes state database. Restore it from a backup; `privnotes ledger
	// verify` checks the result.
	ErrCorrupt = errors.New("the state database is damaged or is not a privnotes state database (restore state.db from a backup, then run `privnotes ledger verify`)")
	// ErrNotWritable: the state directory or database cannot be written
	// (permissions, a read-only file system). Nothing was recorded.
	ErrNotWritable = errors.New("the state directory cannot be written (check its permissions and file system)")
	// ErrLocked: another process held the database's write lock for longer
	// than the wait allows. Nothing was recorded; try again.
	ErrLocked = errors.New("the state database is locked by another process")
	// ErrDiskFull: the disk is full. Nothing was recorded.
	ErrDiskFull = errors.New("the disk holding the state directory is full")
)

// dbErr classifies an error from SQLite into the errors above, keeping the
// original: "what, ErrX: SQLite's message".
func dbErr(what string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		var kind error
		switch se.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			kind = ErrCorrupt
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
			kind = ErrNotWritable
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			kind = ErrLocked
		case sqlite3.SQLITE_FULL:
			kind = ErrDiskFull
		}
		if kind != nil {
			return fmt.Errorf("%s: %w: %w", what, kind, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the database.
func (s *Store) Close() error {
	s.w.close()
	for _, st := range s.stmts {
		st.Close()
	}
	return s.db.Close()
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
