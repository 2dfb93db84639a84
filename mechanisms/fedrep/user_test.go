package fedrep

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randUser(t testing.TB, r *rand.Rand, m, d int, w []float64, noiseSD float64, seed uint64) *User {
	t.Helper()
	x := mat.NewDense(m, d, nil)
	y := make([]float64, m)
	for j := range m {
		for i := range d {
			x.Set(j, i, r.NormFloat64())
		}
		y[j] = mat.Dot(x.RowView(j), mat.NewVecDense(d, w)) + noiseSD*r.NormFloat64()
	}
	u, err := NewUserSeeded(x, y, seed)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestClip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		scale, tau float64
	}{{0.01, 1}, {1, 1}, {100, 1}, {1e6, 10}, {3, 2.5}} {
		m := mat.NewDense(7, 3, nil)
		for i := range 7 {
			for j := range 3 {
				m.Set(i, j, tc.scale*r.NormFloat64())
			}
		}
		c := Clip(m, tc.tau)
		norm, cnorm := mat.Norm(m, 2), mat.Norm(c, 2)
		if cnorm > tc.tau {
			t.Errorf("‖clip(M, %v)‖_F = %.17g > τ", tc.tau, cnorm)
		}
		want := math.Min(norm, tc.tau)
		if math.Abs(cnorm-want) > 1e-12*want {
			t.Errorf("‖clip(M)‖_F = %g, want min(‖M‖, τ) = %g (the printed formula M/‖M‖·min{1,τ/‖M‖} would give %g)", cnorm, want, math.Min(1, tc.tau/norm))
		}
		// Direction preserved: clip(M) = c·M with c > 0.
		var diff mat.Dense
		diff.Scale(cnorm/norm, m)
		if !mat.EqualApprox(&diff, c, 1e-12*math.Max(1, cnorm)) {
			t.Error("clip changed the direction of M")
		}
		if norm <= tc.tau && !mat.Equal(c, m) {
			t.Error("clip altered a matrix already within the bound")
		}
	}
	if z := Clip(mat.NewDense(2, 2, nil), 1); mat.Norm(z, 2) != 0 {
		t.Error("clip(0) ≠ 0")
	}
}

// Z_i equals its definition c·Σ_{j₁≠j₂} y_j₁ y_j₂ x_j₁ x_j₂ᵀ over S⁰.
func TestInitMatrixMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	u := randUser(t, r, 11, 4, []float64{1, -2, 0.5, 0}, 0.3, 1) // m₀ = 5
	z := u.initMatrix()
	want := mat.NewDense(4, 4, nil)
	for j1 := range 5 {
		for j2 := range 5 {
			if j1 == j2 {
				continue
			}
			var o mat.Dense
			o.Outer(u.y[j1]*u.y[j2], u.x.RowView(j1), u.x.RowView(j2))
			want.Add(want, &o)
		}
	}
	want.Scale(1.0/20, want)
	if !mat.EqualApprox(z, want, 1e-12) {
		t.Errorf("Z_i = %v, want %v", mat.Formatted(z), mat.Formatted(want))
	}
}

// The gradient is the derivative of (1/|B′|) Σ_{B′} (y − xᵀUv)² in U.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	u := randUser(t, r, 10, 5, []float64{1, 0, 2, -1, 0.5}, 0.1, 2)
	U := mat.NewDense(5, 2, nil)
	for i := range 5 {
		for j := range 2 {
			U.Set(i, j, r.NormFloat64())
		}
	}
	v := []float64{0.7, -1.3}
	rows := []int{1, 3}
	loss := func(U *mat.Dense) float64 {
		var s float64
		w := mat.NewVecDense(5, nil)
		w.MulVec(U, mat.NewVecDense(2, v))
		for _, j := range rows {
			e := u.y[j] - mat.Dot(u.x.RowView(j), w)
			s += e * e
		}
		return s / float64(len(rows))
	}
	g := u.gradient(U, v, rows)
	const h = 1e-6
	for i := range 5 {
		for j := range 2 {
			up, dn := mat.DenseCopyOf(U), mat.DenseCopyOf(U)
			up.Set(i, j, U.At(i, j)+h)
			dn.Set(i, j, U.At(i, j)-h)
			num := (loss(up) - loss(dn)) / (2 * h)
			if math.Abs(num-g.At(i, j)) > 1e-6*math.Max(1, math.Abs(num)) {
				t.Errorf("∂L/∂U[%d,%d] = %g, finite difference %g", i, j, g.At(i, j), num)
			}
		}
	}
}

