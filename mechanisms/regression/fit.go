package regression

// The linear fit's quality and coefficient intervals, all post-processing
// of AdaSSP's noisy releases when the plan also released ŷᵀŷ (r2).
//
// R² and the residual scale: with the released AᵀA + E, Aᵀŷ + e and
// ŷᵀŷ + e′ and the fit θ (unit-scaled coordinates), the residual sum of
// squares is RSS = ŷᵀŷ − 2θᵀAᵀŷ + θᵀAᵀAθ, the row count n is AᵀA's
// (0, 0) entry, the total sum of squares TSS = ŷᵀŷ − (Σŷ)²/n with Σŷ
// Aᵀŷ's first entry; R² = 1 − RSS/TSS (unchanged by the target's affine
// map) and the residual std h_y·√(RSS/(n − q)) (mapped back to the
// target's units).
//
// Intervals: the parametric bootstrap for DP of Ferrando, Wang and
// Sheldon, "Parametric bootstrap for differentially private confidence
// intervals" (AISTATS 2022), for ordinary least squares, adapted to
// AdaSSP with its released ridge λ held fixed. The released statistics
// stand for the truth: the design's AᵀA by the noisy one with its
// eigenvalues floored at 0 (Ĝ), the coefficients by θ̂ and the residual
// variance by the released residual std's square ŝ². Each replicate
// re-draws what is random given the design, at the public scales:
//
//	Aᵀŷ* = Ĝθ̂ + Ĝ^½·ŝ·z + N(0, σ_XY²I),  AᵀA* = Ĝ + E*,  E* symmetric N(0, σ_XX²)
//	θ*   = (AᵀA* + λJ)⁻¹ Aᵀŷ*        (J and the eigenvalue floor σ_XX as the fit's)
//
// with ŝ the residual std in the unit-scaled target's units, and every
// replicate θ* is mapped back to the original scale by the fit's own map
// (Coef_j = h_y·θ_j/h_j, …) before its quantiles are taken, so the
// intervals follow the same public affine map as the estimates; the
// interval of a coefficient is the basic bootstrap interval
// [2θ̂ − q_{1−α/2}, 2θ̂ − q_{α/2}] of its replicates, which carries the
// ridge's shrinkage over to the interval (the percentile interval would
// be centred on a twice-shrunk value). The replicates use a fixed public
// seed: the same release always gives the same intervals.

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// BootstrapReps is the number of bootstrap replicates of an interval.
const BootstrapReps = 1000

// bootstrapSeed is the replicates' fixed, public seed.
const bootstrapSeed = 31

// LinearFit is what a linear fit with r2 released beyond its model:
// every field is a DP output or public.
type LinearFit struct {
	// R2 is the fit's R² on the training rows (clamped to the bounds as
	// the fit saw them); ResidualStd the residuals' std in the target's
	// units, h_y·√(RSS/(n − q)). Either is 0 when the noisy statistics
	// leave it undefined (a total sum of squares ≤ 0, or n ≤ q): no NaN,
	// so that a result always encodes as JSON.
	R2, ResidualStd float64
	// N is the noisy row count (AᵀA's first entry).
	N float64
	// XX (upper triangle, row by row), XY and YY are the released noisy
	// statistics over the unit-scaled rows; Theta the fit in unit-scaled
	// coordinates (intercept first).
	XX, XY []float64
	YY     float64
	Theta  []float64
	// Ridge, SigmaXX and SigmaXY are the ridge λ and the public noise
	// stds of AᵀA and Aᵀŷ. Centres and Scales are the features' public
	// midpoints c_j and half-widths h_j, CentreY and ScaleY the target's:
	// the map x̂ = (x − c)/h of the fit, which Intervals inverts. (A fit
	// stored before the rows were scaled has only centres; it decodes
	// with every scale 1, which is the map it used.)
	Ridge, SigmaXX, SigmaXY float64
	Centres, Scales         []float64
	CentreY, ScaleY         float64
}

// fit computes the LinearFit of the noisy statistics xx (q×q, its upper
// triangle used), xy and yy.
func (p *LinearPlan) fit(xx *mat.Dense, xy []float64, yy, lambda float64, theta []float64) *LinearFit {
	q := len(xy)
	f := &LinearFit{XY: append([]float64(nil), xy...), YY: yy, Theta: append([]float64(nil), theta...),
		Ridge: lambda, SigmaXX: p.XX.Sigma, SigmaXY: p.XY.Sigma, CentreY: p.Y.centre(), ScaleY: p.Y.half()}
	for r := range q {
		for c := r; c < q; c++ {
			f.XX = append(f.XX, xx.At(r, c))
		}
	}
	for _, b := range p.X {
		f.Centres = append(f.Centres, b.centre())
		f.Scales = append(f.Scales, b.half())
	}
	f.quality()
	return f
}

