package tabular

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// userColumn is a one-column user-level source of n values of mixed
// magnitudes over nu users in a shuffled order.
func userColumn(t *testing.T, n, nu int) (rows.Source, []float64, []int32) {
	r := rand.New(rand.NewPCG(11, 13))
	vals := make([]float64, n)
	units := make([]int32, n)
	for i := range vals {
		vals[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(10)-3))
		units[i] = int32(r.IntN(nu))
	}
	return column(t, vals, units, nu), vals, units
}

// On user-level data the sum and the quantile hold their users' state a
// window at a time (UserWindow, issue 25.5): the release is bit identical
// for every window, and the sum equals the one of the users' means held
// all at once, summed by rowpass.SumVec.
func TestUserWindowsAreExact(t *testing.T) {
	ctx := context.Background()
	const lo, hi = -50.0, 80.0
	src, vals, units := userColumn(t, 20000, 3001)
	sums, counts := make([]float64, 3001), make([]float64, 3001)
	for i, v := range vals {
		sums[units[i]] += Clamp(v, lo, hi)
		counts[units[i]]++
	}
	var means []float64
	for u, c := range counts {
		if c > 0 {
			means = append(means, Clamp(sums[u]/c, lo, hi))
		}
	}
	want := rowpass.SumVec(len(means), 1, rowpass.Options{}, func(dst []float64, a, b int) {
		for _, v := range means[a:b] {
			dst[0] += v
		}
	})[0]
	sp, err := PlanSum(lo, hi, 1, 0, accounting.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := PlanQuantile(lo, hi, 0.3, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sum0, q0 float64
	for i, w := range []int{0, 1, 2, 17, 1000, 3000, 3001, 1 << 20} {
		got, err := ClampedSum(ctx, src, true, lo, hi, w)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("window %d: sum %v, %v; want %v", w, got, err, want)
		}
		sp.UserWindow, qp.UserWindow = w, w
		s, err := sp.Run(ctx, src, true, noise.NewSeeded(5))
		if err != nil {
			t.Fatal(err)
		}
		q, err := qp.Run(ctx, src, true, noise.NewSeeded(5))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			sum0, q0 = s, q
		} else if math.Float64bits(s) != math.Float64bits(sum0) || math.Float64bits(q) != math.Float64bits(q0) {
			t.Fatalf("window %d: (%v, %v), want (%v, %v)", w, s, q, sum0, q0)
		}
	}
}

// The user means a run reads hold at most UserWindow users at a time.
func TestUserWindowBoundsState(t *testing.T) {
	src, _, _ := userColumn(t, 2000, 500)
	for _, w := range []int{1, 9, 64} {
		m, err := userMeans(src, -1, 1, w)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(*rows.UserMeans).Window(); got != w {
			t.Fatalf("window %d: the means hold %d users at a time", w, got)
		}
	}
}
