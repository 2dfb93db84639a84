package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// The entry-level PCA workload (power_methods.md §2, §5 check 7): the
// private power method of Hardt–Price Figure 3 on a public synthetic
// spiked symmetric matrix whose entries lie in [−1, 1], under the DSL's
// matrix-dataset relation (one entry and its mirror replaced within the
// bound, so Change = 2). Methods: "gaussian" (ppm-entry, zCDP), "laplace"
// (the pure-ε variant, Cor. 4.7) and "nonprivate" (the same subspace
// iteration from the same kind of start, with no noise).
func init() {
	Register(Workload{
		Name: "ppm-entry",
		Summary: "entry-level PCA on a spiked symmetric matrix with entries in [-1, 1] (Haar eigenvectors, λ = 0.25d, 0.15d, symmetric noise): " +
			"ppm-entry gaussian vs laplace (pure ε) vs nonprivate, k=2, p=2k; error ‖sinΘ‖²_F to the matrix's own top-k eigenvectors",
		Run: runPPMEntry,
	})
}

// ppmEntryBound is the public entry bound of the recipe.
const ppmEntryBound = 1.0

// spikedSymmetric returns A = clip(Σ λ_i u_i u_iᵀ + W, ±1) with Haar u_i
// (incoherent, check 7's regime) and W symmetric with N(0, 0.05²)
// entries, and the top-k eigenvectors of A itself (the truth the error is
// measured against: clipping changes the estimand, not the metric).
func spikedSymmetric(seed uint64, d, k int) (*mat.SymDense, *mat.Dense, error) {
	r := rand.New(rand.NewPCG(seed, 0x70706d))
	lambdas := []float64{0.25 * float64(d), 0.15 * float64(d)}
	for len(lambdas) < k {
		lambdas = append(lambdas, lambdas[len(lambdas)-1]*0.6)
	}
	g := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	a := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v := 0.05 * r.NormFloat64()
			for l := range k {
				v += lambdas[l] * q.At(i, l) * q.At(j, l)
			}
			a.SetSym(i, j, math.Max(-ppmEntryBound, math.Min(ppmEntryBound, v)))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(a, true) {
		return nil, nil, fmt.Errorf("ppm-entry: no eigendecomposition of the recipe's matrix")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	truth := mat.DenseCopyOf(vecs.Slice(0, d, d-k, d))
	return a, truth, nil
}

// subspaceIteration is the non-private baseline: L steps of X ← QR(A·X)
// from a seeded Gaussian start with p columns, then the top k left
// singular vectors of the last product (as PPM-entry reports them).
func subspaceIteration(a *mat.SymDense, k, p, L int, seed uint64) *mat.Dense {
	d := a.SymmetricDim()
	r := rand.New(rand.NewPCG(seed, 0x6e6f6e))
	x := mat.NewDense(d, p, nil)
	for i := range d {
		for j := range p {
			x.Set(i, j, r.NormFloat64())
		}
	}
	var y mat.Dense
	for range L {
		y.Mul(a, x)
		var qr mat.QR
		qr.Factorize(&y)
		var q mat.Dense
		qr.QTo(&q)
		x = mat.DenseCopyOf(q.Slice(0, d, 0, p))
	}
	var svd mat.SVD
	svd.Factorize(&y, mat.SVDThin)
	var u mat.Dense
	svd.UTo(&u)
	return mat.DenseCopyOf(u.Slice(0, d, 0, k))
}

func runPPMEntry(ctx context.Context, cfg Config) ([]Row, error) {
	// The spike grows with d (λ = 0.25d) while the noise of an incoherent
	// run does not (its scale follows ‖X‖_∞ ≈ √(ln d/d)): entry-level
	// privacy needs large matrices, and d = 1000 is where ε = 4 begins to
	// recover the subspace.
	d := orDefault(cfg.D, pick(cfg.Quick, 400, 1000))
	k := orDefault(cfg.K, 2)
	seeds := orDefault(cfg.Seeds, pick(cfg.Quick, 3, 9))
	delta := deltaOf(cfg)
	if 2*k > d {
		return nil, fmt.Errorf("ppm-entry: p = 2k = %d exceeds d = %d", 2*k, d)
	}
	// The recipe's public relative gap at k: λ_k against the bulk.
	const gap = 0.9
	var rows []Row
	for s := 0; s < seeds; s++ {
		a, truth, err := spikedSymmetric(uint64(s), d, k)
		if err != nil {
			return nil, err
		}
		pl, err := pca.PlanPPMEntry(pca.EntryOptions{K: k, Oversample: k, Gap: gap, Eps: 1, Delta: delta, Bound: ppmEntryBound, Change: 2 * ppmEntryBound}, d)
		if err != nil {
			return nil, err
		}
		if cfg.WantMethod("nonprivate") {
			start := time.Now()
			comps := subspaceIteration(a, k, 2*k, pl.Iters, NoiseSeed("ppm-entry", s, "nonprivate", d, k))
			rows = append(rows, Row{Workload: "ppm-entry", Method: "nonprivate", N: d, D: d, K: k, Delta: delta, Seed: uint64(s),
				Error: pca.SinThetaSq(truth, comps), Seconds: time.Since(start).Seconds(), Extra: map[string]any{"iters": pl.Iters, "p": 2 * k}})
		}
		for _, eps := range epsGrid(cfg, pickF(cfg.Quick, []float64{16}, []float64{1, 4, 16, 64})) {
			for _, method := range []string{"gaussian", "laplace"} {
				if !cfg.WantMethod(method) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				opt := pca.EntryOptions{K: k, Oversample: k, Gap: gap, Eps: eps, Delta: delta, Bound: ppmEntryBound, Change: 2 * ppmEntryBound,
					Noise: noise.NewSeeded(NoiseSeed("ppm-entry", s, method, eps, d, k))}
				if method == "laplace" {
					opt.Delta, opt.Laplace = 0, true
				}
				start := time.Now()
				res, err := pca.PPMEntry(ctx, a, opt)
				secs := time.Since(start).Seconds()
				if err != nil {
					return nil, fmt.Errorf("ppm-entry %s d=%d ε=%v seed %d: %w", method, d, eps, s, err)
				}
				rows = append(rows, Row{Workload: "ppm-entry", Method: method, N: d, D: d, K: k, Eps: eps, Delta: delta, Seed: uint64(s),
					Error: pca.SinThetaSq(truth, res.Components), Seconds: secs,
					Extra: map[string]any{"iters": res.Iters, "p": res.P, "calibration": res.Calibration, "noise_multiplier": res.NoiseMultiplier}})
			}
		}
	}
	return rows, nil
}
