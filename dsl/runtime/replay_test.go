package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A named call stores its release; the same name with the same public
// parameters returns it again: no charge, no data read, the same values in
// the same result type (fields and methods work), a receipt that says so.
// Every private function of the table, through the one code path.
func TestNamedReplay(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 200, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")`)
	cases := []struct{ call, show string }{
		{`private_count(ds, eps=1)`, `r.Value`},
		{`private_count(ds, by="region", eps=1)`, `r.Keys, r.Values, r.Get("north")`},
		{`private_sum(ds, col="income", eps=1)`, `r.Value, r.Column`},
		{`private_mean(ds, col="age", by="region", eps=1, delta=1e-6)`, `r.Keys, r.Values, r.Get("south")`},
		{`private_mean(ds, columns=[]string{"age", "income"}, clip=1000, eps=1, delta=1e-6)`, `r.Values, r.Get("income")`},
		{`private_histogram(ds, col="age", bins=4, eps=1)`, `r.Keys, r.Counts`},
		{`private_quantile(ds, col="age", q=0.5, eps=1)`, `r.Q, r.Value`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="gauss")`, `r.Components.RawMatrix().Data, r.Values, r.Component(1)`},
	}
	for i, c := range cases {
		name := fmt.Sprintf("r%d", i)
		call := strings.TrimSuffix(c.call, ")") + fmt.Sprintf(", name=%q)", name)
		before := status(t, dir, "people").Charges
		first := s.ok(fmt.Sprintf("r := %s\nfmt.Println(%s)\nfmt.Println(r.Receipt.Replayed, r.Receipt.ReleaseHash != \"\")", call, c.show))
		if got := status(t, dir, "people").Charges; got != before+1 {
			t.Fatalf("%s: %d charges after the first call, want %d", call, got, before+1)
		}
		again := s.ok(fmt.Sprintf("r := %s\nfmt.Println(%s)\nfmt.Println(r.Receipt.Replayed, r.Receipt.ReleaseHash != \"\")\nfmt.Println(r)", call, c.show))
		if got := status(t, dir, "people").Charges; got != before+1 {
			t.Errorf("%s: the replay charged (%d charges, want %d)", call, got, before+1)
		}
		firstVals, _, _ := strings.Cut(first, "\n")
		againVals, rest, _ := strings.Cut(again, "\n")
		if firstVals != againVals {
			t.Errorf("%s: replayed values %q, first release %q", call, againVals, firstVals)
		}
		if !strings.HasPrefix(first[len(firstVals)+1:], "false true") || !strings.HasPrefix(rest, "true true") {
			t.Errorf("%s: receipts (replayed, hash) first %q, replay %q", call, first, rest)
		}
		if !strings.Contains(rest, "replayed from ledger record") || !strings.Contains(rest, "no new charge") {
			t.Errorf("%s: the replay's display does not say it was replayed:\n%s", call, rest)
		}
	}
	verify(t, dir)
}

// The same name with other public parameters is an ArgumentError that
// shows the stored ones and charges nothing; without a name every call is
// a fresh release.
func TestNameConflictsAndUnnamed(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 100, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")
c := private_count(ds, eps=0.5, name="n")`)
	n := status(t, dir, "people").Charges
	for _, call := range []string{
		`private_count(ds, eps=0.25, name="n")`,
		`private_count(ds, eps=0.5, delta=1e-6, name="n")`,
		`private_sum(ds, col="age", eps=0.5, name="n")`,
		`private_count(filter(ds, col="age", op=">=", value=30), eps=0.5, name="n")`,
	} {
		res, _ := s.fails("x := "+call, NameArgumentError)
		msg := res.Error.Value
		if !strings.Contains(msg, `name "n" is the release of ledger record`) || !strings.Contains(msg, "stored: private_count on people") || !strings.Contains(msg, "eps=0.5") {
			t.Errorf("%s: error %q does not show the stored parameters", call, msg)
		}
	}
	if got := status(t, dir, "people").Charges; got != n {
		t.Fatalf("refused calls charged: %d charges, want %d", got, n)
	}
	s.ok(`a := private_count(ds, eps=0.5)
b := private_count(ds, eps=0.5)`)
	if got := status(t, dir, "people").Charges; got != n+2 {
		t.Fatalf("unnamed calls: %d charges, want %d (a fresh release each)", got, n+2)
	}
	// A name is per dataset: another dataset may use it.
	registerRegions(t, dir, "others", 100, false, accounting.ReplaceOne)
	s.ok(`o := private_count(dataset("others"), eps=0.25, name="n")`)
	verify(t, dir)
}

