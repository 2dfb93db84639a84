package jlclass

// The user side of Algorithm 3 (seed 004, 004:L281-289; federated.md §3.2
// lines 2, 4 and 6): a user holds its JL-projected records, scores every
// candidate on its first half S⁰ (the inner minimum of the empirical loss
// over its head v), and fits its own head on its second half S¹.

import (
	"errors"
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// User holds one user's projected records z_j = M·x_j (m×k′) and labels
// y_j ∈ {−1, +1}. The first m₀ = ⌈m/2⌉ records are S⁰ (scores), the rest
// S¹ (the head); a user with a single record uses it for both.
type User struct {
	z  *mat.Dense
	y  []float64
	m0 int
}

// NewUser returns a user over projected records z (m×k′, m ≥ 1) and labels
// y (read by sign: > 0 is +1, anything else −1). Kept by reference.
func NewUser(z *mat.Dense, y []float64) (*User, error) {
	if z == nil || z.IsEmpty() {
		return nil, errors.New("jlclass: a user needs at least one record")
	}
	m, _ := z.Dims()
	if len(y) != m {
		return nil, errors.New("jlclass: give one label per record")
	}
	return &User{z: z, y: y, m0: (m + 1) / 2}, nil
}

// Score returns the user's integer score of each candidate:
// ⌊G·c/m₀⌋ with c the most records of S⁰ that some head v, ‖v‖ ≤ 1,
// classifies with margin: y·⟨z, U′v⟩ > θ (θ = 0: the 0-1 loss of the
// proof, 004:L1835; θ > 0: the margin loss of the main text, 004:L279).
// It is G·(1 − min_v L̂_θ) rounded down, in [0, G], and depends on this
// user's records only, which is all the privacy proof needs (federated.md
// §3.3): the inner minimum may be approximate (the direction net for
// k ≥ 3). dirs is the public net (Directions) for k ≥ 3.
func (u *User) Score(cands []*mat.Dense, theta float64, dirs [][]float64) []int64 {
	out := make([]int64, len(cands))
	rows := make([]int, u.m0)
	for j := range rows {
		rows[j] = j
	}
	var w workspace
	for c, uc := range cands {
		best, _ := w.bestHead(u, uc, rows, theta, dirs)
		out[c] = int64(ScoreScale) * int64(best) / int64(u.m0)
	}
	return out
}

// Head returns the user's head v_i = argmin_{‖v‖≤1} L̂_0(U′, v; S¹) for the
// released Ũ = U′ (k′×k), Algorithm 3 line 6, with the same exact (k ≤ 2)
// or net (k ≥ 3) minimisation as the scores. Since ⟨x, Mᵀ U′ v⟩ =
// ⟨Mx, U′v⟩, it is also the head of U_priv = MᵀŨ on the raw features. It
// stays with the user: it is not a differentially private release.
func (u *User) Head(util *mat.Dense, dirs [][]float64) []float64 {
	m, _ := u.z.Dims()
	var rows []int
	for j := u.m0; j < m; j++ {
		rows = append(rows, j)
	}
	if len(rows) == 0 {
		rows = []int{0}
	}
	_, v := u.bestHead(util, rows, 0, dirs)
	return v
}

// bestHead returns the most rows with y·⟨z, U′v⟩ > θ over unit heads v,
// and a maximising v.
func (u *User) bestHead(uc *mat.Dense, rows []int, theta float64, dirs [][]float64) (int, []float64) {
	var w workspace
	return w.bestHead(u, uc, rows, theta, dirs)
}

// workspace holds the buffers of one user's minimisations, reused across
// candidates.
type workspace struct {
	b  []float64 // b_j = y_j·U′ᵀz_j, k per row
	ev []arcEvent
}

func (w *workspace) bestHead(u *User, uc *mat.Dense, rows []int, theta float64, dirs [][]float64) (int, []float64) {
	kp, k := uc.Dims()
	ur := uc.RawMatrix()
	if cap(w.b) < len(rows)*k {
		w.b = make([]float64, len(rows)*k)
	}
	b := w.b[:len(rows)*k]
	clear(b)
	for r, j := range rows {
		z := u.z.RawRowView(j)
		bj := b[r*k : (r+1)*k]
		for i := range kp {
			zi := z[i]
			urow := ur.Data[i*ur.Stride : i*ur.Stride+k]
			for c, x := range urow {
				bj[c] += zi * x
			}
		}
		if !(u.y[j] > 0) {
			for c := range bj {
				bj[c] = -bj[c]
			}
		}
	}
	switch {
	case k == 1:
		pos, neg := 0, 0
		for _, bj := range b {
			if bj > theta {
				pos++
			}
			if -bj > theta {
				neg++
			}
		}
		if neg > pos {
			return neg, []float64{-1}
		}
		return pos, []float64{1}
	case k == 2:
		return w.arcSweep(b, theta)
	}
	best, arg := -1, dirs[0]
	for _, v := range dirs {
		c := 0
		for r := range rows {
			if floats.Dot(b[r*k:(r+1)*k], v) > theta {
				c++
			}
		}
		if c > best {
			best, arg = c, v
		}
	}
	return best, append([]float64(nil), arg...)
}

type arcEvent struct {
	at    float64
	delta int
}

// arcSweep solves k = 2 exactly (federated.md §3.5, "angular sweep in
// O(m log m)"): the unit heads v = (cos φ, sin φ) with ⟨b, v⟩ > θ form the
// open arc of half-width acos(θ/‖b‖) around b's angle (empty when
// ‖b‖ ≤ θ), and the best head lies where most arcs overlap. Arcs are laid
// twice on [0, 4π) so that a sweep of the line sees every overlap on the
// circle; at equal angles an arc ends before another starts (open arcs).
func (w *workspace) arcSweep(b []float64, theta float64) (int, []float64) {
	ev := w.ev[:0]
	for r := 0; r+1 < len(b); r += 2 {
		bj := b[r : r+2]
		nrm := math.Hypot(bj[0], bj[1])
		if !(nrm > theta) || math.IsInf(nrm, 0) {
			continue
		}
		hw := math.Acos(math.Min(1, theta/nrm))
		start := math.Mod(math.Atan2(bj[1], bj[0])-hw+4*math.Pi, 2*math.Pi)
		for _, off := range []float64{0, 2 * math.Pi} {
			ev = append(ev, arcEvent{start + off, 1}, arcEvent{start + off + 2*hw, -1})
		}
	}
	w.ev = ev
	if len(ev) == 0 {
		return 0, []float64{1, 0}
	}
	sort.Slice(ev, func(i, j int) bool {
		if ev[i].at != ev[j].at {
			return ev[i].at < ev[j].at
		}
		return ev[i].delta < ev[j].delta
	})
	best, cur, at := 0, 0, 0.0
	for i, e := range ev {
		cur += e.delta
		if cur > best && i+1 < len(ev) {
			best = cur
			at = (e.at + ev[i+1].at) / 2 // inside the open overlap
		}
	}
	return best, []float64{math.Cos(at), math.Sin(at)}
}

// Correct returns how many of the given records (x_j, y_j) the classifier
// sign(⟨x, U v⟩) gets right (a tie ⟨x, Uv⟩ = 0 counts as wrong), for
// evaluating a release on public test data.
func Correct(x *mat.Dense, y []float64, U *mat.Dense, v []float64) int {
	d, k := U.Dims()
	w := make([]float64, d)
	mat.NewVecDense(d, w).MulVec(U, mat.NewVecDense(k, v))
	m, _ := x.Dims()
	c := 0
	for j := range m {
		t := floats.Dot(x.RawRowView(j), w)
		if y[j] > 0 && t > 0 || y[j] <= 0 && t < 0 {
			c++
		}
	}
	return c
}
