package runtime

import (
	"strings"
	"testing"

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
