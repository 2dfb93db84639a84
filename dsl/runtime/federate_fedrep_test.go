package runtime

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// registerFedRepUsers registers users lo..hi-1 of data as a user-level
// dataset with a label and a public user count.
func registerFedRepUsers(t *testing.T, dir, name string, data *synth.FedRepData, lo, hi int) {
	t.Helper()
	_, d := data.X.Dims()
	tab := &dataset.Table{UserColumn: "uid", NumUsers: hi - lo, Label: "y"}
	for j := range d {
		tab.Columns = append(tab.Columns, fmt.Sprintf("x%d", j+1))
	}
	for i := lo; i < hi; i++ {
		x, y := data.User(i)
		for r := range len(y) {
			tab.X = append(tab.X, mat.Row(nil, r, x)...)
			tab.Y = append(tab.Y, y[r])
			tab.Users = append(tab.Users, int32(i-lo))
			tab.Rows++
		}
	}
	registerWith(t, dir, ledger.Registration{Name: name, Table: tab, Budget: accounting.Budget{Eps: 20, Delta: 1e-4},
		Accountant: accounting.ModeZCDP, Clip: 10, LabelClip: 10, PublicN: true, Source: "test"})
}

// private_fedrep on federate(a, b, c): each silo is charged exactly the
// cost of the central call (its own plan: user-level (ε, δ) for its own
// users), the receipt lists the three charges, and the result recovers the
// planted representation about as well as the central run on the union
// does. Tolerance: at ε=8 on 1200 users the central error ‖sinΘ‖²_F is
// about 0.005 (measured: 0.0048 central, 0.0042 with 3 silos) and the 3-silo run's noise is √3 times larger (the
// mechanism-level TestThreeSilosMatchCentralWithRootThreeNoise checks that
// factor in distribution); both must be below 0.2, far from the ≈1.3 of a
// random 2-dimensional subspace of R^8. A one-member federation is
// charged what the central call is.
func TestFederatedFedRep(t *testing.T) {
	const n, d, k = 1200, 8, 2
	data, err := synth.FedRep(5, n, 10, d, k, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	registerFedRepUsers(t, dir, "a", data, 0, n/3)
	registerFedRepUsers(t, dir, "b", data, n/3, 2*n/3)
	registerFedRepUsers(t, dir, "c", data, 2*n/3, n)
	registerFedRepUsers(t, dir, "all", data, 0, n)
	registerFedRepUsers(t, dir, "one", data, 0, n)
	registerFedRepUsers(t, dir, "wide", mustFedRep(t, n, d+1, k), 0, 100)
	registerPublicN(t, dir, "rows", table(300, d, 1, 0.3), accounting.Budget{Eps: 20, Delta: 1e-4}, accounting.ModeZCDP)
	seedNoise(t, 11)
	s := newSession(t, dir)
	s.ok(`fed := federate(dataset("a"), dataset("b"), dataset("c"))`)
	sin := func(cell string) float64 {
		t.Helper()
		out := s.ok(cell + `
fmt.Println(r.U.RawMatrix().Data)`)
		var vals []float64
		for _, f := range strings.Fields(strings.Trim(strings.TrimSpace(out), "[]")) {
			var v float64
			if _, err := fmt.Sscan(f, &v); err != nil {
				t.Fatalf("output %q", out)
			}
			vals = append(vals, v)
		}
		if len(vals) != d*k {
			t.Fatalf("output %q", out)
		}
		var p mat.Dense
		p.Mul(mat.NewDense(d, k, vals).T(), data.UStar)
		f := mat.Norm(&p, 2)
		return float64(k) - f*f
	}
	fed := sin(`r := private_fedrep(fed, k=2, eps=8, delta=1e-6)`)
	out := s.ok(`fmt.Println(r.Receipt)`)
	for _, want := range []string{"federate(a, b, c)", "federated/fedrep", "a: charged", "b: charged", "c: charged"} {
		if !strings.Contains(out, want) {
			t.Errorf("the receipt lacks %q:\n%s", want, out)
		}
	}
	central := sin(`r := private_fedrep(dataset("all"), k=2, eps=8, delta=1e-6)`)
	one := sin(`r := private_fedrep(federate(dataset("one")), k=2, eps=8, delta=1e-6)`)
	t.Logf("sin²Θ: 3 silos %.4g, central on the union %.4g, one-member federation %.4g", fed, central, one)
	for what, v := range map[string]float64{"3 silos": fed, "central": central, "one silo": one} {
		if !(v < 0.2) {
			t.Errorf("%s: ‖sinΘ(U, U*)‖²_F = %.4g, want < 0.2", what, v)
		}
	}
	want := status(t, dir, "all").Spent
	for _, name := range []string{"a", "b", "c", "one"} {
		st := status(t, dir, name)
		if st.Charges != 1 || st.Spent != want {
			t.Errorf("%s: %d charges spending %+v, want 1 spending the central call's %+v", name, st.Charges, st.Spent, want)
		}
	}
	// Refusals before any charge: mismatched d, a row-level member, a
	// member without budget, a k out of range.
	s.fails(`r := private_fedrep(federate(dataset("a"), dataset("wide")), k=2, eps=1, delta=1e-6)`, NameArgumentError)
	res, _ := s.fails(`r := private_fedrep(federate(dataset("a"), dataset("rows")), k=2, eps=1, delta=1e-6)`, NameArgumentError)
	if !strings.Contains(res.Error.Value, "rows") || !strings.Contains(res.Error.Value, "--unit user") {
		t.Errorf("a row-level member: %s", res.Error.Value)
	}
	s.fails(`r := private_fedrep(fed, k=2, eps=500, delta=1e-6)`, NameBudgetExceeded)
	s.fails(`r := private_fedrep(fed, k=9, eps=1, delta=1e-6)`, NameArgumentError)
	s.fails(`r := private_fedrep(fed, k=2, eps=1, delta=1e-6, name="x")`, NameArgumentError)
	out = s.ok(`r := private_fedrep(fed, k=2, eps=1, delta=1e-6, dry_run=true)
fmt.Println(r.Receipt)`)
	if !strings.Contains(out, "c: would be charged") {
		t.Errorf("the dry run's receipt:\n%s", out)
	}
	for _, name := range []string{"a", "b", "c", "rows"} {
		want := 1
		if name == "rows" {
			want = 0
		}
		if st := status(t, dir, name); st.Charges != want {
			t.Errorf("%s: %d charges after the refusals and the dry run, want %d", name, st.Charges, want)
		}
	}
}

func mustFedRep(t *testing.T, n, d, k int) *synth.FedRepData {
	t.Helper()
	data, err := synth.FedRep(6, n, 10, d, k, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
