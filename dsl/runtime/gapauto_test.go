package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// private_pca(method="adaptive", gap="auto") runs from a cell: with iters
// (read as the T of κ₀ = 0.5) on a dataset without a public n, and without
// iters on one with a public n; it charges the same event as the plain
// method (one zCDP ρ* at the target, the pre-check's price). Every bad gap
// is refused before anything is charged, with a message naming the fix.
func TestPCAGapAuto(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "priv", table(2000, 4, 3, 0.3), accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeZCDP)
	registerPublicN(t, dir, "pub", table(2000, 4, 4, 0.3), accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("priv")
pub := dataset("pub")`)
	out := s.ok(`r := private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap="auto")
fmt.Println(r.Receipt.Note)
fmt.Println(r.Receipt.Cost)`)
	if !strings.Contains(out, "gap=auto") || !strings.Contains(out, "T = {2, 4, 10, 21}") {
		t.Errorf("gap=auto with iters=4: receipt %s", out)
	}
	if st := status(t, dir, "priv"); st.Charges != 1 {
		t.Errorf("gap=auto charged %d times, want once", st.Charges)
	}
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c"}, D: 3, Clip: 1, Unit: "row",
		Neighbour: "replace-one", Accountant: "zcdp", Center: "none"}
	a, err := parseArgs("private_pca", []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", "adaptive"), newKW("iters", 4), newKW("gap", "auto")})
	if err != nil {
		t.Fatal(err)
	}
	p := planPCA(&source{name: "x", schema: sc}, a)
	if want, ok := costFor("private_pca", "adaptive", "zcdp", "zcdp", 0.5, 1e-6); !ok || !sameCost(p.Cost, want) {
		t.Errorf("gap=auto plans %+v, the pre-check prices %+v", p.Cost, want)
	}
	s.ok(`r2 := private_pca(pub, k=1, eps=1, delta=1e-6, method="adaptive", gap="auto")`)
	s.ok(`r3 := private_pca(pub, k=1, eps=1, delta=1e-6, method="adaptive")`) // the default T from the public n
	for _, c := range []struct{ call, want string }{
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap="foo")`, `not a valid gap`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap=-1)`, "gap"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap=0.3)`, "gap"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", gap="auto")`, `applies to method "adaptive" only`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, gap="auto")`, `applies to method "adaptive" only`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", gap="auto")`, "needs iters"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap="auto", calibration="paper")`, "zcdp"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=3000, gap="auto")`, "above"},
	} {
		res, o := s.run("r := " + c.call)
		if res.Error == nil {
			t.Errorf("%s: ran, want a refusal", c.call)
			continue
		}
		t.Logf("%s: %s", c.call, res.Error.Value)
		if msg := res.Error.Value + o.all(res); !strings.Contains(msg, c.want) {
			t.Errorf("%s: %s %s, want a message containing %q", c.call, res.Error.Name, res.Error.Value, c.want)
		}
	}
	if st := status(t, dir, "priv"); st.Charges != 1 {
		t.Errorf("refused calls charged: %d charges, want 1", st.Charges)
	}
	verify(t, dir)
}
