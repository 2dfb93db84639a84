// Private mean estimation: Liu, Kong, Jain and Oh (seed 002), Algorithm 5
// (L765–777, from their references [49, 43]); spec dppca.md §6. The unused
// "target error α" input is dropped; line 10's noise (with its /m) is the
// correct one (§10.10).

package dppca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// sensitivitySlack inflates sensitivities so that floating-point rounding
// in the truncated sums cannot exceed the bound the noise is calibrated to.
const sensitivitySlack = 1 + 1e-9

// binLimit keeps the coordinate bin ids of Algorithm 5 inside int64.
const binLimit = 1 << 62

// meanParams are the public parameters of one Algorithm 5 call, except Λ̂.
type meanParams struct {
	hist         histParams // each coordinate histogram
	mult         float64    // Gaussian std per unit of ℓ2 sensitivity
	tailK, tailA float64
	zeta         float64
	excess       float64 // rounding excess per unit of r (meanExcess)
}

// alg5Budget splits an (eps, delta) budget for Algorithm 5: (ε/2, δ/2) for
// the d coordinate histograms together and (ε/2, δ/2) for the Gaussian.
//
// CalibPaper: advanced composition (Lemma B.4, needs ε/2 ≤ 0.9) gives each
// histogram (ε/(4√(2d ln(4/δ))), δ/(4d)); the classical Gaussian
// mechanism (needs ε/2 < 1) has multiplier √(2 ln(2.5/δ))/(ε/2).
//
// CalibAnalytic (beyond the paper): each histogram is (δ_h, ε_h²/2)-
// approximately zCDP (pure ε_h off an event of probability ≤ δ_h/4), so
// with ρ = accounting.RhoForTarget(ε/2, δ/4), ε_h = √(2ρ/d) and
// δ_h = δ/(4d) the d of them are (ε/2, δ/2)-DP; the Gaussian multiplier is
// 1/μ with μ = accounting.MuForTarget(ε/2, δ/2) (exact Gaussian DP).
func alg5Budget(c Calibration, eps, delta float64, d int) (histParams, float64, error) {
	eh, dh := eps/2, delta/2
	df := float64(d)
	switch c {
	case CalibPaper:
		if eh > 0.9 {
			return histParams{}, 0, fmt.Errorf("Algorithm 5 at ε=%g composes its histograms with Lemma B.4, proven for ε/2 ≤ 0.9: lower eps or use CalibAnalytic (beyond the paper)", eps)
		}
		return histParams{eh / (2 * math.Sqrt(2*df*math.Log(2/dh))), dh / (2 * df)},
			math.Sqrt(2*math.Log(1.25/dh)) / eh, nil
	case CalibAnalytic:
		rho := accounting.RhoForTarget(eh, dh/2)
		return histParams{math.Sqrt(2 * rho / df), dh / (2 * df)}, 1 / accounting.MuForTarget(eh, dh), nil
	}
	return histParams{}, 0, fmt.Errorf("invalid calibration %d", int(c))
}

// radii returns τ = 2^{1/4}·K·√Λ̂·ln^a(25), the bin width, and
// r = 3K·√Λ̂·ln^a(m·d/ζ), the truncation radius (Algorithm 5 lines 1, 8).
func (p meanParams) radii(lambda float64, m, d int) (tau, r float64) {
	s := p.tailK * math.Sqrt(lambda)
	tau = math.Pow(2, 0.25) * s * math.Pow(math.Log(25), p.tailA)
	r = 3 * s * math.Pow(math.Log(float64(m)*float64(d)/p.zeta), p.tailA)
	return tau, r
}

// delta2 is the ℓ2 sensitivity the mean of m records is noised for:
// 2r√d/m, plus the rounding excess per unit of r, times the slack.
func (p meanParams) delta2(r float64, m, d int) float64 {
	return (2*r*math.Sqrt(float64(d))/float64(m) + p.excess*r) * sensitivitySlack
}

