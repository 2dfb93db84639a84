package ledger

// The database layout and its migrations: creating a new state database
// and upgrading an older one in place.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
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
	if _, err := tx.ExecContext(ctx, schemaSQL+reserveSQL+engineSQL); err != nil { // reserveSQL: reserve.go; engineSQL: engine.go
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
