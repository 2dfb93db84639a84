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
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"gonum.org/v1/gonum/mat"

	"modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)
	sqlite3 "modernc.org/sqlite/lib"
)

// SchemaVersion is the version of the database layout this package writes.
// Version 1 held the registry, the data and the ledger; version 2 adds the
// totals table, each dataset's running accounting.State, so that a charge
// costs the same whatever the length of the ledger; version 3 adds the
// snapshots table, the datasets stored as immutable snapshot files
// (dsl/snapshot); version 4 adds the releases table, the released values
// of each charge (release.go); version 5 chains a "seal" record for each
// stored release, so that the head covers the values (release.go). Open
// upgrades an older database in place.
const SchemaVersion = 5

// ExportVersion is the version of the document Export writes. Version 2
// adds the chain as stored, the releases and the registered budgets;
// version 3 chains have seal records, which every stored release needs;
// version 4 adds partial exports (ExportDoc.Datasets), whose chain holds
// redacted links for the records of the datasets left out.
const ExportVersion = 4

// DBName is the database file inside the state directory.
const DBName = "state.db"

// EnvState is the environment variable naming the state directory.
const EnvState = "PRIVNOTES_STATE"

// ErrNoState is wrapped by OpenExisting's error when the directory holds no
// state database: nothing was ever registered there, or the path is a typo.
var ErrNoState = errors.New("no privnotes state")

// ResolveStateDir resolves the state directory without creating it:
// flagValue (from --state) if set, else $PRIVNOTES_STATE, else
// $XDG_DATA_HOME/privnotes, else ~/.local/share/privnotes. It returns an
// absolute path. Read-only commands use it with OpenExisting, so that a
// mistyped directory is reported instead of audited as an empty ledger.
func ResolveStateDir(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = os.Getenv(EnvState)
	}
	if dir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state directory %q: %w", dir, err)
	}
	return abs, nil
}

// DefaultStateDir is the state directory used when neither --state nor
// $PRIVNOTES_STATE names one: $XDG_DATA_HOME/privnotes, else
// ~/.local/share/privnotes.
func DefaultStateDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "privnotes"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: give --state DIR or set %s (%v)", EnvState, err)
	}
	return filepath.Join(home, ".local", "share", "privnotes"), nil
}

// StateDir resolves the state directory like ResolveStateDir and creates
// it (mode 0700) if needed; it is for the commands that may create state
// (registering data, running cells).
func StateDir(flagValue string) (string, error) {
	abs, err := ResolveStateDir(flagValue)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("creating state directory: %w", err)
	}
	return abs, nil
}

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	db  *sql.DB
	dir string
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
	if c.ReadOnly {
		// Nothing can be written: check that there is nothing to migrate.
		if v, err := schemaVersion(context.Background(), db, true); err != nil || v != SchemaVersion {
			db.Close()
			if err == nil {
				err = fmt.Errorf("schema version %d, not %d: open it writable once to upgrade it", v, SchemaVersion)
			}
			return nil, fmt.Errorf("ledger: %s: %w", path, err)
		}
		return s, nil
	}
	if err := s.migrate(mustExist); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: %s: %w", path, err)
	}
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
func (s *Store) Close() error { return s.db.Close() }