// sym returns the released AᵀA as a symmetric matrix.
func (f *LinearFit) sym() *mat.SymDense {
	q := len(f.XY)
	m := mat.NewSymDense(q, nil)
	k := 0
	for r := range q {
		for c := r; c < q; c++ {
			m.SetSym(r, c, f.XX[k])
			k++
		}
	}
	return m
}

// quality sets N, R2 and ResidualStd from the released statistics.
func (f *LinearFit) quality() {
	q := len(f.XY)
	g := f.sym()
	f.N = g.At(0, 0)
	th := mat.NewVecDense(q, f.Theta)
	var gth mat.VecDense
	gth.MulVec(g, th)
	rss := f.YY - 2*mat.Dot(th, mat.NewVecDense(q, f.XY)) + mat.Dot(th, &gth)
	rss = max(rss, 0)
	f.R2, f.ResidualStd = 0, 0
	if f.N > float64(q) {
		f.ResidualStd = f.ScaleY * math.Sqrt(rss/(f.N-float64(q)))
		if tss := f.YY - f.XY[0]*f.XY[0]/f.N; tss > 0 {
			f.R2 = min(1-rss/tss, 1)
		}
	}
}

// Intervals returns basic parametric-bootstrap intervals at the given
// level (in (0, 1)) for the intercept (index 0) and the coefficients
// (index j + 1 for feature j), on the original scale. At a level outside
// (0, 1) every bound is NaN.
func (f *LinearFit) Intervals(level float64) (lo, hi []float64) {
	q := len(f.XY)
	lo, hi = make([]float64, q), make([]float64, q)
	if !(level > 0 && level < 1) {
		for i := range q {
			lo[i], hi[i] = math.NaN(), math.NaN()
		}
		return lo, hi
	}
	// Ĝ = AᵀA with its eigenvalues floored at 0, and Ĝ^½.
	var es mat.EigenSym
	var vecs mat.Dense
	vals := make([]float64, q)
	if es.Factorize(f.sym(), true) {
		es.Values(vals)
		es.VectorsTo(&vecs)
	} else {
		vecs = *mat.NewDense(q, q, nil)
	}
	g, root := mat.NewDense(q, q, nil), mat.NewDense(q, q, nil)
	for k, v := range vals {
		v = max(v, 0)
		for i := range q {
			for j := range q {
				w := vecs.At(i, k) * vecs.At(j, k)
				g.Set(i, j, g.At(i, j)+w*v)
				root.Set(i, j, root.At(i, j)+w*math.Sqrt(v))
			}
		}
	}
	theta := mat.NewVecDense(q, f.Theta)
	var mean mat.VecDense
	mean.MulVec(g, theta)
	s := noise.NewSeeded(bootstrapSeed)
	reps := make([][]float64, q)
	z := make([]float64, q)
	for range BootstrapReps {
		s.FillStdNormal(z)
		var xy mat.VecDense
		xy.MulVec(root, mat.NewVecDense(q, z))
		xy.ScaleVec(f.ResidualStd/f.ScaleY, &xy)
		xy.AddVec(&xy, &mean)
		v := make([]float64, q)
		for i := range q {
			v[i] = xy.AtVec(i) + f.SigmaXY*s.StdNormal()
		}
		m := mat.NewSymDense(q, nil)
		for r := range q {
			for c := r; c < q; c++ {
				e := g.At(r, c) + f.SigmaXX*s.StdNormal()
				if r == c && r > 0 {
					e += f.Ridge
				}
				m.SetSym(r, c, e)
			}
		}
		th := solveFloored(m, v, f.SigmaXX)
		for i, t := range f.original(th) {
			reps[i] = append(reps[i], t)
		}
	}
	est := f.original(f.Theta)
	a := (1 - level) / 2
	for i, r := range reps {
		slices.Sort(r)
		at := func(p float64) float64 { return r[min(int(p*float64(len(r))), len(r)-1)] }
		lo[i], hi[i] = 2*est[i]-at(1-a), 2*est[i]-at(a)
	}
	return lo, hi
}

// original maps unit-scaled coordinates θ to (intercept, coefficients…)
// on the original scale, as unscale.
func (f *LinearFit) original(theta []float64) []float64 {
	out := make([]float64, len(theta))
	ic := theta[0]
	for j, c := range f.Centres {
		s := theta[j+1] / f.Scales[j]
		out[j+1] = f.ScaleY * s
		ic -= s * c
	}
	out[0] = f.CentreY + f.ScaleY*ic
	return out
}
