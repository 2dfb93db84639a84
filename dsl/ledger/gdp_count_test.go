package ledger_test

// The Gaussian release count of issue 12: a dataset registered with
// (ε, δ) = (4.4, 1e-5) and Gaussian counts of eps=1, delta=1e-5, run
// through the execution core (dsl/release) so that the events charged,
// stored and replayed are the real ones.

import (
	"context"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/accounting/bignorm"
)

// countsUntilRefused registers a dataset with the accountant, runs
// private_count(eps=1, delta=1e-5) until the ledger refuses, and returns the
// number released, the receipts' filter text and the store's directory.
func countsUntilRefused(t *testing.T, mode accounting.Mode) (int, string, *ledger.Store) {
	t.Helper()
	st := testfix.Store(t, "")
	sc := testfix.Register(t, st, ledger.Registration{Name: "d", Table: testfix.Table(t, "a\n1\n2\n3\n"),
		Budget: accounting.Budget{Eps: 4.4, Delta: 1e-5}, Accountant: mode, Neighbour: accounting.AddRemove, Clip: 1})
	env := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
	call := release.Call{Func: "private_count", Dataset: release.Ref{Name: "d", Schema: sc},
		Args: release.NewArgs(map[string]any{"eps": 1.0, "delta": 1e-5})}
	n, filter := 0, ""
	for ; n < 100; n++ {
		rel, err := env.Execute(context.Background(), call, nil)
		if err != nil {
			if !errors.Is(err, accounting.ErrBudgetExceeded) && !strings.Contains(err.Error(), "BudgetExceeded") {
				t.Fatalf("%s: count %d: %v", mode, n+1, err)
			}
			break
		}
		if n == 0 {
			// zcdp: σ = 1/√(2ρ*(1, 1e-5)); gdp: σ = 1/μ*(1, 1e-5), the
			// exact GDP calibration (both plus the lattice slack).
			want := map[accounting.Mode]string{accounting.ModeZCDP: "std 4.045", accounting.ModeGDP: "std 3.731"}[mode]
			if !strings.Contains(rel.Receipt.NoiseScale, want) {
				t.Fatalf("%s: noise %q, want the %s count", mode, rel.Receipt.NoiseScale, want)
			}
			filter = rel.Receipt.Filter
		}
	}
	return n, filter, st
}

// exactGDPCount is the number of releases of a Gaussian mechanism with
// σ/Δ = 1/μ₁ that exact Gaussian DP composition allows at (4.4, 1e-5):
// the largest n with δ_{√n·μ₁}(4.4) ≤ 1e-5, evaluated in math/big.
func exactGDPCount(mu1 float64) int {
	limit := big.NewFloat(1e-5)
	fits := func(n int) bool {
		mu := math.Sqrt(float64(n)) * mu1
		if 4.4/mu-mu/2 > 11 { // δ ≤ Φ(−11) < 1e-5
			return true
		}
		return bignorm.GDPDelta(mu, 4.4).Cmp(limit) <= 0
	}
	n := 0
	for fits(n + 1) {
		n++
	}
	return n
}

// muStarRef is the largest μ with δ_μ(ε) ≤ δ, by bisection on the
// big-float GDP profile (independent of accounting.MuForTarget).
func muStarRef(eps, delta float64) float64 {
	limit := big.NewFloat(delta)
	lo, hi := 0.01, 10.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if bignorm.GDPDelta(mid, eps).Cmp(limit) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func TestGaussianCountReleases(t *testing.T) {
	zcdp, zf, _ := countsUntilRefused(t, accounting.ModeZCDP)
	gdp, gf, st := countsUntilRefused(t, accounting.ModeGDP)
	// On the zcdp dataset each count's noise has σ = 1/√(2ρ*) at
	// sensitivity 1 (plus the lattice slack, which only lowers μ): exact
	// GDP composition of those releases would allow 16. On the gdp dataset
	// each count is calibrated to μ₁ = μ*(1, 1e-5) exactly (σ 7.8 % lower),
	// and exact GDP composition of those releases allows 14.
	exactZ := exactGDPCount(math.Sqrt(2 * accounting.RhoForTarget(1, 1e-5)))
	exact := exactGDPCount(muStarRef(1, 1e-5))
	t.Logf("releases of private_count(eps=1, delta=1e-5) in a (4.4, 1e-5) budget: zcdp %d (exact GDP of those %d), gdp %d (exact GDP of those %d)", zcdp, exactZ, gdp, exact)
	if zcdp != 14 || exactZ != 16 {
		t.Errorf("zcdp accountant released %d counts, want 14 (unchanged; exact GDP %d, want 16)", zcdp, exactZ)
	}
	if gdp < exact || gdp > exact {
		t.Errorf("gdp accountant released %d counts, want the %d exact GDP allows", gdp, exact)
	}
	if !strings.HasPrefix(zf, "zCDP filter ρ=") || !strings.HasPrefix(gf, "GDP filter μ=0.268") {
		t.Errorf("receipts say priced by %q (zcdp) and %q (gdp)", zf, gf)
	}
	// The stored events replay: Verify recomputes every charge and the
	// totals from the records, and the status reports the spend.
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	s, err := st.Status("d")
	if err != nil {
		t.Fatal(err)
	}
	if s.Charges != gdp || s.Spent.Eps > 4.4 || s.Mode != "gdp" || !strings.HasPrefix(s.Filter, "GDP filter Σμ²=1.006") {
		t.Errorf("status %+v after %d charges", s, gdp)
	}
}
