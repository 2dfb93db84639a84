// Confidence intervals of a linear combination of independent noise
// draws: W = Σ_j a_j·Z_j, each Z_j the lattice noise of one scale (all
// Laplace or all Gaussian). A post-processed release that is linear in
// its noisy coordinates (a least-squares fit of parts to their total)
// errs by such a W, whose law depends on the public scale and weights
// only, so its level half-width is post-processing of public parameters.

package noise

import (
	"errors"
	"math"
)

// Term is Count independent noise draws, each multiplied by Weight.
type Term struct {
	Weight float64
	Count  int
}

// errTerms: weights that are not finite, or counts below 0.
var errTerms = errors.New("noise: a linear combination needs finite weights and counts ≥ 0")

// CombinedHalfWidth returns h such that P(|Σ a_j·Z_j| > h) ≤ 1 − level
// for independent draws Z_j of the samplers' Laplace (gaussian false) or
// Gaussian noise of the given scale, the weights a_j given by terms,
// plus Σ|a_j| lattice steps: one per draw, for the rounding of each
// value onto the noise's lattice (as DiffTail's callers add).
//
// Gaussian: the normal law of variance s²·Σa_j², s the scale rounded up
// to its lattice (the continuous law the lattice noise matches to a
// relative 2^-40, the convention of DiffTail and MeanInterval).
//
// Laplace: a Chernoff bound, sound for the discrete draws themselves.
// The discrete Laplace on the lattice of step δ with t = s/δ units has
// the moment generating function 1/(1 − r²), r = sinh(λδ/2)/sinh(δ/(2s))
// (|λ| < 1/s), and since sinh(x)/x increases, r ≤ sλ: it is at most the
// continuous Laplace(s)'s 1/(1 − s²λ²). So for every θ in
// (0, 1/(s·max|a_j|)),
//
//	P(W ≥ h) ≤ e^(−θh)·Π_j 1/(1 − s²a_j²θ²),
//
// and the two-sided tail is at most twice that. The half-width is the
// least over θ of (ln(2/α) − Σ_j ln(1 − s²a_j²θ²))/θ, α = 1 − level,
// minimised by golden-section search: any θ gives a sound bound, so the
// search's precision changes only the width. Chernoff's bound is
// conservative (for one draw about twice the exact quantile); where one
// draw's weight exceeds all others (a least-squares part's own noise) the
// half-width is the smaller of it and peeled's, which is exact in the
// largest draw. Either way the intervals cover more than level.
func CombinedHalfWidth(gaussian bool, scale float64, terms []Term, level float64) (float64, error) {
	alpha, err := checkLevel(level)
	if err != nil {
		return 0, err
	}
	if err := CheckScale(scale); err != nil {
		return 0, err
	}
	var sumSq, sumAbs, top float64
	for _, t := range terms {
		a := math.Abs(t.Weight)
		if math.IsNaN(a) || math.IsInf(a, 0) || t.Count < 0 {
			return 0, errTerms
		}
		if t.Count == 0 || a == 0 {
			continue
		}
		n := float64(t.Count)
		sumSq += n * a * a
		sumAbs += n * a
		top = max(top, a)
	}
	if scale == 0 || top == 0 {
		return 0, nil
	}
	l := latticeFor(scale)
	s := float64(l.units) * l.step // the scale the sampler draws at
	slack := sumAbs * l.step
	if gaussian {
		h := math.Sqrt(2*sumSq) * s * math.Erfcinv(alpha)
		for range 64 {
			if !(math.Erfc(h/(math.Sqrt(2*sumSq)*s))*(1+tailMargin) > alpha) {
				break
			}
			h = math.Nextafter(h*(1+1e-13), math.Inf(1))
		}
		return up(h + slack), nil
	}
	// In u = θ·s·top ∈ (0, 1): h(u) = s·top·(ln(2/α) + L(u))/u with
	// L(u) = −Σ n·ln(1 − (a/top)²u²), convex with L(0) = 0, so h is
	// unimodal on (0, 1).
	k := math.Log(2/alpha) * (1 + tailMargin)
	bound := func(u float64) float64 {
		l := 0.0
		for _, t := range terms {
			a := math.Abs(t.Weight)
			if t.Count == 0 || a == 0 {
				continue
			}
			x := a / top * u
			l -= float64(t.Count) * math.Log1p(-x*x)
		}
		return s * top * (k + l*(1+tailMargin)) / u
	}
	lo, hi := 0.0, 1.0
	const phi = 0.6180339887498949
	a, b := hi-phi*(hi-lo), lo+phi*(hi-lo)
	fa, fb := bound(a), bound(b)
	for range 200 {
		if fa <= fb {
			hi, b, fb = b, a, fa
			a = hi - phi*(hi-lo)
			fa = bound(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + phi*(hi-lo)
			fb = bound(b)
		}
		if hi-lo < 1e-12 {
			break
		}
	}
	return up(min(fa, fb, peeled(terms, top, l, alpha)) + slack), nil
}

// peeled is a second sound Laplace bound, tighter than Chernoff's when
// one draw's weight a₀ exceeds every other: W = a₀Z₀ + R, and the
// discrete Laplace Z₀ (q = e^(−1/t), t units) has
// P(a₀Z₀ ≥ x) ≤ e^(−x/β)/(1 + q) for every real x, β = a₀·s (for x > 0
// the tail is q^⌈x/(a₀δ)⌉/(1 + q); for x ≤ 0, with y = e^(|x|/β) ≥ 1,
// 1 − q/((1 + q)y) ≤ y/(1 + q) is (y − 1)(y − q) ≥ 0). So, conditioning
// on R, P(W ≥ h) ≤ e^(−h/β)·E[e^(R/β)]/(1 + q), and E[e^(R/β)] ≤
// Π_j 1/(1 − (a_j/a₀)²) by the MGF bound of CombinedHalfWidth. Two-sided,
// the half-width is β·(ln(2/(1 + q)) − ln α − Σ_j ln(1 − (a_j/a₀)²)).
// +Inf when no single draw has the largest weight alone.
func peeled(terms []Term, top float64, l lattice, alpha float64) float64 {
	sum, alone := 0.0, false
	for _, t := range terms {
		a := math.Abs(t.Weight)
		switch {
		case t.Count == 0 || a == 0:
		case a == top && t.Count == 1 && !alone:
			alone = true
		case a >= top:
			return math.Inf(1) // a second draw of the largest weight
		default:
			x := a / top
			sum -= float64(t.Count) * math.Log1p(-x*x)
		}
	}
	if !alone {
		return math.Inf(1)
	}
	tf := float64(l.units)
	c := -math.Log1p(math.Expm1(-1/tf) / 2) // ln(2/(1 + q))
	beta := top * tf * l.step
	return beta * (c - math.Log(alpha) + sum) * (1 + tailMargin)
}

// up is x raised by a relative 1e-12: a sum of rounded terms no smaller
// than the exact one.
func up(x float64) float64 { return x * (1 + tailMargin) }
