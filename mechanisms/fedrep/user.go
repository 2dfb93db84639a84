package fedrep

// The user side of Private FedRep (seed 004, Algorithm 2 line 3 and
// Algorithm 1 lines 5–8; federated.md §2.2 with the batch rule of §2.5).

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Step names what a FedRep round asks the users for.
type Step int

const (
	// StepInit: the matrix Z_i of Algorithm 2 (d×d, symmetric).
	StepInit Step = iota + 1
	// StepGradient: the gradient ∇_U of the squared loss at (U_t, v_i,t) on a
	// fresh batch (d×k), Algorithm 1.
	StepGradient
)

func (s Step) String() string {
	switch s {
	case StepInit:
		return "init"
	case StepGradient:
		return "gradient"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// Request is the coordinator's message of one round. All fields are public.
type Request struct {
	Round int
	Step  Step
	// U is the broadcast representation U_t (d×k, StepGradient only).
	U *mat.Dense
	// Iters is T and Batch the requested batch size (0: automatic); the
	// users resolve the batch rule from them (see Options.Batch).
	Iters, Batch int
}

// Reply is what leaves a user in one round: exactly one of Z (StepInit) or
// Grad (StepGradient). The coordinator clips it before use.
type Reply struct {
	Z    *mat.SymDense
	Grad *mat.Dense
}

// User holds one user's records (x_ij, y_ij), j < m. The first m₀ = ⌊m/2⌋
// records form S⁰ (initialisation and training batches), the rest S¹ (the
// user's own head, Algorithm 1 line 10).
type User struct {
	x    *mat.Dense
	y    []float64
	m0   int
	seed uint64
	loss Loss
}

// MinRecords is the fewest records a user may hold: S⁰ needs two records
// (Z_i is built from pairs; the batches B, B′ need one each) and S¹ two.
const MinRecords = 4

// NewUser returns a user over the records x (m×d) and responses y (kept by
// reference; do not modify them while the user is in use). Batch draws use
// randomness from crypto/rand; they do not affect privacy (clipping bounds
// a user's whole contribution), only which records are used when.
func NewUser(x *mat.Dense, y []float64) (*User, error) {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("fedrep: seeding batch draws: %w", err)
	}
	return NewUserSeeded(x, y, binary.LittleEndian.Uint64(b[:]))
}

// NewUserSeeded is NewUser with reproducible batch draws, for experiments.
func NewUserSeeded(x *mat.Dense, y []float64, seed uint64) (*User, error) {
	if x == nil || x.IsEmpty() {
		return nil, errors.New("fedrep: a user needs a record matrix")
	}
	m, _ := x.Dims()
	if len(y) != m {
		return nil, errors.New("fedrep: the responses do not match the records: give one response per record") // no counts: they describe the user's data
	}
	if m < MinRecords {
		return nil, fmt.Errorf("fedrep: a user needs at least %d records (two to train, two for its own head)", MinRecords)
	}
	return &User{x: x, y: y, m0: m / 2, seed: seed}, nil
}

// Dim returns the number of features d (public schema).
func (u *User) Dim() int { _, d := u.x.Dims(); return d }

// Answer implements federated.Provider.
func (u *User) Answer(ctx context.Context, req Request) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	switch req.Step {
	case StepInit:
		return Reply{Z: u.initMatrix()}, nil
	case StepGradient:
		if req.U == nil {
			return Reply{}, fmt.Errorf("round %d: no broadcast representation", req.Round)
		}
		d, k := req.U.Dims()
		if d != u.Dim() || k < 1 {
			return Reply{}, fmt.Errorf("round %d: broadcast U is %d×%d, the user has %d features", req.Round, d, k, u.Dim())
		}
		bv, bg, err := u.batches(req.Round, req.Iters, req.Batch, k)
		if err != nil {
			return Reply{}, fmt.Errorf("round %d: %w", req.Round, err)
		}
		if u.loss == Logistic {
			v := u.fitLogisticHead(req.U, bv)
			return Reply{Grad: u.logisticGradient(req.U, v, bg)}, nil
		}
		v := u.fitHead(req.U, bv)
		return Reply{Grad: u.gradient(req.U, v, bg)}, nil
	}
	return Reply{}, fmt.Errorf("round %d: unknown step %v", req.Round, req.Step)
}

