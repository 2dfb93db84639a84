package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func TestRemoveUnchargedThenRegisterAgain(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	b := accounting.Budget{Eps: 5, Delta: 1e-6}
	register(t, st, "typo", accounting.ModeZCDP, b)
	register(t, st, "kept", accounting.ModeZCDP, b)
	if _, err := st.Charge(ctx, "kept", withMech(accounting.Pure(0.25), "test/count"), ChargeMeta{Cell: "c1"}); err != nil {
		t.Fatal(err)
	}
	rm, err := st.Remove(ctx, "typo")
	if err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if rm.Snapshot != "" || rm.Record != 4 {
		t.Errorf("Removal %+v, want record 4 and no snapshot", rm)
	}
	if _, err := st.Schema("typo"); !errors.Is(err, ErrNoDataset) {
		t.Errorf("Schema after Remove: %v, want ErrNoDataset", err)
	}
	for _, table := range []string{"data_chunks", "totals"} {
		var n int
		if err := st.db.QueryRow(`SELECT count(*) FROM ` + table + ` WHERE dataset = 'typo'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s keeps %d rows of the removed dataset (%v)", table, n, err)
		}
	}
	entries, err := st.Entries("typo")
	if err != nil || len(entries) != 2 || entries[1].Kind != "remove" || entries[1].Mechanism != "dataset/remove" || entries[1].Event != nil {
		t.Fatalf("entries of the removed dataset: %+v, %v", entries, err)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify after Remove: %v", err)
	}
	// The immutability triggers are back: a registration still cannot be
	// deleted by hand.
	if _, err := st.db.Exec(`DELETE FROM datasets WHERE name = 'kept'`); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("DELETE of a registration after Remove: %v, want the immutability trigger", err)
	}
	// The name is free again, and the chain verifies with both records.
	register(t, st, "typo", accounting.ModeBasic, accounting.Budget{Eps: 2})
	if _, err := st.Charge(ctx, "typo", withMech(accounting.Pure(0.5), "test/count"), ChargeMeta{Cell: "c2"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify after registering the name again: %v", err)
	}
	if s, err := st.Status("typo"); err != nil || s.Charges != 1 || s.Budget.Eps != 2 {
		t.Errorf("Status of the new registration: %+v, %v", s, err)
	}
}

func TestRemoveRefusals(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	register(t, st, "used", accounting.ModeZCDP, accounting.Budget{Eps: 5, Delta: 1e-6})
	if _, err := st.Charge(ctx, "used", withMech(accounting.Pure(0.25), "test/count"), ChargeMeta{Cell: "c1"}); err != nil {
		t.Fatal(err)
	}
	_, err := st.Remove(ctx, "used")
	if !errors.Is(err, ErrHasCharges) {
		t.Fatalf("Remove of a charged dataset: %v, want ErrHasCharges", err)
	}
	for _, want := range []string{"1 charges", "append-only", "budget spent stays spent", "new name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if _, err := st.Schema("used"); err != nil {
		t.Errorf("the refused dataset is gone: %v", err)
	}
	if _, err := st.Remove(ctx, "nosuch"); !errors.Is(err, ErrNoDataset) {
		t.Errorf("Remove of an unknown name: %v, want ErrNoDataset", err)
	}
	if id, _, _ := st.Head(); id != 2 {
		t.Errorf("refusals appended records: head %d, want 2", id)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveSnapshot(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	snap := writeSnapshot(t, st, "people", "PAR1 stand-in")
	reg := Registration{Name: "people", Snapshot: snap, Budget: accounting.Budget{Eps: 5, Delta: 1e-6},
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "people.csv"}
	if _, err := st.Register(ctx, reg); err != nil {
		t.Fatal(err)
	}
	rm, err := st.Remove(ctx, "people")
	if err != nil || rm.Snapshot != snap.Path {
		t.Fatalf("Remove = %+v, %v", rm, err)
	}
	// The caller deletes the file (cmd/privnotes with snapshot.Discard).
	if _, err := os.Stat(snap.Path); err != nil {
		t.Errorf("Remove deleted the snapshot file itself: %v", err)
	}
	os.Remove(snap.Path)
	if _, _, ok, err := st.Snapshot("people"); ok || err != nil {
		t.Errorf("Snapshot after Remove: %v %v", ok, err)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// Registered again from the same data: same file name, verifies.
	snap = writeSnapshot(t, st, "people", "PAR1 stand-in")
	reg.Snapshot = snap
	if _, err := st.Register(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify after registering again: %v", err)
	}
}

// A forged remove record (a charged dataset's registration deleted by hand
// with a remove record appended) fails verification.
func TestVerifyRefusesRemovalOfChargedDataset(t *testing.T) {
	st, _ := openTemp(t)
	ctx := context.Background()
	register(t, st, "used", accounting.ModeZCDP, accounting.Budget{Eps: 5, Delta: 1e-6})
	if _, err := st.Charge(ctx, "used", withMech(accounting.Pure(0.25), "test/count"), ChargeMeta{Cell: "c1"}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := appendRecord(ctx, tx, record{Kind: "remove", Dataset: "used", Mechanism: "dataset/remove", Params: `{}`, Event: "null", Cell: "owner", Time: "2026-01-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var ce *ChainError
	if err := st.Verify(); !errors.As(err, &ce) || ce.ID != 3 || !strings.Contains(ce.Reason, "has 1 charges") {
		t.Errorf("Verify = %v, want a ChainError at record 3 naming the charges", err)
	}
}
