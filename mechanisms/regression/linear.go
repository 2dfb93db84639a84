package regression

// Linear regression by AdaSSP: Yu-Xiang Wang, "Revisiting differentially
// private linear regression: optimal and adaptive prediction & estimation"
// (UAI 2018), Algorithm 2 (adaptive sufficient statistics perturbation),
// calibrated in zCDP (Bun and Steinke 2016) with the discrete Gaussian of
// mechanisms/noise. Spec: docs/mechanisms.md, "Private linear and logistic
// regression".
//
// Every row is made public-bounded first, by a public affine map per
// column: each feature clamped to its column's public bounds [lo_j, hi_j]
// and mapped to [−1, 1] by x̂_j = (x_j − c_j)/h_j (c_j the midpoint, h_j
// the half-width), prefixed by the constant 1 of the intercept,
// a = (1, x̂) with ‖a‖² ≤ B² = 1 + d; the target clamped and mapped the
// same way, |ŷ| ≤ 1. The fit runs on these unit-scaled rows and its
// coefficients are mapped back exactly (unscale): Coef_j = h_y·θ_j/h_j,
// Intercept = c_y + h_y·(θ_0 − Σ θ_j c_j/h_j). The map uses only the
// public bounds, so the sensitivities are those of unit-bounded data,
// whatever the bounds' widths: a column in [0, 70] no longer dominates B²
// (and with it the noise on AᵀA and the adaptive ridge) against 0/1
// columns. One pass sums AᵀA (its upper triangle) and Aᵀŷ in rowpass's
// fixed pairwise order. Three Gaussian releases, ρ/3 each, with ℓ2
// sensitivities
//
//	λ_min(AᵀA)   B²              (Weyl: a rank-one PSD change of norm ≤ B²)
//	AᵀA          B² (add-remove), √2·B² (replace-one: ‖aaᵀ − bbᵀ‖_F² ≤ 2B⁴)
//	Aᵀŷ          B (add-remove), 2·B (replace-one)
//
// each plus the pairwise sums' rounding excess (and for λ_min the
// eigensolver's backward error, eigExcess). Then, as Wang's Algorithm 2:
//
//	λ̃_min = max(λ_min + σ₁Z − σ₁·√(2 log(1/ξ)), 0)   a lower bound w.p. 1 − ξ
//	λ     = max(0, σ₂·√(q·log(2q²/ξ)) − λ̃_min)       the adaptive ridge
//	θ     = (AᵀA + E + λJ)⁻¹ (Aᵀŷ + e),  J = I without its (0, 0) entry
//
// with q = d + 1 and ξ = ridgeFailure. Unlike Wang's λI the ridge leaves
// the intercept's coordinate alone: its diagonal entry is the row count n,
// which needs no ridge, and a ridged intercept is pulled towards the
// target bounds' midpoint (on the RAND health data, whose mean visits are
// 2.9 against a midpoint of 25, that cost up to 0.05 of test R²); which
// coordinates get λ is a public rule applied to released values, so it
// is post-processing and changes no privacy bound. Everything after the releases is
// post-processing; the inverse floors the eigenvalues of the noisy,
// ridged matrix at σ₂ (a public rule), so the solve never fails.
//
// With r2 a fourth release, ŷᵀŷ (sensitivity 1, yyShare of ρ, the
// three above sharing the rest in thirds), gives the fit's R², residual
// std and coefficient intervals by post-processing (fit.go).

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// ridgeFailure is ξ, the probability that the private lower bound on
// λ_min(AᵀA) or the noise's spectral bound fails (Wang's ρ); a failure
// costs accuracy only, never privacy.
const ridgeFailure = 1e-6

// linearShare is each AdaSSP release's share of the zCDP budget left to
// them (Wang: ε/3 each).
const linearShare = 1.0 / 3

// yyShare is the share of ρ that the target's sum of squares ŷᵀŷ gets
// when the fit also releases its R², residual scale and coefficient
// intervals (r2); the three AdaSSP releases split the rest in thirds.
const yyShare = 0.2

// eigExcess bounds, for a symmetric q×q matrix of spectral norm at most
// MaxRows·B², the error of its computed smallest eigenvalue: LAPACK's
// symmetric eigensolvers are backward stable with error p(q)·u·‖A‖₂ for a
// modest polynomial p; we charge p(q) = 64·q², far above its usual
// estimates, twice (one per data set of a neighbouring pair).
func eigExcess(q int, b2 float64) float64 {
	return 2 * 64 * float64(q*q) * 0x1p-53 * MaxRows * b2 * roundUp
}

