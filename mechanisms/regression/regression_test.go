package regression

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// synth returns n rows of d features uniform on [−1, 1] and a target:
// linear (x·β + 0.5 + N(0, 1), clamped to [−10, 10]) or, with logistic set,
// a 0/1 label drawn with probability σ(x·β + 0.5).
func synth(s *noise.Sampler, n, d int, beta []float64, logistic bool) *mat.Dense {
	x := mat.NewDense(n, d+1, nil)
	for i := range n {
		z := 0.5
		for j := range d {
			v := 2*s.Uniform() - 1
			x.Set(i, j, v)
			z += beta[j] * v
		}
		if logistic {
			y := 0.0
			if s.Uniform() < sigmoid(z) {
				y = 1
			}
			x.Set(i, d, y)
		} else {
			x.Set(i, d, min(max(z+s.StdNormal(), -10), 10))
		}
	}
	return x
}

func coefs(s *noise.Sampler, d int) []float64 {
	beta := make([]float64, d)
	for j := range beta {
		beta[j] = 2*s.Uniform() - 1
	}
	return beta
}

func unitBounds(d int) []Bounds {
	x := make([]Bounds, d)
	for j := range x {
		x[j] = Bounds{-1, 1}
	}
	return x
}

// ols is the non-private least-squares fit with intercept.
func ols(data *mat.Dense) *Model {
	n, w := data.Dims()
	d := w - 1
	a := mat.NewDense(n, d+1, nil)
	y := mat.NewVecDense(n, nil)
	for i := range n {
		a.Set(i, 0, 1)
		for j := range d {
			a.Set(i, j+1, data.At(i, j))
		}
		y.SetVec(i, data.At(i, d))
	}
	var theta mat.VecDense
	if err := theta.SolveVec(a, y); err != nil {
		panic(err)
	}
	m := &Model{Intercept: theta.AtVec(0)}
	for j := range d {
		m.Coef = append(m.Coef, theta.AtVec(j+1))
	}
	return m
}

func mse(m *Model, data *mat.Dense) float64 {
	n, w := data.Dims()
	var s float64
	for i := range n {
		r := data.RawRowView(i)
		e := m.Predict(r[:w-1]) - r[w-1]
		s += e * e
	}
	return s / float64(n)
}

func accuracy(m *Model, data *mat.Dense) float64 {
	n, w := data.Dims()
	var ok float64
	for i := range n {
		r := data.RawRowView(i)
		if (Probability(m, r[:w-1]) >= 0.5) == (r[w-1] == 1) {
			ok++
		}
	}
	return ok / float64(n)
}

// TestLinearAccuracy is the benchmark: n = 1e5 (2e4 under
// -short), d = 10, features in [−1, 1], target in [−10, 10], ε = 1,
// δ = 1e-6: AdaSSP's excess test MSE over OLS.
func TestLinearAccuracy(t *testing.T) {
	n, limit := 100000, 0.05
	if testing.Short() {
		n, limit = 20000, 0.25
	}
	const d = 10
	gen := noise.NewSeeded(1)
	beta := coefs(gen, d)
	train, test := synth(gen, n, d, beta, false), synth(gen, 20000, d, beta, false)
	p, err := PlanLinear(unitBounds(d), Bounds{-10, 10}, 1, 1e-6, accounting.ReplaceOne, false, false)
	if err != nil {
		t.Fatal(err)
	}
	base := mse(ols(train), test)
	var worst float64
	for seed := range uint64(5) {
		m, err := p.Run(context.Background(), rows.FromDense(train), noise.NewSeeded(100+seed))
		if err != nil {
			t.Fatal(err)
		}
		excess := mse(m, test)/base - 1
		worst = max(worst, excess)
		t.Logf("seed %d: test MSE %.5f, OLS %.5f, excess %.2f %%, ridge %.4g", seed, mse(m, test), base, 100*excess, m.Ridge)
	}
	if worst > limit {
		t.Errorf("excess test MSE over OLS %.2f %% > %.0f %%", 100*worst, 100*limit)
	}
}