const schemaSQL = `
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
	name       TEXT PRIMARY KEY,
	schema     TEXT NOT NULL,    -- public Schema as JSON
	eps        REAL NOT NULL,
	delta      REAL NOT NULL,
	accountant TEXT NOT NULL,
	rows       INTEGER NOT NULL, -- owner-only
	users      INTEGER NOT NULL, -- owner-only
	dropped    INTEGER NOT NULL, -- owner-only
	source     TEXT NOT NULL,    -- owner-only
	data_salt  TEXT NOT NULL,    -- owner-only: keys data_hash
	data_hash  TEXT NOT NULL,    -- SHA-256 of salt and data
	created    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS data_chunks (
	dataset TEXT NOT NULL REFERENCES datasets(name),
	seq     INTEGER NOT NULL,
	rows    INTEGER NOT NULL,
	x       BLOB NOT NULL,  -- float64 little endian, row-major
	users   BLOB,           -- int32 little endian per row
	y       BLOB,           -- float64 little endian per row
	PRIMARY KEY (dataset, seq)
);
CREATE TABLE IF NOT EXISTS ledger (
	id        INTEGER PRIMARY KEY,
	kind      TEXT NOT NULL,      -- "register", "charge", "remove" or "seal"
	dataset   TEXT NOT NULL,
	mechanism TEXT NOT NULL,
	params    TEXT NOT NULL,      -- JSON
	event     TEXT NOT NULL,      -- accounting.Event as JSON ("null" for register)
	cell      TEXT NOT NULL,
	time      TEXT NOT NULL,      -- RFC 3339, UTC
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_dataset ON ledger(dataset, kind);
-- Derived from the ledger, kept in the transaction of each record that
-- changes it; Verify re-derives and compares. (Schema version 2.)
CREATE TABLE IF NOT EXISTS totals (
	dataset TEXT PRIMARY KEY REFERENCES datasets(name),
	state   TEXT NOT NULL -- accounting.State, text form: exact sums of the charges
);
-- Datasets stored as immutable snapshot files. (Schema version 3.)
CREATE TABLE IF NOT EXISTS snapshots (
	dataset TEXT PRIMARY KEY REFERENCES datasets(name),
	path    TEXT NOT NULL, -- relative to the state directory
	hash    TEXT NOT NULL  -- hex SHA-256 of the file's bytes
);
CREATE TRIGGER IF NOT EXISTS snapshots_immutable_update BEFORE UPDATE ON snapshots
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
CREATE TRIGGER IF NOT EXISTS snapshots_immutable_delete BEFORE DELETE ON snapshots
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
CREATE TRIGGER IF NOT EXISTS ledger_append_only_update BEFORE UPDATE ON ledger
	BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS ledger_append_only_delete BEFORE DELETE ON ledger
	BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS datasets_immutable_update BEFORE UPDATE ON datasets
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
CREATE TRIGGER IF NOT EXISTS datasets_immutable_delete BEFORE DELETE ON datasets
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
CREATE TRIGGER IF NOT EXISTS data_immutable_update BEFORE UPDATE ON data_chunks
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
CREATE TRIGGER IF NOT EXISTS data_immutable_delete BEFORE DELETE ON data_chunks
	BEGIN SELECT RAISE(ABORT, 'a registered dataset is immutable'); END;
-- The release of each charge (schema version 4; release.go): inserted
-- with the charge, sealed once with the released values after the run.
CREATE TABLE IF NOT EXISTS releases (
	record     INTEGER PRIMARY KEY REFERENCES ledger(id),
	dataset    TEXT NOT NULL,
	name       TEXT NOT NULL, -- '' for an unnamed call
	call       TEXT NOT NULL, -- the call's public parameters, canonical JSON
	value      TEXT,          -- the released values, canonical JSON; NULL until sealed
	value_hash TEXT,          -- hex SHA-256 of value: the release hash
	hash       TEXT           -- hex SHA-256 chaining the row to its charge record
);
CREATE UNIQUE INDEX IF NOT EXISTS releases_name ON releases(dataset, name) WHERE name <> '';
CREATE TRIGGER IF NOT EXISTS releases_sealed BEFORE UPDATE ON releases WHEN OLD.value IS NOT NULL
	BEGIN SELECT RAISE(ABORT, 'a stored release is immutable'); END;
CREATE TRIGGER IF NOT EXISTS releases_fixed BEFORE UPDATE OF record, dataset, name, call ON releases
	BEGIN SELECT RAISE(ABORT, 'a stored release is immutable'); END;
CREATE TRIGGER IF NOT EXISTS releases_append_only_delete BEFORE DELETE ON releases
	BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
`