// LinearPlan is a planned AdaSSP fit. Every field is public.
type LinearPlan struct {
	X         []Bounds
	Y         Bounds
	Eps       float64
	Delta     float64
	Neighbour accounting.Neighbour
	// B2 is the squared norm bound of an augmented unit-scaled row, 1 + d.
	B2 float64
	// Min, XX and XY are the three Gaussian releases: λ_min(AᵀA), the
	// upper triangle of AᵀA and Aᵀŷ.
	Min, XX, XY Gaussian
	// R2 is set when the fit also releases ŷᵀŷ (YY) for its R², residual
	// scale and coefficient intervals; YY is zero otherwise.
	R2 bool
	YY Gaussian
	// RidgeScale is σ₂·√(q·log(2q²/ξ)), the high-probability spectral
	// bound of the noise E that the adaptive ridge must dominate.
	RidgeScale float64
	// Event is the exact cost.
	Event accounting.Event
}

// PlanLinear plans an AdaSSP fit of a target with public bounds y on
// features with public bounds x, at (ε, δ) under the neighbouring
// relation nb; gdp calibrates to the exact GDP μ* (the gdp accountant)
// instead of ρ*(ε, δ); r2 adds the release of ŷᵀŷ (a share yyShare of
// ρ) from which the fit's R², residual scale and intervals follow. It
// reads no data; its errors have fixed texts.
func PlanLinear(x []Bounds, y Bounds, eps, delta float64, nb accounting.Neighbour, gdp, r2 bool) (*LinearPlan, error) {
	b2, err := checkFeatures(x)
	if err != nil {
		return nil, err
	}
	if err := y.check(); err != nil {
		return nil, err
	}
	rho, ev, err := target(eps, delta, gdp)
	if err != nil {
		return nil, err
	}
	q := len(x) + 1
	b := math.Sqrt(b2) * roundUp
	p := &LinearPlan{X: append([]Bounds(nil), x...), Y: y, Eps: eps, Delta: delta, Neighbour: nb, B2: b2, Event: ev}
	// The target is unit-scaled (|ŷ| ≤ 1): a row moves Aᵀŷ by ‖a‖·|ŷ| ≤ B
	// when added or removed, by ‖a·ŷ − a′·ŷ′‖ ≤ 2B when replaced.
	sensXX, sensXY := b2, b
	if nb == accounting.ReplaceOne {
		sensXX, sensXY = math.Sqrt2*b2, 2*b
	}
	share := rho * linearShare
	if r2 {
		// ŷ² ∈ [0, 1]: adding, removing or replacing a row moves ŷᵀŷ by
		// at most 1 under either relation.
		share = rho * (1 - yyShare) * linearShare
		p.R2 = true
		p.YY = Gaussian{Sens: up((1 + sumExcess(1)) * roundUp), Rho: rho * yyShare, Coord: 1}
		if err := p.YY.calibrate(); err != nil {
			return nil, err
		}
	}
	p.Min = Gaussian{Sens: up((b2 + sumExcess(b2) + eigExcess(q, b2)) * roundUp), Rho: share, Coord: 1}
	p.XX = Gaussian{Sens: up((sensXX + sumExcess(b2)) * roundUp), Rho: share, Coord: q * (q + 1) / 2}
	p.XY = Gaussian{Sens: up((sensXY*roundUp + sumExcess(b)) * roundUp), Rho: share, Coord: q}
	for _, g := range []*Gaussian{&p.Min, &p.XX, &p.XY} {
		if err := g.calibrate(); err != nil {
			return nil, err
		}
	}
	p.RidgeScale = p.XX.Sigma * math.Sqrt(float64(q)*math.Log(2*float64(q*q)/ridgeFailure))
	return p, nil
}

// Width is the number of columns Run reads: the features, then the target.
func (p *LinearPlan) Width() int { return len(p.X) + 1 }

// Stats are the exact sufficient statistics of a linear fit over the
// augmented unit-scaled rows: AᵀA (q×q, symmetric), Aᵀŷ and ŷᵀŷ.
type Stats struct {
	XX *mat.SymDense
	XY []float64
	YY float64
}