// gdFit is the non-private baseline: plain full-batch gradient descent on
// the same regularised loss, many steps, with gonum.
func gdFit(data *mat.Dense, l2 float64, iters int) *Model {
	n, w := data.Dims()
	d := w - 1
	a := mat.NewDense(n, d+1, nil)
	y := mat.NewVecDense(n, nil)
	for i := range n {
		a.Set(i, 0, 1)
		for j := range d {
			a.Set(i, j+1, data.At(i, j))
		}
		y.SetVec(i, data.At(i, d))
	}
	theta := mat.NewVecDense(d+1, nil)
	var z, g mat.VecDense
	step := 1 / (float64(d+1)/4 + l2)
	for range iters {
		z.MulVec(a, theta)
		for i := range n {
			z.SetVec(i, sigmoid(z.AtVec(i))-y.AtVec(i))
		}
		g.MulVec(a.T(), &z)
		g.ScaleVec(1/float64(n), &g)
		g.AddScaledVec(&g, l2, theta)
		theta.AddScaledVec(theta, -step, &g)
	}
	m := &Model{Intercept: theta.AtVec(0)}
	for j := range d {
		m.Coef = append(m.Coef, theta.AtVec(j+1))
	}
	return m
}

// TestLogisticAccuracy: n = 1e5 (2e4 under -short), d = 10, ε = 1,
// δ = 1e-6: test accuracy within 2 points of the non-private fit.
func TestLogisticAccuracy(t *testing.T) {
	n, limit := 100000, 0.02
	if testing.Short() {
		n, limit = 20000, 0.04
	}
	const d, l2, iters = 10, 1e-3, 100
	gen := noise.NewSeeded(2)
	beta := coefs(gen, d)
	for j := range beta {
		beta[j] *= 2
	}
	train, test := synth(gen, n, d, beta, true), synth(gen, 20000, d, beta, true)
	p, err := PlanLogistic(unitBounds(d), -1, iters, l2, 1, 1e-6, accounting.ReplaceOne, false)
	if err != nil {
		t.Fatal(err)
	}
	base := accuracy(gdFit(train, l2, 1000), test)
	var worst float64
	for seed := range uint64(3) {
		steps := 0
		m, err := p.Run(context.Background(), rows.FromDense(train), noise.NewSeeded(200+seed), func(done, total int) { steps = done })
		if err != nil {
			t.Fatal(err)
		}
		if steps != iters {
			t.Errorf("progress reported %d steps, want %d", steps, iters)
		}
		acc := accuracy(m, test)
		worst = max(worst, base-acc)
		t.Logf("seed %d: test accuracy %.4f, non-private %.4f", seed, acc, base)
	}
	if worst > limit {
		t.Errorf("accuracy %.2f points below the non-private fit > %.0f", 100*worst, 100*limit)
	}
}

