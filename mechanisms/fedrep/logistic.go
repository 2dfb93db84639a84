package fedrep

// The logistic user of Private FedRep, for ±1 labels: the surrogate loss of
// Variant B of seed 004's Algorithm 3 (federated.md §3.5, "DP-FedRep on JL
// features"), run by the same coordinator as Algorithm 1. Only the user's
// two local computations change (the head fit and the gradient); the
// coordinator's clipping, noise and QR, and so the privacy guarantee, are
// those of the squared loss.

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Loss is the per-record loss a User fits and differentiates.
type Loss int

const (
	// Squared is (y − xᵀUv)², Algorithm 1's regression loss (default).
	Squared Loss = iota
	// Logistic is log(1 + exp(−y·xᵀUv)) for labels y ∈ {−1, +1}, with a
	// ridge LogisticRidge/2·‖v‖² in the head fit (the loss alone has no
	// minimiser on separable records).
	Logistic
)

// LogisticRidge is the ridge λ of the logistic head fit and
// logisticNewtonSteps the number of Newton steps from v = 0 (the spec's
// "about 5", federated.md §3.5).
const (
	LogisticRidge       = 1e-2
	logisticNewtonSteps = 6
)

// WithLoss sets the user's loss and returns the user. Set it before the
// user answers a round; it does not affect privacy (the coordinator clips
// whatever a user sends).
func (u *User) WithLoss(l Loss) *User {
	u.loss = l
	return u
}

// sigmoid returns 1/(1 + e^(−t)) without overflow.
func sigmoid(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// projected returns the rows' features times U (len(rows)×k).
func (u *User) projected(U *mat.Dense, rows []int) *mat.Dense {
	_, k := U.Dims()
	a := mat.NewDense(len(rows), k, nil)
	for r, j := range rows {
		a.RowView(r).(*mat.VecDense).MulVec(U.T(), mat.NewVecDense(u.Dim(), u.x.RawRowView(j)))
	}
	return a
}

// fitLogisticHead returns v minimising (1/b)·Σ log(1 + exp(−y_j a_jᵀv)) +
// (λ/2)‖v‖² over the rows, a_j = Uᵀx_j, by Newton's method from v = 0 (the
// objective is λ-strongly convex, so every step is well posed). Labels are
// read by sign: y > 0 is +1, anything else −1.
func (u *User) fitLogisticHead(U *mat.Dense, rows []int) []float64 {
	_, k := U.Dims()
	a := u.projected(U, rows)
	v := make([]float64, k)
	if len(rows) == 0 {
		return v
	}
	inv := 1 / float64(len(rows))
	g := make([]float64, k)
	for range logisticNewtonSteps {
		h := mat.NewSymDense(k, nil)
		for i := range k {
			g[i] = LogisticRidge * v[i]
			h.SetSym(i, i, LogisticRidge)
		}
		for r, j := range rows {
			ar := a.RawRowView(r)
			y := label(u.y[j])
			p := sigmoid(-y * floats.Dot(ar, v)) // −∂/∂t log(1+e^(−t)) at t = y aᵀv
			floats.AddScaled(g, -inv*y*p, ar)
			h.SymRankOne(h, inv*p*(1-p), mat.NewVecDense(k, ar))
		}
		var chol mat.Cholesky
		if !chol.Factorize(h) {
			break // non-finite records: keep the last finite head
		}
		var step mat.VecDense
		if err := chol.SolveVecTo(&step, mat.NewVecDense(k, g)); err != nil {
			break
		}
		next := make([]float64, k)
		floats.SubTo(next, v, step.RawVector().Data)
		if !allFinite(next) {
			break
		}
		v = next
	}
	return v
}

// logisticGradient returns ∇_U (1/|B′|) Σ_{B′} log(1 + exp(−y xᵀUv)) =
// −(1/|B′|) Σ y·σ(−y xᵀUv)·x vᵀ (no factor 2: η refers to this mean).
func (u *User) logisticGradient(U *mat.Dense, v []float64, rows []int) *mat.Dense {
	d, k := U.Dims()
	w := make([]float64, d)
	mat.NewVecDense(d, w).MulVec(U, mat.NewVecDense(k, v))
	g := make([]float64, d)
	for _, j := range rows {
		xj := u.x.RawRowView(j)
		y := label(u.y[j])
		floats.AddScaled(g, -y*sigmoid(-y*floats.Dot(xj, w)), xj)
	}
	out := mat.NewDense(d, k, nil)
	scale := 1 / float64(max(len(rows), 1))
	for i := range d {
		row := out.RawRowView(i)
		for c := range k {
			row[c] = scale * g[i] * v[c]
		}
	}
	return out
}

// label reads a response as a class: +1 when positive, −1 otherwise
// (NaN included), a public per-record rule.
func label(y float64) float64 {
	if y > 0 {
		return 1
	}
	return -1
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
