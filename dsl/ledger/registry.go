package ledger

// Reading the registry: a dataset's public schema and the owner's facts.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

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
	err := q.QueryRowContext(ctx, qDatasetRow, name).
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