// TestSensitivities pins the plans' sensitivities: the statistics'
// bounds under each neighbouring relation, before the rounding excess.
func TestSensitivities(t *testing.T) {
	x := []Bounds{{-1, 3}, {0, 4}} // halves 2, 2: B² = 1 + 4 + 4 = 9
	y := Bounds{-5, 5}             // h_y = 5
	tests := []struct {
		nb                     accounting.Neighbour
		min, xx, xy, grad, cnt float64
	}{
		{accounting.AddRemove, 9, 9, 3 * 5, 3, 1},
		{accounting.ReplaceOne, 9, 9 * math.Sqrt2, 2 * 3 * 5, 2 * 3, 1},
	}
	close := func(got, want float64) bool { return got >= want && got <= want*(1+5e-4) }
	for _, tt := range tests {
		lp, err := PlanLinear(x, y, 1, 1e-6, tt.nb, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if !close(lp.Min.Sens, tt.min) || !close(lp.XX.Sens, tt.xx) || !close(lp.XY.Sens, tt.xy) {
			t.Errorf("%v: linear sensitivities %v, %v, %v, want %v, %v, %v", tt.nb, lp.Min.Sens, lp.XX.Sens, lp.XY.Sens, tt.min, tt.xx, tt.xy)
		}
		// The pairwise sums' rounding is charged on top: 2·γ_h·2³⁰·m.
		excess := func(m float64) float64 { return 2 * rowpass.Gamma(sumRoundings) * MaxRows * m }
		if lp.XX.Sens < tt.xx+excess(9) || lp.XY.Sens < tt.xy+excess(15) || lp.Min.Sens < tt.min+excess(9) {
			t.Errorf("%v: linear sensitivities %v, %v, %v leave out the rounding excess", tt.nb, lp.Min.Sens, lp.XX.Sens, lp.XY.Sens)
		}
		if lp.XX.Coord != 6 || lp.XY.Coord != 3 || lp.Min.Coord != 1 {
			t.Errorf("%v: coordinates %d, %d, %d, want 6, 3, 1", tt.nb, lp.XX.Coord, lp.XY.Coord, lp.Min.Coord)
		}
		rho, _, _ := target(1, 1e-6, false)
		if got := lp.Min.Rho + lp.XX.Rho + lp.XY.Rho; math.Abs(got-rho) > 1e-12*rho {
			t.Errorf("%v: linear shares sum to ρ=%v, want %v", tt.nb, got, rho)
		}
		// With r2, ỹᵀỹ (sensitivity h_y² = 25 under both relations, plus
		// its rounding excess) takes yyShare of ρ and the three AdaSSP
		// releases share the rest.
		qp, err := PlanLinear(x, y, 1, 1e-6, tt.nb, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if !qp.R2 || !close(qp.YY.Sens, 25) || qp.YY.Sens < 25+excess(25) || qp.YY.Coord != 1 {
			t.Errorf("%v: ỹᵀỹ's sensitivity %v (coordinates %d), want 25 plus the rounding excess", tt.nb, qp.YY.Sens, qp.YY.Coord)
		}
		if got := qp.Min.Rho + qp.XX.Rho + qp.XY.Rho + qp.YY.Rho; math.Abs(got-rho) > 1e-12*rho || math.Abs(qp.YY.Rho-0.2*rho) > 1e-12*rho {
			t.Errorf("%v: with r2 the shares sum to ρ=%v (ỹᵀỹ's %v), want %v (a fifth)", tt.nb, got, qp.YY.Rho, rho)
		}
		if lp.R2 || lp.YY != (Gaussian{}) {
			t.Errorf("%v: without r2 the plan has a ỹᵀỹ release %+v", tt.nb, lp.YY)
		}
		gp, err := PlanLogistic(x, -1, 10, 0, 1, 1e-6, tt.nb, false)
		if err != nil {
			t.Fatal(err)
		}
		if gp.Grad.Sens < tt.grad+excess(3) {
			t.Errorf("%v: the gradient's sensitivity %v leaves out the rounding excess", tt.nb, gp.Grad.Sens)
		}
		if !close(gp.Grad.Sens, tt.grad) || gp.Count.Sens != tt.cnt {
			t.Errorf("%v: logistic sensitivities %v, %v, want %v, %v", tt.nb, gp.Grad.Sens, gp.Count.Sens, tt.grad, tt.cnt)
		}
		if got := 10*gp.Grad.Rho + gp.Count.Rho; math.Abs(got-rho) > 1e-12*rho {
			t.Errorf("%v: logistic shares sum to ρ=%v, want %v", tt.nb, got, rho)
		}
		for _, g := range []Gaussian{lp.Min, lp.XX, lp.XY, qp.Min, qp.XX, qp.XY, qp.YY, gp.Grad, gp.Count} {
			if want := g.Sens / math.Sqrt(2*g.Rho); g.Sigma < want {
				t.Errorf("%v: σ=%v below Δ/√(2ρ)=%v", tt.nb, g.Sigma, want)
			}
		}
	}
}

// TestPublicRule: values are clamped to their bounds and centred, a NaN
// counts as the centre, and a row's augmented norm stays within B.
func TestPublicRule(t *testing.T) {
	b := Bounds{2, 6}
	for _, tt := range []struct{ v, want float64 }{
		{4, 0}, {2, -2}, {6, 2}, {-100, -2}, {100, 2}, {math.NaN(), 0}, {math.Inf(1), 2}, {math.Inf(-1), -2}, {5, 1},
	} {
		if got := b.centred(tt.v); got != tt.want {
			t.Errorf("centred(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	gp, _ := PlanLogistic([]Bounds{b}, 1, 1, 0, 1, 1e-6, accounting.AddRemove, false)
	for _, tt := range []struct{ v, want float64 }{{1, 1}, {0, 0}, {2, 0}, {math.NaN(), 0}} {
		if got := gp.label(tt.v); got != tt.want {
			t.Errorf("positive 1: label(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	gp.Positive = -1
	for _, tt := range []struct{ v, want float64 }{{1, 1}, {0, 0}, {2, 1}, {-3, 0}, {0.25, 0.25}, {math.NaN(), 0}} {
		if got := gp.label(tt.v); got != tt.want {
			t.Errorf("numeric: label(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// TestPlanErrors: everything fails at plan time with fixed texts.
func TestPlanErrors(t *testing.T) {
	ok := unitBounds(2)
	for _, tt := range []struct {
		name string
		err  error
		plan func() error
	}{
		{"no features", ErrFeatures, func() error {
			_, e := PlanLinear(nil, Bounds{0, 1}, 1, 1e-6, accounting.AddRemove, false, false)
			return e
		}},
		{"empty bounds", ErrBounds, func() error {
			_, e := PlanLinear([]Bounds{{1, 1}}, Bounds{0, 1}, 1, 1e-6, accounting.AddRemove, false, false)
			return e
		}},
		{"bad target", ErrBounds, func() error {
			_, e := PlanLinear(ok, Bounds{0, math.Inf(1)}, 1, 1e-6, accounting.AddRemove, false, false)
			return e
		}},
		{"eps", ErrEps, func() error {
			_, e := PlanLinear(ok, Bounds{0, 1}, 0, 1e-6, accounting.AddRemove, false, false)
			return e
		}},
		{"delta", ErrDelta, func() error { _, e := PlanLinear(ok, Bounds{0, 1}, 1, 0, accounting.AddRemove, false, false); return e }},
		{"iters", ErrIters, func() error { _, e := PlanLogistic(ok, -1, 0, 0, 1, 1e-6, accounting.AddRemove, false); return e }},
		{"l2", ErrL2, func() error { _, e := PlanLogistic(ok, -1, 5, -1, 1, 1e-6, accounting.AddRemove, false); return e }},
	} {
		if err := tt.plan(); err != tt.err {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
}

// TestRunEdgeCases: empty data and a wrong width; nothing panics.
func TestRunEdgeCases(t *testing.T) {
	p, err := PlanLinear(unitBounds(2), Bounds{-1, 1}, 1, 1e-6, accounting.AddRemove, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), rows.FromDense(mat.NewDense(1, 2, nil)), noise.NewSeeded(1)); err != ErrDim {
		t.Errorf("wrong width: %v, want ErrDim", err)
	}
	nan := mat.NewDense(3, 3, []float64{math.NaN(), 1, 2, math.Inf(1), 0, 0, 0, 0, math.NaN()})
	m, err := p.Run(context.Background(), rows.FromDense(nan), noise.NewSeeded(1))
	if err != nil || len(m.Coef) != 2 {
		t.Fatalf("NaN rows: %v, %v", m, err)
	}
	gp, _ := PlanLogistic(unitBounds(2), -1, 3, 0.1, 1, 1e-6, accounting.AddRemove, false)
	if _, err := gp.Run(context.Background(), rows.FromDense(nan), noise.NewSeeded(1), nil); err != nil {
		t.Fatal(err)
	}
}
