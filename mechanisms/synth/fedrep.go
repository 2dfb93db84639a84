package synth

// Recipe: Private FedRep experiment data (Private Model Personalization
// Revisited, seed 004, Sec 3.4 / App B.4; federated.md §2.5).

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// FedRepData is a personalised linear-regression data set: user i holds m
// records (x_ij, y_ij) with y_ij = x_ijᵀ U* v_i* + ζ_ij.
type FedRepData struct {
	// X holds all records, (Users·M)×d; user i owns rows i·M … (i+1)·M−1.
	X *mat.Dense
	// Y holds the responses, aligned with the rows of X.
	Y []float64
	// UStar (d×k, orthonormal columns) is the shared representation.
	UStar *mat.Dense
	// V (Users×k) holds the heads: row i is v_i*.
	V *mat.Dense
	// Users and M are the number of users and records per user.
	Users, M int
	// R is the standard deviation of the response noise ζ.
	R float64
}

// FedRep draws federated.md §2.5's data: x ~ N(0, I_d), U* the Q factor of a
// d×k Gaussian matrix, v_i* ~ N(0, I_k) per user, y = xᵀU*v_i* + N(0, R²).
// The paper's setting is users = 20000, m = 10, d = 50, k = 2, R = 0.01.
// Each user's records come from the user's own PCG stream, so a user's data
// do not depend on the other users.
func FedRep(seed uint64, users, m, d, k int, r float64) (*FedRepData, error) {
	if users < 1 || m < 1 {
		return nil, fmt.Errorf("synth.FedRep: users = %d, m = %d; need at least one user with at least one record", users, m)
	}
	if err := checkSizes("FedRep", users*m, d); err != nil {
		return nil, err
	}
	if k < 1 || k > d {
		return nil, fmt.Errorf("synth.FedRep: k = %d for d = %d; need 1 ≤ k ≤ d", k, d)
	}
	if !(r >= 0) || math.IsInf(r, 1) {
		return nil, fmt.Errorf("synth.FedRep: R = %v; need a finite noise standard deviation ≥ 0", r)
	}
	ustar := haar(newRand(seed, tagTruth, 6), d, k)
	v := mat.NewDense(users, k, nil)
	x := mat.NewDense(users*m, d, nil)
	y := make([]float64, users*m)
	parallelFor(users, func(i int) {
		rng := newRand(seed, tagRows^6, uint64(i))
		vi := v.RawRowView(i)
		for l := range vi {
			vi[l] = rng.NormFloat64()
		}
		wi := make([]float64, d)
		for j := range d {
			var s float64
			for l := range k {
				s += ustar.At(j, l) * vi[l]
			}
			wi[j] = s
		}
		for rec := range m {
			row := x.RawRowView(i*m + rec)
			var dot float64
			for j := range row {
				row[j] = rng.NormFloat64()
				dot += row[j] * wi[j]
			}
			y[i*m+rec] = dot + r*rng.NormFloat64()
		}
	})
	return &FedRepData{X: x, Y: y, UStar: ustar, V: v, Users: users, M: m, R: r}, nil
}

// User returns user i's records: a view of its m rows of X and of Y.
func (f *FedRepData) User(i int) (*mat.Dense, []float64) {
	return f.X.Slice(i*f.M, (i+1)*f.M, 0, f.X.RawMatrix().Cols).(*mat.Dense), f.Y[i*f.M : (i+1)*f.M]
}

// PopulationMSE is the population mean squared error averaged over users of
// the personalised models w_i = U v_i (federated.md §2.5 metric):
// (1/n) Σ_i ‖U v_i − U* v_i*‖² + R², exact because x has identity
// covariance. u is d×k' and heads is Users×k' (row i = v_i).
func (f *FedRepData) PopulationMSE(u, heads *mat.Dense) (float64, error) {
	d, _ := f.UStar.Dims()
	ud, uk := u.Dims()
	hn, hk := heads.Dims()
	if ud != d || hn != f.Users || hk != uk {
		return 0, fmt.Errorf("synth.PopulationMSE: U is %d×%d and heads %d×%d; need U d×k' with d = %d and heads %d×k'", ud, uk, hn, hk, d, f.Users)
	}
	var w, ws mat.Dense
	w.Mul(heads, u.T())      // Users×d: row i = (U v_i)ᵀ
	ws.Mul(f.V, f.UStar.T()) // Users×d
	w.Sub(&w, &ws)
	var sum float64
	for i := range f.Users {
		for _, e := range w.RawRowView(i) {
			sum += e * e
		}
	}
	return sum/float64(f.Users) + f.R*f.R, nil
}
