package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestOjaShuffleDSL: private_pca(method="oja-shuffle") from a cell. Its
// plan costs what the pre-check prices (an approximate-DP event at the
// target, calibration or not); a dry run charges nothing; a call in the
// shuffling bound's regime runs and charges once; calls outside it, or
// with keywords the method cannot honour, are refused before the charge,
// the regime refusal naming the row counts at which the bound would hold.
func TestOjaShuffleDSL(t *testing.T) {
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c"}, D: 3, Clip: 1, Unit: "row",
		Neighbour: "replace-one", Accountant: "zcdp", Center: "none", PublicN: 1_000_000}
	for _, kws := range [][]KW{{}, {newKW("calibration", "paper")}} {
		a, err := parseArgs("private_pca", append([]KW{newKW("k", 1), newKW("eps", 0.02), newKW("delta", 1e-7), newKW("method", "oja-shuffle")}, kws...))
		if err != nil {
			t.Fatal(err)
		}
		p := planPCA(&source{name: "x", schema: sc}, a)
		want, ok := costFor("private_pca", "oja-shuffle", "", "zcdp", 0.02, 1e-7)
		if !ok || !sameCost(p.Cost, want) || p.Cost.Kind != accounting.ApproxDP {
			t.Errorf("%v: plan costs %+v, costFor %+v", kws, p.Cost, want)
		}
	}

	dir := t.TempDir()
	registerPublicN(t, dir, "tall", table(40000, 2, 8, 0.3), accounting.Budget{Eps: 1, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("tall")`)
	before := status(t, dir, "tall")
	out := s.ok(`r := private_pca(ds, k=1, eps=0.05, delta=1e-7, method="oja-shuffle", dry_run=true)
fmt.Println(r)`)
	if !strings.Contains(out, "dry run (nothing charged, no data read)") || !strings.Contains(out, "shuffl") {
		t.Errorf("dry run: %s", out)
	}
	if after := status(t, dir, "tall"); after.Charges != before.Charges {
		t.Fatalf("the dry run charged: %d → %d", before.Charges, after.Charges)
	}
	out = s.ok(`r := private_pca(ds, k=1, eps=0.05, delta=1e-7, method="oja-shuffle")
fmt.Println(r.Receipt.Mechanism, r.Receipt.Cost.Kind, r.Receipt.Note)`)
	if after := status(t, dir, "tall"); after.Charges != before.Charges+1 {
		t.Errorf("the call made %d charges, want 1", after.Charges-before.Charges)
	}
	if !strings.Contains(out, "dppca/oja-shuffle") || !strings.Contains(out, accounting.ApproxDP.String()) || !strings.Contains(out, "Thm 3.8") {
		t.Errorf("receipt: %s", out)
	}
	before = status(t, dir, "tall")
	for _, c := range []struct{ call, want string }{
		{`r := private_pca(ds, k=1, eps=0.5, delta=1e-7, method="oja-shuffle")`, "≤ n ≤"},
		{`r := private_pca(ds, k=1, eps=0.5, delta=1e-7, method="oja-shuffle")`, "nothing was charged"},
		{`r := private_pca(ds, k=1, eps=0.05, delta=1e-7, method="oja-shuffle", iters=5)`, "drop iters"},
		{`r := private_pca(ds, k=1, eps=0.05, delta=1e-7, method="oja-shuffle", calibration="zcdp")`, "drop calibration"},
		{`r := private_pca(ds, k=2, eps=0.05, delta=1e-7, method="oja-shuffle")`, "k=1"},
	} {
		res, _ := s.fails(c.call, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %s, want it to say %q", c.call, res.Error.Value, c.want)
		}
	}
	if after := status(t, dir, "tall"); after.Charges != before.Charges {
		t.Errorf("refused calls charged: %d → %d", before.Charges, after.Charges)
	}
	verify(t, dir)
}

// TestOjaShuffleNeighbours is the neighbouring-datasets rule for
// oja-shuffle at a size where it charges (the harness's worlds are below
// the shuffling bound's n, so there every call is refused): on two data
// sets of 400 public rows that differ in one row (an outlier), every call
// of a grid of (ε, δ) is refused with the same message on both or charged
// the same event on both, and a charged call releases a unit vector.
func TestOjaShuffleNeighbours(t *testing.T) {
	a := table(400, 3, 21, 0.3)
	b := table(400, 3, 21, 0.3)
	for j := range 3 {
		b.X[17*3+j] = 1e6 * float64(j+1)
	}
	type outcome struct {
		err     string
		charges int
		spent   accounting.Budget
	}
	results := map[string][2]outcome{}
	var calls []string
	for _, eps := range []float64{0.02, 0.1, 0.3, 0.9} {
		for _, delta := range []float64{1e-6, 0.01, 0.1} {
			calls = append(calls, fmt.Sprintf(`r := private_pca(ds, k=1, eps=%g, delta=%g, method="oja-shuffle")
fmt.Println(len(r.Component(1)))`, eps, delta))
		}
	}
	for side, tab := range []*dataset.Table{a, b} {
		dir := t.TempDir()
		registerPublicN(t, dir, "d", tab, accounting.Budget{Eps: 100, Delta: 0.5}, accounting.ModeZCDP)
		s := newSession(t, dir)
		s.ok(`ds := dataset("d")`)
		for _, c := range calls {
			before := status(t, dir, "d")
			res, out := s.run(c)
			o := outcome{}
			if res.Error != nil {
				o.err = res.Error.Name + ": " + res.Error.Value
			} else if got := strings.TrimSpace(out.stdout()); got != "3" {
				t.Errorf("%s: printed %q, want a 3-vector", c, got)
			}
			after := status(t, dir, "d")
			o.charges, o.spent = after.Charges-before.Charges, after.Spent
			r := results[c]
			r[side] = o
			results[c] = r
		}
		verify(t, dir)
	}
	charged := 0
	for _, c := range calls {
		r := results[c]
		if r[0] != r[1] {
			t.Errorf("%s: neighbours differ:\n  %+v\n  %+v", c, r[0], r[1])
		}
		if r[0].charges > 0 {
			charged++
		}
	}
	if charged == 0 || charged == len(calls) {
		t.Errorf("%d of %d calls charged: the grid must hold both", charged, len(calls))
	}
}