func TestFitHeadAndPersonalize(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	U := mat.NewDense(6, 2, nil)
	U.Set(0, 0, 1)
	U.Set(3, 1, 1)
	vStar := []float64{2, -0.5}
	w := make([]float64, 6)
	w[0], w[3] = vStar[0], vStar[1]
	u := randUser(t, r, 12, 6, w, 0, 3)
	// Noise-free responses in span(U): exact recovery from any 2 records.
	if v := u.fitHead(U, []int{0, 1}); math.Abs(v[0]-2) > 1e-10 || math.Abs(v[1]+0.5) > 1e-10 {
		t.Errorf("fitHead = %v, want %v", v, vStar)
	}
	// One record for k = 2: the minimum-norm (pseudo-inverse) solution,
	// which fits the record exactly and is orthogonal to the null space.
	v := u.fitHead(U, []int{2})
	a := []float64{u.x.At(2, 0), u.x.At(2, 3)}
	if fit := a[0]*v[0] + a[1]*v[1]; math.Abs(fit-u.y[2]) > 1e-10 {
		t.Errorf("underdetermined fit misses the record: %g vs %g", fit, u.y[2])
	}
	if cross := a[1]*v[0] - a[0]*v[1]; math.Abs(cross) > 1e-10 {
		t.Errorf("underdetermined fit is not minimum-norm (component %g in the null space)", cross)
	}
	p, err := u.Personalize(U)
	if err != nil || math.Abs(p[0]-2) > 1e-10 || math.Abs(p[1]+0.5) > 1e-10 {
		t.Errorf("Personalize = %v, %v", p, err)
	}
	if _, err := u.Personalize(mat.NewDense(5, 2, nil)); err == nil {
		t.Error("Personalize accepted a U of the wrong dimension")
	}
	// LocalGD interpolates with fewer records than features... here 12 > 6,
	// so it is the exact least-squares solution w.
	lg := u.LocalGD()
	for i := range 6 {
		if math.Abs(lg[i]-w[i]) > 1e-10 {
			t.Fatalf("LocalGD = %v, want %v", lg, w)
		}
	}
}

// LocalGD is the limit of gradient descent from 0 (the minimum-norm
// interpolant when m < d).
func TestLocalGDIsTheLimitOfGradientDescent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	u := randUser(t, r, 4, 9, []float64{1, 2, 3, 0, 0, 0, 1, 1, 1}, 0.1, 4)
	w := make([]float64, 9)
	for range 20000 {
		g := make([]float64, 9)
		for j := range 4 {
			x := u.x.RawRowView(j)
			e := mat.Dot(mat.NewVecDense(9, x), mat.NewVecDense(9, w)) - u.y[j]
			for i := range 9 {
				g[i] += 2 * e * x[i] / 4
			}
		}
		for i := range w {
			w[i] -= 0.02 * g[i]
		}
	}
	lg := u.LocalGD()
	for i := range 9 {
		if math.Abs(lg[i]-w[i]) > 1e-6 {
			t.Fatalf("LocalGD %v, gradient descent %v", lg, w)
		}
	}
}

func TestBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	// m = 10, m₀ = 5, T = 5, k = 2: ⌊m₀/2T⌋ = 0 < k → per-round splits 3 + 2.
	u := randUser(t, r, 10, 3, []float64{1, 1, 1}, 0.1, 5)
	for round := range 5 {
		bv, bg, err := u.batches(round, 5, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(bv) != 3 || len(bg) != 2 {
			t.Errorf("round %d: batches of %d and %d, want 3 and 2", round, len(bv), len(bg))
		}
		all := append(slices.Clone(bv), bg...)
		slices.Sort(all)
		if !slices.Equal(all, []int{0, 1, 2, 3, 4}) {
			t.Errorf("round %d: batches %v ∪ %v are not a split of S⁰", round, bv, bg)
		}
	}
	// m = 40, m₀ = 20, T = 2: b = 5 ≥ k → fresh disjoint batches across rounds.
	u = randUser(t, r, 40, 3, []float64{1, 1, 1}, 0.1, 6)
	seen := map[int]bool{}
	for round := range 2 {
		bv, bg, err := u.batches(round, 2, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(bv) != 5 || len(bg) != 5 {
			t.Errorf("fresh: sizes %d, %d, want 5, 5", len(bv), len(bg))
		}
		for _, j := range append(bv, bg...) {
			if seen[j] || j >= 20 {
				t.Errorf("fresh: record %d reused or outside S⁰", j)
			}
			seen[j] = true
		}
	}
	// A requested batch larger than a user can fill (2·11 > m₀ = 20) is
	// lowered to ⌊m₀/2⌋ = 10 and drawn afresh each round (2·10·2 > 20):
	// a user with few records never fails the run after its charge.
	for _, batch := range []int{11, 1 << 30} {
		for round := range 2 {
			bv, bg, err := u.batches(round, 2, batch, 2)
			if err != nil {
				t.Fatalf("batch %d: %v", batch, err)
			}
			if len(bv) != 10 || len(bg) != 10 {
				t.Errorf("batch %d round %d: sizes %d, %d, want 10, 10", batch, round, len(bv), len(bg))
			}
			all := append(slices.Clone(bv), bg...)
			slices.Sort(all)
			if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}) {
				t.Errorf("batch %d round %d: %v ∪ %v is not a split of S⁰", batch, round, bv, bg)
			}
		}
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"negative batch", func() error { _, _, err := u.batches(0, 2, -1, 2); return err }(), "batch size -1: need a batch ≥ 1"},
		{"3 records", func() error { _, err := NewUserSeeded(mat.NewDense(3, 2, nil), make([]float64, 3), 1); return err }(), "fedrep: a user needs at least 4 records"},
		{"mismatched responses", func() error { _, err := NewUserSeeded(mat.NewDense(5, 2, nil), make([]float64, 4), 1); return err }(), "fedrep: the responses do not match the records"},
		{"no U", func() error { _, err := u.Answer(context.Background(), Request{Step: StepGradient}); return err }(), "round 0: no broadcast representation"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, c.err, c.want)
		}
	}
}
