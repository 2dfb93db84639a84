package ledger

// Datasets that live in a database the owner runs (a PostgreSQL table,
// dsl/pgsource): the registry records where the table is and the column
// types it had at registration, never a row. The password is kept apart,
// in a file of the state directory's private part (EngineSecretPath),
// never in the public schema, the ledger or a receipt.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EngineRef says where a dataset's table lives. All of it is the owner's:
// it is not in the public schema.
type EngineRef struct {
	Kind  string `json:"kind"`  // "postgres"
	URL   string `json:"url"`   // the connection URL without a password
	Table string `json:"table"` // SCHEMA.TABLE
	// Types are the engine's types of the registered columns at
	// registration, by name: a call on the dataset is refused before its
	// charge when the table's catalog says otherwise.
	Types map[string]string `json:"types"`
	// Order is a column of unique, non-NULL values whose order is the
	// table's public row order ("" for none): user-level queries keep
	// each user's first rows in it.
	Order string `json:"order,omitempty"`
}

const engineSQL = `
-- Datasets in a live database table (engine.go); the row is removed only
-- with its dataset (dataset rm).
CREATE TABLE IF NOT EXISTS engines (
	dataset TEXT PRIMARY KEY REFERENCES datasets(name),
	ref     TEXT NOT NULL -- EngineRef as JSON
);
`

// EngineSecretPath is the file that holds the password of dataset name's
// database: in the state directory's secrets folder (mode 0700), the file
// mode 0600.
func (s *Store) EngineSecretPath(name string) string {
	return filepath.Join(s.dir, "secrets", name+".password")
}

// Engine returns where dataset name's table lives; ok is false for a
// dataset stored otherwise.
func (s *Store) Engine(name string) (ref *EngineRef, ok bool, err error) {
	err = s.view(func(v *View) error { ref, ok, err = v.engine(name); return err })
	return ref, ok, err
}

// engine is Engine in v's snapshot of the database.
func (v *View) engine(name string) (*EngineRef, bool, error) {
	var js string
	switch err := v.q.QueryRowContext(v.ctx, qEngineRef, name).Scan(&js); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, dbErr(fmt.Sprintf("ledger: reading dataset %q", name), err)
	}
	ref := new(EngineRef)
	if err := json.Unmarshal([]byte(js), ref); err != nil {
		return nil, false, fmt.Errorf("ledger: dataset %q: corrupt engine reference: %w", name, err)
	}
	return ref, true, nil
}

// Storage says where dataset name's rows are, in one read: in a database
// table (engine, non-nil), in a snapshot file (snap, non-nil), or neither
// (the state database itself: Load). It is Engine and Snapshot together,
// for a call that reads the rows after its charge.
func (s *Store) Storage(name string) (engine *EngineRef, snap *SnapshotFile, err error) {
	err = s.view(func(v *View) error {
		ref, ok, err := v.engine(name)
		if err != nil || ok {
			engine = ref
			return err
		}
		path, hash, ok, err := v.snapshot(name)
		if ok {
			snap = &SnapshotFile{Path: path, Hash: hash}
		}
		return err
	})
	return engine, snap, err
}

// SnapshotFile is a registered snapshot file and its hash (Storage).
type SnapshotFile struct {
	Path, Hash string
}

// isEngine reports whether dataset name lives in a database table.
func (v *View) isEngine(name string) (bool, error) {
	var n int
	if err := v.q.QueryRowContext(v.ctx, `SELECT count(*) FROM engines WHERE dataset = ?`, name).Scan(&n); err != nil {
		return false, dbErr(fmt.Sprintf("ledger: reading dataset %q", name), err)
	}
	return n > 0, nil
}

// registerEngine is Register for a table in a database: the schema's
// columns are what the catalog said; no row is read, so the counts are 0
// (unknown) and --public-n is refused. The password, if any, is written
// to EngineSecretPath before the registration commits and removed if it
// does not.
func (s *Store) registerEngine(ctx context.Context, r Registration, numeric []string, categorical map[string][]string, userColumn string) (*OwnerInfo, error) {
	e := r.Engine
	switch {
	case r.Table != nil || r.Snapshot != nil:
		return nil, errors.New("ledger: a registration has one source")
	case !nameRE.MatchString(r.Name):
		return nil, fmt.Errorf("dataset name %q: use a letter followed by letters, digits, '_', '.' or '-' (at most 64)", r.Name)
	case r.PublicN:
		return nil, errors.New("--public-n: registration over a live table reads no rows, so it has no count to declare; and the table may change")
	case r.Matrix != nil || r.Synthetic != nil:
		return nil, errors.New("ledger: a live table registers as a table of rows")
	case len(numeric) == 0 && len(categorical) == 0:
		return nil, errors.New("the table has no columns to analyse (numeric columns, or text columns with --categories)")
	}
	if err := checkRegistration(r, false); err != nil {
		return nil, err
	}
	if err := checkBounds(r.Bounds, numeric); err != nil {
		return nil, err
	}
	for _, c := range append(append([]string{}, numeric...), userColumn) {
		if err := checkName(c); err != nil {
			return nil, fmt.Errorf("column %q: %v; rename it in the table", c, err)
		}
	}
	sc := registeredSchema(r, numeric, "", userColumn, 0, 0, r.Bounds)
	if sc.Columns == nil {
		sc.Columns = []string{}
	}
	if len(categorical) > 0 {
		sc.Categorical = categorical
	}
	js, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	secret := s.EngineSecretPath(r.Name)
	wrote := false
	now, err := s.commitRegistration(ctx, r, sc, [3]int{}, "", "", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO engines(dataset, ref) VALUES (?, ?)`, r.Name, string(js)); err != nil {
			return dbErr("ledger: storing dataset", err)
		}
		if r.EngineSecret == "" {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
			return fmt.Errorf("ledger: the secrets folder: %w", err)
		}
		os.Remove(secret) // a file left by a registration that failed
		if err := os.WriteFile(secret, []byte(r.EngineSecret), 0o600); err != nil {
			return fmt.Errorf("ledger: storing the password: %w", err)
		}
		wrote = true
		return nil
	})
	if err != nil {
		if wrote {
			os.Remove(secret)
		}
		return nil, err
	}
	return &OwnerInfo{Schema: sc, Source: e.Kind + " " + e.URL + " table " + e.Table, Created: now}, nil
}