// migrate creates the schema of a new database and upgrades an older one,
// in one write transaction: two processes opening an old state directory at
// once serialise here, and the second finds it upgraded.
func (s *Store) migrate(mustExist bool) error {
	ctx := context.Background()
	// Look before writing anything: a file that is not ours, or a reading
	// command's empty file, is refused untouched.
	if _, err := schemaVersion(ctx, s.db, mustExist); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA journal_mode=WAL`); err != nil {
		return dbErr("switching the state database to write-ahead logging", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("opening the state database", err)
	}
	defer tx.Rollback()
	// Again under the write lock: another process may have created or
	// upgraded the database since.
	v, err := schemaVersion(ctx, tx, mustExist)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, schemaSQL+reserveSQL); err != nil { // reserveSQL: reserve.go
		return dbErr("creating schema", err)
	}
	switch v {
	case 0:
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version) VALUES (?)`, SchemaVersion); err != nil {
			return dbErr("recording the schema version", err)
		}
	case 1:
		if err := upgrade1to2(ctx, tx); err != nil {
			return fmt.Errorf("upgrading the state database from schema version 1 to 2: %w", err)
		}
		fallthrough
	case 2:
		// The snapshots table is new and empty (schemaSQL created it).
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = 3`); err != nil {
			return dbErr("recording the schema version", err)
		}
		fallthrough
	case 3:
		// The releases table is new and empty: earlier charges stored no
		// release, and Verify checks only the rows there are.
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = 4`); err != nil {
			return dbErr("recording the schema version", err)
		}
		fallthrough
	case 4:
		if err := upgradeSeals(ctx, tx); err != nil { // release.go
			return fmt.Errorf("upgrading the state database from schema version 4 to 5: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = 5`); err != nil {
			return dbErr("recording the schema version", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr("committing the schema", err)
	}
	return nil
}

// schemaVersion reads the database's schema version: 0 for a new, empty
// database (which mustExist refuses), an error wrapping ErrCorrupt for a
// database that holds something else, and an error for a version this
// package does not read.
func schemaVersion(ctx context.Context, q queryer, mustExist bool) (int, error) {
	var v int
	switch err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
	case err == nil:
		if v > SchemaVersion || v < 1 {
			return 0, fmt.Errorf("state database has schema version %d; this privnotes reads versions 1 to %d", v, SchemaVersion)
		}
		return v, nil
	case errors.Is(err, sql.ErrNoRows) || isNoSuchTable(err):
		// A new database: it must hold nothing else. (An empty file is an
		// empty database to SQLite; a reading command must not turn it
		// into a ledger.)
		var tables int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name <> 'schema_version'`).Scan(&tables); err != nil {
			return 0, dbErr("reading the database's tables", err)
		}
		if mustExist || tables > 0 {
			return 0, fmt.Errorf("%w: %s holds no privnotes schema version", ErrCorrupt, DBName)
		}
		return 0, nil
	default:
		return 0, dbErr("reading the schema version", err)
	}
}

// isNoSuchTable reports whether err is SQLite's "no such table".
func isNoSuchTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// upgrade1to2 fills the totals table from the ledger's charges. A dataset
// whose charges cannot be replayed (a corrupt record) gets no row: Charge
// then rebuilds it from the records and fails on the same record, and
// Verify names it, instead of the whole state directory failing to open.
func upgrade1to2(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT name, schema FROM datasets ORDER BY name`)
	if err != nil {
		return dbErr("reading the registry", err)
	}
	type ds struct{ name, schema string }
	var all []ds
	for rows.Next() {
		var d ds
		if err := rows.Scan(&d.name, &d.schema); err != nil {
			rows.Close()
			return dbErr("reading the registry", err)
		}
		all = append(all, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return dbErr("reading the registry", err)
	}
	for _, d := range all {
		var sc Schema
		if json.Unmarshal([]byte(d.schema), &sc) != nil {
			continue
		}
		mode, err := sc.Mode()
		if err != nil {
			continue
		}
		st, err := replayState(ctx, tx, d.name, mode, sc.Budget)
		var se *sqlite.Error
		if errors.As(err, &se) {
			return err // the database itself failed: upgrade nothing
		} else if err != nil {
			continue // a bad record: see the comment above
		}
		if err := putTotals(ctx, tx, d.name, st); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = 2`); err != nil {
		return dbErr("recording the schema version", err)
	}
	return nil
}

// Schema is a dataset's public description: what a notebook may see.
type Schema struct {
	Name       string            `json:"name"`
	Columns    []string          `json:"columns"`
	D          int               `json:"d"`
	Clip       float64           `json:"clip"`                  // L2 norm rows (feature vectors) are clipped to
	Unit       string            `json:"unit"`                  // "row" or "user"
	UserColumn string            `json:"user_column,omitempty"` // unit=user
	Label      string            `json:"label,omitempty"`       // label column, if any
	LabelClip  float64           `json:"label_clip,omitempty"`  // |y| bound, if a label
	Center     string            `json:"center"`                // "none" or "public-mean"
	Mean       []float64         `json:"mean,omitempty"`        // the public mean subtracted at registration
	Neighbour  string            `json:"neighbour"`             // default relation: "replace-one" or "add-remove"
	Accountant string            `json:"accountant"`            // "zcdp" or "basic"; "advanced" (basic since; see accounting.ModeAdvanced) in old registrations
	Budget     accounting.Budget `json:"budget"`
	BadRows    string            `json:"bad_rows"` // the public rule: "reject" or "drop"
	// PublicN is the number of privacy units (rows for unit "row", users for
	// unit "user") when the owner declared it public at registration
	// (privnotes dataset add --public-n), and 0 when it is private, the
	// default. Mechanisms that need n may run only when it is public.
	PublicN int `json:"public_n,omitempty"`
	// Bounds are the public bounds [lo, hi] of numeric columns, by name,
	// declared by the data owner (--bounds): values are clamped to them
	// when an analysis reads the column.
	Bounds map[string][2]float64 `json:"bounds,omitempty"`
	// Categorical lists the categorical columns, by name, with their
	// public domains (--categories). A value outside its domain falls
	// into the bucket "other". Categorical columns are not among Columns,
	// the numeric features the matrix mechanisms use.
	Categorical map[string][]string `json:"categorical,omitempty"`
	// Kind is KindMatrix for a matrix dataset (matrix.go), empty for rows;
	// Matrix is then its public shape and Neighbour is NeighbourEntry.
	Kind   string       `json:"kind,omitempty"`
	Matrix *MatrixShape `json:"matrix,omitempty"`
}

// OtherCategory names the bucket of a categorical column's values that
// lie outside its registered domain.
const OtherCategory = "other"

// Mode returns the dataset's accountant mode.
func (s Schema) Mode() (accounting.Mode, error) { return accounting.ParseMode(s.Accountant) }

// Registration is what the owner registers.
type Registration struct {
	Name       string
	Table      *dataset.Table
	Budget     accounting.Budget
	Accountant accounting.Mode
	Neighbour  accounting.Neighbour
	Clip       float64
	LabelClip  float64
	BadRows    string
	Source     string // the CSV path, for the owner's records
	// PublicN declares the number of privacy units (rows, or users for a
	// user-level table) public: Register records the count in
	// Schema.PublicN, where notebooks may read it. Leave it false unless
	// the count is already public (published with the data, say).
	PublicN bool
	// Bounds declares public bounds [lo, hi] of numeric columns, by name
	// (--bounds): analyses of a column's values (sums, histograms,
	// quantiles) need them.
	Bounds map[string][2]float64
	// Snapshot, instead of Table, registers data already written as an
	// immutable snapshot file in SnapshotDir (dsl/snapshot builds it).
	Snapshot *SnapshotRef
	// Matrix registers the snapshot as a matrix dataset (matrix.go).
	Matrix *MatrixShape
}

// OwnerInfo is what the owner's CLI shows: the public schema plus facts
// that must never reach a notebook.
type OwnerInfo struct {
	Schema   Schema
	Rows     int
	Users    int
	Dropped  int
	Source   string
	DataHash string
	Created  time.Time
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ErrNoDataset is returned (wrapped) for an unknown dataset name.
var ErrNoDataset = errors.New("no such dataset")

const chunkRows = 4096

// MaxRows is the largest number of rows a dataset may have. The mechanisms
// charge the worst-case rounding error of their sums for this many rows
// (mechanisms/pca.MaxRows), so the limit must be enforced here, where the
// data owner sees the row count, and never inside a mechanism, where a
// refusal would depend on private data.
const MaxRows = 1 << 30

// Register stores a new dataset and appends its "register" record to the
// ledger. It refuses an existing name.
func (s *Store) Register(ctx context.Context, r Registration) (*OwnerInfo, error) {
	if r.Snapshot != nil {
		return s.registerSnapshot(ctx, r)
	}
	t := r.Table
	switch {
	case !nameRE.MatchString(r.Name):
		return nil, fmt.Errorf("dataset name %q: use a letter followed by letters, digits, '_', '.' or '-' (at most 64)", r.Name)
	case t == nil || t.Rows == 0:
		return nil, errors.New("no data rows to register")
	case t.Rows > MaxRows:
		return nil, fmt.Errorf("%d data rows: privnotes registers at most %d rows per dataset (split the data into several datasets)", t.Rows, MaxRows)
	}
	if err := checkRegistration(r, t.Label != ""); err != nil {
		return nil, err
	}
	if err := checkNames(t); err != nil {
		return nil, err
	}
	if err := checkBounds(r.Bounds, t.Columns); err != nil {
		return nil, err
	}
	sc := registeredSchema(r, t.Columns, t.Label, t.UserColumn, t.Rows, t.NumUsers, r.Bounds)
	if t.Mean != nil {
		sc.Center, sc.Mean = "public-mean", t.Mean
	}
	var saltBytes [32]byte
	if _, err := rand.Read(saltBytes[:]); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	salt := hex.EncodeToString(saltBytes[:])
	dataHash := hashData(salt, t)
	d := len(t.Columns)
	now, err := s.commitRegistration(ctx, r, sc, [3]int{t.Rows, t.NumUsers, t.Dropped}, salt, dataHash, func(tx *sql.Tx) error {
		for seq, lo := 0, 0; lo < t.Rows; seq, lo = seq+1, lo+chunkRows {
			hi := min(lo+chunkRows, t.Rows)
			var users, y []byte
			if t.Users != nil {
				users = int32Bytes(t.Users[lo:hi])
			}
			if t.Y != nil {
				y = floatBytes(t.Y[lo:hi])
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO data_chunks(dataset, seq, rows, x, users, y) VALUES (?, ?, ?, ?, ?, ?)`,
				r.Name, seq, hi-lo, floatBytes(t.X[lo*d:hi*d]), users, y); err != nil {
				return dbErr("ledger: storing data", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &OwnerInfo{Schema: sc, Rows: t.Rows, Users: t.NumUsers, Dropped: t.Dropped, Source: r.Source, DataHash: dataHash, Created: now}, nil
}

// registeredSchema is the public schema of registration r of data with
// these numeric columns, label and user column ("" for none), row and user
// counts, and public bounds.
func registeredSchema(r Registration, columns []string, label, userColumn string, rows, users int, bounds map[string][2]float64) Schema {
	sc := Schema{
		Name: r.Name, Columns: columns, D: len(columns), Clip: r.Clip, Unit: "row",
		Label: label, Center: "none", Neighbour: r.Neighbour.String(), Accountant: r.Accountant.String(),
		Budget: r.Budget, BadRows: r.BadRows,
	}
	if len(bounds) > 0 {
		sc.Bounds = bounds
	}
	if r.PublicN {
		sc.PublicN = rows
		if userColumn != "" {
			sc.PublicN = users
		}
	}
	if sc.BadRows == "" {
		sc.BadRows = "reject"
	}
	if label != "" {
		sc.LabelClip = r.LabelClip
	}
	if userColumn != "" {
		sc.Unit, sc.UserColumn = "user", userColumn
	}
	if r.Matrix != nil {
		applyMatrix(&sc, r.Matrix)
	}
	return sc
}

// commitRegistration stores a new dataset in one transaction: its
// registry row (counts are rows, users and dropped rows, owner-only), its
// data (storeData, in the same transaction), its register record and its
// zero running totals. It refuses a name already registered.
func (s *Store) commitRegistration(ctx context.Context, r Registration, sc Schema, counts [3]int, salt, dataHash string, storeData func(tx *sql.Tx) error) (time.Time, error) {
	schemaJSON, err := json.Marshal(sc)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return now, dbErr("ledger: starting the registration", err)
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM datasets WHERE name = ?`, r.Name).Scan(&exists); err != nil {
		return now, dbErr("ledger: reading the registry", err)
	}
	if exists > 0 {
		return now, fmt.Errorf("dataset %q is already registered; registrations are final (choose another name)", r.Name)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO datasets(name, schema, eps, delta, accountant, rows, users, dropped, source, data_salt, data_hash, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Name, string(schemaJSON), r.Budget.Eps, r.Budget.Delta, r.Accountant.String(), counts[0], counts[1], counts[2],
		r.Source, salt, dataHash, now.Format(time.RFC3339Nano)); err != nil {
		return now, dbErr("ledger: storing dataset", err)
	}
	if err := storeData(tx); err != nil {
		return now, err
	}
	params, _ := json.Marshal(map[string]any{"schema": json.RawMessage(schemaJSON), "data_hash": dataHash})
	if _, err := appendRecord(ctx, tx, record{Kind: "register", Dataset: r.Name, Mechanism: "dataset/register",
		Params: string(params), Event: "null", Cell: "owner", Time: now.Format(time.RFC3339Nano)}); err != nil {
		return now, err
	}
	if err := putTotals(ctx, tx, r.Name, accounting.State{}); err != nil {
		return now, err
	}
	if err := tx.Commit(); err != nil {
		return now, dbErr("ledger: committing registration", err)
	}
	return now, nil
}

// checkRegistration checks the budget, accountant and clips of a
// registration.
func checkRegistration(r Registration, hasLabel bool) error {
	switch {
	case !(r.Budget.Eps > 0) || math.IsInf(r.Budget.Eps, 0):
		return fmt.Errorf("--eps %v: the budget's ε must be a finite number > 0", r.Budget.Eps)
	case !(r.Budget.Delta >= 0 && r.Budget.Delta < 1):
		return fmt.Errorf("--delta %v: the budget's δ must be in [0, 1)", r.Budget.Delta)
	case !(r.Clip >= 0) || math.IsInf(r.Clip, 0): // 0: registered without --clip (the matrix methods refuse it)
		return fmt.Errorf("--clip %v: the clip norm must be a finite number > 0", r.Clip)
	case hasLabel && (!(r.LabelClip > 0) || math.IsInf(r.LabelClip, 0)):
		return fmt.Errorf("--label-clip %v: a dataset with a label needs a finite bound > 0 on |label|", r.LabelClip)
	}
	if r.Accountant == accounting.ModeAdvanced {
		return errors.New(`accountant "advanced" is not offered for new datasets: it applied a composition theorem that assumes every call's ε is fixed in advance, which interactive analysis does not do; use zcdp (tight, sound for adaptive choices) or basic (sums of ε and δ)`)
	}
	if _, err := accounting.NewAccountant(r.Accountant, r.Budget); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// checkBounds refuses bounds of a column the data do not have, and
// bounds that are not finite with lo < hi.
func checkBounds(bounds map[string][2]float64, columns []string) error {
	has := map[string]bool{}
	for _, c := range columns {
		has[c] = true
	}
	for name, b := range bounds {
		if !has[name] {
			return fmt.Errorf("--bounds %s=...: the data have no numeric column %q (columns: %s)", name, name, strings.Join(columns, ", "))
		}
		if !(b[0] < b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) {
			return fmt.Errorf("--bounds %s=%v:%v: give finite bounds lo:hi with lo < hi", name, b[0], b[1])
		}
	}
	return nil
}

// checkNames refuses column, label and user-column names holding control
// characters (line breaks, tabs, escape sequences, DEL, ...) or invalid
// UTF-8. The names are public schema that notebooks, tables and the ledger
// print; a name that moves the cursor or breaks a line could forge what an
// analyst or the owner reads.
func checkNames(t *dataset.Table) error {
	const fix = "rename it in the CSV file's header line and register again"
	for i, c := range t.Columns {
		if err := checkName(c); err != nil {
			return fmt.Errorf("feature column %d (%q): %v; %s", i+1, c, err, fix)
		}
	}
	if err := checkName(t.Label); err != nil {
		return fmt.Errorf("label column %q: %v; %s", t.Label, err, fix)
	}
	if err := checkName(t.UserColumn); err != nil {
		return fmt.Errorf("user column %q: %v; %s", t.UserColumn, err, fix)
	}
	return nil
}

func checkName(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("its name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("its name contains the control character %U", r)
		}
	}
	return nil
}

func floatBytes(xs []float64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func bytesFloat(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, errors.New("corrupt data chunk")
	}
	xs := make([]float64, len(b)/8)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return xs, nil
}

func int32Bytes(xs []int32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// hashData hashes the data with a random salt kept in the owner-only
// column data_salt. The hash goes into the ledger, which notebooks may
// read (%ledger): unsalted, it would let an analyst who knows all rows but
// one test guesses of the last row.
func hashData(salt string, t *dataset.Table) string {
	h := sha256.New()
	h.Write([]byte(salt))
	var hdr [24]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(t.Rows))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(len(t.Columns)))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(t.NumUsers))
	h.Write(hdr[:])
	h.Write(floatBytes(t.X))
	h.Write(int32Bytes(t.Users))
	h.Write(floatBytes(t.Y))
	return hex.EncodeToString(h.Sum(nil))
}

