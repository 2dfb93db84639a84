package linalg

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg/exact"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// check fails t unless every entry is within γ times its majorant, and
// returns the largest error/majorant ratio.
func check(t *testing.T, e *exact.Sums, name string, got []float64, gamma float64) float64 {
	t.Helper()
	bad, worst := e.Within(got, gamma)
	if bad >= 0 {
		t.Errorf("%s: entry %d exceeds γ = %.3g times its majorant (largest error/majorant %.3g)", name, bad, gamma, worst)
	}
	return worst
}

// unitScale returns min(1, 1/‖a‖) (0 for a zero row), enough for the
// kernels, which take the rule as given.
func unitScale(a []float64) float64 {
	nrm := blas64.Nrm2(blas64.Vector{N: len(a), Inc: 1, Data: a})
	switch {
	case nrm == 0:
		return 0
	case nrm <= 1:
		return 1
	}
	return 1 / nrm
}

// testInputs returns data on which a running sum loses accuracy: random
// rows over many magnitudes, cancelling ± rows, and one large row then
// thousands of rows a running sum rounds up.
func testInputs() map[string]*mat.Dense {
	rng := rand.New(rand.NewPCG(21, 21))
	const n, d = 3000, 5
	random, cancel := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			random.Set(i, j, rng.NormFloat64()*math.Exp(3*rng.NormFloat64()))
		}
	}
	// Cancelling rows: each pair is (v, −v·(1+ε)) entry by entry, every
	// fifth pair shrunk by 1e-8.
	for i := 0; i+1 < n; i += 2 {
		shrink := 1.0
		if i%10 == 8 {
			shrink = 1e-8
		}
		for j := range d {
			v := shrink * (1 + float64(j)/7)
			cancel.Set(i, j, v)
			cancel.Set(i+1, j, -v*(1+1e-9*rng.NormFloat64()))
		}
	}
	up := mat.NewDense(8000, 2, nil)
	for i := range 8000 {
		if i < 4095 {
			up.Set(i, 0, 1)
		} else {
			up.Set(i, 0, math.Sqrt(0.6*0x1p-40))
		}
	}
	return map[string]*mat.Dense{"random": random, "cancel": cancel, "round-up": up}
}

// TestRowSumsWithinBudget checks Gram (all columns and a subset),
// SumSquares and CovTimes against exact big.Float sums of their reference
// terms, entry by entry, with the rounding budgets the mechanisms charge.
func TestRowSumsWithinBudget(t *testing.T) {
	for name, x := range testInputs() {
		n, d := x.Dims()
		r := Rows{Src: rows.FromDense(x), Scale: unitScale, Pass: rowpass.Options{Workers: 2, MinRows: 1}}
		cols := []int{0, d - 1}
		q := mat.NewDense(d, 2, nil)
		for i := range d {
			q.Set(i, 0, 1/math.Sqrt(float64(d)))
		}
		q.Set(d-1, 1, 1)
		gram, sub, sq, cov := exact.New(d*d), exact.New(4), exact.New(d), exact.New(d*2)
		for i := range n {
			a := x.RawRowView(i)
			s := r.Scale(a)
			if s == 0 {
				continue
			}
			for j := range d {
				sq.Add(j, s, s, a[j], a[j])
				for k := j; k < d; k++ {
					gram.Add(j*d+k, s, s, a[j], a[k])
				}
				for c := range 2 {
					for l := range d {
						cov.Add(j*2+c, s, s, a[j], a[l], q.At(l, c))
					}
				}
			}
			for u, j := range cols {
				for v := u; v < len(cols); v++ {
					sub.Add(u*len(cols)+v, s, s, a[j], a[cols[v]])
				}
			}
		}
		g := Gram(t, r, nil)
		gw := check(t, gram, name+"/Gram", g, rowpass.Gamma(GramRoundings))
		check(t, sub, name+"/Gram(cols)", Gram(t, r, cols), rowpass.Gamma(GramRoundings))
		sw := check(t, sq, name+"/SumSquares", SumSquares(t, r), rowpass.Gamma(GramRoundings))
		cw := check(t, cov, name+"/CovTimes", CovTimes(t, r, q).RawMatrix().Data, rowpass.Gamma(CovTimesRoundings(d)))
		t.Logf("%s: largest error/Σ|majorant|: Gram %.3g, SumSquares %.3g, CovTimes %.3g (γ_%d = %.3g)",
			name, gw, sw, cw, GramRoundings, rowpass.Gamma(GramRoundings))
	}
}

