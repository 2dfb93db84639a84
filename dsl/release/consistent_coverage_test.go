package release

import (
	"context"
	"math"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// fittedCoverage counts, per group, the runs whose 95 % interval covers
// the group's true value.
type fittedCoverage struct {
	name    string
	covered []int
	runs    int
}

func (c *fittedCoverage) add(g int, lo, hi, truth float64, err error) {
	if err == nil && lo <= truth && truth <= hi {
		c.covered[g]++
	}
}

// check asserts coverage of at least 94 % in every group (the Gaussian's
// exact interval near 95 %, the Laplace's sound bound above it: the
// figures are logged).
func (c *fittedCoverage) check(t *testing.T) {
	t.Helper()
	for g, n := range c.covered {
		f := float64(n) / float64(c.runs)
		t.Logf("%s, group %d: 95 %% intervals covered in %.2f %% of %d runs", c.name, g, 100*f, c.runs)
		if f < 0.94 {
			t.Errorf("%s, group %d: covered in %.2f %% of %d runs, want ≥ 94 %%", c.name, g, 100*f, c.runs)
		}
	}
}

// The intervals of consistent=true's fitted parts cover the true values
// in at least 94 % of seeded runs, for private_sql's COUNT(*) and SUM and
// for private_count and private_sum with by=, with Laplace and Gaussian
// noise. The groups are of very different sizes, one of them empty, so
// that the nonnegative projection moves the large groups' values (the
// interval is around the fit, so it still covers).
func TestConsistentIntervalCoverage(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const runs = 4000
	keys := []string{"a", "b", "c", "d"}
	var rows []auditRow
	for i := range 300 {
		rows = append(rows, auditRow{"a", float64(i % 11)})
	}
	for i := range 20 {
		rows = append(rows, auditRow{"b", float64(i % 7)})
	}
	rows = append(rows, auditRow{"c", 9}, auditRow{"c", 4})
	for _, gaussian := range []bool{false, true} {
		for _, kind := range []sqlplan.AggKind{sqlplan.Count, sqlplan.Sum} {
			name := map[bool]string{false: "laplace", true: "gaussian"}[gaussian] + " SQL " + kind.String()
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sp := auditPlan(kind, 0, 10, keys)
				const eps, rho = 0.5, 0.1
				rels, err := sqlReleases(sp, len(keys), accounting.ReplaceOne, []float64{1}, eps, rho, gaussian)
				if err != nil {
					t.Fatal(err)
				}
				args := mustArgs(FnSQL, map[string]any{"query": "q", "eps": eps, "consistent": true})
				if _, err := sqlConsistent(args, rels, false, false, len(keys), accounting.ReplaceOne, eps, rho, gaussian); err != nil {
					t.Fatal(err)
				}
				rels[0].nonnegative = true
				cols, kinds := sqlOutputs(sp)
				m := sqlErrors(sp.Outputs, rels, cols)["a"]
				truth := make([]float64, len(keys))
				for _, r := range rows {
					for g, k := range keys {
						if r.key == k && kind == sqlplan.Sum {
							truth[g] += r.v
						} else if r.key == k {
							truth[g]++
						}
					}
				}
				cov := &fittedCoverage{name: name, covered: make([]int, len(keys)), runs: runs}
				for run := range runs {
					out, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, len(keys), noise.NewSeeded(uint64(9000+run)))
					if err != nil {
						t.Fatal(err)
					}
					tab := out.(*Table)
					for g, row := range tab.Rows {
						lo, hi, err := m.CellInterval(row[len(row)-1].(float64), []float64{tab.Parts["a"][0][g]}, 0.95)
						cov.add(g, lo, hi, truth[g], err)
					}
				}
				t.Logf("half-width %.4g at scale %.4g (%d groups)", m.HalfWidth95, m.Scale, len(keys))
				cov.check(t)
			})
		}
		for _, fn := range []string{"private_count", "private_sum"} {
			name := map[bool]string{false: "laplace", true: "gaussian"}[gaussian] + " " + fn
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sc := tabSchema("replace-one", "row")
				var region, age []float64
				for i := range 200 {
					region, age = append(region, 0), append(age, float64(i%100))
				}
				for i := range 15 {
					region, age = append(region, 1), append(age, float64(7*i))
				}
				region, age = append(region, 2), append(age, 50)
				data := colData(sc, map[string][]float64{"region": region, "age": age}, nil, len(region))
				vals := map[string]any{"by": "region", "eps": 1.0, "consistent": true}
				if fn == "private_sum" {
					vals["col"] = "age"
				}
				if gaussian {
					vals["delta"] = 1e-6
				}
				truth := map[string]float64{"north": 200, "south": 15, "east": 1, "other": 0}
				if fn == "private_sum" {
					truth = map[string]float64{"north": 0, "south": 0, "east": 50, "other": 0}
					for i := range 200 {
						truth["north"] += float64(i % 100)
					}
					for i := range 15 {
						truth["south"] += float64(7 * i)
					}
				}
				var cov *fittedCoverage
				var m ErrorModel
				for run := range runs {
					out, p := runTab(t, uint64(5000+run), fn, vals, data)
					g := out.(*Groups)
					if cov == nil {
						cov = &fittedCoverage{name: name, covered: make([]int, len(g.Keys)), runs: runs}
						m, _ = ErrorOf(p.Params)
					}
					for i, k := range g.Keys {
						tv, ok := truth[k]
						if !ok {
							t.Fatalf("key %q", k)
						}
						lo, hi, err := m.FittedInterval(g.Fitted[i], 0.95)
						cov.add(i, lo, hi, tv, err)
					}
				}
				t.Logf("half-width %.4g at scale %.4g (%d groups)", m.HalfWidth95, m.Scale, m.Parts)
				cov.check(t)
			})
		}
	}
}

