package fedrep

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The logistic user's gradient is the derivative of its mean logistic
// loss in U (central differences), and its head fit is the ridge
// minimiser (gradient zero).
func TestLogisticUser(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const m, d, k = 12, 4, 2
	x := mat.NewDense(m, d, nil)
	y := make([]float64, m)
	for i := range m {
		for j := range d {
			x.Set(i, j, r.NormFloat64())
		}
		y[i] = math.Copysign(1, x.At(i, 0)-x.At(i, 1)+0.3*r.NormFloat64())
	}
	u, err := NewUserSeeded(x, y, 1)
	if err != nil {
		t.Fatal(err)
	}
	u.WithLoss(Logistic)
	U := mat.NewDense(d, k, nil)
	for i := range d {
		for j := range k {
			U.Set(i, j, r.NormFloat64()/2)
		}
	}
	rowsAll := []int{0, 1, 2, 3, 4, 5}
	v := u.fitLogisticHead(U, rowsAll)
	loss := func(U *mat.Dense, v []float64) float64 {
		a := u.projected(U, rowsAll)
		var s float64
		for r, j := range rowsAll {
			t := label(y[j]) * mat.Dot(a.RowView(r), mat.NewVecDense(k, v))
			s += math.Log1p(math.Exp(-t))
		}
		return s / float64(len(rowsAll))
	}
	// Head: the ridge objective's gradient vanishes.
	for c := range k {
		h := 1e-6
		vp, vm := append([]float64(nil), v...), append([]float64(nil), v...)
		vp[c] += h
		vm[c] -= h
		obj := func(w []float64) float64 {
			return loss(U, w) + LogisticRidge/2*(w[0]*w[0]+w[1]*w[1])
		}
		if g := (obj(vp) - obj(vm)) / (2 * h); math.Abs(g) > 1e-6 {
			t.Errorf("head: ∂/∂v_%d = %v at the fit, want 0", c, g)
		}
	}
	g := u.logisticGradient(U, v, rowsAll)
	for i := range d {
		for c := range k {
			h := 1e-6
			Up, Um := mat.DenseCopyOf(U), mat.DenseCopyOf(U)
			Up.Set(i, c, U.At(i, c)+h)
			Um.Set(i, c, U.At(i, c)-h)
			num := (loss(Up, v) - loss(Um, v)) / (2 * h)
			if math.Abs(num-g.At(i, c)) > 1e-6 {
				t.Errorf("gradient (%d,%d) = %v, finite difference %v", i, c, g.At(i, c), num)
			}
		}
	}
	// Personalize uses the logistic head.
	hv, err := u.Personalize(U)
	if err != nil || len(hv) != k {
		t.Fatalf("Personalize: %v, %v", hv, err)
	}
}
