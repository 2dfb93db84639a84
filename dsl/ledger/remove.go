package ledger

// Removing a registration that was never charged: a typo in a name, the
// wrong file or budget, found before any analysis. Only a dataset without
// charges may go; one with charges stays, since the ledger is append-only
// and budget spent stays spent.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// ErrHasCharges is wrapped by Remove's error for a dataset that has been
// charged: its registration stays.
var ErrHasCharges = errors.New("the dataset has charges")

// ErrHasReservations is wrapped by Remove's error for a dataset with live
// reservations of federated calls in progress: its registration stays.
var ErrHasReservations = errors.New("the dataset has live reservations")

// reservedError is Remove's refusal of a dataset with live reservations h:
// which calls, when they lapse, and what to do. Reservations hold public
// plan facts only.
func reservedError(name string, h held) error {
	ids := h.ids
	more := ""
	if len(ids) > 5 {
		ids, more = ids[:5], fmt.Sprintf(" and %d more", len(h.ids)-5)
	}
	return fmt.Errorf("%w: dataset %q has %d live reservation(s) of federated calls in progress (call %s%s; the last lapses at %s) and cannot be removed while they are held: "+
		"wait until their coordinator commits or aborts them or they lapse, then run this again (privnotes ledger show --dataset %s lists them). "+
		"A committed one is a charge, and a charged dataset stays registered",
		ErrHasReservations, name, len(h.ids), strings.Join(ids, ", "), more, h.last.UTC().Format("2006-01-02 15:04:05 UTC"), name)
}

// Removal is what Remove did.
type Removal struct {
	Name   string
	Record int64 // id of the "remove" record in the ledger
	// Snapshot is the snapshot file of the removed dataset ("" for data
	// stored in the database). Remove does not delete it: the data engine
	// keeps files derived from a snapshot beside it (a row cache), so the
	// caller deletes them with the engine's own rule (snapshot.Discard),
	// after the registration is gone. A crash in between leaves orphan
	// files, never a registration without its data.
	Snapshot string
}

// immutableTriggers are the triggers that forbid deleting a registration;
// Remove lifts them inside its transaction and schemaSQL restores them
// before it commits, so no other writer ever sees them missing.
var immutableTriggers = []string{"datasets_immutable_delete", "data_immutable_delete", "snapshots_immutable_delete"}