// Gram is r.Gram with a background context; it fails t on an error.
func Gram(t *testing.T, r Rows, cols []int) []float64 {
	t.Helper()
	g, _, err := r.Gram(context.Background(), cols)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// SumSquares is r.SumSquares with a background context; it fails t on an
// error.
func SumSquares(t *testing.T, r Rows) []float64 {
	t.Helper()
	s, _, err := r.SumSquares(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CovTimes is r.CovTimes with a background context; it fails t on an
// error.
func CovTimes(t *testing.T, r Rows, q *mat.Dense) *mat.Dense {
	t.Helper()
	c, _, err := r.CovTimes(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRowSumsIdenticalAcrossWorkers pins the reduction order: every worker
// count gives the same bits, and Gram on a column subset equals the full
// Gram restricted to it.
func TestRowSumsIdenticalAcrossWorkers(t *testing.T) {
	x := testInputs()["random"]
	_, d := x.Dims()
	q := mat.NewDense(d, 2, nil)
	q.Set(0, 0, 1)
	q.Set(1, 1, 1)
	base := Rows{Src: rows.FromDense(x), Scale: unitScale, Pass: rowpass.Options{Workers: 1}}
	g0, s0, c0 := Gram(t, base, nil), SumSquares(t, base), CovTimes(t, base, q).RawMatrix().Data
	for _, opt := range []rowpass.Options{{Workers: 2, MinRows: 1}, {Workers: 3, MinRows: 300}, {}} {
		r := base
		r.Pass = opt
		for _, tc := range []struct {
			name      string
			got, want []float64
		}{
			{"Gram", Gram(t, r, nil), g0},
			{"SumSquares", SumSquares(t, r), s0},
			{"CovTimes", CovTimes(t, r, q).RawMatrix().Data, c0},
		} {
			for i := range tc.want {
				if math.Float64bits(tc.got[i]) != math.Float64bits(tc.want[i]) {
					t.Errorf("%+v %s: entry %d = %v, one worker gives %v", opt, tc.name, i, tc.got[i], tc.want[i])
					break
				}
			}
		}
	}
	cols := []int{1, 3, 4}
	sub := Gram(t, base, cols)
	for u, j := range cols {
		for v, k := range cols[u:] {
			if got, want := sub[u*len(cols)+u+v], g0[j*d+k]; math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("Gram(cols)[%d,%d] = %v, full Gram[%d,%d] = %v", u, u+v, got, j, k, want)
			}
		}
	}
}

// TestStreamMatchesPairwise shows that Stream sums in exactly the order of
// rowpass.Pairwise (so its error bound holds), bit for bit.
func TestStreamMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	const m = 3
	for _, n := range []int{0, 1, 255, 256, 257, 1000, 5*rowpass.BlockRows + 3, 40000} {
		terms := make([]float64, n*m)
		for i := range terms {
			terms[i] = rng.NormFloat64() * math.Exp(8*rng.NormFloat64())
		}
		want := rowpass.SumVec(n, m, rowpass.Options{Workers: 2, MinRows: 1}, func(acc []float64, lo, hi int) {
			for i := lo; i < hi; i++ {
				for j := range m {
					acc[j] += terms[i*m+j]
				}
			}
		})
		s := NewStream(m)
		for i := range n {
			s.Add(func(acc []float64) {
				for j := range m {
					acc[j] += terms[i*m+j]
				}
			})
		}
		if s.Terms() != n {
			t.Errorf("n=%d: Terms = %d", n, s.Terms())
		}
		got := s.Sum()
		for j := range m {
			if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
				t.Errorf("n=%d entry %d: Stream %v, Pairwise %v (must be bit identical)", n, j, got[j], want[j])
			}
		}
	}
}

// TestStreamErrorBound checks the bound directly on the input that defeats
// a running sum, and that a running sum breaks it (so the test can fail).
func TestStreamErrorBound(t *testing.T) {
	const n = 100000
	xs := make([]float64, n)
	xs[0] = 1
	for i := 1; i < n; i++ {
		xs[i] = 0.75 * 0x1p-52
	}
	e := exact.New(1)
	s := NewStream(1)
	naive := 0.0
	for _, x := range xs {
		e.Add(0, x)
		s.Add(func(acc []float64) { acc[0] += x })
		naive += x
	}
	check(t, e, "stream", s.Sum(), rowpass.Gamma(SumRoundings))
	if bad, _ := e.Within([]float64{naive}, rowpass.Gamma(SumRoundings)); bad < 0 {
		t.Error("a running sum met the pairwise bound: the input is not adversarial")
	}
}

func TestExcess(t *testing.T) {
	// 2·γ_h·2^30·r, rounded up: for h = 280, r = 1 about 6.7e-5.
	got := Excess(GramRoundings, 1)
	want := 2 * float64(GramRoundings) * 0x1p-53 * 0x1p30
	if !(got >= want && got < want*(1+1e-10)) {
		t.Errorf("Excess(%d, 1) = %v, want just above %v", GramRoundings, got, want)
	}
	if GramRoundings != 280 || CovTimesRoundings(100) != 380 {
		t.Errorf("budgets: GramRoundings = %d, CovTimesRoundings(100) = %d; want 280, 380 (3 + 255 + 22, 100 + 3 + 255 + 22)", GramRoundings, CovTimesRoundings(100))
	}
}

// InsideBall is a fast path of the row rules: every row it accepts, the
// exact rule (ScaledNorm) leaves unclipped, for rows just inside and just
// outside the bound, of every magnitude and dimension; and it accepts the
// rows well inside, so the fast path is taken.
func TestInsideBallAgreesWithScaledNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	accepted := 0
	for trial := range 200000 {
		d := 1 + rng.IntN(64)
		if trial%1000 == 0 {
			d = 1 + rng.IntN(5000)
		}
		a := make([]float64, d)
		for j := range a {
			a[j] = rng.NormFloat64()
		}
		big, rel, ok := ScaledNorm(a)
		if !ok || big == 0 {
			continue
		}
		// Put the row at a norm within a few parts in 1e6 of the clip
		// (relative), or well inside, at a random magnitude.
		clip := math.Ldexp(1+rng.Float64(), rng.IntN(600)-300)
		target := clip * (1 + (rng.Float64()-0.5)*1e-6)
		if trial%3 == 0 {
			target = clip * rng.Float64()
		}
		f := target / (big * rel)
		for j := range a {
			a[j] *= f
		}
		if !InsideBall(a, clip*clip) {
			continue
		}
		accepted++
		big, rel, _ = ScaledNorm(a)
		if inv := (1 / big) / rel; inv < 1/clip {
			t.Fatalf("d=%d clip=%v: InsideBall accepts a row the exact rule clips (‖a‖ = %v)", d, clip, big*rel)
		}
		if nrm := big * rel; nrm > clip {
			t.Fatalf("d=%d clip=%v: InsideBall accepts a row of norm %v", d, clip, nrm)
		}
	}
	if accepted < 50000 {
		t.Errorf("only %d rows took the fast path", accepted)
	}
	for _, a := range [][]float64{{0, 0}, {math.NaN(), 0}, {math.Inf(1)}, {1e200, 1}, {1e-200, 1e-200}, {0.5, 0.5}} {
		if InsideBall(a, 1) != (a[0] == 0.5) {
			t.Errorf("InsideBall(%v, 1) = %v", a, InsideBall(a, 1))
		}
	}
}
