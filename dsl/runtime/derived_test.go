package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func registerPeopleSnapshot(t *testing.T, dir string, publicN bool) {
	t.Helper()
	registerSnapshot(t, dir, "people", peopleCSV(300),
		snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}, "income": {0, 60000}}, Categories: map[string][]string{"region": {"north", "south"}}, UserColumn: "uid"},
		ledger.Registration{Budget: accounting.Budget{Eps: 50, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1e5, PublicN: publicN})
}

// Filtered and selected datasets run every private function on their
// subset, charge the registered dataset, and name the subset in receipts
// and in the ledger.
func TestFilterSelect(t *testing.T) {
	dir := t.TempDir()
	registerPeopleSnapshot(t, dir, true)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
old := filter(ds, col="age", op=">=", value=65)
north := filter(old, col="region", op="==", value="north")
few := select_columns(north, cols=[]string{"income", "region"})
fmt.Println(few)
c := private_count(old, eps=0.5, delta=1e-6)
h := private_histogram(north, col="region", eps=0.5, delta=1e-6)
a := private_histogram(old, col="age", bins=4, eps=4, delta=1e-6) // little noise: the bin below 30 is empty in the subset
su := private_sum(few, col="income", eps=0.5, delta=1e-6)
p := private_pca(few, k=1, eps=1, delta=1e-6, method="gauss")
fmt.Println(c.Receipt.Dataset)
// south is empty in north; its noise has σ ≈ 12 (ε = 0.5): 60 is 4.9σ
fmt.Println(h.Get("south") < 60, a.Get("[0, 30)") < 30, p.Components.RawMatrix().Rows)`)
	for _, want := range []string{
		`Dataset(people | age >= 65 | region == "north" | columns income, region: d=1`,
		"categorical=[region]",
		"people | age >= 65\n",
		"true true 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	status, err := st.Status("people")
	if err != nil || status.Charges != 5 {
		t.Fatalf("status %+v %v: want 5 charges to the registered dataset", status, err)
	}
	recs, err := st.Entries("people")
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; !strings.Contains(string(last.Params), `"lineage":"people | age \u003e= 65 | region == \"north\" | columns income, region"`) {
		t.Errorf("the ledger record does not name the subset: %s", last.Params)
	}
	// A subset's size is private even where the registered count is
	// public: methods that need n refuse it before the charge.
	s.fails(`r := private_pca(old, k=1, eps=1, delta=1e-6, method="dppca")`, NameArgumentError)
	s.ok(`r := private_pca(ds, k=1, eps=1, delta=1e-6, method="dppca", pad=true)`)
}

func TestFilterRefusals(t *testing.T) {
	dir := t.TempDir()
	registerPeopleSnapshot(t, dir, false)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")`)
	for _, c := range []struct{ cell, want string }{
		{`f := filter(ds, col="height", op=">", value=1)`, `no column "height"`},
		{`f := filter(ds, col="region", op="<", value="north")`, "op must be == or !="},
		{`f := filter(ds, col="region", op="==", value="mars")`, `"mars" is not a category of column "region"`},
		{`f := filter(ds, col="age", op=">", value="old")`, "value must be a finite number"},
		{`f := filter(ds, col="age", op="~", value=1)`, `"~" is not a valid op`},
		{`f := select_columns(ds, cols=[]string{"age", "age"})`, "listed twice"},
		{`f := filter(synth_spiked(n=10, d=2, k=1, seed=1), col="c1", op=">", value=0)`, "synthetic data is public"},
	} {
		res, out := s.fails(c.cell, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %s, want %q (%s)", c.cell, res.Error.Value, c.want, out.all(res))
		}
	}
}

// A filter that keeps no row changes no outcome: every function still
// returns a release (a failure would tell that the subset is empty).
func TestEmptySubsetReleases(t *testing.T) {
	dir := t.TempDir()
	registerPeopleSnapshot(t, dir, false)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")
none := filter(ds, col="age", op=">", value=500)
c := private_count(none, eps=0.5, delta=1e-6)
m := private_mean(none, eps=0.5, delta=1e-6)
h := private_histogram(none, col="region", eps=0.5, delta=1e-6)
su := private_sum(none, col="age", eps=0.5, delta=1e-6)
q := private_quantile(none, col="age", eps=0.5)
g := private_pca(none, k=1, eps=0.5, delta=1e-6, method="gauss")
for _, method := range []string{"npm", "adaptive", "federated"} {
	p := private_pca(none, k=1, eps=0.5, delta=1e-6, method=method, iters=5)
	_ = p
}`)
}
