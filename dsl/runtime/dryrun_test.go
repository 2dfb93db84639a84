package runtime

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

var leaveRE = regexp.MustCompile(`would cost .* and leave ε=([0-9.e+-]+), δ=`)

// dry_run=true charges nothing and says what the call would cost and
// leave; the same call made for real then leaves exactly that.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	tab := table(300, 4, 3, 0.3)
	registerWith(t, dir, ledger.Registration{Name: "d", Table: tab, Budget: accounting.Budget{Eps: 4, Delta: 1e-5},
		Accountant: accounting.ModeZCDP, Clip: 1, Source: "test", Bounds: map[string][2]float64{tab.Columns[0]: {-1, 1}}})
	col := tab.Columns[0]
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")`)
	for _, call := range []string{
		`private_pca(ds, k=1, eps=0.5, delta=1e-6, method="gauss")`,
		`private_count(ds, eps=0.3, delta=1e-6)`,
		`private_mean(ds, eps=0.3, delta=1e-6)`,
		`private_sum(ds, col="` + col + `", eps=0.3, delta=1e-6)`,
		`private_histogram(ds, col="` + col + `", bins=4, eps=0.3)`,
		`private_quantile(ds, col="` + col + `", eps=0.3)`,
	} {
		before := status(t, dir, "d")
		dry := strings.Replace(call, ")", ", dry_run=true)", 1)
		if i := strings.LastIndex(call, ")"); i >= 0 {
			dry = call[:i] + ", dry_run=true)"
		}
		out := s.ok("r := " + dry + "\nfmt.Println(r)")
		if !strings.Contains(out, "dry run (nothing charged, no data read)") {
			t.Errorf("%s: %s", dry, out)
			continue
		}
		if after := status(t, dir, "d"); after.Charges != before.Charges {
			t.Fatalf("%s charged: %d → %d charges", dry, before.Charges, after.Charges)
		}
		m := leaveRE.FindStringSubmatch(out)
		if m == nil {
			t.Errorf("%s does not say what it would leave: %s", dry, out)
			continue
		}
		s.ok("r := " + call)
		got := status(t, dir, "d").Remaining.Eps
		want, _ := strconv.ParseFloat(m[1], 64)
		if diff := got - want; diff > 1e-5*want || -diff > 1e-5*want {
			t.Errorf("%s: the dry run said it would leave ε=%v, the call left %v", call, want, got)
		}
	}
	// A dry run is no part of a cell's static cost: next to a call that
	// fits alone, but not twice, it does not refuse the cell.
	dir2 := t.TempDir()
	register(t, dir2, "e", tab, accounting.Budget{Eps: 1, Delta: 1e-5}, accounting.ModeZCDP)
	s2 := newSession(t, dir2)
	s2.fails("e := dataset(\"e\")\na := private_count(e, eps=0.9, delta=1e-6)\nb := private_count(e, eps=0.9, delta=1e-6)", NameBudgetExceeded)
	s2.ok("e := dataset(\"e\")\na := private_count(e, eps=0.9, delta=1e-6, dry_run=true)\nb := private_count(e, eps=0.9, delta=1e-6)")
	// A dry run over the budget is refused as the call would be, with
	// what would fit.
	res, _ := s.fails(`r := private_count(ds, eps=50, delta=1e-6, dry_run=true)`, NameBudgetExceeded)
	if !strings.Contains(res.Error.Value, "The largest eps that fits") {
		t.Errorf("refused dry run: %s", res.Error.Value)
	}
}