// A notebook whose budget is spent still re-runs: the static pre-check
// counts a named call whose release is stored as free, so the cell is not
// refused, and the replay charges nothing. A dry run of it says it would
// replay. %ledger lists the names and the session's replays.
func TestReplayWhenBudgetIsSpent(t *testing.T) {
	dir := t.TempDir()
	registerSnapshot(t, dir, "tight", regionCSV(100, false), regionSpec(),
		ledger.Registration{Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeBasic, Neighbour: accounting.ReplaceOne, Clip: 1})
	s := newSession(t, dir)
	cell := `ds := dataset("tight")
budget eps=1 {
	c := private_count(ds, eps=0.9, name="all")
}
fmt.Println(c.Value)`
	first := s.ok(cell)
	second := s.ok(cell) // unnamed, this cell would be refused: 0.1 is left
	if first != second {
		t.Fatalf("replay printed %q, first run %q", second, first)
	}
	if st := status(t, dir, "tight"); st.Charges != 1 {
		t.Fatalf("%d charges, want 1", st.Charges)
	}
	out := s.ok(`d := private_count(ds, eps=0.9, name="all", dry_run=true)
fmt.Println(d)`)
	if !strings.Contains(out, "would be replayed from ledger record") {
		t.Errorf("dry run of a stored name: %q", out)
	}
	s.fails(`x := private_count(ds, eps=0.9, name="fresh")`, NameBudgetExceeded)
	res, rec := s.run(`%ledger`)
	if res.Error != nil {
		t.Fatal(res.Error.Value)
	}
	led := rec.all(res)
	if !strings.Contains(led, `named releases`) || !strings.Contains(led, `"all" → record 2`) || !strings.Contains(led, `"all" from record 2, no new charge`) {
		t.Errorf("%%ledger does not list the name and the replay:\n%s", led)
	}
}

// Results rebuilt by Result from a stored encoding render as the kernel
// rendered the original: the conversion a cell's call uses.
func TestResultOfStoredRelease(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 100, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`h := private_histogram(dataset("people"), col="age", bins=3, eps=1, name="h")`)
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nr, err := st.Named("people", "h")
	if err != nil || nr == nil {
		t.Fatalf("stored release: %v %v", nr, err)
	}
	v, cols, err := release.Decode([]byte(nr.Value))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Result("private_histogram", &release.Release{Value: v, Columns: cols, Receipt: &Receipt{Function: "private_histogram", Charge: release.Charge{LedgerID: nr.Record}}})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := res.(*HistogramResult)
	if !ok || len(h.Keys) != 3 || len(h.Counts) != 3 || h.Column != "age" {
		t.Fatalf("rebuilt %#v", res)
	}
	if _, err := Result("private_sum", &release.Release{Value: v, Columns: cols, Receipt: &Receipt{Function: "private_sum"}}); err == nil || !strings.Contains(err.Error(), "not one private_sum makes") {
		t.Errorf("Result of a histogram as private_sum: %v, want an error", err)
	}
	if _, err := Result("private_nothing", &release.Release{Receipt: &Receipt{}}); err == nil {
		t.Error("Result of an unknown function succeeded")
	}
}

// regionSpec is registerRegions' public schema.
func regionSpec() snapshot.Spec {
	return snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}, "income": {0, 1000}}, Categories: map[string][]string{"region": {"north", "south"}}}
}

// Every private function of the table has a result conversion, so its
// named calls replay and notebooks showing its results can be verified: a
// new function whose result type has no conversion fails here, not in a
// reader's CI. Its binding returns that type, as the catalog says.
func TestEveryPrivateFunctionHasAResult(t *testing.T) {
	rt, _ := New(Config{StateDir: t.TempDir()})
	for _, f := range catalog.Private() {
		conv, err := resultOf(f)
		if err != nil {
			t.Errorf("%v: add resultType(…) for it in dsl/runtime/bindings.go", err)
			continue
		}
		if got := resultTypeName(conv.typ); got != f.Result {
			t.Errorf("%s: the conversion makes %s, the catalog says %s", f.Name, got, f.Result)
		}
		b, err := rt.privateBinding(f)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if ty := b.Type(); ty.NumOut() != 1 || resultTypeName(ty.Out(0)) != f.Result {
			t.Errorf("%s: the binding has type %s, want a result %s", f.Name, ty, f.Result)
		}
	}
	if _, err := Result("dataset", &release.Release{Receipt: &release.Receipt{}}); err == nil {
		t.Error("Result converted a release of dataset, which is not a private function")
	}
}
