package federated

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg/exact"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// answer returns provider p's noise-free reply to req.
func answer(t *testing.T, p *PCAProvider, req PCARequest) []float64 {
	t.Helper()
	rep, err := p.Answer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Value.RawMatrix().Data
}

// TestProviderSumsWithinBudget checks every noised provider statistic
// (Sigma 0) against exact big.Float sums of its reference terms with the
// rounding budgets that roundingExcesses charges.
func TestProviderSumsWithinBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	const n, d, k = 4000, 6, 2
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, rng.NormFloat64()*math.Exp(3*rng.NormFloat64()))
		}
	}
	p, err := NewPCAProvider(x, noise.NewSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	sup := []int{1, 2, 5}
	g := mat.NewDense(d, k, nil)
	for i := range d {
		g.SetRow(i, []float64{rng.NormFloat64(), rng.NormFloat64()})
	}
	q, _ := linalg.Orthonormalize(g, nil)
	diag, block, prod := exact.New(d), exact.New(len(sup)*len(sup)), exact.New(d*k)
	for i := range n {
		a := x.RawRowView(i)
		s := unitScale(a)
		if s == 0 {
			continue
		}
		for j := range d {
			diag.Add(j, s, s, a[j], a[j])
			for c := range k {
				for l := range d {
					prod.Add(j*k+c, s, s, a[j], a[l], q.At(l, c))
				}
			}
		}
		for u, j := range sup {
			for v := u; v < len(sup); v++ {
				block.Add(u*len(sup)+v, s, s, a[j], a[sup[v]])
			}
		}
	}
	blockGot := answer(t, p, PCARequest{Step: StepBlock, Support: sup})
	for u := range sup { // the reply mirrors the upper triangle; compare it only
		for v := range u {
			blockGot[u*len(sup)+v] = 0
		}
	}
	for _, tc := range []struct {
		name string
		got  []float64
		want *exact.Sums
		h    int
	}{
		{"diag", answer(t, p, PCARequest{Step: StepDiag}), diag, linalg.GramRoundings},
		{"block", blockGot, block, linalg.GramRoundings},
		{"product", answer(t, p, PCARequest{Step: StepProduct, Q: q}), prod, linalg.CovTimesRoundings(d)},
	} {
		bad, worst := tc.want.Within(tc.got, rowpass.Gamma(tc.h))
		if bad >= 0 {
			t.Errorf("%s: entry %d exceeds γ_%d times its majorant", tc.name, bad, tc.h)
		}
		t.Logf("%s: largest error/Σ|majorant| = %.3g (γ_%d = %.3g)", tc.name, worst, tc.h, rowpass.Gamma(tc.h))
	}
}

