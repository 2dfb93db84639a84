package runtime

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// lineTable has 2000 rows: x1 and x2 on a grid over [−1, 1], the target
// y = 1 + 2·x1 − x2 (bounds [−5, 5]), a 0/1 label lab = [x1 > x2] and an
// unbounded z.
func lineTable() *dataset.Table {
	const n = 2000
	t := &dataset.Table{Columns: []string{"x1", "x2", "y", "lab", "z"}, Rows: n}
	for i := range n {
		x1 := math.Sin(float64(i))
		x2 := math.Cos(float64(3 * i))
		lab := 0.0
		if x1 > x2 {
			lab = 1
		}
		t.X = append(t.X, x1, x2, 1+2*x1-x2, lab, float64(i))
	}
	return t
}

func registerLine(t *testing.T, dir string, b accounting.Budget, mode accounting.Mode) {
	t.Helper()
	registerWith(t, dir, ledger.Registration{Name: "line", Table: lineTable(), Budget: b, Accountant: mode,
		Neighbour: accounting.ReplaceOne, Clip: 1, Source: "test",
		Bounds: map[string][2]float64{"x1": {-1, 1}, "x2": {-1, 1}, "y": {-5, 5}, "lab": {0, 1}}})
}

// Both fits from cells, at a large ε so that the seeded releases are close
// to the exact model: coefficients, Predict, the receipt's mechanism and
// one charge each.
func TestRegressionEndToEnd(t *testing.T) {
	seedNoise(t, 31)
	dir := t.TempDir()
	registerLine(t, dir, accounting.Budget{Eps: 1e5, Delta: 1e-3}, accounting.ModeZCDP)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("line")
lin := private_linear_regression(ds, y="y", x=[]string{"x1", "x2"}, eps=1e4, delta=1e-6)
lg := private_logistic_regression(ds, y="lab", x=[]string{"x1", "x2"}, eps=1e4, delta=1e-6, iters=200, l2=0)
fmt.Println(lin.Coef[0], lin.Coef[1], lin.Intercept, lin.Predict([]float64{0.5, 0.5}))
fmt.Println(lg.Coef[0], lg.Coef[1], lg.Predict([]float64{0.9, -0.9}), lg.Predict([]float64{-0.9, 0.9}))
fmt.Println(lin.Receipt.Mechanism, lg.Receipt.Mechanism, lin.Columns)`)
	lines := strings.Split(out, "\n")
	var c1, c2, icpt, pred float64
	if _, err := fmt.Sscan(lines[0], &c1, &c2, &icpt, &pred); err != nil || math.Abs(c1-2) > 0.05 || math.Abs(c2+1) > 0.05 || math.Abs(icpt-1) > 0.05 || math.Abs(pred-1.5) > 0.05 {
		t.Errorf("linear: %q, want coef ≈ [2 −1], intercept ≈ 1, Predict(0.5, 0.5) ≈ 1.5", lines[0])
	}
	var l1, l2, pHi, pLo float64
	if _, err := fmt.Sscan(lines[1], &l1, &l2, &pHi, &pLo); err != nil || !(l1 > 1 && l2 < -1 && pHi > 0.9 && pLo < 0.1) {
		t.Errorf("logistic: %q, want coef of x1 > 1, of x2 < −1, and probabilities near 1 and 0", lines[1])
	}
	if lines[2] != "regression/adassp regression/noisy-gd [x1 x2]" {
		t.Errorf("mechanisms and columns: %q", lines[2])
	}
	if st := status(t, dir, "line"); st.Charges != 2 {
		t.Errorf("%d charges, want 2", st.Charges)
	}
}

// Dry runs charge nothing and show the receipt; a named call replays its
// stored release without a new charge, and other parameters under the
// same name are refused; the pre-check prices a cell's calls and refuses
// one the budget cannot pay before anything runs.
func TestRegressionDryRunReplayPrecheck(t *testing.T) {
	seedNoise(t, 32)
	dir := t.TempDir()
	registerLine(t, dir, accounting.Budget{Eps: 3, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("line")`)
	for _, fn := range []string{"private_linear_regression", "private_logistic_regression"} {
		out := s.ok(fmt.Sprintf(`d := %s(ds, y="lab", x=[]string{"x1"}, eps=1, delta=1e-6, dry_run=true)
fmt.Println(d.Coef == nil, d.Receipt.DryRun)
fmt.Println(d)`, fn))
		if !strings.HasPrefix(out, "true true\n") || !strings.Contains(out, "regression/") {
			t.Errorf("%s dry run: %q", fn, out)
		}
	}
	if st := status(t, dir, "line"); st.Charges != 0 {
		t.Fatalf("dry runs charged %d times", st.Charges)
	}
	out := s.ok(`a := private_linear_regression(ds, y="y", x=[]string{"x1", "x2"}, eps=1, delta=1e-6, name="fit")
b := private_linear_regression(ds, y="y", x=[]string{"x1", "x2"}, eps=1, delta=1e-6, name="fit")
fmt.Println(a.Coef[0] == b.Coef[0], a.Intercept == b.Intercept, a.Receipt.Replayed, b.Receipt.Replayed)`)
	if out != "true true false true\n" {
		t.Errorf("named replay: %q", out)
	}
	if st := status(t, dir, "line"); st.Charges != 1 {
		t.Errorf("%d charges after a named call and its replay, want 1", st.Charges)
	}
	if res, _ := s.fails(`private_linear_regression(ds, y="y", x=[]string{"x1"}, eps=1, delta=1e-6, name="fit")`, NameArgumentError); !strings.Contains(res.Error.Value, "fit") {
		t.Errorf("same name, other parameters: %s", res.Error.Value)
	}
	res, out2 := s.run(`fmt.Println("side effect")
m := private_logistic_regression(ds, y="lab", x=[]string{"x1"}, eps=5, delta=1e-6)`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || out2.stdout() != "" {
		t.Errorf("over budget: %+v, output %q; want BudgetExceeded before the cell runs", res.Error, out2.stdout())
	}
	if st := status(t, dir, "line"); st.Charges != 1 {
		t.Errorf("%d charges after the refused cell, want 1", st.Charges)
	}
}