// initMatrix returns Z_i = c·Σ_{j₁≠j₂} y_j₁ y_j₂ x_j₁ x_j₂ᵀ over S⁰, computed
// in O(m₀d²) as c·(a aᵀ − Σ_j y_j² x_j x_jᵀ) with a = Σ_j y_j x_j. The
// normalisation c = 1/(m₀(m₀−1)) makes E Z_i = w_i w_iᵀ (federated.md §2.2
// [P]; the paper's 2/(m(m−1)) differs by a constant, which only rescales
// ψ_init).
func (u *User) initMatrix() *mat.SymDense {
	_, d := u.x.Dims()
	a := make([]float64, d)
	z := mat.NewSymDense(d, nil)
	for j := range u.m0 {
		xj := u.x.RawRowView(j)
		yj := u.y[j]
		for i, v := range xj {
			a[i] += yj * v
		}
		z.SymRankOne(z, -yj*yj, mat.NewVecDense(d, xj))
	}
	z.SymRankOne(z, 1, mat.NewVecDense(d, a))
	c := 1 / float64(u.m0*(u.m0-1))
	z.ScaleSym(c, z)
	return z
}

// batches returns the indices (into S⁰) of the disjoint batches B and B′ of
// the given round. Rule (federated.md §2.5): with b = the requested size,
// or ⌊m₀/(2T)⌋ when none is requested, batches are fresh across rounds
// (disjoint slices of one random permutation of S⁰, as the paper's analysis
// assumes) when b ≥ 1 and 2bT ≤ m₀ (and, for the automatic size, b ≥ k so
// the head fit is well posed). Otherwise each round draws a new random
// split of S⁰: |B| = |B′| = b if requested, else |B| = ⌈m₀/2⌉, |B′| = ⌊m₀/2⌋.
// A requested b larger than ⌊m₀/2⌋ is lowered to ⌊m₀/2⌋ ≥ 1 (m₀ ≥ 2 since
// every user holds MinRecords): the rule is public and per user, and the
// batches do not affect privacy (clipping bounds a user's whole
// contribution), so a user with few records never makes the run fail after
// its charge (project issue 10), nor does the failure of one tell anything
// about its record count.
func (u *User) batches(round, iters, batch, k int) (bv, bg []int, err error) {
	m0 := u.m0
	fresh := false
	sv, sg := batch, batch
	if batch == 0 {
		b := m0 / (2 * max(iters, 1))
		if b >= k {
			fresh, sv, sg = true, b, b
		} else {
			sv, sg = m0-m0/2, m0/2
		}
	} else {
		if batch < 0 {
			return nil, nil, fmt.Errorf("batch size %d: need a batch ≥ 1, or 0 for the automatic rule", batch)
		}
		if 2*batch > m0 {
			batch = m0 / 2
			sv, sg = batch, batch
		}
		fresh = 2*batch*iters <= m0
	}
	var perm []int
	if fresh {
		perm = rand.New(rand.NewPCG(u.seed, 0)).Perm(m0)
		off := 2 * sv * round
		if round < 0 || off+2*sv > m0 {
			return nil, nil, fmt.Errorf("round %d is beyond the %d rounds the batches were drawn for", round, iters)
		}
		return perm[off : off+sv], perm[off+sv : off+2*sv], nil
	}
	perm = rand.New(rand.NewPCG(u.seed, uint64(round)+1)).Perm(m0)
	return perm[:sv], perm[sv : sv+sg], nil
}

