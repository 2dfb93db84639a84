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
// The rows are unit-scaled by their bounds first, so the sensitivities
// depend on the number of features only, not on the bounds' widths.
func TestSensitivities(t *testing.T) {
	x := []Bounds{{-1, 3}, {0, 400}} // unit-scaled: B² = 1 + 2 = 3, whatever the widths
	y := Bounds{-5, 5}               // unit-scaled: |ŷ| ≤ 1
	b := math.Sqrt(3)
	tests := []struct {
		nb                     accounting.Neighbour
		min, xx, xy, grad, cnt float64
	}{
		{accounting.AddRemove, 3, 3, b, b, 1},
		{accounting.ReplaceOne, 3, 3 * math.Sqrt2, 2 * b, 2 * b, 1},
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
		if lp.XX.Sens < tt.xx+excess(3) || lp.XY.Sens < tt.xy+excess(b) || lp.Min.Sens < tt.min+excess(3) {
			t.Errorf("%v: linear sensitivities %v, %v, %v leave out the rounding excess", tt.nb, lp.Min.Sens, lp.XX.Sens, lp.XY.Sens)
		}
		if lp.XX.Coord != 6 || lp.XY.Coord != 3 || lp.Min.Coord != 1 {
			t.Errorf("%v: coordinates %d, %d, %d, want 6, 3, 1", tt.nb, lp.XX.Coord, lp.XY.Coord, lp.Min.Coord)
		}
		rho, _, _ := target(1, 1e-6, false)
		if got := lp.Min.Rho + lp.XX.Rho + lp.XY.Rho; math.Abs(got-rho) > 1e-12*rho {
			t.Errorf("%v: linear shares sum to ρ=%v, want %v", tt.nb, got, rho)
		}
		// With r2, ŷᵀŷ (sensitivity 1 under both relations, plus its
		// rounding excess) takes yyShare of ρ and the three AdaSSP
		// releases share the rest.
		qp, err := PlanLinear(x, y, 1, 1e-6, tt.nb, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if !qp.R2 || !close(qp.YY.Sens, 1) || qp.YY.Sens < 1+excess(1) || qp.YY.Coord != 1 {
			t.Errorf("%v: ŷᵀŷ's sensitivity %v (coordinates %d), want 1 plus the rounding excess", tt.nb, qp.YY.Sens, qp.YY.Coord)
		}
		if got := qp.Min.Rho + qp.XX.Rho + qp.XY.Rho + qp.YY.Rho; math.Abs(got-rho) > 1e-12*rho || math.Abs(qp.YY.Rho-0.2*rho) > 1e-12*rho {
			t.Errorf("%v: with r2 the shares sum to ρ=%v (ŷᵀŷ's %v), want %v (a fifth)", tt.nb, got, qp.YY.Rho, rho)
		}
		if lp.R2 || lp.YY != (Gaussian{}) {
			t.Errorf("%v: without r2 the plan has a ŷᵀŷ release %+v", tt.nb, lp.YY)
		}
		gp, err := PlanLogistic(x, -1, 10, 0, 1, 1e-6, tt.nb, false)
		if err != nil {
			t.Fatal(err)
		}
		if gp.Grad.Sens < tt.grad+excess(b) {
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

// TestPublicRule: values are clamped to their bounds and mapped to
// [−1, 1] by them, a NaN counts as the centre, and the rule never leaves
// [−1, 1] (also for bounds whose map rounds).
func TestPublicRule(t *testing.T) {
	b := Bounds{2, 6}
	for _, tt := range []struct{ v, want float64 }{
		{4, 0}, {2, -1}, {6, 1}, {-100, -1}, {100, 1}, {math.NaN(), 0}, {math.Inf(1), 1}, {math.Inf(-1), -1}, {5, 0.5},
	} {
		if got := b.unit(tt.v); got != tt.want {
			t.Errorf("unit(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	for _, bd := range []Bounds{{0.1, 0.7}, {-1e-300, 3e-300}, {0, 5e-324}, {-0x1p200, 0x1p200}, {1, math.Nextafter(1, 2)}} {
		for _, v := range []float64{bd.Lo, bd.Hi, bd.Lo/3 + bd.Hi/3, math.Inf(-1), math.Inf(1), -1e308, 1e308} {
			if got := bd.unit(v); !(got >= -1 && got <= 1) {
				t.Errorf("%+v: unit(%v) = %v, outside [−1, 1]", bd, v, got)
			}
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

// TestScaleInvariance: the unit scaling is a public affine map inside the
// mechanisms, so a fit on raw columns with wide, off-centre bounds equals
// (up to rounding) the fit on the same rows mapped to [−1, 1] by hand with
// unit bounds, at the same noise seed: the same plan scales, the same
// noise, and coefficients and intercept mapped back exactly. Before the
// scaling, the raw fit's noise and ridge grew with the bounds' widths.
func TestScaleInvariance(t *testing.T) {
	const n, d = 4000, 3
	gen := noise.NewSeeded(5)
	beta := coefs(gen, d)
	unitData := synth(gen, n, d, beta, false)
	logData := synth(gen, n, d, beta, true)
	x := []Bounds{{0, 70}, {-3, 1}, {1000, 1002}}
	y := Bounds{-10, 40} // centre 15, half-width 25
	// raw maps unit-scaled rows back to the raw columns; the label of a
	// logistic row stays as it is.
	raw := func(u *mat.Dense, target bool) *mat.Dense {
		out := mat.DenseCopyOf(u)
		for i := range n {
			for j, b := range x {
				out.Set(i, j, b.centre()+b.half()*u.At(i, j))
			}
			if target {
				out.Set(i, d, y.centre()+y.half()*u.At(i, d)/10)
			}
		}
		return out
	}
	// The unit-bounded reference: the generated target in [−10, 10]
	// divided by 10, so that raw's target is its affine image.
	ref := mat.DenseCopyOf(unitData)
	for i := range n {
		ref.Set(i, d, unitData.At(i, d)/10)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*(1+math.Abs(b)) }
	check := func(name string, got, want *Model) {
		t.Helper()
		for i := range 5 {
			row := make([]float64, d)
			for j, b := range x {
				row[j] = b.Lo + (b.Hi-b.Lo)*float64(i)/4
			}
			u := make([]float64, d)
			for j, b := range x {
				u[j] = b.unit(row[j])
			}
			if !near(got.Predict(row), want.Predict(u)) {
				t.Errorf("%s: raw prediction %v, scaled-by-hand prediction %v", name, got.Predict(row), want.Predict(u))
			}
		}
	}
	lr, err := PlanLinear(x, y, 1, 1e-6, accounting.ReplaceOne, false, true)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := PlanLinear(unitBounds(d), Bounds{-1, 1}, 1, 1e-6, accounting.ReplaceOne, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if lr.XX.Sigma != lu.XX.Sigma || lr.XY.Sigma != lu.XY.Sigma || lr.YY.Sigma != lu.YY.Sigma || lr.Min.Sigma != lu.Min.Sigma {
		t.Errorf("the raw plan's noise (%v, %v, %v) differs from the unit plan's (%v, %v, %v)", lr.XX.Sigma, lr.XY.Sigma, lr.YY.Sigma, lu.XX.Sigma, lu.XY.Sigma, lu.YY.Sigma)
	}
	mr, err := lr.Run(context.Background(), rows.FromDense(raw(unitData, true)), noise.NewSeeded(9))
	if err != nil {
		t.Fatal(err)
	}
	mu, err := lu.Run(context.Background(), rows.FromDense(ref), noise.NewSeeded(9))
	if err != nil {
		t.Fatal(err)
	}
	// The unit model predicts ŷ; its prediction in y's units is c_y + h_y·ŷ.
	mu.Intercept = y.centre() + y.half()*mu.Intercept
	for j := range mu.Coef {
		mu.Coef[j] *= y.half()
	}
	check("linear", mr, mu)
	if !near(mr.Fit.R2, mu.Fit.R2) || !near(mr.Fit.ResidualStd, y.half()*mu.Fit.ResidualStd) {
		t.Errorf("R² %v and residual std %v, want %v and %v", mr.Fit.R2, mr.Fit.ResidualStd, mu.Fit.R2, y.half()*mu.Fit.ResidualStd)
	}
	// The intervals follow the same map: the raw interval of feature j is
	// h_y/h_j times the unit one, the intercept's is the mapped one's.
	rl, rh := mr.Fit.Intervals(0.9)
	ul, uh := mu.Fit.Intervals(0.9)
	for j, b := range x {
		if !near(rh[j+1]-rl[j+1], (uh[j+1]-ul[j+1])*y.half()/b.half()) {
			t.Errorf("interval %d: width %v, want %v", j+1, rh[j+1]-rl[j+1], (uh[j+1]-ul[j+1])*y.half()/b.half())
		}
	}
	gr, err := PlanLogistic(x, -1, 20, 1e-3, 1, 1e-6, accounting.ReplaceOne, false)
	if err != nil {
		t.Fatal(err)
	}
	gu, err := PlanLogistic(unitBounds(d), -1, 20, 1e-3, 1, 1e-6, accounting.ReplaceOne, false)
	if err != nil {
		t.Fatal(err)
	}
	if gr.Grad.Sigma != gu.Grad.Sigma || gr.Step != gu.Step {
		t.Errorf("the raw logistic plan's noise %v and step %v differ from the unit plan's %v, %v", gr.Grad.Sigma, gr.Step, gu.Grad.Sigma, gu.Step)
	}
	mr, err = gr.Run(context.Background(), rows.FromDense(raw(logData, false)), noise.NewSeeded(9), nil)
	if err != nil {
		t.Fatal(err)
	}
	mu, err = gu.Run(context.Background(), rows.FromDense(logData), noise.NewSeeded(9), nil)
	if err != nil {
		t.Fatal(err)
	}
	check("logistic", mr, mu)
}