// Refusals come before the charge, from public facts, and name the fix.
func TestRegressionRefusals(t *testing.T) {
	dir := t.TempDir()
	registerLine(t, dir, accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("line")`)
	for _, c := range []struct{ cell, want string }{
		{`private_linear_regression(ds, y="z", x=[]string{"x1"}, eps=1, delta=1e-6)`, "--bounds z=lo:hi"},
		{`private_linear_regression(ds, y="y", x=[]string{"z"}, eps=1, delta=1e-6)`, "--bounds z=lo:hi"},
		{`private_linear_regression(ds, y="y", x=[]string{"x1", "x1"}, eps=1, delta=1e-6)`, "listed twice"},
		{`private_linear_regression(ds, y="y", x=[]string{"y"}, eps=1, delta=1e-6)`, "also a feature"},
		{`private_linear_regression(ds, y="y", x=[]string{}, eps=1, delta=1e-6)`, "give x="},
		{`private_linear_regression(ds, y="y", x=[]string{"nope"}, eps=1, delta=1e-6)`, `no column "nope"`},
		{`private_linear_regression(ds, y="y", x=[]string{"x1"}, eps=1, delta=0)`, "delta"},
		{`private_logistic_regression(ds, y="lab", x=[]string{"x1"}, eps=1, delta=1e-6, iters=0)`, "iters"},
		{`private_logistic_regression(ds, y="lab", x=[]string{"x1"}, eps=1, delta=1e-6, l2=-1)`, "l2"},
		{`private_logistic_regression(ds, y="lab", x=[]string{"x1"}, eps=1, delta=1e-6, positive="yes")`, "leave positive out"},
	} {
		res, out := s.fails("fmt.Println(\"ran\")\n"+c.cell, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) || out.stdout() != "" {
			t.Errorf("%s: %s (output %q), want %q before the cell runs", c.cell, res.Error.Value, out.stdout(), c.want)
		}
	}
	if st := status(t, dir, "line"); st.Charges != 0 {
		t.Errorf("refusals charged %d times", st.Charges)
	}
}

// The pre-check's cost table (costFor) is what the plans charge, under
// the zcdp and gdp accountants.
func TestRegressionCostForMatchesPlans(t *testing.T) {
	// The registered relation calibrates the noise: replace-one's stds
	// are larger than add-remove's, not only named differently.
	noiseText := map[string]string{}
	for _, nb := range []string{"replace-one", "add-remove"} {
		sc := ledger.Schema{Name: "x", Columns: []string{"a", "b"}, D: 2, Clip: 1, Unit: "row", Neighbour: nb,
			Accountant: "zcdp", Center: "none", Bounds: map[string][2]float64{"a": {0, 100}, "b": {0, 1}}}
		for _, fn := range []string{"private_linear_regression", "private_logistic_regression"} {
			a, err := parseArgs(fn, []KW{newKW("y", "b"), newKW("x", []string{"a"}), newKW("eps", 0.7), newKW("delta", 1e-6)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := planRT.exec.Plan(planRT.call(nil, fn, &source{name: "x", schema: sc}, a))
			if err != nil {
				t.Fatal(err)
			}
			noiseText[fn+" "+nb] = strings.ReplaceAll(p.Noise, nb, "NB")
		}
	}
	for _, fn := range []string{"private_linear_regression", "private_logistic_regression"} {
		if noiseText[fn+" replace-one"] == noiseText[fn+" add-remove"] {
			t.Errorf("%s: the same noise under both relations: %s", fn, noiseText[fn+" add-remove"])
		}
	}
	for _, acct := range []string{"zcdp", "gdp"} {
		sc := ledger.Schema{Name: "x", Columns: []string{"a", "b"}, D: 2, Clip: 1, Unit: "row", Neighbour: "replace-one",
			Accountant: acct, Center: "none", Bounds: map[string][2]float64{"a": {0, 100}, "b": {0, 1}}}
		for _, fn := range []string{"private_linear_regression", "private_logistic_regression"} {
			want, ok := costFor(fn, "", "", acct, 0.7, 1e-6)
			a, err := parseArgs(fn, []KW{newKW("y", "b"), newKW("x", []string{"a"}), newKW("eps", 0.7), newKW("delta", 1e-6)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := planRT.exec.Plan(planRT.call(nil, fn, &source{name: "x", schema: sc}, a))
			if err != nil || !ok || !sameCost(p.Cost, want) {
				t.Errorf("%s (%s): plan %+v (%v), costFor %+v (%v)", fn, acct, p, err, want, ok)
			}
		}
	}
}

// The result shows its coefficients and receipt as text and HTML (names
// escaped), carries the receipt into the metadata and marshals to JSON.
func TestRegressionDisplay(t *testing.T) {
	r := &RegressionResult{Model: "linear", Columns: []string{"a<b", "c"}, Coef: []float64{1.5, -2}, Intercept: 0.25,
		releaseBase: releaseBase{&Receipt{Mechanism: "regression/adassp"}}}
	if s := r.String(); !strings.Contains(s, "intercept") || !strings.Contains(s, "a<b") || !strings.Contains(s, "-2") {
		t.Errorf("text: %q", s)
	}
	if h := r.HTML(); !strings.Contains(h, "a&lt;b") || strings.Contains(h, "a<b") {
		t.Errorf("HTML: %q", h)
	}
	if r.Metadata() == nil {
		t.Error("no metadata")
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"Coef":[1.5,-2]`) || !strings.Contains(string(b), `"Intercept":0.25`) {
		t.Errorf("JSON: %s (%v)", b, err)
	}
	if got := r.Predict([]float64{2, 1}); got != 0.25+3-2 {
		t.Errorf("Predict = %v", got)
	}
	r.Model = "logistic"
	if got := r.Predict([]float64{2, 1}); math.Abs(got-1/(1+math.Exp(-1.25))) > 1e-15 {
		t.Errorf("logistic Predict = %v", got)
	}
	var nilResult *RegressionResult
	if nilResult.String() != noResult || !math.IsNaN(nilResult.Predict(nil)) {
		t.Error("a nil result does not show as no result")
	}
}

