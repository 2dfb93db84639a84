package ledger

// Datasets stored as immutable snapshot files (dsl/snapshot writes them):
// the registry records the file and its hash, and the data engine reads
// them; this package never opens one but to hash it.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SnapshotRef describes a snapshot file to register: where it is, its
// hash, its public schema and the owner-only counts.
type SnapshotRef struct {
	Path string // inside the store's SnapshotDir
	Hash string // hex SHA-256 of the file's bytes
	// Columns are the numeric columns, the features of the matrix
	// mechanisms, in order; Bounds the public bounds of some of them.
	Columns []string
	Bounds  map[string][2]float64
	// Categorical are the categorical columns with their public domains.
	Categorical map[string][]string
	Label       string // numeric label column, "" without
	UserColumn  string // privacy-unit column, "" when rows are units
	// Owner-only facts.
	Rows, Users, Dropped int
}

// ErrSnapshot is returned (wrapped) by Load for a dataset stored as a
// snapshot file, which the data engine reads (Snapshot gives its file).
var ErrSnapshot = errors.New("the dataset is stored as a snapshot file")

// VerifySnapshot recomputes the SHA-256 of a snapshot file and compares it
// with the registered hash.
func VerifySnapshot(path, hash string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("snapshot %s: %w", filepath.Base(path), err)
	}
	if hex.EncodeToString(h.Sum(nil)) != hash {
		return fmt.Errorf("snapshot %s: the file differs from the registered one (hash mismatch)", filepath.Base(path))
	}
	return nil
}

// SnapshotDir is where the state directory keeps snapshot files.
func (s *Store) SnapshotDir() string { return filepath.Join(s.dir, "snapshots") }

// Snapshot returns the snapshot file and hash of a dataset stored as one;
// ok is false for a dataset stored in the database.
func (s *Store) Snapshot(name string) (path, hash string, ok bool, err error) {
	err = s.view(func(v *View) error { path, hash, ok, err = v.snapshot(name); return err })
	return path, hash, ok, err
}

// snapshot is Snapshot in v's snapshot of the database.
func (v *View) snapshot(name string) (path, hash string, ok bool, err error) {
	var rel string
	err = v.q.QueryRowContext(v.ctx, qSnapshotFile, name).Scan(&rel, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, dbErr(fmt.Sprintf("ledger: reading dataset %q", name), err)
	}
	return filepath.Join(v.dir, filepath.FromSlash(rel)), hash, true, nil
}

// registerSnapshot is Register for a snapshot file.
func (s *Store) registerSnapshot(ctx context.Context, r Registration) (*OwnerInfo, error) {
	snap := r.Snapshot
	rel, err := filepath.Rel(s.dir, snap.Path)
	switch {
	case r.Table != nil:
		return nil, errors.New("ledger: a registration has either a table or a snapshot")
	case err != nil || !strings.HasPrefix(filepath.ToSlash(rel), "snapshots/"):
		return nil, fmt.Errorf("ledger: the snapshot %s is not in the state directory's snapshots folder %s", snap.Path, s.SnapshotDir())
	case !nameRE.MatchString(r.Name):
		return nil, fmt.Errorf("dataset name %q: use a letter followed by letters, digits, '_', '.' or '-' (at most 64)", r.Name)
	case snap.Rows == 0:
		return nil, errors.New("no data rows to register")
	case snap.Rows > MaxRows:
		return nil, fmt.Errorf("%d data rows: privnotes registers at most %d rows per dataset (split the data into several datasets)", snap.Rows, MaxRows)
	case len(snap.Columns) == 0 && len(snap.Categorical) == 0:
		return nil, errors.New("the data have no columns to analyse")
	}
	if err := checkRegistration(r, snap.Label != ""); err != nil {
		return nil, err
	}
	if err := checkBounds(snap.Bounds, snap.Columns); err != nil {
		return nil, err
	}
	if r.Matrix != nil {
		if err := checkMatrix(r.Matrix, int(snap.Rows), len(snap.Columns)); err != nil {
			return nil, err
		}
	}
	if err := s.checkSynthOrigin(ctx, r); err != nil {
		return nil, err
	}
	sc := registeredSchema(r, snap.Columns, snap.Label, snap.UserColumn, snap.Rows, snap.Users, snap.Bounds)
	if sc.Columns == nil {
		sc.Columns = []string{}
	}
	if len(snap.Categorical) > 0 {
		sc.Categorical = snap.Categorical
	}
	now, err := s.commitRegistration(ctx, r, sc, [3]int{snap.Rows, snap.Users, snap.Dropped}, "", snap.Hash, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO snapshots(dataset, path, hash) VALUES (?, ?, ?)`, r.Name, filepath.ToSlash(rel), snap.Hash); err != nil {
			return dbErr("ledger: storing dataset", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &OwnerInfo{Schema: sc, Rows: snap.Rows, Users: snap.Users, Dropped: snap.Dropped, Source: r.Source, DataHash: snap.Hash, Created: now}, nil
}

// checkSynthOrigin checks a public synthetic registration's origin: a
// sealed release of another, private dataset, named and hashed as
// recorded. A public dataset is never the origin of another.
func (s *Store) checkSynthOrigin(ctx context.Context, r Registration) error {
	o := r.Synthetic
	if o == nil {
		return nil
	}
	if r.Matrix != nil {
		return errors.New("ledger: a public synthetic dataset is a table of rows, not a matrix")
	}
	if o.Dataset == r.Name {
		return fmt.Errorf("ledger: public dataset %q cannot be its own origin", r.Name)
	}
	src, err := s.Schema(o.Dataset)
	if err != nil {
		return fmt.Errorf("ledger: the origin dataset %q: %w", o.Dataset, err)
	}
	if src.Public() {
		return fmt.Errorf("ledger: dataset %q is itself public synthetic data; register from the private dataset's release", o.Dataset)
	}
	nr, err := s.Named(o.Dataset, o.Release)
	switch {
	case err != nil:
		return err
	case nr == nil:
		return fmt.Errorf("ledger: dataset %q has no release named %q", o.Dataset, o.Release)
	case !nr.Sealed() || nr.Record != o.Record || nr.ValueHash != o.ValueHash:
		return fmt.Errorf("ledger: release %q of %q is not the sealed release recorded (record %d)", o.Release, o.Dataset, o.Record)
	}
	return nil
}
