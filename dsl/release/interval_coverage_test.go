package release

import (
	"context"
	"math"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// coverageRuns is the number of seeded releases per kind: the share of
// 95 % intervals that cover the true value then has a binomial standard
// deviation of 0.34 %, and 94–96 % is ±2.9 of them.
const coverageRuns = 4000

// coverageData are 100 values in [0, 10], distinct and 0.1 apart, so that
// every rank is reachable by the quantile's grid.
func coverageData() (*rows.Dense, []float64) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i)/10 + 0.05
	}
	return rows.FromDense(mat.NewDense(len(xs), 1, append([]float64(nil), xs...))), xs
}

func checkCoverage(t *testing.T, name string, covered, runs int) {
	t.Helper()
	if f := float64(covered) / float64(runs); f < 0.94 || f > 0.96 {
		t.Errorf("%s: 95 %% intervals covered the true value in %.2f %% of %d runs, want 94–96 %%", name, 100*f, runs)
	} else {
		t.Logf("%s: %.2f %% of %d", name, 100*f, runs)
	}
}

// The 95 % intervals the releases carry (the ErrorModels the planners
// store) cover the true value in 94–96 % of seeded runs of the mechanisms
// the planners run: counts, sums, means (Fieller's set from the noisy
// sum and count) and histograms, with Laplace (δ = 0) and Gaussian noise.
// The scales are large enough that the counts' rounding to integers moves
// the coverage by less than 0.2 %.
func TestIntervalCoverage(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	ctx := context.Background()
	src, xs := coverageData()
	var trueSum float64
	for _, x := range xs {
		trueSum += x
	}
	trueMean := trueSum / float64(len(xs))
	for _, delta := range []float64{0, 1e-6} {
		gaussian := delta > 0
		kind := map[bool]string{false: "laplace", true: "gaussian"}[gaussian]
		s := noise.NewSeeded(2800 + uint64(len(kind)))

		// Counts: ε = 0.05 (b = 20; σ ≈ 24 at δ = 1e-6 via zCDP).
		var count func() float64
		var cm ErrorModel
		if gaussian {
			rho, _, _ := tabular.GaussianTarget(0.05, delta, tabular.CalibrateZCDP)
			sigma := noise.GaussianScale(1, 1/math.Sqrt(2*rho), 1)
			count, cm = func() float64 { return tabular.GaussianCount(1000, sigma, s) }, noiseModel(true, sigma, true, 0)
		} else {
			b := noise.LaplaceScale(1, 0.05, 1)
			count, cm = func() float64 { return tabular.LaplaceCount(1000, b, s) }, noiseModel(false, b, true, 0)
		}
		covered := 0
		for range coverageRuns {
			if lo, hi, err := cm.Interval(count(), 0.95); err == nil && lo <= 1000 && 1000 <= hi {
				covered++
			}
		}
		checkCoverage(t, kind+" count", covered, coverageRuns)

		// Sums of the column in [0, 10].
		sp, err := tabular.PlanSum(0, 10, 0.5, delta, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		sm := noiseModel(sp.Gaussian, sp.Scale, false, sp.Excess)
		covered = 0
		for range coverageRuns {
			v, err := sp.Run(ctx, src, false, s)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi, _ := sm.Interval(v, 0.95); lo <= trueSum && trueSum <= hi {
				covered++
			}
		}
		checkCoverage(t, kind+" sum", covered, coverageRuns)

		// Means: a noisy sum over a noisy count.
		gp, err := tabular.PlanGroups(tabular.GroupSpec{Stat: tabular.GroupMean, Lo: 0, Hi: 10, MaxGroups: 1, CountShare: meanCountShare}, 0.5, delta, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		mm := ratioModel(gp.Gaussian, gp.SumScale, gp.CountScale, gp.Excess, 0, 10)
		covered = 0
		for range coverageRuns {
			_, counts, sums, err := gp.RunParts(ctx, src, false, s)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi, err := mm.RatioInterval(sums[0], counts[0], 0.95); err == nil && lo <= trueMean && trueMean <= hi {
				covered++
			}
		}
		checkCoverage(t, kind+" mean", covered, coverageRuns)

		// Histograms: 5 bins of 20 values each, every bin's interval.
		bins, err := tabular.NewNumericBins(0, 10, 5)
		if err != nil {
			t.Fatal(err)
		}
		hp, err := tabular.PlanHistogram(bins, 1, 0.1, delta, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		hm := noiseModel(hp.Gaussian, hp.Scale, true, 0)
		covered = 0
		for range coverageRuns / 5 {
			counts, err := hp.Run(ctx, src, false, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range counts {
				if lo, hi, _ := hm.Interval(v, 0.95); lo <= 20 && 20 <= hi {
					covered++
				}
			}
		}
		checkCoverage(t, kind+" histogram", covered, coverageRuns)
	}
}

// The quantile's rank bound holds in at least 95 % of seeded runs: the
// released value's rank lies within RankError95 rows of q·n (every rank
// is reachable on this grid, so the least loss is 0).
func TestQuantileRankCoverage(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	ctx := context.Background()
	src, xs := coverageData()
	sort.Float64s(xs)
	qp, err := tabular.PlanQuantile(0, 10, 0.5, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	m := rankModel(qp.Grid+1, qp.Ratio())
	s := noise.NewSeeded(2801)
	const runs = 2000
	covered := 0
	for range runs {
		v, err := qp.Run(ctx, src, false, s)
		if err != nil {
			t.Fatal(err)
		}
		rank := sort.SearchFloat64s(xs, v) // #{x < v}
		if math.Abs(float64(rank)-0.5*float64(len(xs))) <= float64(m.RankError95) {
			covered++
		}
	}
	if f := float64(covered) / runs; f < 0.95 {
		t.Errorf("the rank bound ±%d held in %.2f %% of %d runs, want ≥ 95 %%", m.RankError95, 100*f, runs)
	} else {
		t.Logf("rank bound ±%d held in %.2f %% of %d runs", m.RankError95, 100*f, runs)
	}
}

// sqlCoverageRuns is the number of seeded private_sql releases per row of
// TestIntervalCoverageSQL.
const sqlCoverageRuns = 2000

// private_sql's AVG intervals (Fieller's set from the noisy centred sum
// and count, shifted back by the midpoint) cover the true mean of the
// clamped values in 94–96 % of seeded runs, ungrouped and per group of a
// grouped AVG; the VARIANCE (and so STDDEV) interval, conservative by
// construction (a union bound over three parts and the box's range), in at
// least 95 %. The releases run through the planner and the run
// (sqlReleases, runSQL) on the exact aggregates stubSQL returns, and the
// intervals come from the columns' stored ErrorModels and Table.Parts.
func TestIntervalCoverageSQL(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const lo, hi = 0.0, 10.0
	rows := accuracyData(300, hi)
	keys := []string{"a", "b", "c"}
	byKey := map[string][]auditRow{}
	for _, r := range rows {
		byKey[r.key] = append(byKey[r.key], r)
	}
	cases := []struct {
		name string
		kind sqlplan.AggKind
		keys []string
		eps  float64
		// exact: the true value of a group's column.
		exact func(rs []auditRow) float64
		// conservative: at least 95 %, no upper limit.
		conservative bool
	}{
		{"AVG", sqlplan.Avg, nil, 0.3, func(rs []auditRow) float64 { _, m, _, _, _ := clampedMoments(rs, lo, hi); return m }, false},
		{"AVG GROUP BY", sqlplan.Avg, keys, 0.3, func(rs []auditRow) float64 { _, m, _, _, _ := clampedMoments(rs, lo, hi); return m }, false},
		{"VARIANCE", sqlplan.Variance, nil, 0.5, func(rs []auditRow) float64 { _, _, v, _, _ := clampedMoments(rs, lo, hi); return v }, true},
	}
	for _, delta := range []float64{0, 1e-6} {
		gaussian := delta > 0
		noiseKind := map[bool]string{false: "laplace", true: "gaussian"}[gaussian]
		for ci, c := range cases {
			sp := auditPlan(c.kind, lo, hi, c.keys)
			groups := max(len(c.keys), 1)
			var rho float64
			if gaussian {
				rho, _, _ = tabular.GaussianTarget(c.eps, delta, tabular.CalibrateZCDP)
			}
			rels, err := sqlReleases(sp, groups, accounting.AddRemove, []float64{1}, c.eps, rho, gaussian)
			if err != nil {
				t.Fatal(err)
			}
			cols, kinds := sqlOutputs(sp)
			m, ok := sqlErrors(sp.Outputs, rels, cols)["a"]
			if !ok {
				t.Fatalf("%s: column a has no ErrorModel", c.name)
			}
			want := map[string]float64{"": c.exact(rows)}
			for _, k := range c.keys {
				want[k] = c.exact(byKey[k])
			}
			covered, total, width := 0, 0, 0.0
			for run := range sqlCoverageRuns / groups {
				v, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, groups, noise.NewSeeded(uint64(3300+1000*ci+100000*len(noiseKind)+run)))
				if err != nil {
					t.Fatal(err)
				}
				tab := v.(*Table)
				col := len(tab.Columns) - 1
				for g, r := range tab.Rows {
					k := ""
					if len(r) > 1 {
						k = r[0].(string)
					}
					parts := make([]float64, len(tab.Parts["a"]))
					for j, p := range tab.Parts["a"] {
						parts[j] = p[g]
					}
					total++
					lo, hi, err := m.CellInterval(r[col].(float64), parts, 0.95)
					if err != nil {
						t.Fatal(err)
					}
					if lo <= want[k] && want[k] <= hi {
						covered++
					}
					width += hi - lo
				}
			}
			name := noiseKind + " SQL " + c.name
			if c.conservative {
				if f := float64(covered) / float64(total); f < 0.95 {
					t.Errorf("%s: 95 %% intervals covered the true value in %.2f %% of %d runs, want ≥ 95 %%", name, 100*f, total)
				} else {
					t.Logf("%s (conservative): %.2f %% of %d; mean width %.3g (true value %.3g, feasible [0, %g])", name, 100*f, total, width/float64(total), want[""], (hi-lo)*(hi-lo)/4)
				}
				continue
			}
			checkCoverage(t, name, covered, total)
		}
	}
}