// checkSigmas verifies, before anything is charged, that the Gaussian std
// of Algorithm 5 is a valid sampler scale for every eigenvalue estimate
// Λ̂ in [lamLo, lamHi] and every number of records m in [1, MaxRows]: the
// std grows with delta2, which grows with Λ̂ (r ∝ √Λ̂) and lies between
// r(1)·excess (the smallest r, times the part that does not shrink with m)
// and r(MaxRows)·(2√d + excess) (the largest r, times the largest factor).
// Its error has a fixed text.
func (p meanParams) checkSigmas(lamLo, lamHi float64, d int) error {
	_, rLo := p.radii(lamLo, 1, d)
	_, rHi := p.radii(lamHi, MaxRows, d)
	lo := p.excess * rLo * sensitivitySlack
	hi := (2*math.Sqrt(float64(d)) + p.excess) * rHi * sensitivitySlack
	for _, v := range []float64{lo, hi} {
		if _, err := noise.GaussianScaleChecked(v, p.mult, d); err != nil || !(v > 0) {
			return fmt.Errorf("Algorithm 5's noise cannot be represented for every eigenvalue estimate in [%g, %g] (tail K, a, lambda min): %w", lamLo, lamHi, noise.ErrScaleRange)
		}
	}
	if tau, _ := p.radii(lamLo, 1, d); !(tau > 0) { // τ = 2^{1/4}·K·√Λ̂·ln^a(25)
		return fmt.Errorf("Algorithm 5's bin width underflows at lambda min %g: raise tail K or lambda min", lamLo)
	}
	return nil
}

// coordBin is the bin q of x over the bins (qτ, (q+1)τ]: q = ⌈x/τ⌉ − 1,
// clamped so that extreme values share the outermost bins (a public rule,
// still one bin per value).
func coordBin(x, tau float64) int64 {
	v := math.Ceil(x / tau)
	switch {
	case v > binLimit:
		return binLimit - 1
	case v < -binLimit:
		return -binLimit - 1
	}
	return int64(v) - 1
}

// privMean runs Algorithm 5 on the m records g (row-major m×d) with the
// public (or DP) eigenvalue estimate lambda > 0. It returns the noisy mean,
// the truncation centres ḡ_j, the std of the noise and the radius r.
func privMean(g []float64, m, d int, lambda float64, p meanParams, src source, pass rowpass.Options) (mu, centres []float64, sigma, r float64) {
	tau, r := p.radii(lambda, m, d)
	counts := rowpass.Reduce(m, pass,
		func() []map[int64]int {
			c := make([]map[int64]int, d)
			for j := range c {
				c[j] = make(map[int64]int)
			}
			return c
		},
		func(c []map[int64]int, lo, hi int) {
			for j := range d {
				cj := c[j]
				last, run := int64(0), 0 // runs of equal bins are common
				for i := lo; i < hi; i++ {
					q := coordBin(g[i*d+j], tau)
					if run > 0 && q != last {
						cj[last] += run
						run = 0
					}
					last = q
					run++
				}
				if run > 0 {
					cj[last] += run
				}
			}
		},
		func(into, from []map[int64]int) {
			for j := range into {
				for q, n := range from[j] {
					into[j][q] += n
				}
			}
		})
	centres = make([]float64, d)
	for j := range d {
		if q, ok := StableMode(releaseHistogram(counts[j], p.hist, src)); ok {
			centres[j] = float64(q) * tau
		} // ⊥: centre 0 (spec §6 CHOICE), still private
	}
	tot := truncatedSum(g, m, d, centres, r, pass)
	// The mean of the centred terms is the noised release; adding the DP
	// centres back afterwards is post-processing, so their size never
	// enters the rounding bound (rounding.go).
	mu = make([]float64, d)
	for j, s := range tot.sum {
		mu[j] = s / float64(m)
	}
	if src.tr != nil {
		src.tr.truncated = append(src.tr.truncated, tot.trun)
		exact := make([]float64, d)
		floats.AddTo(exact, mu, centres)
		src.tr.means = append(src.tr.means, exact)
	}
	sigma, err := noise.GaussianScaleChecked(p.delta2(r, m, d), p.mult, d)
	if err != nil {
		// Unreachable: the plan (checkSigmas) checked the std for every
		// Λ̂ in [LambdaMin, MaxLambda] and every m ≤ MaxRows. Were it
		// reached, the release would be the DP centres alone (the mean
		// without its noised part), so it stays private and the run still
		// returns a release.
		return centres, centres, 0, r
	}
	src.gaussianVec(mu, sigma)
	floats.Add(mu, centres)
	if src.tr != nil {
		src.tr.released = append(src.tr.released, append([]float64(nil), mu...))
	}
	return mu, centres, sigma, r
}

// truncSum is the sum of Algorithm 5's centred truncated terms and the
// number of coordinates truncated (a non-private diagnostic for tests).
type truncSum struct {
	sum  []float64
	trun int
}

