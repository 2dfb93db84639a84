package synth

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// recipes lists every Data generator at small test sizes.
var recipes = []struct {
	name    string
	n, d, k int
	clipped bool
	gen     func(seed uint64) (*Data, error)
}{
	{"Spiked", 20000, 8, 2, false, func(s uint64) (*Data, error) { return Spiked(s, 20000, 8, []float64{4, 2}, 0.5) }},
	{"SpikedFullRank", 3000, 3, 3, false, func(s uint64) (*Data, error) { return Spiked(s, 3000, 3, []float64{3, 2, 1}, 0) }},
	{"APMGaussian", 20000, 20, 1, true, func(s uint64) (*Data, error) { return APMGaussian(s, 20000, 20, 0.05) }},
	{"Gaussian", 20000, 10, 1, false, func(s uint64) (*Data, error) { return Gaussian(s, 20000, 10, []float64{1, 0.5}) }},
	{"GaussianTwoTop", 20000, 6, 2, false, func(s uint64) (*Data, error) { return Gaussian(s, 20000, 6, []float64{2, 2, 1, 0.5}) }},
	{"Example41", 20000, 10, 1, false, func(s uint64) (*Data, error) { return Example41(s, 20000, 10, 0.3) }},
	{"SparseSpiked", 20000, 40, 2, true, func(s uint64) (*Data, error) { return SparseSpiked(s, 20000, 40, 10, []float64{10, 5}) }},
	// Spans several row blocks with a ragged last block.
	{"SpikedBlocks", 3*blockRows + 17, 5, 1, false, func(s uint64) (*Data, error) { return Spiked(s, 3*blockRows+17, 5, []float64{1}, 1) }},
}

func TestShapesAndTruth(t *testing.T) {
	for _, tc := range recipes {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.gen(1)
			if err != nil {
				t.Fatal(err)
			}
			if r, c := data.X.Dims(); r != tc.n || c != tc.d {
				t.Fatalf("X is %d×%d, want %d×%d", r, c, tc.n, tc.d)
			}
			if r, c := data.U.Dims(); r != tc.d || c != tc.k {
				t.Fatalf("U is %d×%d, want %d×%d", r, c, tc.d, tc.k)
			}
			if len(data.Values) != tc.k {
				t.Fatalf("%d values, want %d", len(data.Values), tc.k)
			}
			// U orthonormal.
			var utu mat.Dense
			utu.Mul(data.U.T(), data.U)
			if !mat.EqualApprox(&utu, eye(tc.k), 1e-12) {
				t.Errorf("UᵀU ≠ I:\n%v", mat.Formatted(&utu))
			}
			// U's columns are eigenvectors of Cov for Values, and Values,
			// Next are the top k+1 eigenvalues of Cov.
			cov := data.Cov()
			var cu, ul mat.Dense
			cu.Mul(cov, data.U)
			ul.Mul(data.U, mat.NewDiagDense(tc.k, data.Values))
			if !mat.EqualApprox(&cu, &ul, 1e-12) {
				t.Errorf("Cov·U ≠ U·diag(Values)")
			}
			var es mat.EigenSym
			if !es.Factorize(cov, false) {
				t.Fatal("eigendecomposition of Cov failed")
			}
			ev := es.Values(nil) // ascending
			for i, v := range data.Values {
				if got := ev[tc.d-1-i]; math.Abs(got-v) > 1e-12*ev[tc.d-1] {
					t.Errorf("eigenvalue %d of Cov = %v, Values[%d] = %v", i, got, i, v)
				}
			}
			if tc.k < tc.d {
				if got := ev[tc.d-1-tc.k]; math.Abs(got-data.Next) > 1e-12*ev[tc.d-1] {
					t.Errorf("eigenvalue %d of Cov = %v, Next = %v", tc.k, got, data.Next)
				}
				if !(data.Values[tc.k-1] > data.Next) {
					t.Errorf("no eigengap: Values[k-1] = %v, Next = %v", data.Values[tc.k-1], data.Next)
				}
			}
		})
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	for _, tc := range recipes {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.gen(7)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := tc.gen(7)
			c, _ := tc.gen(8)
			if !mat.Equal(a.X, b.X) || !mat.Equal(a.U, b.U) {
				t.Error("same seed gave different data")
			}
			if mat.Equal(a.X, c.X) {
				t.Error("seeds 7 and 8 gave identical data")
			}
		})
	}
}

// The data must not depend on how many cores filled them.
func TestIndependentOfCores(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	one, err := Spiked(3, 5*blockRows+3, 4, []float64{2}, 1)
	runtime.GOMAXPROCS(max(prev, 2))
	many, _ := Spiked(3, 5*blockRows+3, 4, []float64{2}, 1)
	fOne, _ := FedRep(3, 37, 4, 5, 2, 0.1)
	runtime.GOMAXPROCS(1)
	fMany, _ := FedRep(3, 37, 4, 5, 2, 0.1)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(one.X, many.X) {
		t.Error("Spiked data depend on GOMAXPROCS")
	}
	if !mat.Equal(fOne.X, fMany.X) || !floats.Equal(fOne.Y, fMany.Y) {
		t.Error("FedRep data depend on GOMAXPROCS")
	}
}

