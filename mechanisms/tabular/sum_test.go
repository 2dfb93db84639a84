package tabular

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// column is a one-column source over vals; with units, row i belongs to
// user units[i] of nu.
func column(t testing.TB, vals []float64, units []int32, nu int) rows.Source {
	t.Helper()
	var x *mat.Dense
	if len(vals) > 0 {
		x = mat.NewDense(len(vals), 1, append([]float64(nil), vals...))
	}
	src := rows.FromDense(x)
	if units == nil {
		return src
	}
	us, err := src.WithUnits(units, nu)
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// The sum's sensitivity comes from the public bounds alone: max(|lo|, |hi|)
// when a unit is added or removed, hi − lo (rounded up) when one is
// replaced; the rounding excess 2·γ_277·2^30·max(|lo|, |hi|) is added
// before the noise is calibrated, and the event is the call's.
func TestPlanSum(t *testing.T) {
	for _, c := range []struct {
		lo, hi, eps, delta float64
		nb                 accounting.Neighbour
		sens               float64
	}{
		{-3, 5, 1, 0, accounting.AddRemove, 5},
		{-3, 5, 1, 0, accounting.ReplaceOne, up(8)},
		{-7, 2, 0.5, 0, accounting.AddRemove, 7},
		{0, 100, 2, 1e-6, accounting.AddRemove, 100},
		{0, 100, 2, 1e-6, accounting.ReplaceOne, up(100)},
		{1e6, 1e6 + 1, 1, 0, accounting.ReplaceOne, up(1)},
		{1e6, 1e6 + 1, 1, 0, accounting.AddRemove, 1e6 + 1},
	} {
		p, err := PlanSum(c.lo, c.hi, c.eps, c.delta, c.nb)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if p.Sensitivity != c.sens {
			t.Errorf("%+v: sensitivity %v, want %v", c, p.Sensitivity, c.sens)
		}
		m := max(math.Abs(c.lo), math.Abs(c.hi))
		if want := 2 * 277 * 0x1p-53 * 0x1p30 * m; math.Abs(p.Excess/want-1) > 1e-12 || p.Excess < want {
			t.Errorf("%+v: excess %v, want 2·γ_277·2^30·%v = %v", c, p.Excess, m, want)
		}
		total := c.sens + p.Excess
		if c.delta == 0 {
			if p.Gaussian || p.Event != accounting.Pure(c.eps) {
				t.Errorf("%+v: δ = 0 must be the pure ε Laplace sum, got %+v", c, p)
			}
			if want := total / c.eps; p.Scale < want || p.Scale > want*(1+1e-9) {
				t.Errorf("%+v: Laplace scale %v, want (Δ + excess)/ε = %v", c, p.Scale, want)
			}
		} else {
			rho := accounting.RhoForTarget(c.eps, c.delta)
			if !p.Gaussian || p.Rho != rho || p.Event != accounting.GaussianZcdp(rho).WithTarget(c.eps, c.delta) {
				t.Errorf("%+v: δ > 0 must be the zCDP Gaussian sum at ρ = %v, got %+v", c, rho, p)
			}
			if want := total / math.Sqrt(2*rho); p.Scale < want || p.Scale > want*(1+1e-9) {
				t.Errorf("%+v: Gaussian σ %v, want (Δ + excess)/√(2ρ) = %v", c, p.Scale, want)
			}
		}
	}
}

func TestPlanSumRefuses(t *testing.T) {
	for _, c := range []struct {
		lo, hi, eps, delta float64
		want               error
	}{
		{1, 1, 1, 0, ErrBounds},
		{2, 1, 1, 0, ErrBounds},
		{math.NaN(), 1, 1, 0, ErrBounds},
		{0, math.Inf(1), 1, 0, ErrBounds},
		{-1e299, 0, 1, 0, ErrBoundsRange},
		{0, 1, 0, 0, ErrEps},
		{0, 1, math.Inf(1), 0, ErrEps},
		{0, 1, 1, 1, ErrDelta},
		{0, 1, 1, -0.1, ErrDelta},
		{0, 1, 1e-12, 0, noise.ErrCoarse},
		{0, 1e-300, 1, 0, noise.ErrScaleRange},
		{0, 1, 1e-300, 1e-300, ErrCalibrate},
	} {
		if _, err := PlanSum(c.lo, c.hi, c.eps, c.delta, accounting.ReplaceOne); !errors.Is(err, c.want) {
			t.Errorf("PlanSum(%v, %v, %v, %v): %v, want %v", c.lo, c.hi, c.eps, c.delta, err, c.want)
		}
	}
}

// Values are clamped to the bounds and NaN counts as 0 clamped; on users
// each user adds the mean of their clamped values.
func TestClampedSum(t *testing.T) {
	ctx := context.Background()
	vals := []float64{1, 20, -5, math.NaN(), math.Inf(1), math.Inf(-1), 3.5}
	got, err := ClampedSum(ctx, column(t, vals, nil, 0), false, -2, 10, 0)
	if want := 1 + 10 - 2 + 0 + 10 - 2 + 3.5; err != nil || got != want {
		t.Errorf("rows: %v, %v; want %v", got, err, want)
	}
	// a NaN with bounds excluding 0 counts as the nearer bound
	if got, _ := ClampedSum(ctx, column(t, []float64{math.NaN()}, nil, 0), false, 3, 4, 0); got != 3 {
		t.Errorf("NaN in [3, 4] counts as %v, want 3", got)
	}
	// users 0: {1, 20→10} mean 5.5; user 1: {−5→−2} ; user 2: none; user 3: {4, NaN→0} mean 2
	units := []int32{0, 0, 1, 3, 3}
	got, err = ClampedSum(ctx, column(t, []float64{1, 20, -5, 4, math.NaN()}, units, 4), true, -2, 10, 0)
	if want := 5.5 - 2 + 2; err != nil || got != want {
		t.Errorf("users: %v, %v; want %v", got, err, want)
	}
	if _, err := ClampedSum(ctx, struct{ rows.Source }{column(t, []float64{1}, nil, 0)}, true, 0, 1, 0); !errors.Is(err, ErrNoUnits) {
		t.Errorf("user-level data without user indices: %v", err)
	}
	for _, users := range []bool{false, true} {
		if got, err := ClampedSum(ctx, emptyColumn{}, users, 0, 1, 0); err != nil || got != 0 {
			t.Errorf("no rows (users %v): %v, %v; want 0", users, got, err)
		}
	}
}

// The sum is accumulated in rowpass's pairwise order (whose rounding
// SumExcess bounds), not as a running sum: on values of mixed magnitudes
// the two differ, and the result is rowpass.SumVec's to the bit.
func TestClampedSumIsPairwise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, 5000)
	for i := range vals {
		vals[i] = math.Ldexp(r.Float64()-0.3, r.IntN(60)-30)
	}
	got, err := ClampedSum(context.Background(), column(t, vals, nil, 0), false, -1e10, 1e10, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := rowpass.SumVec(len(vals), 1, rowpass.Options{Workers: 1}, func(dst []float64, lo, hi int) {
		for _, v := range vals[lo:hi] {
			dst[0] += v
		}
	})[0]
	var running float64
	for _, v := range vals {
		running += v
	}
	if got != want {
		t.Errorf("sum %v, want the pairwise %v", got, want)
	}
	if running == want {
		t.Fatal("the running sum equals the pairwise one: pick data that tell them apart")
	}
}

