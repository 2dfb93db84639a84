// Private top-eigenvalue estimation: Liu, Kong, Jain and Oh (seed 002),
// Algorithm 4 (L720–730), with octave bins and the group count of spec
// dppca.md §5 as defaults and the paper's quarter-octave bins and C1 = 32 as
// options. Erratum (§5): the estimate is of 2λ1²‖H_u‖, the top eigenvalue
// of Cov(g̃), not λ1²‖H_u‖.

package dppca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
)

// Special bins of Algorithm 4: the paper's [0, 0], and one bin for values
// that overflowed (a public rule; its edge is treated as ⊥).
const (
	zeroBin = math.MinInt64
	hugeBin = math.MaxInt64
)

// eigenBin maps λ ≥ 0 to its bin id: ⌊log2 λ⌋ for octaves, ⌊4·log2 λ⌋ for
// quarter octaves (spec §10.9: a deterministic map; the octave map is exact
// through Frexp).
func eigenBin(lambda float64, quarter bool) int64 {
	switch {
	case !(lambda > 0):
		if lambda == 0 || (lambda < 0 && !math.IsInf(lambda, 0)) {
			return zeroBin // rounding can give a tiny negative eigenvalue
		}
		return hugeBin
	case math.IsInf(lambda, 0):
		return hugeBin
	}
	frac, exp := math.Frexp(lambda) // λ = frac·2^exp, frac ∈ [0.5, 1)
	e := int64(exp - 1)
	if !quarter {
		return e
	}
	q := int64(math.Floor(4 * math.Log2(2*frac))) // 2·frac ∈ [1, 2)
	q = min(max(q, 0), 3)
	return 4*e + q
}

// eigenEdge is the left edge l of bin id, the value Algorithm 4 returns.
func eigenEdge(id int64, quarter bool) float64 {
	switch id {
	case zeroBin:
		return 0
	case hugeBin:
		return math.Inf(1)
	}
	if !quarter {
		return math.Ldexp(1, int(id))
	}
	e, q := id/4, id%4
	if q < 0 {
		e, q = e-1, q+4
	}
	return math.Ldexp(math.Exp2(float64(q)/4), int(e))
}

// eigenParams are the public parameters of one Algorithm 4 call.
type eigenParams struct {
	hist    histParams
	groups  int
	quarter bool
}

// groupCount is k of Algorithm 4 for a histogram at (eps, delta) and
// failure probability zeta: Groups if set, else ⌈2 + 4·ln(1/(δζ))/ε⌉
// (spec §5 CHOICE: with all λ^(j) in at most two adjacent bins, the top bin
// holds ≥ k/2 and survives the threshold w.p. 1 − ζ), or ⌈32·ln(1/(δζ))/ε⌉
// with PaperGroups (Lemma B.1 with β = 1/4).
func groupCount(o *Options, eps, delta, zeta float64) (int, error) {
	if o.Groups > 0 {
		return o.Groups, nil
	}
	l := math.Log(1 / (delta * zeta))
	k := math.Ceil(2 + 4*l/eps)
	if o.PaperGroups {
		k = math.Ceil(32 * l / eps)
	}
	if k > 1e9 {
		return 0, fmt.Errorf("Algorithm 4 would need %.3g groups at ε=%g: raise eps", k, eps)
	}
	return int(k), nil
}

// topEigen runs Algorithm 4 on the m records g (row-major m×d). It returns
// Λ̂ and true, or false for ⊥ (including the overflow bin). The caller has
// checked that b = ⌊⌊m/2⌋/k⌋ ≥ 1.
//
// Floating point: each λ^(j) is computed from the records of group j alone
// (its buffer and Gram scratch are overwritten, never accumulated across
// groups), so replacing one record changes at most one λ^(j), rounded or
// not, and the counts move by at most 2 in ℓ1: the histogram's
// sensitivity already covers rounding, and nothing is charged for it
// (rounding.go).
func topEigen(g []float64, m, d int, p eigenParams, src source, pass rowpass.Options) (float64, bool) {
	k := p.groups
	b := (m / 2) / k
	lambdas := make([]float64, k)
	rowpass.For(k, rowpass.Options{Workers: pass.Workers, MinRows: max(1, 4096/max(1, b*d))}, func(_, lo, hi int) {
		buf := make([]float64, b*d)
		small := min(b, d)
		gram := blas64.Symmetric{N: small, Stride: small, Uplo: blas.Upper, Data: make([]float64, small*small)}
		for j := lo; j < hi; j++ {
			for i := range b {
				pair := j*b + i
				dst := buf[i*d : (i+1)*d]
				floats.SubTo(dst, g[(2*pair+1)*d:(2*pair+2)*d], g[2*pair*d:(2*pair+1)*d])
			}
			lambdas[j] = topEigenvalueOf(buf, b, d, gram) / float64(b)
		}
	})
	if src.tr != nil {
		src.tr.groupEigen = append(src.tr.groupEigen, lambdas)
	}
	counts := make(map[int64]int)
	for _, l := range lambdas {
		counts[eigenBin(l, p.quarter)]++
	}
	id, ok := StableMode(releaseHistogram(counts, p.hist, src))
	if !ok || id == hugeBin {
		return 0, false
	}
	return eigenEdge(id, p.quarter), true
}