// The sample second-moment matrix is within 6 standard errors of Cov in
// every entry. The standard error of entry (i, j) is estimated from the
// sample variance of x_i·x_j, so the tolerance adapts to each recipe's
// fourth moments; over ≤ 820 entries a 6-SE deviation has probability
// < 1e-6 under the central limit theorem. The clipped recipes are compared
// with the unclipped Cov: TestClipping shows that (almost) no row is clipped.
func TestSampleCovariance(t *testing.T) {
	for _, tc := range recipes {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.gen(11)
			if err != nil {
				t.Fatal(err)
			}
			cov := data.Cov()
			n := float64(tc.n)
			worst := 0.0
			for i := range tc.d {
				for j := i; j < tc.d; j++ {
					var s, ss float64
					for r := range tc.n {
						p := data.X.At(r, i) * data.X.At(r, j)
						s += p
						ss += p * p
					}
					mean := s / n
					se := math.Sqrt((ss/n - mean*mean) / n)
					tol := 6 * se
					dev := math.Abs(mean - cov.At(i, j))
					if dev > tol {
						t.Errorf("entry (%d,%d): sample %v, population %v, tolerance %v", i, j, mean, cov.At(i, j), tol)
					}
					worst = max(worst, dev/tol)
				}
			}
			t.Logf("largest deviation / tolerance = %.3f", worst)
		})
	}
}

func TestClipping(t *testing.T) {
	for _, tc := range recipes {
		if !tc.clipped {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.gen(5)
			if err != nil {
				t.Fatal(err)
			}
			for r := range tc.n {
				if nrm := floats.Norm(data.X.RawRowView(r), 2); nrm > 1+1e-12 {
					t.Fatalf("row %d has norm %v > 1", r, nrm)
				}
			}
			// The scales are chosen so that clipping is rare (s_L is a
			// high-probability norm bound; B = 2√tr Σ is twice the RMS norm).
			if data.Clipped > tc.n/1000 {
				t.Errorf("%d of %d rows clipped; the recipe's scale should make clipping rare", data.Clipped, tc.n)
			}
		})
	}
	// ClipRows itself, on rows of known norms.
	x := mat.NewDense(3, 2, []float64{3, 4, 0.3, 0.4, 0, 0})
	c, err := ClipRows(x, 1)
	if err != nil || c != 1 {
		t.Fatalf("ClipRows = %d, %v; want 1 row clipped", c, err)
	}
	want := mat.NewDense(3, 2, []float64{0.6, 0.8, 0.3, 0.4, 0, 0})
	if !mat.EqualApprox(x, want, 1e-15) {
		t.Errorf("ClipRows gave\n%v", mat.Formatted(x))
	}
	if _, err := ClipRows(x, 0); err == nil {
		t.Error("ClipRows accepted bound 0")
	}
}

func TestRecipeSpecifics(t *testing.T) {
	apm, _ := APMGaussian(1, 1000, 20, 0.05)
	if want := 1 + math.Sqrt(2*math.Log(4*1000/0.05)); math.Abs(apm.Scale-want) > 1e-12 {
		t.Errorf("APM s_L = %v, want %v", apm.Scale, want)
	}
	if apm.U.At(0, 0) != 1 {
		t.Error("APM truth is not e1")
	}
	if got, want := apm.Values[0]/apm.Next, 4.0; math.Abs(got-want) > 1e-12 {
		t.Errorf("APM λ1/λ2 = %v, want %v", got, want)
	}

	g, _ := Gaussian(1, 10, 10, []float64{1, 0.5})
	if g.Values[0] != 1 || g.Next != 0.5 || g.Cov().At(9, 9) != 0.5 {
		t.Errorf("Gaussian{1, 0.5} padding: Values %v, Next %v, Σ_dd %v", g.Values, g.Next, g.Cov().At(9, 9))
	}

	// Example 4.1: the first coordinate is ±1 + σν; with σ = 0 exactly ±1,
	// both signs about equally often.
	e, _ := Example41(2, 4000, 3, 0)
	plus := 0
	for r := range 4000 {
		switch v := e.X.At(r, 0); v {
		case 1:
			plus++
		case -1:
		default:
			t.Fatalf("σ = 0 row %d has x1 = %v, want ±1", r, v)
		}
		if e.X.At(r, 1) != 0 || e.X.At(r, 2) != 0 {
			t.Fatalf("σ = 0 row %d has noise", r)
		}
	}
	// 4000 fair signs: 6 standard deviations is ±190.
	if plus < 2000-190 || plus > 2000+190 {
		t.Errorf("%d of 4000 signs positive", plus)
	}

	// Sparse spiked: U is supported on the first s rows.
	sp, _ := SparseSpiked(4, 10, 50, 10, []float64{10, 5})
	for i := 10; i < 50; i++ {
		for j := range 2 {
			if sp.U.At(i, j) != 0 {
				t.Fatalf("SparseSpiked U(%d,%d) = %v outside the support", i, j, sp.U.At(i, j))
			}
		}
	}
	if want := 2 * math.Sqrt(15+50); math.Abs(sp.Scale-want) > 1e-12 {
		t.Errorf("SparseSpiked B = %v, want %v", sp.Scale, want)
	}
}

