package linalg

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randDense(r *rand.Rand, rows, cols int) *mat.Dense {
	m := mat.NewDense(rows, cols, nil)
	for i := range rows {
		for j := range cols {
			m.Set(i, j, r.NormFloat64())
		}
	}
	return m
}

// orthoErr returns max |QᵀQ − I|.
func orthoErr(q *mat.Dense) float64 {
	_, k := q.Dims()
	var g mat.Dense
	g.Mul(q.T(), q)
	worst := 0.0
	for i := range k {
		for j := range k {
			want := 0.0
			if i == j {
				want = 1
			}
			worst = math.Max(worst, math.Abs(g.At(i, j)-want))
		}
	}
	return worst
}

func TestOrthonormalizeFullRank(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][2]int{{1, 1}, {5, 1}, {5, 5}, {50, 2}, {300, 7}} {
		a := randDense(r, sz[0], sz[1])
		q, padded := Orthonormalize(a, nil)
		if padded != 0 {
			t.Errorf("%v: padded %d columns of a full-rank matrix", sz, padded)
		}
		if e := orthoErr(q); e > 1e-10 {
			t.Errorf("%v: ‖QᵀQ − I‖max = %g > 1e-10", sz, e)
		}
		// R = Qᵀa must be upper triangular with a positive diagonal and Q·R = a.
		var rr mat.Dense
		rr.Mul(q.T(), a)
		for i := range sz[1] {
			if rr.At(i, i) <= 0 {
				t.Errorf("%v: R[%d,%d] = %g, want > 0", sz, i, i, rr.At(i, i))
			}
			for j := range i {
				if math.Abs(rr.At(i, j)) > 1e-10 {
					t.Errorf("%v: R[%d,%d] = %g below the diagonal", sz, i, j, rr.At(i, j))
				}
			}
		}
		var back mat.Dense
		back.Mul(q, &rr)
		if !mat.EqualApprox(&back, a, 1e-10) {
			t.Errorf("%v: Q·R differs from a", sz)
		}
	}
}

func TestOrthonormalizeRankDeficient(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Row support {2, 5, 7}; column 1 = 2·column 0, column 2 independent.
	d := 10
	a := mat.NewDense(d, 3, nil)
	for _, i := range []int{2, 5, 7} {
		x := r.NormFloat64()
		a.Set(i, 0, x)
		a.Set(i, 1, 2*x)
		a.Set(i, 2, r.NormFloat64())
	}
	support := []int{2, 5, 7}
	q, padded := Orthonormalize(a, support)
	if padded != 1 {
		t.Fatalf("padded %d columns, want 1", padded)
	}
	if e := orthoErr(q); e > 1e-10 {
		t.Errorf("‖QᵀQ − I‖max = %g > 1e-10", e)
	}
	for i := range d {
		if slices.Contains(support, i) {
			continue
		}
		for j := range 3 {
			if q.At(i, j) != 0 {
				t.Errorf("Q[%d,%d] = %g outside the preferred support", i, j, q.At(i, j))
			}
		}
	}
	for _, v := range q.RawMatrix().Data {
		if math.IsNaN(v) {
			t.Fatal("NaN in Q")
		}
	}
	// The zero matrix becomes unit vectors from the preferred rows.
	z, padded := Orthonormalize(mat.NewDense(4, 2, nil), []int{3, 1})
	if padded != 2 || z.At(3, 0) != 1 || z.At(1, 1) != 1 {
		t.Errorf("zero matrix: padded %d, Q = %v; want e3, e1", padded, mat.Formatted(z))
	}
}

func TestOrthonormalizeInPlaceMatchesOrthonormalize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := randDense(r, 40, 4)
	q, _ := Orthonormalize(a, nil)
	y := mat.DenseCopyOf(a)
	rdiag := OrthonormalizeInPlace(y)
	if !mat.Equal(q, y) {
		t.Error("OrthonormalizeInPlace and Orthonormalize differ on a full-rank matrix")
	}
	for j, v := range rdiag {
		if !(v > 0) {
			t.Errorf("R[%d,%d] = %v, want > 0", j, j, v)
		}
	}
}

func TestTopEigen(t *testing.T) {
	s := mat.NewSymDense(3, []float64{
		2, 0, 0,
		0, 5, 0,
		0, 0, 1,
	})
	v, vals, err := TopEigen(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := mat.NewDense(3, 2, []float64{0, 1, 1, 0, 0, 0})
	if !mat.EqualApprox(v, want, 1e-12) {
		t.Errorf("top eigenvectors %v, want %v", mat.Formatted(v), mat.Formatted(want))
	}
	if math.Abs(vals[0]-5) > 1e-12 || math.Abs(vals[1]-2) > 1e-12 {
		t.Errorf("top eigenvalues %v, want [5 2]", vals)
	}
	// A negative-dominant eigenvector is flipped to a positive largest entry.
	neg := mat.NewSymDense(2, []float64{1, -2, -2, 1}) // top vector ∝ (1, −1)
	v, _, err = TopEigen(neg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.At(0, 0) <= 0 || v.At(1, 0) >= 0 {
		t.Errorf("sign convention: got %v, want (+, −) with the first largest entry positive", mat.Formatted(v))
	}
	for _, k := range []int{0, 4} {
		if _, _, err := TopEigen(s, k); err == nil {
			t.Errorf("k=%d accepted for a 3×3 matrix", k)
		}
	}
}