type datasetRow struct {
	schema                      Schema
	rows, users, dropped        int
	source, salt, hash, created string
}

// datasetRow reads a dataset's registry row through q (a write
// transaction, or a View's).
func (s *Store) datasetRow(ctx context.Context, q queryer, name string) (*datasetRow, error) {
	return readDatasetRow(ctx, q, name)
}

func readDatasetRow(ctx context.Context, q queryer, name string) (*datasetRow, error) {
	var r datasetRow
	var schemaJSON string
	err := q.QueryRowContext(ctx, `SELECT schema, rows, users, dropped, source, data_salt, data_hash, created FROM datasets WHERE name = ?`, name).
		Scan(&schemaJSON, &r.rows, &r.users, &r.dropped, &r.source, &r.salt, &r.hash, &r.created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %q (the data owner registers datasets with `privnotes dataset add`)", ErrNoDataset, name)
	}
	if err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: reading dataset %q", name), err)
	}
	if err := json.Unmarshal([]byte(schemaJSON), &r.schema); err != nil {
		return nil, fmt.Errorf("ledger: dataset %q: corrupt schema: %w", name, err)
	}
	return &r, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Schema returns a dataset's public schema.
func (s *Store) Schema(name string) (sc Schema, err error) {
	err = s.view(func(v *View) error { sc, err = v.Schema(name); return err })
	return sc, err
}