func TestFedRep(t *testing.T) {
	const users, m, d, k, R = 2000, 10, 50, 2, 0.01
	f, err := FedRep(9, users, m, d, k, R)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := f.X.Dims(); r != users*m || c != d || len(f.Y) != users*m {
		t.Fatalf("X %d×%d, Y %d", r, c, len(f.Y))
	}
	var utu mat.Dense
	utu.Mul(f.UStar.T(), f.UStar)
	if !mat.EqualApprox(&utu, eye(k), 1e-12) {
		t.Error("U* not orthonormal")
	}
	// Residuals y − xᵀU*v_i are the noise: their RMS is R within 5%
	// (20000 draws: the RMS has relative SE 1/√(2·20000) = 0.5%).
	var ss float64
	w := mat.NewVecDense(d, nil)
	for i := range users {
		xi, yi := f.User(i)
		w.MulVec(f.UStar, f.V.RowView(i))
		for j := range m {
			r := yi[j] - mat.Dot(xi.RowView(j), w)
			ss += r * r
		}
	}
	if rms := math.Sqrt(ss / float64(users*m)); math.Abs(rms/R-1) > 0.05 {
		t.Errorf("residual RMS %v, want R = %v", rms, R)
	}
	// The heads are N(0, I_k): mean of ‖v‖² is k within 6 SE (SE = √(2k/users)).
	var vv float64
	for i := range users {
		vv += mat.Dot(f.V.RowView(i), f.V.RowView(i))
	}
	if mean := vv / users; math.Abs(mean-k) > 6*math.Sqrt(2.0*k/users) {
		t.Errorf("mean ‖v_i‖² = %v, want %d", mean, k)
	}
	// The metric: the truth scores R², zero heads score E‖v‖² + R².
	mse, err := f.PopulationMSE(f.UStar, f.V)
	if err != nil || math.Abs(mse-R*R) > 1e-15 {
		t.Errorf("MSE(U*, V*) = %v, %v; want R² = %v", mse, err, R*R)
	}
	zero, _ := f.PopulationMSE(f.UStar, mat.NewDense(users, k, nil))
	if want := vv/users + R*R; math.Abs(zero-want) > 1e-12 {
		t.Errorf("MSE with zero heads = %v, want %v", zero, want)
	}
	if _, err := f.PopulationMSE(f.UStar, mat.NewDense(users-1, k, nil)); err == nil {
		t.Error("PopulationMSE accepted heads of the wrong shape")
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"Spiked n=0", second(Spiked(1, 0, 3, []float64{1}, 1)), "n = 0"},
		{"Spiked d=0", second(Spiked(1, 3, 0, []float64{1}, 1)), "d = 0"},
		{"Spiked k>d", second(Spiked(1, 3, 1, []float64{2, 1}, 1)), "k ≤ d"},
		{"Spiked increasing", second(Spiked(1, 3, 3, []float64{1, 2}, 1)), "non-increasing"},
		{"Spiked zero spike", second(Spiked(1, 3, 3, []float64{0}, 1)), "> 0"},
		{"Spiked negative noise", second(Spiked(1, 3, 3, []float64{1}, -1)), "noise"},
		{"Spiked huge", second(Spiked(1, 1<<30, 1<<10, []float64{1}, 1)), "cells"},
		{"APM d=1", second(APMGaussian(1, 3, 1, 0.05)), "d ≥ 2"},
		{"APM beta", second(APMGaussian(1, 3, 3, 1)), "beta"},
		{"Gaussian flat", second(Gaussian(1, 3, 3, []float64{1})), "all eigenvalues equal"},
		{"Gaussian too many", second(Gaussian(1, 3, 2, []float64{3, 2, 1})), "at most d"},
		{"Gaussian NaN", second(Gaussian(1, 3, 2, []float64{math.NaN()})), "> 0"},
		{"Example41 sigma", second(Example41(1, 3, 2, -1)), "sigma"},
		{"SparseSpiked s<k", second(SparseSpiked(1, 3, 20, 1, []float64{2, 1})), "k = 2 ≤ s"},
		{"FedRep users", second(FedRep(1, 0, 3, 4, 1, 0.1)), "users = 0"},
		{"FedRep k", second(FedRep(1, 3, 3, 4, 5, 0.1)), "k = 5"},
		{"FedRep R", second(FedRep(1, 3, 3, 4, 1, math.Inf(1))), "R = "},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func eye(k int) *mat.Dense {
	m := mat.NewDense(k, k, nil)
	for i := range k {
		m.Set(i, i, 1)
	}
	return m
}

func BenchmarkSpiked(b *testing.B) {
	for b.Loop() {
		if _, err := Spiked(1, 100000, 50, []float64{4, 2, 1}, 1); err != nil {
			b.Fatal(err)
		}
	}
}