// LinearStats computes the statistics one pass over src (the features,
// then the target, Width columns) sums in rowpass's fixed pairwise order:
// the terms of the sums whose rounding the plan charges.
func (p *LinearPlan) LinearStats(ctx context.Context, src rows.Source) (*Stats, error) {
	d := len(p.X)
	if src.Dim() != d+1 {
		return nil, ErrDim
	}
	q := d + 1
	tri := q * (q + 1) / 2
	sum, err := rowpass.SumVecScan(ctx, rowpass.Limit(src), tri+q+1, rowpass.Options{}, false, false, func(dst []float64, b *rows.Batch) {
		a := make([]float64, q)
		a[0] = 1
		for i := range b.N {
			row := b.Row(i, d+1)
			for j, bd := range p.X {
				a[j+1] = bd.unit(row[j])
			}
			yc := p.Y.unit(row[d])
			k := 0
			for r := range q {
				for c := r; c < q; c++ {
					dst[k] += a[r] * a[c]
					k++
				}
			}
			for r := range q {
				dst[tri+r] += a[r] * yc
			}
			dst[tri+q] += yc * yc
		}
	})
	if err != nil {
		return nil, err
	}
	xx := mat.NewSymDense(q, nil)
	k := 0
	for r := range q {
		for c := r; c < q; c++ {
			xx.SetSym(r, c, sum[k])
			k++
		}
	}
	return &Stats{XX: xx, XY: sum[tri : tri+q], YY: sum[tri+q]}, nil
}

// Run fits the model on src (the features, then the target). It fails
// only with the source's or ctx's error.
func (p *LinearPlan) Run(ctx context.Context, src rows.Source, s *noise.Sampler) (*Model, error) {
	st, err := p.LinearStats(ctx, src)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return p.release(st, s), nil
}

// release adds the three noises to the exact statistics and solves.
func (p *LinearPlan) release(st *Stats, s *noise.Sampler) *Model {
	q := len(p.X) + 1
	lmin := []float64{smallestEigen(st.XX)}
	s.AddGaussian(lmin, p.Min.Sigma)
	low := max(lmin[0]-p.Min.Sigma*math.Sqrt(2*math.Log(1/ridgeFailure)), 0)
	lambda := max(0, p.RidgeScale-low)

	xx := mat.NewDense(q, q, nil)
	for r := range q {
		for c := r; c < q; c++ {
			xx.Set(r, c, st.XX.At(r, c))
		}
	}
	s.AddSymmetricGaussian(xx, p.XX.Sigma)
	xy := append([]float64(nil), st.XY...)
	s.AddGaussian(xy, p.XY.Sigma)

	m := mat.NewSymDense(q, nil)
	for r := range q {
		for c := r; c < q; c++ {
			v := xx.At(r, c)
			if r == c && r > 0 { // J: no ridge on the intercept
				v += lambda
			}
			m.SetSym(r, c, v)
		}
	}
	theta := solveFloored(m, xy, p.XX.Sigma)
	model := unscale(theta, p.X, p.Y.centre(), p.Y.half())
	model.Ridge = lambda
	if p.R2 {
		yy := []float64{st.YY}
		s.AddGaussian(yy, p.YY.Sigma)
		model.Fit = p.fit(xx, xy, yy[0], lambda, theta)
	}
	return model
}

// smallestEigen is λ_min of a symmetric matrix (0 if the solver fails,
// which it does not on finite input).
func smallestEigen(a *mat.SymDense) float64 {
	var es mat.EigenSym
	if !es.Factorize(a, false) {
		return 0
	}
	return es.Values(nil)[0]
}

// solveFloored returns M⁻¹v for the symmetric M with its eigenvalues
// raised to at least floor > 0: a public post-processing rule for a noisy
// matrix that may be indefinite. A solver failure gives θ = 0.
func solveFloored(m *mat.SymDense, v []float64, floor float64) []float64 {
	q := len(v)
	theta := make([]float64, q)
	var es mat.EigenSym
	if !es.Factorize(m, true) {
		return theta
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	for k, lam := range vals {
		lam = max(lam, floor)
		var dot float64
		for i := range q {
			dot += vecs.At(i, k) * v[i]
		}
		for i := range q {
			theta[i] += vecs.At(i, k) * dot / lam
		}
	}
	for _, t := range theta {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return make([]float64, q)
		}
	}
	return theta
}
