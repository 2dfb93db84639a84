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

// On a gdp dataset gap="auto" is calibrated to μ*(ε, δ) and charged one
// μ*-GDP event, which the pre-check prices alike: with a budget of
// (1.45, 1e-5) (μ = 0.375, room for (0.375/μ*(1, 1e-6))² ≈ 2.5 calls) a
// cell of three calls is refused whole before it runs, one of two runs
// and charges two GDP events, and a third call is refused.
func TestPCAGapAutoGDP(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "g", table(2000, 4, 3, 0.3), accounting.Budget{Eps: 1.45, Delta: 1e-5}, accounting.ModeGDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("g")`)
	call := `private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap="auto")`
	res, out := s.run("fmt.Println(\"side effect\")\na := " + call + "\nb := " + call + "\nc := " + call)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || !strings.Contains(res.Error.Value, "nothing ran") || out.stdout() != "" {
		t.Fatalf("three gap=auto calls over the budget: %+v (printed %q), want the pre-check's refusal", res.Error, out.stdout())
	}
	if st := status(t, dir, "g"); st.Charges != 0 {
		t.Fatalf("the refused cell charged %d times", st.Charges)
	}
	got := s.ok("a := " + call + "\nb := " + call + "\nfmt.Println(a.Receipt.Note)")
	if !strings.Contains(got, "gap=auto: calibrated to ε=1, δ=1e-06 via exact GDP") {
		t.Errorf("gdp receipt note: %s", got)
	}
	mu := accounting.MuForTarget(1, 1e-6)
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.Entries("g")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	charges := 0
	for _, e := range entries {
		if e.Kind != "charge" {
			continue
		}
		charges++
		if e.Event.Kind != accounting.GDP || e.Event.Mu != mu || e.Event.Mechanism != "pca/adaptive" {
			t.Errorf("ledger charge %+v, want one μ*-GDP event (μ* = %v)", *e.Event, mu)
		}
	}
	if charges != 2 {
		t.Errorf("%d charges, want 2", charges)
	}
	if res, _ := s.run("c := " + call); res.Error == nil || res.Error.Name != NameBudgetExceeded {
		t.Errorf("a third call within the budget's μ: %+v, want BudgetExceeded", res.Error)
	}
	verify(t, dir)
}
