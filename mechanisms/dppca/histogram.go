// Stability-based histogram: Liu, Kong, Jain and Oh (seed 002), Lemma B.1,
// with the concrete mechanism of their reference [49] written out in spec
// dppca.md §1 "Stability-based histogram".

package dppca

import (
	"fmt"
	"math"
	"slices"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// histogramSensitivity is the ℓ1 distance between the count vectors of two
// neighbours under replace-one: one row leaves a bin and enters another.
const histogramSensitivity = 2

// thresholdSlack absorbs the difference between the discrete Laplace of
// mechanisms/noise and the continuous one in the tail bound below
// (relative 2^-40 in scale, a factor 1+2^-40 in probability).
const thresholdSlack = 1e-6

// histParams are the public parameters of one stability histogram.
type histParams struct {
	eps, delta float64
}

func (p histParams) validate() error {
	if !(p.eps > 0) || math.IsInf(p.eps, 0) {
		return fmt.Errorf("histogram ε = %v must be a finite number > 0", p.eps)
	}
	if !(p.delta > 0 && p.delta < 1) {
		return fmt.Errorf("histogram δ = %v must be in (0, 1)", p.delta)
	}
	if 1/p.eps > 0x1p36 {
		return fmt.Errorf("histogram ε = %v is too small to represent its Laplace noise: raise eps", p.eps)
	}
	// The scale the run will ask for (scale) is valid: no sampler panic
	// after the charge.
	if _, err := noise.LaplaceScaleChecked(histogramSensitivity, p.eps, 2); err != nil {
		return fmt.Errorf("histogram ε = %v: %w", p.eps, err)
	}
	return nil
}

// scale returns the Laplace scale b ≥ 2/ε (the two changed bins are the
// only coordinates whose rounding differs between neighbours, hence m = 2)
// and the survival threshold 1 + b·ln(2/δ).
//
// Why it is (ε, δ)-DP: bins occupied in both neighbours get Laplace noise
// on counts at ℓ1 distance ≤ 2, which is ε-DP; a bin occupied in only one
// of them has count 1 there and survives with probability
// P(Lap(b) ≥ b·ln(2/δ)) = δ/4; at most two such bins exist.
func (p histParams) scale() (b, threshold float64) {
	b = noise.LaplaceScale(histogramSensitivity, p.eps, 2)
	return b, 1 + b*(math.Log(2/p.delta)+thresholdSlack)
}

// releaseHistogram is StableHistogram without validation; src may carry
// the test knob.
func releaseHistogram(counts map[int64]int, p histParams, src source) map[int64]float64 {
	b, thr := p.scale()
	ids := make([]int64, 0, len(counts))
	for id, c := range counts {
		if c > 0 {
			ids = append(ids, id)
		}
	}
	// Noise is drawn in bin order, not map order, so a seeded run is
	// reproducible.
	slices.Sort(ids)
	out := make(map[int64]float64)
	for _, id := range ids {
		v := float64(counts[id]) + src.laplace(b)
		if v >= thr {
			out[id] = v
		}
	}
	return out
}

// StableHistogram is the (ε, δ)-DP stability-based histogram of Lemma B.1
// under replace-one: counts maps bin ids to the number of records in the
// bin (bins not in the map, or with count ≤ 0, are empty and are never
// materialised or noised). Each occupied bin gets Laplace noise of scale
// 2/ε (via noise.LaplaceScale) and survives if its noisy count is at least
// 1 + (2/ε)·ln(2/δ). The result maps surviving bins to their noisy counts;
// it may be empty. A nil sampler uses noise.New().
func StableHistogram(counts map[int64]int, eps, delta float64, s *noise.Sampler) (map[int64]float64, error) {
	p := histParams{eps, delta}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("dppca: %w", err)
	}
	return releaseHistogram(counts, p, newSource(s, nil)), nil
}

// StableMode returns the bin of a released histogram with the largest
// noisy count, the smallest bin id on ties, and false if no bin survived
// (the ⊥ of Algorithms 4 and 5). It is post-processing.
func StableMode(released map[int64]float64) (int64, bool) {
	best, bestID, ok := math.Inf(-1), int64(0), false
	for id, v := range released {
		if v > best || (v == best && id < bestID) {
			best, bestID, ok = v, id, true
		}
	}
	return bestID, ok
}
