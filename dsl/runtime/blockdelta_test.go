package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A Gaussian call in a budget block with a δ that gives no delta is
// calibrated to the block's δ (issue 11): the receipt, a dry run and the
// static pre-check all use it. Outside a block, or in a block without a
// δ, delta stays required.
func TestBlockDeltaIsTheCalibrationTarget(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(60, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("d")
budget eps=1, delta=1e-7 {
	m := private_mean(ds, eps=0.5)
	dry := private_pca(ds, k=1, eps=0.2, dry_run=true)
}
fmt.Println(m.Receipt.Delta, dry.Receipt.Delta)
fmt.Println(m.Receipt.Cost.Rho)
fmt.Println(m.Receipt.Note)
fmt.Println(dry.Receipt.Note)`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "1e-07 1e-07" {
		t.Fatalf("receipts' δ: got %q, want the block's 1e-07 for both", out)
	}
	if want := fmt.Sprint(accounting.ZcdpFor(0.5, 1e-7).Rho); lines[1] != want {
		t.Errorf("charged ρ=%s, want the cost of (0.5, 1e-7): ρ=%s", lines[1], want)
	}
	for _, l := range lines[2:] {
		if !strings.Contains(l, "δ=1e-07 is the budget block's") {
			t.Errorf("receipt note %q does not say the δ is the block's", l)
		}
	}
	if st := status(t, dir, "d"); st.Charges != 1 {
		t.Fatalf("%d charges, want 1 (the dry run charges nothing)", st.Charges)
	}

	// An explicit delta still wins over the block's.
	out = s.ok(`budget eps=1, delta=1e-7 {
	m := private_mean(ds, eps=0.1, delta=1e-8)
}
fmt.Println(m.Receipt.Delta, strings.Contains(m.Receipt.Note, "block's"))`)
	if strings.TrimSpace(out) != "1e-08 false" {
		t.Fatalf("explicit delta in a block: got %q", out)
	}

	// A %%budget cell is a block too.
	out = s.ok("%%budget eps=1 delta=1e-7\nm := private_mean(ds, eps=0.1)\nfmt.Println(m.Receipt.Delta)")
	if strings.TrimSpace(out) != "1e-07" {
		t.Fatalf("%%%%budget cell: got %q", out)
	}

	for _, tc := range []struct{ name, cell, want string }{
		{"outside a block", `m := private_mean(ds, eps=0.1)`, "needs delta > 0"},
		{"outside a block, required delta", `m := private_pca(ds, k=1, eps=0.1)`, "private_pca needs delta > 0"},
		{"block without δ", `budget eps=1 {
	m := private_pca(ds, k=1, eps=0.1)
}`, "add delta= to the block's header"},
		{"block without δ, row-vector mean", `budget eps=1 {
	m := private_mean(ds, eps=0.1)
}`, "leave delta out inside a budget block with a δ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, o := s.run(tc.cell)
			if res.Error == nil || !strings.Contains(res.Error.Value, tc.want) {
				t.Fatalf("want an error containing %q, got %s", tc.want, o.all(res))
			}
		})
	}
	if st := status(t, dir, "d"); st.Charges != 3 {
		t.Fatalf("%d charges after the refused cells, want 3", st.Charges)
	}
}

// The static pre-check prices a call without delta at its block's δ, as
// the run does: two calls that exceed the block's cap at that δ refuse
// the cell before anything of it runs.
func TestBlockDeltaStaticPrecheck(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(60, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")`)
	// ρ*(0.4, 1e-6) ≈ 0.00285 twice exceeds ρ*(0.5, 1e-6) ≈ 0.00444.
	res, o := s.fails(`budget eps=0.5, delta=1e-6 {
	a := private_mean(ds, eps=0.4)
	fmt.Println("ran")
	b := private_mean(ds, eps=0.4)
}`, NameBudgetExceeded)
	if strings.Contains(o.stdout(), "ran") || !strings.Contains(o.all(res), "nothing ran") {
		t.Fatalf("want the cell refused before it ran, got %s", o.all(res))
	}
	if st := status(t, dir, "d"); st.Charges != 0 {
		t.Fatalf("%d charges, want 0", st.Charges)
	}
	// Under zCDP two calls whose ε sum to more than the block's may fit:
	// 0.2 twice under (0.3, 1e-6).
	s.ok(`budget eps=0.3, delta=1e-6 {
	a := private_mean(ds, eps=0.2)
	b := private_mean(ds, eps=0.2)
}`)
	if st := status(t, dir, "d"); st.Charges != 2 {
		t.Fatalf("%d charges, want 2", st.Charges)
	}
	// What would fit is priced at the block's δ too.
	register(t, dir, "small", table(60, 3, 2, 0.3), accounting.Budget{Eps: 0.3, Delta: 1e-5}, accounting.ModeZCDP)
	for _, cell := range []string{
		"budget eps=5, delta=1e-7 {\n\tm := private_mean(dataset(\"small\"), eps=2)\n}",
		"e := 2.0\nbudget eps=5, delta=1e-7 {\n\tm := private_mean(dataset(\"small\"), eps=e)\n}",
	} {
		res, _ := s.fails(cell, NameBudgetExceeded)
		if !strings.Contains(res.Error.Value, "The largest eps that fits at delta=1e-07") {
			t.Errorf("%q: the what-fits note is not at the block's δ: %s", cell, res.Error.Value)
		}
	}
}