// Schema returns a dataset's public schema.
func (v *View) Schema(name string) (Schema, error) {
	r, err := readDatasetRow(v.ctx, v.q, name)
	if err != nil {
		return Schema{}, err
	}
	return r.schema, nil
}

// Datasets returns the public schemas of all datasets, sorted by name.
func (s *Store) Datasets() (scs []Schema, err error) {
	err = s.view(func(v *View) error { scs, err = v.Datasets(); return err })
	return scs, err
}

// Datasets returns the public schemas of all datasets, sorted by name.
func (v *View) Datasets() ([]Schema, error) {
	rows, err := v.q.QueryContext(v.ctx, `SELECT schema FROM datasets ORDER BY name`)
	if err != nil {
		return nil, dbErr("ledger: reading the registry", err)
	}
	defer rows.Close()
	var out []Schema
	for rows.Next() {
		var js string
		var sc Schema
		if err := rows.Scan(&js); err != nil {
			return nil, dbErr("ledger: reading the registry", err)
		}
		if err := json.Unmarshal([]byte(js), &sc); err != nil {
			return nil, fmt.Errorf("ledger: corrupt schema: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("ledger: reading the registry", err)
	}
	return out, nil
}

// OwnerInfo returns what the owner's CLI shows about a dataset. Never call
// it from code a notebook can reach: it includes the row count.
func (s *Store) OwnerInfo(name string) (info *OwnerInfo, err error) {
	err = s.view(func(v *View) error { info, err = v.OwnerInfo(name); return err })
	return info, err
}

// OwnerInfo is Store.OwnerInfo in v's snapshot, for a display that also
// reads the budget's status (the same moment for both).
func (v *View) OwnerInfo(name string) (*OwnerInfo, error) {
	r, err := readDatasetRow(v.ctx, v.q, name)
	if err != nil {
		return nil, err
	}
	created, _ := time.Parse(time.RFC3339Nano, r.created)
	return &OwnerInfo{Schema: r.schema, Rows: r.rows, Users: r.users, Dropped: r.dropped, Source: r.source, DataHash: r.hash, Created: created}, nil
}

// Data is a dataset's content for a mechanism. It is returned by Load to
// compiled mechanism code only and must never reach a cell.
type Data struct {
	Schema Schema
	X      *mat.Dense // rows × d, centred by the public mean if the schema says so; not clipped
	// Users maps each row to its user (0..NumUsers-1) when Schema.Unit is
	// "user"; nil otherwise.
	Users    []int32
	NumUsers int
	Y        []float64 // the label column, if any
}

// Load reads a dataset's data and checks it against the hash recorded at
// registration.
func (s *Store) Load(name string) (d *Data, err error) {
	err = s.view(func(v *View) error { d, err = v.load(name); return err })
	return d, err
}

// load is Load in v's snapshot.
func (v *View) load(name string) (*Data, error) {
	ctx := v.ctx
	r, err := readDatasetRow(ctx, v.q, name)
	if err != nil {
		return nil, err
	}
	if _, _, ok, err := v.snapshot(name); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: dataset %q", ErrSnapshot, name)
	}
	d := r.schema.D
	rows, err := v.q.QueryContext(ctx, `SELECT rows, x, users, y FROM data_chunks WHERE dataset = ? ORDER BY seq`, name)
	if err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
	}
	defer rows.Close()
	x := make([]float64, 0, r.rows*d)
	var users []int32
	var y []float64
	for rows.Next() {
		var n int
		var xb, ub, yb []byte
		if err := rows.Scan(&n, &xb, &ub, &yb); err != nil {
			return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
		}
		xs, err := bytesFloat(xb)
		if err != nil || len(xs) != n*d {
			return nil, fmt.Errorf("ledger: dataset %q: corrupt data chunk", name)
		}
		x = append(x, xs...)
		if ub != nil {
			if len(ub) != 4*n {
				return nil, fmt.Errorf("ledger: dataset %q: corrupt user chunk", name)
			}
			for i := 0; i < n; i++ {
				users = append(users, int32(binary.LittleEndian.Uint32(ub[4*i:])))
			}
		}
		if yb != nil {
			ys, err := bytesFloat(yb)
			if err != nil || len(ys) != n {
				return nil, fmt.Errorf("ledger: dataset %q: corrupt label chunk", name)
			}
			y = append(y, ys...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
	}
	if len(x) != r.rows*d {
		return nil, fmt.Errorf("ledger: dataset %q: stored data is incomplete", name)
	}
	t := &dataset.Table{Columns: r.schema.Columns, X: x, Rows: r.rows, Users: users, NumUsers: r.users, Y: y}
	if hashData(r.salt, t) != r.hash {
		return nil, fmt.Errorf("ledger: dataset %q: stored data does not match its registration hash", name)
	}
	return &Data{Schema: r.schema, X: mat.NewDense(r.rows, d, x), Users: users, NumUsers: r.users, Y: y}, nil
}
