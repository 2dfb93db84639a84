package dppca

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

func TestEigenBins(t *testing.T) {
	for _, tc := range []struct {
		lambda  float64
		quarter bool
		id      int64
		edge    float64
	}{
		{1, false, 0, 1}, {1.999, false, 0, 1}, {2, false, 1, 2}, {0.75, false, -1, 0.5},
		{3e-300, false, -995, math.Ldexp(1, -995)}, {0, false, zeroBin, 0}, {-1e-17, false, zeroBin, 0},
		{math.Inf(1), false, hugeBin, math.Inf(1)},
		{1, true, 0, 1}, {1.2, true, 1, math.Pow(2, 0.25)}, {0.6, true, -3, math.Pow(2, -0.75)},
		{4, true, 8, 4}, {0, true, zeroBin, 0},
	} {
		id := eigenBin(tc.lambda, tc.quarter)
		if id != tc.id {
			t.Errorf("bin(%v, quarter=%v) = %d, want %d", tc.lambda, tc.quarter, id, tc.id)
			continue
		}
		if e := eigenEdge(id, tc.quarter); math.Abs(e-tc.edge) > 1e-12*tc.edge {
			t.Errorf("edge(%d) = %v, want %v", id, e, tc.edge)
		}
		if tc.lambda > 0 && !math.IsInf(tc.lambda, 0) {
			ratio := 2.0
			if tc.quarter {
				ratio = math.Pow(2, 0.25)
			}
			if e := eigenEdge(id, tc.quarter); !(e <= tc.lambda && tc.lambda < e*ratio*(1+1e-12)) {
				t.Errorf("λ=%v is not in its bin [%v, %v)", tc.lambda, e, e*ratio)
			}
		}
	}
}

// gradients returns g_i = x_i(x_iᵀu) for the rows of x.
func gradientsOf(x *mat.Dense, u []float64) *mat.Dense {
	m, d := x.Dims()
	g := mat.NewDense(m, d, nil)
	for i := range m {
		row := x.RawRowView(i)
		dst := g.RawRowView(i)
		floats.ScaleTo(dst, floats.Dot(row, u), row)
	}
	return g
}

// oracleEigen is spec §8 item 4: for Gaussian x with covariance Σ, Cov(xxᵀu)
// = (uᵀΣu)Σ + Σuuᵀ Σ, and Algorithm 4 estimates twice its top eigenvalue.
func oracleEigen(sigma *mat.SymDense, u []float64) float64 {
	d := sigma.SymmetricDim()
	uv := mat.NewVecDense(d, u)
	var su mat.VecDense
	su.MulVec(sigma, uv)
	q := mat.Dot(uv, &su)
	c := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			c.SetSym(i, j, q*sigma.At(i, j)+su.AtVec(i)*su.AtVec(j))
		}
	}
	var eig mat.EigenSym
	eig.Factorize(c, false)
	v := eig.Values(nil)
	return 2 * v[len(v)-1]
}

// TestTopEigenvalueOracle is spec §8 item 4: on Gaussian gradients at a
// random direction u, Λ̂ lies within a bin of the oracle 2·λ_max(Cov(g)) in
// at least 90% of 20 seeds (ζ = 0.01; the tolerance adds the sampling
// error of the groups: ±35% for the default octave bins with groups of
// ≈ 200 pairs, ±20% for the paper's quarter-octave bins, which need groups
// of ≈ 2000 pairs, spec §5).
func TestTopEigenvalueOracle(t *testing.T) {
	const d = 10
	for _, quarter := range []bool{false, true} {
		m, tol := 40000, 0.35
		if quarter {
			m, tol = 400000, 0.2
		}
		good, found := 0, 0
		for seed := uint64(1); seed <= 20; seed++ {
			data, err := synth.Gaussian(seed, m, d, []float64{1, 0.5})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 7))
			u := make([]float64, d)
			for i := range u {
				u[i] = rng.NormFloat64()
			}
			floats.Scale(1/floats.Norm(u, 2), u)
			want := oracleEigen(data.Cov(), u)
			opt := Options{Eps: 0.8, Delta: 1e-6, QuarterBins: quarter, Noise: noise.NewSeeded(seed)}
			if quarter {
				opt.Groups = 100
			}
			res, err := TopEigenvalue(gradientsOf(data.X, u), opt)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found {
				continue
			}
			found++
			ratio := 2.0
			if quarter {
				ratio = math.Pow(2, 0.25)
			}
			if res.Value >= want/ratio*(1-tol) && res.Value <= want*(1+tol) {
				good++
			} else {
				t.Logf("quarter=%v seed %d: Λ̂=%v, oracle %v", quarter, seed, res.Value, want)
			}
		}
		if good < 18 {
			t.Errorf("quarter=%v: Λ̂ within a bin of the oracle in %d of 20 seeds (found %d), want ≥ 18", quarter, good, found)
		}
	}
}

func TestTopEigenvalueErrors(t *testing.T) {
	g := mat.NewDense(10, 2, nil)
	for _, tc := range []struct {
		name string
		g    *mat.Dense
		opt  Options
		want string
	}{
		// k = ⌈2 + 4·ln(1/(δζ))/ε⌉ = ⌈2 + 8·ln(1e8)⌉ = ⌈149.4⌉ = 150 groups
		// of ≥ 1 pair: 300 records.
		{"10 records for 150 groups", g, Options{Eps: 0.5, Delta: 1e-6},
			"dppca eigenvalue: 150 groups of at least one pair need at least 300 records (got 10 rows): raise eps or delta, set fewer groups, or give more data"},
		{"nil data", nil, Options{Eps: 0.5, Delta: 1e-6}, "dppca eigenvalue: no data matrix"},
		{"missing delta", g, Options{Eps: 0.5},
			"dppca eigenvalue: delta=0: delta must satisfy 0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)"},
		{"eps below the bound", g, Options{Eps: 1e-7, Delta: 1e-6}, "dppca eigenvalue: eps=1e-07: use 1e-06 ≤ eps ≤ 1e+06"},
	} {
		if _, err := TopEigenvalue(tc.g, tc.opt); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