// An interval around a fit: cut at 0 and to integers for counts, and the
// model's half-width at each level, growing with it.
func TestFittedInterval(t *testing.T) {
	t.Parallel()
	m := fittedModel(false, 2, 3, true, 0, true)
	h, err := m.HalfWidth(0.95)
	if err != nil || h != m.HalfWidth95 || !(h > 0) {
		t.Fatalf("half-width %v %v, stored %v", h, err, m.HalfWidth95)
	}
	lo, hi, err := m.FittedInterval(1.3, 0.95)
	if err != nil || lo != 0 || hi != math.Floor(1.3+h) {
		t.Errorf("count fit 1.3 ± %v: [%v, %v] %v, want [0, %v]", h, lo, hi, err, math.Floor(1.3+h))
	}
	// A private_sql cell's interval is its fit's (parts[0]), whatever the
	// value shown.
	if clo, chi, err := m.CellInterval(0, []float64{1.3}, 0.95); err != nil || clo != lo || chi != hi {
		t.Errorf("cell shown as 0 with fit 1.3: [%v, %v] %v, want the fit's [%v, %v]", clo, chi, err, lo, hi)
	}
	if _, _, err := m.CellInterval(1.3, nil, 0.95); err == nil {
		t.Error("a fitted cell without its fit has an interval")
	}
	if _, _, err := m.Interval(1.3, 0.95); err == nil {
		t.Error("a fitted release gives an interval from its shown value alone")
	}
	s := fittedModel(true, 2, 3, false, 0.25, false)
	hs, _ := s.HalfWidth(0.95)
	lo, hi, _ = s.FittedInterval(-1, 0.95)
	if lo >= -1-hs || hi <= -1+hs || hi-lo > 2*hs*(1+1e-12) {
		t.Errorf("sum fit −1 ± %v: [%v, %v]", hs, lo, hi)
	}
	// The excess is charged once per coordinate, weighted by 2G/(G+1).
	s0 := fittedModel(true, 2, 3, false, 0, false)
	h0, _ := s0.HalfWidth(0.95)
	if d := hs - h0; math.Abs(d-0.25*1.5) > 1e-9 {
		t.Errorf("the excess adds %v, want %v", d, 0.25*1.5)
	}
	// A count's rounding, ½ per coordinate, likewise.
	c0 := fittedModel(false, 2, 3, false, 0, true)
	if hc, _ := c0.HalfWidth(0.95); math.Abs(h-hc-0.5*1.5) > 1e-9 {
		t.Errorf("the counts' rounding adds %v, want %v", h-hc, 0.5*1.5)
	}
	if h99, _ := s.HalfWidth(0.99); !(h99 > hs) {
		t.Errorf("99 %%: %v, 95 %%: %v", h99, hs)
	}
	if _, _, err := s.FittedInterval(math.NaN(), 0.95); err == nil {
		t.Error("a NaN fit has an interval")
	}
	// The single part's own noise dominates: G/(G+1)·b·ln(20) for the
	// Laplace's exact quantile of that draw alone; the bound is above it.
	l := fittedModel(false, 10, 4, false, 0, false)
	if h, _ := l.HalfWidth(0.95); !(h > 0.8*10*math.Log(20)) || h > 1.5*0.8*10*math.Log(20) {
		t.Errorf("Laplace half-width %v for b = 10, G = 4", h)
	}
}