// truncatedSum returns Σ_i clamp(g_i − centres, −r, r) coordinate-wise
// over the m rows of g, accumulated with rowpass.Pairwise (bit identical
// for every worker count; rounding bounded as in rounding.go). An infinite
// difference (overflow) is clamped like any other.
func truncatedSum(g []float64, m, d int, centres []float64, r float64, pass rowpass.Options) *truncSum {
	return rowpass.Pairwise(m, pass,
		func() *truncSum { return &truncSum{sum: make([]float64, d)} },
		func(a *truncSum, lo, hi int) {
			for i := lo; i < hi; i++ {
				for j, v := range g[i*d : (i+1)*d] {
					t := v - centres[j]
					if t < -r {
						t = -r
						a.trun++
					} else if t > r {
						t = r
						a.trun++
					}
					a.sum[j] += t
				}
			}
		},
		func(into, from *truncSum) {
			floats.Add(into.sum, from.sum)
			into.trun += from.trun
		},
		func(a *truncSum) {
			clear(a.sum)
			a.trun = 0
		})
}

// MeanResult is Algorithm 5's release.
type MeanResult struct {
	// Mean is the DP estimate of the mean of the records.
	Mean []float64
	// Centres are the truncation centres ḡ_j (DP histogram outputs; 0 where
	// a coordinate's histogram returned ⊥).
	Centres []float64
	// Radius is r, the truncation half-width; NoiseStd the Gaussian std.
	Radius, NoiseStd float64
	Cost             accounting.Event
	Note             string
}

// Mean runs Algorithm 5 on the records g (one per row) given lambda, a
// public or DP estimate of the top eigenvalue of the records' covariance
// (TopEigenvalue on other records estimates twice that): per coordinate,
// a stability histogram over bins of width τ ∝ √lambda locates a centre,
// every coordinate is truncated to centre ± r, and the mean gets Gaussian
// noise for the ℓ2 sensitivity 2r√d/m. A wrong lambda costs accuracy, never
// privacy. Options used: Eps, Delta, Calibration, Zeta, TailK, TailA,
// Workers, Noise. Cost: accounting.Approx(Eps, Delta) under replace-one.
func Mean(g *mat.Dense, lambda float64, opt Options) (*MeanResult, error) {
	flat, m, d, o, err := recordsCopy("mean", g, opt)
	if err != nil {
		return nil, err
	}
	if !(lambda >= MinLambda && lambda <= MaxLambda) {
		return nil, fmt.Errorf("dppca mean: lambda=%v: give an eigenvalue estimate in [%g, %g] (public, or from TopEigenvalue)", lambda, float64(MinLambda), float64(MaxLambda))
	}
	hp, mult, err := alg5Budget(o.Calibration, o.Eps, o.Delta, d)
	if err != nil {
		return nil, fmt.Errorf("dppca mean: %w", err)
	}
	if err := hp.validate(); err != nil {
		return nil, fmt.Errorf("dppca mean: %w", err)
	}
	if mult*math.Sqrt(float64(d)) > 0x1p37 {
		return nil, fmt.Errorf("dppca mean: eps=%g is too small to represent the noise", o.Eps)
	}
	p := meanParams{hist: hp, mult: mult, tailK: o.TailK, tailA: o.TailA, zeta: o.Zeta, excess: meanExcess(d)}
	if err := p.checkSigmas(lambda, lambda, d); err != nil {
		return nil, fmt.Errorf("dppca mean: %w", err)
	}
	src := newSource(o.Noise, o.knob)
	mu, centres, sigma, r := privMean(flat, m, d, lambda, p, src, rowpass.Options{Workers: o.Workers})
	cost := accounting.Approx(o.Eps, o.Delta)
	cost.Mechanism = "dppca/mean"
	return &MeanResult{
		Mean: mu, Centres: centres, Radius: r, NoiseStd: sigma, Cost: cost,
		Note: fmt.Sprintf("Algorithm 5 at ε=%v, δ=%v (%s): %d coordinate histograms at ε=%s, δ=%s each, truncation radius %s, Gaussian std %s%s",
			o.Eps, o.Delta, o.Calibration, d, fmtG(hp.eps), fmtG(hp.delta), fmtG(r), fmtG(sigma), beyond(o.Calibration)),
	}, nil
}

// beyond marks notes of calibrations the paper does not cover.
func beyond(c Calibration) string {
	if c == CalibAnalytic {
		return "; beyond the paper: approximate-zCDP histogram composition and analytic Gaussian"
	}
	return ""
}
