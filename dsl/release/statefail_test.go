package release

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// constrainedEnv registers a dataset (as gdpTestEnv), closes its store and
// returns an execution core on it reopened under c (MaxPages < 0: its size
// plus -MaxPages-1 spare pages), with the state directory.
func constrainedEnv(t *testing.T, c ledger.Constraints) (*Local, Ref, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := testfix.Register(t, st, ledger.Registration{Name: "d", Table: testfix.Table(t, "a,b\n0.1,2\n0.3,4\n0.5,1\n"), Budget: accounting.Budget{Eps: 10, Delta: 1e-5},
		Accountant: accounting.ModeZCDP, Neighbour: accounting.AddRemove, Clip: 1, Bounds: map[string][2]float64{"a": {0, 1}}})
	ref := Ref{Name: "d", Schema: sc}
	env := &Local{Store: func() (*ledger.Store, error) { return st, nil }}
	if _, err := env.Execute(context.Background(), Call{Func: "private_count", Dataset: ref, Args: memArgs("private_count", nil)}, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if c.MaxPages < 0 {
		c.MaxPages = statePages(t, dir) - c.MaxPages - 1
	}
	cs, err := ledger.OpenConstrained(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &Local{Store: func() (*ledger.Store, error) { return cs, nil }}, ref, dir
}

// statePages is the state database's size in pages, as SQLite counts it.
func statePages(t *testing.T, dir string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, ledger.DBName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// verifyState reopens dir normally and verifies its chain; it returns the
// number of charges of dataset d.
func verifyState(t *testing.T, dir string) int {
	t.Helper()
	st, err := ledger.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatalf("ledger verify: %v", err)
	}
	s, err := st.Status("d")
	if err != nil {
		t.Fatal(err)
	}
	return s.Charges
}

// readWrap notes whether a plan's run started (the data are read only
// then).
func readWrap(read *bool) func() RunWrapper {
	return func() RunWrapper {
		return func(run func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error) {
			*read = true
			return run
		}
	}
}

// A charge on a read-only state directory or a full disk is refused as a
// LedgerError saying that nothing was spent, before any data are read;
// the gate's admission is aborted, and the ledger verifies with the charges
// it had.
func TestChargeOnReadOnlyOrFullState(t *testing.T) {
	for _, c := range []struct {
		name string
		c    ledger.Constraints
		want string
	}{
		{"read-only", ledger.Constraints{ReadOnly: true}, "cannot be written"},
		{"disk full", ledger.Constraints{MaxPages: -1}, "is full"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, ref, dir := constrainedEnv(t, c.c)
			read := false
			env.Wrap = readWrap(&read)
			g := &abortGate{}
			// a histogram of many bins: its charge's public parameters fill
			// more than the spare page
			call := Call{Func: "private_histogram", Dataset: ref, Cell: strings.Repeat("c", 8<<10), Args: memArgs("private_histogram", map[string]any{"col": "a", "bins": 10, "delta": 0.0})}
			_, err := env.Execute(context.Background(), call, g)
			var e *Error
			if !errors.As(err, &e) || e.Name != NameLedgerError || !strings.Contains(e.Msg, "nothing was spent") || !strings.Contains(e.Msg, c.want) {
				t.Fatalf("charge: %v, want a LedgerError (%q, nothing was spent)", err, c.want)
			}
			if read || !g.aborted || g.committed {
				t.Errorf("refused charge: data read %v, gate aborted %v, committed %v", read, g.aborted, g.committed)
			}
			if n := verifyState(t, dir); n != 1 {
				t.Errorf("%d charges after the refused one, want 1", n)
			}
		})
	}
}

// A seal that fails after the charge (the disk filled up while the run
// ran) does not fail the call: the release is returned, its receipt says
// it is not stored, and the ledger verifies with the charge standing and
// its release reserved unsealed.
func TestSealFailsAfterCharge(t *testing.T) {
	env, ref, dir := constrainedEnv(t, ledger.Constraints{MaxPages: -4})
	call := Call{Func: "private_histogram", Dataset: ref, Args: memArgs("private_histogram", map[string]any{"col": "a", "bins": 10000, "delta": 0.0})}
	rel, err := env.Execute(context.Background(), call, nil)
	if err != nil {
		t.Fatalf("a failed seal failed the call: %v", err)
	}
	if h, ok := rel.Value.(*Histogram); !ok || len(h.Counts) != 10000 {
		t.Fatalf("release %T", rel.Value)
	}
	if rel.Receipt.ReleaseHash != "" || !strings.Contains(rel.Receipt.Note, "not stored in the ledger") {
		t.Errorf("receipt of an unsealed release: hash %q, note %q", rel.Receipt.ReleaseHash, rel.Receipt.Note)
	}
	if n := verifyState(t, dir); n != 2 {
		t.Errorf("%d charges, want 2 (the count and the histogram)", n)
	}
	st, err := ledger.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rels, err := st.Releases("d")
	if err != nil || len(rels) != 2 || !rels[0].Sealed() || rels[1].Sealed() {
		t.Errorf("releases: %+v, %v; want the count sealed and the histogram reserved unsealed", rels, err)
	}
}

// abortGate admits every call and notes which of commit and abort the
// core called.
type abortGate struct{ committed, aborted bool }

func (g *abortGate) Admit(context.Context, accounting.Event, Ref) (func() string, func(), error) {
	return func() string { g.committed = true; return "" }, func() { g.aborted = true }, nil
}
