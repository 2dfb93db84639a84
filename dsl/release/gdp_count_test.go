package release

// Dataset-level checks of the gdp calibration (issue 12): Gaussian counts
// and PCA calls run through the execution core and the ledger on datasets
// registered under each accountant, so that the events planned, charged
// and stored are the real ones. The reference counts are computed
// independently in math/big.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/accounting/bignorm"
)

// gdpTestEnv registers a dataset of csv under mode with the budget and
// returns an execution core on it and its store.
func gdpTestEnv(t *testing.T, mode accounting.Mode, b accounting.Budget, csv string) (*Local, Ref, *ledger.Store) {
	t.Helper()
	st := testfix.Store(t, "")
	sc := testfix.Register(t, st, ledger.Registration{Name: "d", Table: testfix.Table(t, csv),
		Budget: b, Accountant: mode, Neighbour: accounting.AddRemove, Clip: 1})
	return &Local{Store: func() (*ledger.Store, error) { return st, nil }}, Ref{Name: "d", Schema: sc}, st
}

// countReleases runs private_count(eps, delta=1e-5) on a (4.4, 1e-5)
// dataset under mode until the ledger refuses, and returns the number
// released and the first receipt's noise text.
func countReleases(t *testing.T, mode accounting.Mode, eps float64) (int, string) {
	t.Helper()
	env, ref, st := gdpTestEnv(t, mode, accounting.Budget{Eps: 4.4, Delta: 1e-5}, "a\n1\n2\n3\n")
	call := Call{Func: "private_count", Dataset: ref,
		Args: mustArgs("private_count", map[string]any{"eps": eps, "delta": 1e-5})}
	n, noise := 0, ""
	for ; n < 100; n++ {
		rel, err := env.Execute(context.Background(), call, nil)
		if err != nil {
			if !errors.Is(err, accounting.ErrBudgetExceeded) && !strings.Contains(err.Error(), "BudgetExceeded") {
				t.Fatalf("%s: count %d: %v", mode, n+1, err)
			}
			break
		}
		if n == 0 {
			noise = rel.Receipt.NoiseScale
		}
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	return n, noise
}

// exactCountBig is the largest n with δ_{√n·μ₁}(4.4) ≤ 1e-5 in math/big:
// the releases of σ/Δ = 1/μ₁ that exact GDP composition allows.
func exactCountBig(mu1 float64) int {
	limit := big.NewFloat(1e-5)
	n := 0
	for {
		mu := math.Sqrt(float64(n+1)) * mu1
		if 4.4/mu-mu/2 <= 11 && bignorm.GDPDelta(mu, 4.4).Cmp(limit) > 0 {
			return n
		}
		n++
	}
}

// muStarBig is the largest μ with δ_μ(ε) ≤ δ, by bisection on the
// big-float profile (independent of accounting.MuForTarget).
func muStarBig(eps, delta float64) float64 {
	limit := big.NewFloat(delta)
	lo, hi := 0.01, 4.0
	for range 100 {
		if mid := (lo + hi) / 2; bignorm.GDPDelta(mid, eps).Cmp(limit) <= 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// On a (4.4, 1e-5) dataset: a gdp dataset releases exactly the number of
// private_count(eps=1, delta=1e-5) that exact GDP allows for releases of
// its calibrated μ*(1, 1e-5) (14, std 3.731), a zcdp dataset its 14 of
// std 4.045; and an analyst who wants std 4.045 on the gdp dataset asks
// for eps=0.915 per call (μ*(0.915, 1e-5) = 0.2472 = √(2ρ*(1, 1e-5))) and
// gets the exact-GDP count of those, 16.
func TestGaussianCountReleasesGDP(t *testing.T) {
	for _, c := range []struct {
		mode      accounting.Mode
		eps       float64
		mu1       float64 // each release's μ, independently
		std       string
		wantCount int
	}{
		{accounting.ModeZCDP, 1, 0, "std 4.045", 14},
		{accounting.ModeGDP, 1, muStarBig(1, 1e-5), "std 3.731", 0},
		{accounting.ModeGDP, 0.915, muStarBig(0.915, 1e-5), "std 4.045", 16},
	} {
		n, noise := countReleases(t, c.mode, c.eps)
		want := c.wantCount
		if c.mu1 > 0 {
			exact := exactCountBig(c.mu1)
			if want != 0 && exact != want {
				t.Errorf("exact GDP allows %d releases of μ=%.6g, the documented figure is %d", exact, c.mu1, want)
			}
			want = exact
		}
		t.Logf("%s dataset (4.4, 1e-5), private_count(eps=%v, delta=1e-5): %d releases, %s", c.mode, c.eps, n, noise)
		if n != want || !strings.Contains(noise, c.std) {
			t.Errorf("%s, eps=%v: %d releases with noise %q, want %d with %s", c.mode, c.eps, n, noise, want, c.std)
		}
	}
}

// private_pca with gauss, npm, auto and adaptive runs on a gdp dataset,
// calibrated to and charged μ*(ε, δ) (checked independently); on a zcdp
// dataset the same calls charge what they always did.
func TestPCAOnGDPDataset(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("a,b,c,d\n")
	for i := range 40 {
		fmt.Fprintf(&csv, "%v,%v,%v,%v\n", 0.5*float64(i%7)/7, 0.1*float64(i%3), -0.2*float64(i%5)/5, 0.05)
	}
	mu := muStarBig(1, 1e-6)
	for _, mode := range []accounting.Mode{accounting.ModeGDP, accounting.ModeZCDP} {
		for _, method := range []string{"auto", "gauss", "npm", "adaptive"} {
			env, ref, st := gdpTestEnv(t, mode, accounting.Budget{Eps: 10, Delta: 1e-5}, csv.String())
			vals := map[string]any{"eps": 1.0, "delta": 1e-6, "k": 1, "method": method, "iters": 0}
			if method == "adaptive" {
				vals["iters"] = 5
			}
			rel, err := env.Execute(context.Background(), Call{Func: "private_pca", Dataset: ref, Args: mustArgs("private_pca", vals)}, nil)
			if err != nil {
				t.Fatalf("%s dataset, %s: %v", mode, method, err)
			}
			cost := rel.Receipt.Cost
			switch mode {
			case accounting.ModeGDP:
				if cost.Kind != accounting.GDP || math.Abs(cost.Mu/mu-1) > 1e-9 || !strings.Contains(rel.Receipt.Note, "exact GDP") {
					t.Errorf("gdp dataset, %s: charged %v (note %q), want GDP μ* = %.10g", method, cost, rel.Receipt.Note, mu)
				}
			default:
				want := accounting.GaussianZcdpFor(1, 1e-6)
				if method == "adaptive" {
					want = accounting.ZcdpFor(1, 1e-6)
				}
				if cost.Kind != want.Kind || cost.Rho != want.Rho || cost.Gaussian != want.Gaussian {
					t.Errorf("zcdp dataset, %s: charged %v, want %v", method, cost, want)
				}
			}
			if err := st.Verify(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