// A categorical label with its positive class, on a snapshot dataset: the
// fit runs, shows one progress bar that ends at iters of iters, and
// positive= is checked against the public domain before the charge.
func TestLogisticCategoricalLabelAndProgress(t *testing.T) {
	seedNoise(t, 33)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	res, out := s.run(`ds := dataset("people")
m := private_logistic_regression(ds, y="region", positive="north", x=[]string{"age", "income"}, eps=1, delta=1e-6, iters=5)
fmt.Println(len(m.Coef), m.Predict([]float64{30, 100}) > 0, m.Predict([]float64{30, 100}) < 1)`)
	if res.Error != nil {
		t.Fatalf("%s: %s", res.Error.Name, res.Error.Value)
	}
	if got := out.stdout(); got != "2 true true\n" {
		t.Errorf("fit: %q", got)
	}
	ds := progressDisplays(out)
	if len(ds) == 0 || ds[len(ds)-1].Progress.Done != 5 || ds[len(ds)-1].Progress.Total != 5 {
		t.Errorf("progress: %d displays, want a bar ending at 5 of 5", len(ds))
	}
	for _, c := range []struct{ cell, want string }{
		{`private_logistic_regression(ds, y="region", x=[]string{"age"}, eps=1, delta=1e-6)`, `positive="…", one of north, south`},
		{`private_logistic_regression(ds, y="region", positive="mars", x=[]string{"age"}, eps=1, delta=1e-6)`, `positive="mars" is not a category`},
		{`private_linear_regression(ds, y="region", x=[]string{"age"}, eps=1, delta=1e-6)`, `column "region" is categorical`},
	} {
		res, out := s.fails("fmt.Println(\"ran\")\n"+c.cell, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) || out.stdout() != "" {
			t.Errorf("%s: %s (output %q), want %q before the cell runs", c.cell, res.Error.Value, out.stdout(), c.want)
		}
	}
	if st := status(t, dir, "people"); st.Charges != 1 {
		t.Errorf("%d charges, want 1", st.Charges)
	}
	// User-level data: refused before the charge (a user's rows would
	// each count as a unit).
	registerRegions(t, dir, "users", 300, true, accounting.ReplaceOne)
	for _, fn := range []string{"private_linear_regression", "private_logistic_regression"} {
		res, _ := s.fails(fn+`(dataset("users"), y="income", x=[]string{"age"}, eps=1, delta=1e-6)`, NameArgumentError)
		if !strings.Contains(res.Error.Value, "row-level data only") {
			t.Errorf("%s on user-level data: %s", fn, res.Error.Value)
		}
	}
	if st := status(t, dir, "users"); st.Charges != 0 {
		t.Errorf("user-level refusals charged %d times", st.Charges)
	}
}

