package jlclass

// The public randomness of Algorithm 3 (seed 004, lines 1 and 3,
// 004:L282-284; federated.md §3.2 and §3.5): the JL matrix M, the
// candidate pool or the γ-cover, and the directions of the inner
// minimisation for k ≥ 3. None of it depends on the data.

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// ProjectDim returns k′, the JL dimension for a relative margin ρ ∈ (0, 1]
// with d features and representation dimension k: ⌈1/ρ²⌉, at least k and
// at most d. A ±1/√k′ matrix distorts inner products of unit vectors by
// about 1/√k′ (Lemma 15, 004:L266), so a margin ρ (relative to r·Γ)
// survives the projection once 1/√k′ ≲ ρ. The paper's k′ also carries
// r²Γ²·log(nm/β) and an unspecified constant (004:L282): the union bound
// over all nm records that the log pays for is what makes the cover
// infeasible, and this package drops it (federated.md §3.5).
func ProjectDim(rho float64, d, k int) int {
	kp := float64(d)
	if rho > 0 {
		kp = math.Min(kp, math.Ceil(1/(rho*rho)))
	}
	return min(d, max(k, int(kp)))
}

// NewJL returns the k′×d JL matrix of Algorithm 3 line 1: entries
// independent and uniform on {±1/√k′}, each sign a fair bit of src (the
// sign of a standard normal). Public randomness.
func NewJL(kp, d int, src *noise.Sampler) *mat.Dense {
	m := mat.NewDense(kp, d, nil)
	raw := m.RawMatrix().Data
	src.FillStdNormal(raw)
	v := 1 / math.Sqrt(float64(kp))
	for i, x := range raw {
		if x < 0 {
			raw[i] = -v
		} else {
			raw[i] = v
		}
	}
	return m
}

// PoolCandidates returns K independent k′×k Gaussian matrices scaled to
// Frobenius norm √k, the norm of M·U for an orthonormal U when M preserves
// norms (federated.md §3.5). Public randomness.
func PoolCandidates(count, kp, k int, src *noise.Sampler) []*mat.Dense {
	out := make([]*mat.Dense, count)
	for c := range out {
		m := mat.NewDense(kp, k, nil)
		raw := m.RawMatrix().Data
		for {
			src.FillStdNormal(raw)
			if f := mat.Norm(m, 2); f > 0 {
				m.Scale(math.Sqrt(float64(k))/f, m)
				break
			}
		}
		out[c] = m
	}
	return out
}

// MaxGridDim is the largest k′·k of the toy exact mode, and MaxCandidates
// the most candidates either mode scores (each user scores every one).
const (
	MaxGridDim    = 4
	MaxCandidates = 1 << 16
)

// gridSpec is the paper's cover N^γ of the Frobenius ball B_F of radius
// √(2k) in R^(k′×k) (004:L273, Algorithm 3 line 3), built as the points of
// the cubic lattice h·Z^D, D = k′k, h = 2γ/√D, of norm ≤ √(2k) + γ: every
// point of the ball is within h√D/2 = γ of its nearest lattice point,
// whose norm is at most √(2k) + γ. A public deterministic construction.
type gridSpec struct {
	kp, k int
	h     float64
	l     int     // lattice coordinates range over [−l, l]
	r2    float64 // squared radius in lattice units
}

func newGrid(kp, k int, gamma float64) (gridSpec, error) {
	dim := kp * k
	if dim > MaxGridDim {
		return gridSpec{}, fmt.Errorf("the γ-cover (candidates=0) is the toy exact mode, for k′·k ≤ %d; here k′=%d, k=%d: give candidates=K for a random pool", MaxGridDim, kp, k)
	}
	h := 2 * gamma / math.Sqrt(float64(dim))
	rad := (math.Sqrt(2*float64(k)) + gamma) / h
	g := gridSpec{kp: kp, k: k, h: h, l: int(math.Floor(rad)), r2: rad * rad}
	if math.Pow(float64(2*g.l+1), float64(dim)) > 64*MaxCandidates {
		return gridSpec{}, fmt.Errorf("the γ-cover with gamma=%v has far more than %d points: raise gamma", gamma, MaxCandidates)
	}
	return g, nil
}

// each calls f with the lattice coordinates of every cover point, in
// lexicographic order.
func (g gridSpec) each(f func(z []int)) {
	dim := g.kp * g.k
	z := make([]int, dim)
	for i := range z {
		z[i] = -g.l
	}
	for {
		var ss float64
		for _, v := range z {
			ss += float64(v * v)
		}
		if ss <= g.r2 {
			f(z)
		}
		i := dim - 1
		for ; i >= 0 && z[i] == g.l; i-- {
			z[i] = -g.l
		}
		if i < 0 {
			return
		}
		z[i]++
	}
}

// size is the number of cover points.
func (g gridSpec) size() int {
	n := 0
	g.each(func([]int) { n++ })
	return n
}

// candidates returns the cover points as k′×k matrices.
func (g gridSpec) candidates() []*mat.Dense {
	var out []*mat.Dense
	g.each(func(z []int) {
		m := mat.NewDense(g.kp, g.k, nil)
		raw := m.RawMatrix().Data
		for i, v := range z {
			raw[i] = g.h * float64(v)
		}
		out = append(out, m)
	})
	return out
}

// GridSize returns the number of points of the γ-cover for k′, k and γ,
// or an error when the toy exact mode does not apply.
func GridSize(kp, k int, gamma float64) (int, error) {
	g, err := newGrid(kp, k, gamma)
	if err != nil {
		return 0, err
	}
	return g.size(), nil
}

// netSize is the number of random directions of the inner minimisation
// for k ≥ 3 (federated.md §3.5: "a fixed net of 256 directions").
const netSize = 256

// Directions returns the net of unit vectors v over which a user
// minimises its loss for k ≥ 3: the 2k signed coordinate axes and netSize
// uniform directions (normalised Gaussians from src). nil for k ≤ 2, where
// the minimum is exact. Public randomness.
func Directions(k int, src *noise.Sampler) [][]float64 {
	if k <= 2 {
		return nil
	}
	var out [][]float64
	for i := range k {
		for _, s := range []float64{1, -1} {
			v := make([]float64, k)
			v[i] = s
			out = append(out, v)
		}
	}
	for len(out) < 2*k+netSize {
		v := make([]float64, k)
		src.FillStdNormal(v)
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		if ss == 0 {
			continue
		}
		inv := 1 / math.Sqrt(ss)
		for i := range v {
			v[i] *= inv
		}
		out = append(out, v)
	}
	return out
}
