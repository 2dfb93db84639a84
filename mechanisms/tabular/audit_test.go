package tabular

// Privacy audits: each runs a mechanism on neighbouring data sets and
// checks its privacy loss against ε, and checks that a broken twin (noise
// calibrated to half the sensitivity, weights falling twice as fast) fails
// the same audit, so that the audit has the power to catch the break.

import (
	"context"
	"math"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// sumLoss estimates the privacy loss of a sum plan on the neighbours d0 and
// d1 from a tail event: over draws seeded releases of each, with
// S = {y ≥ thr}, it returns ln(P1(S)/P0(S)) and its standard error (delta
// method: √((1−p0)/(N p0) + (1−p1)/(N p1))).
func sumLoss(t *testing.T, p *SumPlan, d0, d1 []float64, thr float64, draws int) (loss, se float64) {
	t.Helper()
	frac := func(vals []float64, seed uint64) float64 {
		s := noise.NewSeeded(seed)
		hit := 0
		for range draws {
			v, err := p.Run(context.Background(), column(t, vals, nil, 0), false, s)
			if err != nil {
				t.Fatal(err)
			}
			if v >= thr {
				hit++
			}
		}
		return float64(hit) / float64(draws)
	}
	p0, p1 := frac(d0, 101), frac(d1, 202)
	n := float64(draws)
	return math.Log(p1 / p0), math.Sqrt((1-p0)/(n*p0) + (1-p1)/(n*p1))
}

// The Laplace sum on the worst-case neighbours of each relation (one value
// moved from lo to hi, or one value hi added) has an empirical privacy
// loss of at most ε plus four standard errors; its twin whose noise is
// calibrated to half the sensitivity has a loss near 2ε, beyond that
// bound. With ε = 1 and 20000 draws per data set the standard error is
// about 0.023, so the bound is near 1.09 and the twin's loss near 2.
func TestAuditSum(t *testing.T) {
	testtier.Long(t)
	const eps, draws = 1.0, 20000
	for _, c := range []struct {
		nb     accounting.Neighbour
		d0, d1 []float64
	}{
		{accounting.ReplaceOne, []float64{0, 0.5, 0.25}, []float64{1, 0.5, 0.25}}, // 0 replaced by 1 (= hi − lo)
		{accounting.AddRemove, []float64{0.5, 0.25}, []float64{0.5, 0.25, 1}},     // 1 added (= max(|lo|, |hi|))
	} {
		p, err := PlanSum(0, 1, eps, 0, c.nb)
		if err != nil {
			t.Fatal(err)
		}
		// the event y ≥ sum(d1) + 0.5: P1 ≈ e^-0.5/2 ≈ 0.30, P0 ≈ 0.11
		thr := 1.75 + 0.5
		loss, se := sumLoss(t, p, c.d0, c.d1, thr, draws)
		if bound := eps + 4*se; loss > bound {
			t.Errorf("%v: empirical privacy loss %.3f exceeds ε + 4·se = %.3f", c.nb, loss, bound)
		}
		if loss < eps-4*se {
			t.Errorf("%v: empirical loss %.3f far below ε: the audit's event is too weak to catch a twin", c.nb, loss)
		}
		twin := *p
		twin.Scale = p.Scale / 2 // calibrated to half the sensitivity
		tl, tse := sumLoss(t, &twin, c.d0, c.d1, thr, draws)
		t.Logf("%v: loss %.3f ± %.3f; twin %.3f ± %.3f", c.nb, loss, se, tl, tse)
		if tl <= eps+4*tse {
			t.Errorf("%v: the twin calibrated to half the sensitivity passes the audit (loss %.3f ≤ %.3f)", c.nb, tl, eps+4*tse)
		}
	}
}

// The Laplace count of n and n+1 units (a neighbour under add-remove; the
// count is noised as if one under replace-one) has an empirical privacy
// loss of at most ε plus four standard errors on the tail event
// {y ≥ n+2}; its twin with half the scale has a loss near 2ε, beyond that
// bound. With ε = 1 and 20000 draws per count the standard error is about
// 0.025.
func TestAuditCount(t *testing.T) {
	testtier.Long(t)
	const eps, draws, n = 1.0, 20000, 10
	b := noise.LaplaceScale(CountSensitivity, eps, 1)
	loss := func(b float64) (loss, se float64) {
		frac := func(count int, seed uint64) float64 {
			s := noise.NewSeeded(seed)
			hit := 0
			for range draws {
				if LaplaceCount(count, b, s) >= n+2 {
					hit++
				}
			}
			return float64(hit) / draws
		}
		p0, p1 := frac(n, 101), frac(n+1, 202)
		return math.Log(p1 / p0), math.Sqrt((1-p0)/(draws*p0) + (1-p1)/(draws*p1))
	}
	l, se := loss(b)
	if bound := eps + 4*se; l > bound {
		t.Errorf("empirical privacy loss %.3f exceeds ε + 4·se = %.3f", l, bound)
	}
	if l < eps-4*se {
		t.Errorf("empirical loss %.3f far below ε: the audit's event is too weak to catch a twin", l)
	}
	tl, tse := loss(b / 2) // calibrated to half the sensitivity
	t.Logf("loss %.3f ± %.3f; twin %.3f ± %.3f", l, se, tl, tse)
	if tl <= eps+4*tse {
		t.Errorf("the twin calibrated to half the sensitivity passes the audit (loss %.3f ≤ %.3f)", tl, eps+4*tse)
	}
}

// quantileLoss returns the largest |ln P0(g) − ln P1(g)| over the grid of
// the exact distributions of the mechanism on d0 and d1.
func quantileLoss(p *QuantilePlan, d0, d1 []float64) float64 {
	a, b := p.distribution(d0), p.distribution(d1)
	worst := 0.0
	for k := range a {
		worst = max(worst, math.Abs(math.Log(a[k])-math.Log(b[k])))
	}
	return worst
}

// The quantile's exact output distributions on neighbouring data sets
// (a value added at lo, hi or inside; one value replaced by lo or hi)
// differ by at most a factor e^ε at every grid point, for several q and
// ε; the twin whose weights fall by e^ε per level instead of e^(ε/2)
// exceeds e^ε on some pair. The distributions are computed exactly (to
// float64 logs) from the definitions, not sampled.
func TestAuditQuantile(t *testing.T) {
	testtier.Long(t)
	base := []float64{2, 3.5, 3.5, 5, 6.25, 8}
	var pairs [][2][]float64
	for _, x := range []float64{0, 10, 3.5, 4.9} { // add-remove
		pairs = append(pairs, [2][]float64{base, append(append([]float64(nil), base...), x)})
	}
	for i := range base { // replace-one
		for _, x := range []float64{0, 10} {
			d1 := append([]float64(nil), base...)
			d1[i] = x
			pairs = append(pairs, [2][]float64{base, d1})
		}
	}
	twinBroken := false
	for _, q := range []float64{0.1, 0.5, 0.9} {
		for _, eps := range []float64{0.3, 1, 4} {
			p0, err := PlanQuantile(0, 10, q, eps)
			if err != nil {
				t.Fatal(err)
			}
			p := smallGrid(p0, 32)
			twin := *p
			twin.ratio = ratioFor(2 * eps)
			for _, pr := range pairs {
				if l := quantileLoss(p, pr[0], pr[1]); l > eps*(1+1e-9) {
					t.Errorf("q=%v ε=%v %v vs %v: privacy loss %v > ε", q, eps, pr[0], pr[1], l)
				}
				if quantileLoss(&twin, pr[0], pr[1]) > eps*(1+1e-9) {
					twinBroken = true
				}
			}
		}
	}
	if !twinBroken {
		t.Error("the twin whose weights fall by e^ε per level passes the audit: the audit has no power")
	}
}

// groupLoss estimates the privacy loss of a grouped plan on the sources
// src0 and src1 from the event ev over draws seeded releases of each:
// ln(P0(S)/P1(S)) and its standard error (as sumLoss).
func groupLoss(t *testing.T, p *GroupPlan, src0, src1 rows.Source, users bool, ev func([]float64) bool, draws int) (loss, se float64) {
	t.Helper()
	frac := func(src rows.Source, seed uint64) float64 {
		s := noise.NewSeeded(seed)
		hit := 0
		for range draws {
			out, err := p.Run(context.Background(), src, users, s)
			if err != nil {
				t.Fatal(err)
			}
			if ev(out) {
				hit++
			}
		}
		return float64(hit) / float64(draws)
	}
	p0, p1 := frac(src0, 303), frac(src1, 404)
	n := float64(draws)
	return math.Log(p0 / p1), math.Sqrt((1-p0)/(n*p0) + (1-p1)/(n*p1))
}

// Grouped sums under replace-one, on the worst case of the relation: a
// row of value hi = 1 moves from group north to group south, so the sums
// of both move by 1 (ℓ1 = 2·max(|lo|, |hi|)). The event {north ≥ 2,
// south ≤ −0.25} lies beyond both data sets' sums in both coordinates, so
// its probability ratio is e^(2/b): ε for the plan's b, 2ε for the twin
// calibrated to the within-group sensitivity hi − lo = 1 alone (a row
// that only changes value), which fails the audit. ε = 1, 20000 draws:
// the standard error is about 0.035.
func TestAuditGroupSumMovesBetweenGroups(t *testing.T) {
	testtier.Long(t)
	const eps, draws = 1.0, 20000
	bins, err := NewCategoryBins([]string{"north", "south"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanGroups(GroupSpec{Stat: GroupSum, Groups: bins, Lo: 0, Hi: 1, MaxGroups: 1}, eps, 0, accounting.ReplaceOne)
	if err != nil {
		t.Fatal(err)
	}
	d0 := table(t, 2, []float64{1, 0, 0.5, 0, 0.25, 1}, nil, 0) // north 1.5, south 0.25
	d1 := table(t, 2, []float64{1, 1, 0.5, 0, 0.25, 1}, nil, 0) // north 0.5, south 1.25
	ev := func(out []float64) bool { return out[0] >= 2 && out[1] <= -0.25 }
	loss, se := groupLoss(t, p, d0, d1, false, ev, draws)
	if bound := eps + 4*se; loss > bound {
		t.Errorf("empirical privacy loss %.3f exceeds ε + 4·se = %.3f", loss, bound)
	}
	if loss < eps-4*se {
		t.Errorf("empirical loss %.3f far below ε: the audit's event is too weak to catch a twin", loss)
	}
	twin := *p
	w1, _ := GroupSumSensitivity(0, 1, 1, 1, accounting.ReplaceOne, false) // one group: hi − lo
	twin.sum.Scale = p.SumScale * (w1 + p.Excess) / (p.SumL1 + p.Excess)
	tl, tse := groupLoss(t, &twin, d0, d1, false, ev, draws)
	t.Logf("loss %.3f ± %.3f; twin (scale %.3g for %.3g) %.3f ± %.3f", loss, se, twin.sum.Scale, p.SumScale, tl, tse)
	if tl <= eps+4*tse {
		t.Errorf("the twin calibrated to the within-group sensitivity passes the audit (loss %.3f ≤ %.3f)", tl, eps+4*tse)
	}
}

// User-level grouped counts with max_groups = 2 under add-remove: the
// added user has rows in both groups and counts once in each (ℓ1 = 2).
// The event {north ≥ 3, south ≥ 3} is beyond both data sets' counts, so
// its ratio is e^(2/b) = e^ε; the twin calibrated as if a user counted in
// one group (ℓ1 = 1) has 2ε and fails. 20000 draws, se about 0.04.
func TestAuditGroupCountUsers(t *testing.T) {
	testtier.Long(t)
	const eps, draws = 1.0, 20000
	bins, err := NewCategoryBins([]string{"north", "south"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanGroups(GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 2}, eps, 0, accounting.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	// users 0 (north), 1 (south); d1 adds user 2 with rows south, south, north
	d0 := table(t, 1, []float64{0, 1, 0}, []int32{0, 1, 0}, 3)
	d1 := table(t, 1, []float64{1, 0, 1, 1, 0, 0}, []int32{2, 0, 1, 2, 0, 2}, 3)
	ev := func(out []float64) bool { return out[0] >= 3 && out[1] >= 3 }
	loss, se := groupLoss(t, p, d1, d0, true, ev, draws)
	if bound := eps + 4*se; loss > bound {
		t.Errorf("empirical privacy loss %.3f exceeds ε + 4·se = %.3f", loss, bound)
	}
	if loss < eps-4*se {
		t.Errorf("empirical loss %.3f far below ε: the audit's event is too weak to catch a twin", loss)
	}
	twin := *p
	twin.count.Scale = p.CountScale / 2 // the sensitivity of max_groups = 1
	tl, tse := groupLoss(t, &twin, d1, d0, true, ev, draws)
	t.Logf("loss %.3f ± %.3f; twin %.3f ± %.3f", loss, se, tl, tse)
	if tl <= eps+4*tse {
		t.Errorf("the twin calibrated to one group per user passes the audit (loss %.3f ≤ %.3f)", tl, eps+4*tse)
	}
}
