package noise

import (
	"math"
	"os"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Statistical helpers. All statistical tests use fixed seeds (so they are
// deterministic) and thresholds whose false-alarm probability under the
// correct distribution is stated next to them; TestGOFRejectsWrongScale
// shows the same thresholds reject a sample whose scale is 10% off.

// sampleSize returns n, or 50·n when PRIVNOTES_LONG=1 asks for the long
// statistical runs (the thresholds scale with n, so the same assertions
// apply).
func sampleSize(n int) int {
	if os.Getenv("PRIVNOTES_LONG") == "1" {
		return 50 * n
	}
	return n
}

// ksStatistic returns the one-sample Kolmogorov–Smirnov statistic
// sup |F_n(x) - F(x)| of xs against cdf. xs is sorted in place.
func ksStatistic(xs []float64, cdf func(float64) float64) float64 {
	slices.Sort(xs)
	n := float64(len(xs))
	d := 0.0
	for i, x := range xs {
		f := cdf(x)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

// ksCritical returns the asymptotic Kolmogorov critical value at level
// alpha: P(√n·D > c) ≈ 2·exp(-2c²) for the alpha of interest here.
func ksCritical(n int, alpha float64) float64 {
	return math.Sqrt(-math.Log(alpha/2)/2) / math.Sqrt(float64(n))
}

// chiSquare returns Pearson's statistic of integer samples against the
// exact pmf over the bins {lo..hi}, with the two tails (< lo, > hi) pooled
// into their own bins, and the number of degrees of freedom.
func chiSquare(samples []int64, pmf func(int64) float64, lo, hi int64) (stat float64, df int) {
	nBins := int(hi-lo) + 3
	obs := make([]float64, nBins)
	for _, z := range samples {
		switch {
		case z < lo:
			obs[0]++
		case z > hi:
			obs[nBins-1]++
		default:
			obs[z-lo+1]++
		}
	}
	exp := make([]float64, nBins)
	inner := 0.0
	for z := lo; z <= hi; z++ {
		exp[z-lo+1] = pmf(z)
		inner += pmf(z)
	}
	// Tails by symmetry (both pmfs here are symmetric with lo = -hi).
	exp[0] = (1 - inner) / 2
	exp[nBins-1] = (1 - inner) / 2
	n := float64(len(samples))
	for i := range obs {
		e := exp[i] * n
		if e < 1e-9 {
			if obs[i] > 0 {
				return math.Inf(1), nBins - 1
			}
			continue
		}
		stat += (obs[i] - e) * (obs[i] - e) / e
		df++
	}
	return stat, df - 1
}

func chiCritical(df int, alpha float64) float64 {
	return distuv.ChiSquared{K: float64(df)}.Quantile(1 - alpha)
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}
