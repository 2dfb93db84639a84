package federated

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Independent references for the tests: the privacy conversions written
// from their formulas (not through mechanisms/accounting), and the
// sensitivities measured on the worst-case neighbour pair.

// refGDPDelta is δ(ε) of μ-GDP (Dong, Roth, Su 2022, Cor. 2.13; spec
// federated.md §0 (a)): Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2).
func refGDPDelta(mu, eps float64) float64 {
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

// refMuForTarget is the μ with refGDPDelta(μ, ε) = δ, by bisection (δ(ε)
// increases with μ).
func refMuForTarget(eps, delta float64) float64 {
	lo, hi := 1e-6, 100.0
	for range 200 {
		mid := (lo + hi) / 2
		if refGDPDelta(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// refZCDPEps is the ε at δ of a ρ-zCDP mechanism by the conversion of
// Canonne, Kamath and Steinke (2020, Prop. 12 on the Rényi curve αρ):
// ε = min over α > 1 of αρ + (ln(1/δ) + α·ln(1 − 1/α) − ln(α − 1))/(α − 1),
// derived from δ = exp((α−1)(αρ − ε))·(1 − 1/α)^α/(α − 1). Minimised over
// u = ln(α − 1) by a scan and a golden-section refinement.
func refZCDPEps(rho, delta float64) float64 {
	f := func(u float64) float64 {
		a := math.Exp(u) + 1
		return a*rho + (math.Log(1/delta)+a*math.Log(1-1/a)-math.Log(a-1))/(a-1)
	}
	best, bu := math.Inf(1), 0.0
	for u := -20.0; u <= 30; u += 0.05 {
		if v := f(u); v < best {
			best, bu = v, u
		}
	}
	lo, hi := bu-0.05, bu+0.05
	g := (math.Sqrt(5) - 1) / 2
	for range 200 {
		m1, m2 := hi-g*(hi-lo), lo+g*(hi-lo)
		if f(m1) < f(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	return math.Min(best, f((lo+hi)/2))
}

// worstPair returns the noise-free replies of two replace-one neighbours
// to req: one provider holding rows r₀ and e₁, the other r₀ and e₂ (e₁
// replaced by e₂, the pair that attains every sensitivity of §1.4: their
// second moments differ by e₁e₁ᵀ − e₂e₂ᵀ, of Frobenius norm √2).
func worstPair(t *testing.T, d int, req PCARequest) (a, b []float64) {
	t.Helper()
	r0 := make([]float64, d)
	for j := range r0 {
		r0[j] = 0.3 / math.Sqrt(float64(d))
	}
	mk := func(j int) []float64 {
		x := mat.NewDense(2, d, nil)
		x.SetRow(0, r0)
		x.Set(1, j, 1)
		p, err := NewPCAProvider(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := p.Answer(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Value.RawMatrix().Data
	}
	return mk(0), mk(1)
}

// worstSensitivities measures the ℓ2 change of each statistic between the
// worst-case neighbours: the diagonal, the upper triangle of the block on
// a support holding coordinates 0 and 1, and the product with Q = [e₁ e₂ …]
// (k columns).
func worstSensitivities(t *testing.T, d, k, s int) (diag, block, step float64) {
	t.Helper()
	a, b := worstPair(t, d, PCARequest{Step: StepDiag})
	diag = floats.Distance(a, b, 2)
	sup := make([]int, s)
	for i := range sup {
		sup[i] = i
	}
	a, b = worstPair(t, d, PCARequest{Step: StepBlock, Support: sup})
	for i := range s { // the reply mirrors the upper triangle: count it once
		for j := range i {
			a[i*s+j], b[i*s+j] = 0, 0
		}
	}
	block = floats.Distance(a, b, 2)
	q := mat.NewDense(d, k, nil)
	for j := range k {
		q.Set(j, j, 1)
	}
	a, b = worstPair(t, d, PCARequest{Step: StepProduct, Q: q})
	step = floats.Distance(a, b, 2)
	return diag, block, step
}

// The references agree with closed forms and known values, so that a
// test relying on them can fail only for the code under test.
func TestReferences(t *testing.T) {
	// The spec's GDP column (federated.md §1.4): σ = 2√T/μ* = 23.6 at
	// ε = 1, δ = 1e-5, T = 10.
	if s := 2 * math.Sqrt(10) / refMuForTarget(1, 1e-5); math.Abs(s-23.6) > 0.05 {
		t.Errorf("2√T/μ* = %.4g, spec 23.6", s)
	}
	// The CKS bound is below the classic ρ + 2√(ρ ln(1/δ)) and above ρ.
	for _, rho := range []float64{1e-4, 0.02, 1, 30} {
		classic := rho + 2*math.Sqrt(rho*math.Log(1e6))
		if e := refZCDPEps(rho, 1e-6); !(e < classic && e > rho) {
			t.Errorf("ρ=%v: CKS ε = %v, classic %v", rho, e, classic)
		}
	}
	// Worst-case sensitivities: √2 for the diagonal and the block, and
	// min(√2, √k) for the product.
	for _, k := range []int{1, 2, 3} {
		diag, block, step := worstSensitivities(t, 5, k, 3)
		if math.Abs(diag-math.Sqrt2) > 1e-12 || math.Abs(block-math.Sqrt2) > 1e-12 || math.Abs(step-math.Min(math.Sqrt2, math.Sqrt(float64(k)))) > 1e-12 {
			t.Errorf("k=%d: measured sensitivities %v, %v, %v", k, diag, block, step)
		}
	}
}