// The released sum's noise has the planned scale: over 2000 seeded
// releases the median absolute error is b·ln 2 (Laplace) or 0.6745·σ
// (Gaussian). The median of 2000 draws has a relative standard error near
// 3%; ±12% is four of them.
func TestSumNoiseScale(t *testing.T) {
	ctx := context.Background()
	vals := []float64{1, 2, 3, 4, 5}
	for _, delta := range []float64{0, 1e-6} {
		p, err := PlanSum(0, 10, 0.5, delta, accounting.ReplaceOne)
		if err != nil {
			t.Fatal(err)
		}
		s := noise.NewSeeded(11)
		errs := make([]float64, 2000)
		for i := range errs {
			v, err := p.Run(ctx, column(t, vals, nil, 0), false, s)
			if err != nil {
				t.Fatal(err)
			}
			errs[i] = math.Abs(v - 15)
		}
		sort.Float64s(errs)
		med := errs[len(errs)/2]
		want := p.Scale * math.Ln2
		if p.Gaussian {
			want = p.Scale * 0.6745
		}
		if math.Abs(med/want-1) > 0.12 {
			t.Errorf("δ=%v: median |error| %v, want %v (scale %v)", delta, med, want, p.Scale)
		}
	}
}

// Runs cannot fail on the data: empty data, one value, all equal, NaN and
// infinities all give a finite release.
func TestSumRunNeverFailsOnData(t *testing.T) {
	p, err := PlanSum(-1, 1, 1, 0, accounting.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	s := noise.NewSeeded(1)
	for _, vals := range [][]float64{{}, {0.5}, {7, 7, 7}, {math.NaN(), math.Inf(-1)}, {math.MaxFloat64, -math.MaxFloat64}} {
		src := column(t, vals, nil, 0)
		if len(vals) == 0 {
			src = emptyColumn{}
		}
		v, err := p.Run(context.Background(), src, false, s)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%v: %v, %v", vals, v, err)
		}
	}
}

// emptyColumn is a one-column source without rows.
type emptyColumn struct{}

func (emptyColumn) Dim() int { return 1 }
func (emptyColumn) Scan(context.Context) (rows.Cursor, error) {
	return emptyCursor{}, nil
}
func (emptyColumn) NumUnits() int { return 0 }

type emptyCursor struct{}

func (emptyCursor) Next(dst *rows.Batch) error { dst.N = 0; return io.EOF }
func (emptyCursor) Close() error               { return nil }