// TestNeighbourRoundingDiag: the worst-case replace-one neighbours (a row
// e₁ replaced by e₂), on which a running sum of Σ x₁² changes by more than
// the exact difference times the old relative slack 1 + 1e-9: 4095 rows e₁
// bring the partial sum to 4095 or 4096 (ulp 2^-41 or 2^-40), and 20000
// rows of square 0.6·2^-40 then round differently. The exact differences
// are √2 for the diagonal and the block (e₁e₁ᵀ − e₂e₂ᵀ) and 1 for the
// product with Q = e₁; the provider's pairwise sums stay within the
// sensitivity each release is charged for, and here within 1 + 1e-9 of
// the exact difference.
func TestNeighbourRoundingDiag(t *testing.T) {
	const m = 20000
	a1 := math.Sqrt(0.6 * 0x1p-40)
	build := func(col int) *mat.Dense {
		x := mat.NewDense(4096+m, 2, nil)
		for i := range 4095 {
			x.Set(i, 0, 1)
		}
		x.Set(4095, col, 1)
		for i := 4096; i < 4096+m; i++ {
			x.Set(i, 0, a1)
		}
		return x
	}
	x0, x1 := build(1), build(0) // e₂ vs e₁
	running := func(x *mat.Dense) []float64 {
		s := make([]float64, 2)
		n, _ := x.Dims()
		for i := range n {
			for j := range s {
				v := x.At(i, j)
				s[j] += v * v
			}
		}
		return s
	}
	if naive := floats.Distance(running(x1), running(x0), 2); naive <= math.Sqrt2*(1+1e-9) {
		t.Fatalf("running sum: neighbour difference %v within √2·(1 + 1e-9): the construction does not exhibit the gap", naive)
	}
	pl, err := PlanPCA(PCAOptions{K: 1, Sparsity: 2, Eps: 1, Delta: 1e-6}, 2)
	if err != nil {
		t.Fatal(err)
	}
	p0, _ := NewPCAProvider(x0, nil)
	p1, _ := NewPCAProvider(x1, nil)
	for _, tc := range []struct {
		name    string
		req     PCARequest
		exact   float64 // ‖Δ‖ of the exact statistics
		charged float64
	}{
		{"diag", PCARequest{Step: StepDiag}, math.Sqrt2, (pl.DiagSensitivity + pl.DiagRoundingExcess) * roundingSlack},
		{"block", PCARequest{Step: StepBlock, Support: []int{0, 1}}, math.Sqrt2, (pl.BlockSensitivity + pl.BlockRoundingExcess) * roundingSlack},
		{"product", PCARequest{Step: StepProduct, Q: mat.NewDense(2, 1, []float64{1, 0})}, 1, (pl.StepSensitivity + pl.StepRoundingExcess) * roundingSlack},
	} {
		a, b := answer(t, p1, tc.req), answer(t, p0, tc.req)
		if tc.name == "block" {
			a[2], b[2] = 0, 0 // the mirrored lower entry: count the triangle once
		}
		diff := floats.Distance(a, b, 2)
		if diff > tc.charged {
			t.Errorf("%s: neighbour difference %v exceeds the charged sensitivity %v", tc.name, diff, tc.charged)
		}
		if diff > tc.exact*(1+1e-9) {
			t.Errorf("%s: neighbour difference %v = exact·(1 + %.3g): the sum is not accumulated pairwise", tc.name, diff, diff/tc.exact-1)
		}
	}
}

// TestRoundingExcessSmall reports the noise increase the rounding charge
// costs at the benchmark shapes (mechanisms/bench dpspca: k = 2, ŝ = 20,
// T = 10, d from 100 to 2000) and keeps it below 0.1%.
func TestRoundingExcessSmall(t *testing.T) {
	for _, d := range []int{100, 200, 500, 1000, 2000} {
		for _, cal := range []Calibration{CalibGDP, CalibPaper} {
			pl, err := PlanPCA(PCAOptions{K: 2, Sparsity: 20, Iters: 10, Eps: 1, Delta: 1e-6, Calibration: cal}, d)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct {
				name         string
				sens, excess float64
			}{
				{"diag", pl.DiagSensitivity, pl.DiagRoundingExcess},
				{"block", pl.BlockSensitivity, pl.BlockRoundingExcess},
				{"step", pl.StepSensitivity, pl.StepRoundingExcess},
			} {
				rel := r.excess / r.sens
				if d == 200 || d == 2000 {
					t.Logf("d=%d %v %s: excess %.3g on sensitivity %.3g: noise +%.3g%%", d, cal, r.name, r.excess, r.sens, 100*rel)
				}
				if !(rel > 0 && rel < 1e-3) {
					t.Errorf("d=%d %v %s: rounding excess %v is %.3g of the sensitivity, want in (0, 1e-3)", d, cal, r.name, r.excess, rel)
				}
			}
		}
	}
	base, err := planPCA(PCAOptions{K: 2, Sparsity: 20, Eps: 1, Delta: 1e-6}, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	if base.DiagRoundingExcess != 0 || base.StepRoundingExcess != 0 {
		t.Error("the non-private baseline reports a rounding excess")
	}
}

func TestNewPCAProviderRefusesMoreThanMaxRows(t *testing.T) {
	// A header-only matrix: NewPCAProvider must refuse it before reading.
	big := &mat.Dense{}
	big.SetRawMatrix(blas64.General{Rows: MaxRows + 1, Cols: 1, Stride: 1, Data: make([]float64, 1)})
	if _, err := NewPCAProvider(big, nil); err == nil {
		t.Error("NewPCAProvider accepted more than MaxRows rows")
	}
}