// r2=true: the fit shows R², the residual std and 95 % intervals that
// contain the exact coefficients at a large ε; a named call's replay
// gives the same intervals (the fit is stored with the release); the
// receipt's error names the bootstrap; a logistic fit and a fit without
// r2 refuse CoefInterval with the reason; the cost does not change.
func TestRegressionR2AndIntervals(t *testing.T) {
	seedNoise(t, 34)
	dir := t.TempDir()
	registerLine(t, dir, accounting.Budget{Eps: 1e5, Delta: 1e-3}, accounting.ModeZCDP)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("line")
a := private_linear_regression(ds, y="y", x=[]string{"x1", "x2"}, eps=1e3, delta=1e-6, r2=true, name="q")
b := private_linear_regression(ds, y="y", x=[]string{"x1", "x2"}, eps=1e3, delta=1e-6, r2=true, name="q")
lo, hi := a.CoefInterval(0, 0.95)
lo2, hi2 := b.CoefInterval(0, 0.95)
ilo, ihi := a.InterceptInterval(0.95)
fmt.Println(a.R2, a.ResidualStd, lo, hi, lo2 == lo && hi2 == hi, b.Receipt.Replayed)
fmt.Println(ilo, ihi)
fmt.Println(a)`)
	lines := strings.Split(out, "\n")
	var r2, rstd, lo, hi float64
	var same, replayed bool
	if _, err := fmt.Sscan(lines[0], &r2, &rstd, &lo, &hi, &same, &replayed); err != nil || r2 < 0.99 || rstd > 0.2 || !(lo < 2 && 2 < hi) || hi-lo > 0.2 || !same || !replayed {
		t.Errorf("r2 fit: %q, want R² ≈ 1, residual std ≈ 0 (its noise: ≈ 0.05), an interval around 2 of width < 0.2, the same after a replay", lines[0])
	}
	var ilo, ihi float64
	if _, err := fmt.Sscan(lines[1], &ilo, &ihi); err != nil || !(ilo < 1 && 1 < ihi) {
		t.Errorf("intercept interval: %q, want around 1", lines[1])
	}
	if !strings.Contains(out, "95 % interval") || !strings.Contains(out, "R² ") {
		t.Errorf("display: %q", out)
	}
	if st := status(t, dir, "line"); st.Charges != 1 {
		t.Errorf("%d charges, want 1", st.Charges)
	}
	for _, c := range []struct{ call, want string }{
		{`private_linear_regression(ds, y="y", x=[]string{"x1"}, eps=1, delta=1e-6).CoefInterval(0, 0.95)`, "r2=true"},
		{`private_logistic_regression(ds, y="lab", x=[]string{"x1"}, eps=1, delta=1e-6, iters=2).CoefInterval(0, 0.95)`, "logistic"},
		{`a.CoefInterval(2, 0.95)`, "does not exist"},
		{`a.CoefInterval(0, 1)`, "level"},
	} {
		if res, _ := s.fails(c.call, NameArgumentError); !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %s, want it to say %q", c.call, res.Error.Value, c.want)
		}
	}
	// r2 splits the same budget: the dry runs' costs agree.
	out = s.ok(`d1 := private_linear_regression(ds, y="y", x=[]string{"x1"}, eps=1, delta=1e-6, dry_run=true)
d2 := private_linear_regression(ds, y="y", x=[]string{"x1"}, eps=1, delta=1e-6, r2=true, dry_run=true)
fmt.Println(d1.Receipt.Cost == d2.Receipt.Cost, strings.Contains(d2.Receipt.NoiseScale, "yᵀy"), strings.Contains(d2.String(), "parametric bootstrap"))`)
	if out != "true true true\n" {
		t.Errorf("r2's cost or noise: %q", out)
	}
}
