package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// lowRankPlusNoise returns A = U diag(spikes) Uᵀ + W with Haar U (d×k) and
// W a symmetric matrix of N(0, 1) entries, and U.
func lowRankPlusNoise(rng *rand.Rand, d int, spikes []float64) (*mat.SymDense, *mat.Dense) {
	u := randomOrtho(rng, d, len(spikes))
	a := symFromBasis(u, spikes)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a.SetSym(i, j, a.At(i, j)+rng.NormFloat64())
		}
	}
	return a, u
}

// spectralNorm returns ‖m‖₂, the largest singular value (mat.Norm(m, 2)
// is the Frobenius norm).
func spectralNorm(t *testing.T, m mat.Matrix) float64 {
	var svd mat.SVD
	if !svd.Factorize(m, mat.SVDNone) {
		t.Fatal("SVD failed")
	}
	return svd.Values(nil)[0]
}

// Corollary 4.3: ‖A − B‖ ≤ σ_{k+1} + (a noise term falling in ε), so on a
// low-rank-plus-noise matrix the error falls with ε towards the noise-free
// error of the same run (test knob), which is itself ≤ σ_{k+1}.
//
// Measured (9 seeds, d = 100, k = 2, L = 10, δ = 1e-6, spikes (3000, 2000)
// plus a symmetric N(0, 1) matrix, σ_{k+1} ≈ 19.3): median ‖A−B‖ 607,
// 173, 49.6, 19.4 at ε = 0.25, 1, 4, 16; noise-free 18.8.
func TestLowRankErrorFallsWithEps(t *testing.T) {
	const d, k, L, seeds = 100, 2, 10, 9
	epss := []float64{0.25, 1, 4, 16}
	meds := make([]float64, len(epss)+1) // last: noise-free
	var sigmaNext []float64
	for e := range meds {
		var errs []float64
		for seed := uint64(1); seed <= seeds; seed++ {
			rng := rand.New(rand.NewPCG(seed, 21))
			a, _ := lowRankPlusNoise(rng, d, []float64{3000, 2000})
			opt := EntryOptions{K: k, Iters: L, Eps: 1, Delta: 1e-6, Bound: 1e4, Noise: noise.NewSeeded(seed)}
			if e < len(epss) {
				opt.Eps = epss[e]
			} else {
				opt.knob = &testKnob{noiseScale: 0}
			}
			res, err := LowRank(context.Background(), a, opt)
			if err != nil {
				t.Fatal(err)
			}
			if r, c := res.LowRank.Dims(); r != d || c != d || res.P != 2*k {
				t.Fatalf("B is %d×%d with p=%d, want %d×%d and p=2k", r, c, res.P, d, d)
			}
			var diff mat.Dense
			diff.Sub(a, res.LowRank)
			errs = append(errs, spectralNorm(t, &diff))
			if e == 0 {
				var eig mat.EigenSym
				eig.Factorize(a, false)
				v := eig.Values(nil)
				abs := make([]float64, d)
				for i, x := range v {
					abs[i] = math.Abs(x)
				}
				sigmaNext = append(sigmaNext, nthLargest(abs, k+1))
			}
		}
		meds[e] = median(errs)
	}
	sk1 := median(sigmaNext)
	free := meds[len(epss)]
	t.Logf("median ‖A−B‖ at ε=%v, then noise-free: %.4g (σ_{k+1} ≈ %.4g)", epss, meds, sk1)
	for i := 1; i < len(meds); i++ {
		if !(meds[i] < meds[i-1]) {
			t.Errorf("median ‖A−B‖ did not fall from step %d (%.4g) to %d (%.4g)", i-1, meds[i-1], i, meds[i])
		}
	}
	if free > sk1 {
		t.Errorf("noise-free median ‖A−B‖ = %.4g exceeds σ_{k+1} = %.4g", free, sk1)
	}
	// The excess over the noise-free error shrinks by ≥ 100× from ε = 0.25
	// to 16 (measured: 589 → 0.6), and at ε = 16 the bound σ_{k+1} + noise
	// term is nearly attained.
	if ex0, ex1 := meds[0]-free, meds[len(epss)-1]-free; ex0 < 100*ex1 {
		t.Errorf("noise excess of ‖A−B‖ fell only from %.4g to %.4g over ε ∈ [0.25, 16]", ex0, ex1)
	}
	if last := meds[len(epss)-1]; last > 1.5*sk1 {
		t.Errorf("at ε = 16 median ‖A−B‖ = %.4g, want ≤ 1.5·σ_{k+1} = %.4g", last, 1.5*sk1)
	}
}

func nthLargest(xs []float64, n int) float64 {
	s := append([]float64(nil), xs...)
	for i := 0; i < n; i++ {
		for j := i + 1; j < len(s); j++ {
			if s[j] > s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[n-1]
}

// The rank-k basis (spec CHOICE) recovers the planted subspace, and with
// the noise removed B = X_L X_LᵀA is the projection of A on span X_L.
func TestLowRankBasis(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const d, k = 60, 2
	a, u := lowRankPlusNoise(rng, d, []float64{500, 300})
	opt := EntryOptions{K: k, Iters: 20, Eps: 1, Delta: 1e-6, Bound: 1e3, Noise: noise.NewSeeded(2), knob: &testKnob{noiseScale: 0}}
	res, err := LowRank(context.Background(), a, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := res.Components.Dims(); r != d || c != k {
		t.Fatalf("components %d×%d, want %d×%d", r, c, d, k)
	}
	var g mat.Dense
	g.Mul(res.Components.T(), res.Components)
	if !mat.EqualApprox(&g, identity(k), 1e-10) {
		t.Errorf("components are not orthonormal")
	}
	if e := SinThetaSq(u, res.Components); e > 1e-3 {
		t.Errorf("zero-noise rank-k basis: sin²θ = %g to the planted subspace, want ≤ 1e-3", e)
	}
	if !(res.Values[0] >= res.Values[1] && res.Values[1] > 250) {
		t.Errorf("values %v: want decreasing and near the planted (500, 300)", res.Values)
	}
	var proj, want mat.Dense
	proj.Mul(res.Basis, res.Basis.T())
	want.Mul(&proj, a)
	if !mat.EqualApprox(res.LowRank, &want, 1e-9) {
		t.Errorf("zero-noise B ≠ X_L X_Lᵀ A")
	}
}