// Remove deletes a dataset that has no charges: its registry row, its
// stored data or snapshot row, its running totals, and then its snapshot
// file. It appends a chained "remove" record (mechanism "dataset/remove",
// the registration's data hash in its parameters), all in one write
// transaction, so Verify still holds and the name can be registered again.
// A dataset with charges is refused with an error wrapping ErrHasCharges,
// one with live reservations with one wrapping ErrHasReservations (a
// reservation is committed against the registration it was planned from);
// an unknown name with one wrapping ErrNoDataset.
func (s *Store) Remove(ctx context.Context, name string) (*Removal, error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: charges wait for us, or we for them
	if err != nil {
		return nil, dbErr("ledger: starting the removal", err)
	}
	defer tx.Rollback()
	dr, err := s.datasetRow(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	acc, _, err := s.accountant(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	if n := acc.State().Events(); n > 0 {
		spent := acc.Spent()
		return nil, fmt.Errorf("%w: dataset %q has %d charges (spent ε=%.6g, δ=%.3g) and cannot be removed: the ledger is append-only and budget spent stays spent. "+
			"To register the data again, corrected or with a new budget, use a new name (privnotes dataset add NEWNAME ...)", ErrHasCharges, name, n, spent.Eps, spent.Delta)
	}
	// A live reservation may still be committed: its charge must find the
	// registration it was planned from (reserve.go).
	if h, err := heldOf(ctx, tx, name, time.Now(), ""); err != nil {
		return nil, err
	} else if len(h.ids) > 0 {
		return nil, reservedError(name, h)
	}
	var rel string
	switch err := tx.QueryRowContext(ctx, `SELECT path FROM snapshots WHERE dataset = ?`, name).Scan(&rel); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, dbErr(fmt.Sprintf("ledger: reading dataset %q", name), err)
	}
	for _, trg := range immutableTriggers {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER IF EXISTS `+trg); err != nil {
			return nil, dbErr("ledger: removing a dataset", err)
		}
	}
	for _, table := range []string{"data_chunks", "snapshots", "engines", "totals"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE dataset = ?`, name); err != nil {
			return nil, dbErr("ledger: removing a dataset", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM datasets WHERE name = ?`, name); err != nil {
		return nil, dbErr("ledger: removing a dataset", err)
	}
	if _, err := tx.ExecContext(ctx, schemaSQL); err != nil { // the triggers again
		return nil, dbErr("ledger: removing a dataset", err)
	}
	params, _ := json.Marshal(map[string]string{"data_hash": dr.hash})
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec, err := appendRecord(ctx, tx, record{Kind: "remove", Dataset: name, Mechanism: "dataset/remove",
		Params: string(params), Event: "null", Cell: "owner", Time: now.Format(time.RFC3339Nano)})
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, dbErr("ledger: committing the removal", err)
	}
	out := &Removal{Name: name, Record: rec.ID}
	// A live table's password goes with its registration (engine.go).
	os.Remove(s.EngineSecretPath(name))
	if rel != "" {
		out.Snapshot = filepath.Join(s.dir, filepath.FromSlash(rel))
	}
	return out, nil
}

// liveRegistrations returns the ids of the register records whose dataset
// is still registered: those not followed by a remove record of their
// dataset. Verify compares only these with the registry.
func liveRegistrations(recs []record) map[int64]bool {
	live := map[int64]bool{}
	current := map[string]int64{}
	for _, r := range recs {
		switch r.Kind {
		case "register":
			current[r.Dataset] = r.ID
		case "remove":
			delete(current, r.Dataset)
		}
	}
	for _, id := range current {
		live[id] = true
	}
	return live
}

// registeredRow is the registry row Verify compares register record r
// with: the stored one for a live registration, and for a removed one the
// record's own schema and hash (its registry row is gone by design).
func (v *View) registeredRow(ctx context.Context, r record, live map[int64]bool) (*datasetRow, error) {
	if live[r.ID] {
		return readDatasetRow(ctx, v.q, r.Dataset)
	}
	var p struct {
		Schema Schema `json:"schema"`
		Hash   string `json:"data_hash"`
	}
	if err := json.Unmarshal([]byte(r.Params), &p); err != nil {
		return nil, errors.New("corrupt register parameters")
	}
	return &datasetRow{schema: p.Schema, hash: p.Hash}, nil
}

// verifyRemoval checks a remove record during Verify: its dataset is
// registered, uncharged, and the record names the registration's data
// hash. It then forgets the dataset, so that the name may be registered
// again.
func verifyRemoval(r record, registered map[string]bool, accs map[string]*accounting.Accountant, last map[string]int64, hashes map[string]string) error {
	acc := accs[r.Dataset]
	if !registered[r.Dataset] || acc == nil {
		return fmt.Errorf("removal of dataset %q, which is not registered", r.Dataset)
	}
	if n := acc.State().Events(); n > 0 {
		return fmt.Errorf("removal of dataset %q, which has %d charges", r.Dataset, n)
	}
	var p struct {
		Hash string `json:"data_hash"`
	}
	if err := json.Unmarshal([]byte(r.Params), &p); err != nil || p.Hash != hashes[r.Dataset] {
		return fmt.Errorf("removal of dataset %q names another registration's data", r.Dataset)
	}
	delete(registered, r.Dataset)
	delete(accs, r.Dataset)
	delete(last, r.Dataset)
	delete(hashes, r.Dataset)
	return nil
}