// fitHead returns v = argmin_v Σ_{j∈rows} (y_j − x_jᵀ U v)², the
// minimum-norm solution (a pseudo-inverse when the batch has fewer records
// than k or is rank deficient; federated.md §2.2). Well-conditioned fits
// (the common case) use the k×k normal equations; the others the SVD.
func (u *User) fitHead(U *mat.Dense, rows []int) []float64 {
	d, k := U.Dims()
	ur := U.RawMatrix()
	a := mat.NewDense(len(rows), k, nil)
	y := make([]float64, len(rows))
	for r, j := range rows {
		xj := u.x.RawRowView(j)
		ar := a.RawRowView(r)
		for i := range d {
			xi := xj[i]
			urow := ur.Data[i*ur.Stride : i*ur.Stride+k]
			for c := range k {
				ar[c] += xi * urow[c]
			}
		}
		y[r] = u.y[j]
	}
	if len(rows) >= k {
		var g mat.SymDense
		g.SymOuterK(1, a.T())
		var chol mat.Cholesky
		if chol.Factorize(&g) && chol.Cond() < 1e8 {
			var aty, v mat.VecDense
			aty.MulVec(a.T(), mat.NewVecDense(len(y), y))
			if err := chol.SolveVecTo(&v, &aty); err == nil {
				return v.RawVector().Data
			}
		}
	}
	return leastSquares(a, y)
}

// gradient returns ∇_U (1/|B′|) Σ_{B′} (y − xᵀUv)² = (2/|B′|) Σ_{B′}
// (xᵀUv − y) x vᵀ (Algorithm 1 line 7 in the form of 004:L510, with the
// factor 2; η refers to this convention).
func (u *User) gradient(U *mat.Dense, v []float64, rows []int) *mat.Dense {
	d, k := U.Dims()
	ur := U.RawMatrix()
	w := make([]float64, d) // U v
	for i := range d {
		var s float64
		for c, vc := range v {
			s += ur.Data[i*ur.Stride+c] * vc
		}
		w[i] = s
	}
	g := make([]float64, d)
	for _, j := range rows {
		xj := u.x.RawRowView(j)
		r := floats.Dot(xj, w) - u.y[j]
		floats.AddScaled(g, r, xj)
	}
	out := mat.NewDense(d, k, nil)
	scale := 2 / float64(len(rows))
	for i := range d {
		row := out.RawRowView(i)
		for c := range k {
			row[c] = scale * g[i] * v[c]
		}
	}
	return out
}

// Personalize returns the user's head v_i = argmin_v L̂(U, v; S¹) (the
// user's loss: squared, or logistic with its ridge) for a
// released representation U (Algorithm 1 line 10). It runs on the user's
// side and its result stays there: it is not a differentially private
// release.
func (u *User) Personalize(U *mat.Dense) ([]float64, error) {
	if U == nil {
		return nil, errors.New("fedrep: no representation")
	}
	if d, _ := U.Dims(); d != u.Dim() {
		return nil, fmt.Errorf("fedrep: U has %d rows, the user has %d features", d, u.Dim())
	}
	m, _ := u.x.Dims()
	rows := make([]int, 0, m-u.m0)
	for j := u.m0; j < m; j++ {
		rows = append(rows, j)
	}
	if u.loss == Logistic {
		return u.fitLogisticHead(U, rows), nil
	}
	return u.fitHead(U, rows), nil
}

// LocalGD is the non-collaborative baseline: the user's own linear model on
// all its records, the limit of gradient descent from w = 0 on its squared
// loss, i.e. the minimum-norm least-squares solution (computed directly).
// With fewer records than features it interpolates. NOT private; it stays
// with the user.
func (u *User) LocalGD() []float64 {
	return leastSquares(u.x, u.y)
}

// leastSquares returns the minimum-norm minimiser of ‖a x − y‖₂ via the SVD.
// Singular values below 1e-12 of the largest count as zero; a zero matrix
// gives x = 0.
func leastSquares(a *mat.Dense, y []float64) []float64 {
	_, c := a.Dims()
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return make([]float64, c) // non-finite input; the coordinator drops the message
	}
	rank := svd.Rank(1e-12)
	if rank == 0 {
		return make([]float64, c)
	}
	var x mat.Dense
	svd.SolveTo(&x, mat.NewVecDense(len(y), y), rank)
	return x.RawMatrix().Data
}
