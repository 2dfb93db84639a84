package ledger

// A charge or a seal on a full disk or a read-only state directory, made
// real with SQLite's own limits (Constraints), which bind root too: a
// charge is refused whole (nothing recorded, the totals unchanged, the
// chain verifiable) and a failed seal leaves the charge and its reserved,
// unsealed release row, which is what a worker that crashed after its
// charge leaves too, and which Verify accepts.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// pageCount is the state database's size in pages.
func pageCount(t *testing.T, st *Store) int64 {
	t.Helper()
	var n int64
	if err := st.db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// constrained registers d in a new state directory, closes it, and reopens
// it under c (MaxPages < 0: capped at its size plus -MaxPages-1 pages).
func constrained(t *testing.T, c Constraints, charges int) (st *Store, dir string) {
	t.Helper()
	st, dir = openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 100})
	for range charges {
		if _, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	if c.MaxPages < 0 {
		c.MaxPages = pageCount(t, st) - c.MaxPages - 1
	}
	st.Close()
	cs, err := OpenConstrained(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, dir
}

// reopened is dir's store opened normally, for the checks after a failure.
func reopened(t *testing.T, dir string) *Store {
	t.Helper()
	st, err := OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A charge on a full disk or a read-only state database is refused with
// ErrDiskFull or ErrNotWritable, and records nothing: the dataset's
// charges, spend and chain are as before, and Verify passes.
func TestChargeOnFullOrReadOnlyState(t *testing.T) {
	big := ChargeMeta{Params: map[string]any{"pad": strings.Repeat("x", 64<<10)}, Release: &ReleaseMeta{Name: "r", Call: "{}"}}
	for _, c := range []struct {
		name string
		c    Constraints
		meta ChargeMeta
		want error
	}{
		{"read-only", Constraints{ReadOnly: true}, ChargeMeta{}, ErrNotWritable},
		{"disk full", Constraints{MaxPages: -1}, big, ErrDiskFull},
		// the record fits in the spare pages, its release reservation
		// does not: the record must not be committed alone
		{"disk full at the reservation", Constraints{MaxPages: -3}, ChargeMeta{Release: &ReleaseMeta{Name: "r", Call: strings.Repeat("z", 64<<10)}}, ErrDiskFull},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, dir := constrained(t, c.c, 2)
			before, err := st.Status("d")
			if err != nil {
				t.Fatal(err)
			}
			_, head, _ := st.Head()
			_, err = st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), c.meta)
			if !errors.Is(err, c.want) {
				t.Fatalf("charge: %v, want %v", err, c.want)
			}
			st.Close()
			rs := reopened(t, dir)
			after, err := rs.Status("d")
			if err != nil {
				t.Fatal(err)
			}
			if _, h, _ := rs.Head(); after.Charges != before.Charges || after.Spent != before.Spent || h != head {
				t.Errorf("the refused charge left a trace: %d charges (%d before), spent %v (%v), head %s (%s)", after.Charges, before.Charges, after.Spent, before.Spent, h, head)
			}
			if rels, err := rs.Releases("d"); err != nil || len(rels) != 0 {
				t.Errorf("releases after the refused charge: %v, %v", rels, err)
			}
			if err := rs.Verify(); err != nil {
				t.Errorf("verify after the refused charge: %v", err)
			}
		})
	}
}

// A seal that fails (disk full) after its charge leaves the charge and its
// reserved release unsealed, nothing half-written: Verify passes, and the
// release can still be sealed once there is room.
func TestSealOnFullDisk(t *testing.T) {
	st, dir := constrained(t, Constraints{MaxPages: -3}, 0)
	rc, err := st.Charge(context.Background(), "d", withMech(accounting.Pure(1), "m"), ChargeMeta{Release: &ReleaseMeta{Name: "r", Call: "{}"}})
	if err != nil {
		t.Fatalf("the charge should fit in the spare pages: %v", err)
	}
	value := []byte(`{"kind":"count","pad":"` + strings.Repeat("y", 256<<10) + `"}`)
	if _, err := st.SealRelease(context.Background(), rc.ID, value); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("seal on a full disk: %v, want ErrDiskFull", err)
	}
	st.Close()
	rs := reopened(t, dir)
	rels, err := rs.Releases("d")
	if err != nil || len(rels) != 1 || rels[0].Record != rc.ID || rels[0].Sealed() {
		t.Fatalf("after the failed seal: %+v, %v; want the charge's release reserved and unsealed", rels, err)
	}
	if s, err := rs.Status("d"); err != nil || s.Charges != 1 {
		t.Errorf("the charge does not stand: %+v, %v", s, err)
	}
	if err := rs.Verify(); err != nil {
		t.Fatalf("verify after the failed seal: %v", err)
	}
	if _, err := rs.SealRelease(context.Background(), rc.ID, value); err != nil {
		t.Fatalf("sealing once there is room: %v", err)
	}
	if err := rs.Verify(); err != nil {
		t.Fatal(err)
	}
}

// A read-only state database at the current version opens under
// Constraints (a stale one is refused: it would need a write to upgrade).
func TestOpenConstrainedReadOnly(t *testing.T) {
	st, dir := constrained(t, Constraints{ReadOnly: true}, 1)
	if s, err := st.Status("d"); err != nil || s.Charges != 1 {
		t.Fatalf("read-only store: %+v, %v", s, err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenConstrained(copyOldState(t), Constraints{ReadOnly: true}); err == nil {
		t.Error("a read-only open of a schema-1 database succeeded")
	}
	_ = dir
}