// topEigenvalueOf returns the top eigenvalue of GᵀG for the b×d row-major
// block buf, through the smaller of GᵀG (d×d) and GGᵀ (b×b); gram is
// scratch of that size.
func topEigenvalueOf(buf []float64, b, d int, gram blas64.Symmetric) float64 {
	if b == 1 || d == 1 {
		return floats.Dot(buf, buf)
	}
	clear(gram.Data)
	a := blas64.General{Rows: b, Cols: d, Stride: d, Data: buf}
	if d <= b {
		blas64.Syrk(blas.Trans, 1, a, 0, gram)
	} else {
		blas64.Syrk(blas.NoTrans, 1, a, 0, gram)
	}
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(gram.N, gram.Data), false) {
		return math.Inf(1) // non-finite block: the overflow bin
	}
	vals := eig.Values(nil)
	return vals[len(vals)-1]
}

// EigenResult is Algorithm 4's release.
type EigenResult struct {
	// Value is Λ̂, the left edge of the winning bin (0 for the bin [0, 0]);
	// meaningful only if Found.
	Value float64
	// Found is false when no bin survived (the paper's ⊥).
	Found bool
	// Groups and GroupSize are k and b.
	Groups, GroupSize int
	Cost              accounting.Event
	Note              string
}

// TopEigenvalue runs Algorithm 4 on the records g (one per row, e.g.
// gradients A_i·w): pair differences g̃_i = g_{2i} − g_{2i−1}, k groups of
// b = ⌊⌊m/2⌋/k⌋ pairs by position, the top eigenvalue λ^(j) of each
// group's (1/b)·G_jG_jᵀ, and an (ε, δ) stability histogram over their bins.
// Λ̂ estimates the top eigenvalue of Cov(g̃) = 2·Cov(g) to within a bin.
// Options used: Eps, Delta, Zeta, Groups, PaperGroups, QuarterBins,
// Workers, Noise. Cost: accounting.Approx(Eps, Delta) under replace-one.
func TopEigenvalue(g *mat.Dense, opt Options) (*EigenResult, error) {
	flat, m, d, o, err := recordsCopy("eigenvalue", g, opt)
	if err != nil {
		return nil, err
	}
	p := eigenParams{hist: histParams{o.Eps, o.Delta}, quarter: o.QuarterBins}
	if err := p.hist.validate(); err != nil {
		return nil, fmt.Errorf("dppca eigenvalue: %w", err)
	}
	if p.groups, err = groupCount(&o, o.Eps, o.Delta, o.Zeta); err != nil {
		return nil, fmt.Errorf("dppca eigenvalue: %w", err)
	}
	b := (m / 2) / p.groups
	if b < 1 {
		return nil, fmt.Errorf("dppca eigenvalue: %d groups of at least one pair need at least %d records (got %d rows): raise eps or delta, set fewer groups, or give more data",
			p.groups, 2*p.groups, m)
	}
	src := newSource(o.Noise, o.knob)
	v, ok := topEigen(flat, m, d, p, src, rowpass.Options{Workers: o.Workers})
	cost := accounting.Approx(o.Eps, o.Delta)
	cost.Mechanism = "dppca/eigenvalue"
	return &EigenResult{
		Value: v, Found: ok, Groups: p.groups, GroupSize: b, Cost: cost,
		Note: fmt.Sprintf("Algorithm 4: %d groups of %d pairs, %s bins, stability histogram at ε=%v, δ=%v (replace-one)",
			p.groups, b, binName(o.QuarterBins), o.Eps, o.Delta),
	}, nil
}

func binName(quarter bool) string {
	if quarter {
		return "quarter-octave"
	}
	return "octave"
}
