package tabular

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// table is a source of rows of width columns (value, group index, or the
// group index alone); with units, row i belongs to user units[i] of nu.
func table(t testing.TB, width int, vals []float64, units []int32, nu int) rows.Source {
	t.Helper()
	if len(vals) == 0 {
		return emptyTable(width)
	}
	src := rows.FromDense(mat.NewDense(len(vals)/width, width, append([]float64(nil), vals...)))
	if units == nil {
		return src
	}
	us, err := src.WithUnits(units, nu)
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// emptyTable is a source of width columns and no rows.
type emptyTable int

func (e emptyTable) Dim() int                                { return int(e) }
func (emptyTable) Scan(context.Context) (rows.Cursor, error) { return emptyCursor{}, nil }
func (emptyTable) NumUnits() int                             { return 0 }

func regions(t testing.TB) *CategoryBins {
	t.Helper()
	b, err := NewCategoryBins([]string{"north", "south", "east"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The sensitivities of the vectors of counts and sums, as derived in
// GroupCountSensitivity and GroupSumSensitivity: k and √k times those of
// one group membership; a row that moves between groups costs 2m in ℓ1 and
// max(hi − lo, √2·m) in ℓ2 under replace-one; one group is private_sum's
// and private_count's case.
func TestGroupSensitivities(t *testing.T) {
	ar, ro := accounting.AddRemove, accounting.ReplaceOne
	for _, c := range []struct {
		groups, k int
		nb        accounting.Neighbour
		arToo     bool
		cl1, cl2  float64
		lo, hi    float64
		sl1, sl2  float64
	}{
		{4, 1, ar, false, 1, 1, 0, 10, 10, 10},
		{4, 1, ro, false, 2, math.Sqrt2, 0, 10, 20, 10 * math.Sqrt2},
		{4, 1, ro, false, 2, math.Sqrt2, -1, 1, 2, 2}, // hi − lo = 2 > √2·1
		{4, 1, ro, false, 2, math.Sqrt2, -3, 1, 6, 3 * math.Sqrt2},
		{4, 3, ar, false, 3, math.Sqrt(3), 0, 10, 30, math.Sqrt(3) * 10},
		{4, 3, ro, false, 6, math.Sqrt(6), 0, 10, 60, math.Sqrt(3) * math.Sqrt2 * 10},
		{4, 4, ro, false, 8, math.Sqrt(8), -1, 1, 8, 4},
		{1, 1, ar, false, 1, 1, 0, 10, 10, 10},
		{1, 1, ro, false, 1, 1, 0, 10, 10, 10},
		{1, 1, ro, false, 1, 1, 5, 6, 1, 1}, // private_sum's hi − lo
		{1, 1, ro, true, 1, 1, 5, 6, 6, 6},  // a subset: max(hi − lo, m)
		{4, 1, ro, true, 2, math.Sqrt2, 5, 6, 12, 6 * math.Sqrt2},
	} {
		cl1, cl2 := GroupCountSensitivity(c.groups, c.k, c.nb, c.arToo)
		sl1, sl2 := GroupSumSensitivity(c.lo, c.hi, c.groups, c.k, c.nb, c.arToo)
		near := func(got, want float64) bool { return got >= want*(1-1e-15) && got <= want*(1+1e-14) }
		if !near(cl1, c.cl1) || !near(cl2, c.cl2) || !near(sl1, c.sl1) || !near(sl2, c.sl2) {
			t.Errorf("%+v: counts %v %v, sums %v %v", c, cl1, cl2, sl1, sl2)
		}
	}
	// rounded up: never below the exact value
	if _, l2 := GroupCountSensitivity(4, 1, ro, false); l2*l2 < 2 {
		t.Errorf("√2 rounded down: %v", l2)
	}
	if _, l2 := GroupCountSensitivity(4, 3, ar, false); l2*l2 < 3 {
		t.Errorf("√3 rounded down: %v", l2)
	}
}

// The sensitivities hold on data: over random neighbouring data sets
// (a unit added, removed or replaced; users of several rows in several
// groups, limited to k), the exact per-group totals move by at most the
// planned ℓ1 and ℓ2 (plus the rounding excess for sums), and the worst
// cases come close to them, so the bounds are the right ones.
func TestGroupSensitivityOnData(t *testing.T) {
	testtier.Long(t)
	ctx := context.Background()
	bins := regions(t)
	r := rand.New(rand.NewPCG(5, 6))
	const lo, hi = -2.0, 3.0
	for _, users := range []bool{false, true} {
		for _, k := range []int{1, 2, 4} {
			if !users && k > 1 {
				continue
			}
			for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
				spec := GroupSpec{Stat: GroupMean, Groups: bins, Lo: lo, Hi: hi, MaxGroups: k, CountShare: 0.2}
				p, err := PlanGroups(spec, 1, 1e-6, nb)
				if err != nil {
					t.Fatal(err)
				}
				cl1, cl2 := GroupCountSensitivity(4, k, nb, false)
				var worstS1, worstS2, worstC1, worstC2 float64
				for trial := range 3000 {
					// units of 1..5 rows (one row each at row level)
					type row struct {
						v, g float64
						u    int32
					}
					unit := func(u int32) []row {
						n := 1
						if users {
							n = 1 + r.IntN(5)
						}
						var out []row
						for range n {
							v := []float64{lo, hi, 0, lo - 5, hi + 5, math.NaN(), r.Float64()*(hi-lo) + lo}[r.IntN(7)]
							out = append(out, row{v, float64(r.IntN(5)), u}) // 4: an index outside the domain ("other")
						}
						return out
					}
					nu := 1 + r.IntN(6)
					var base []row
					for u := range nu {
						base = append(base, unit(int32(u))...)
					}
					r.Shuffle(len(base), func(i, j int) { base[i], base[j] = base[j], base[i] })
					var other []row
					if nb == accounting.AddRemove {
						// add a unit, its rows inserted anywhere among the
						// others, whose order stays
						other = append([]row(nil), base...)
						for _, x := range unit(int32(nu)) {
							at := r.IntN(len(other) + 1)
							other = append(other[:at], append([]row{x}, other[at:]...)...)
						}
					} else {
						// replace unit 0 by another, at the same positions
						// and beyond
						repl := unit(0)
						for _, x := range base {
							if x.u != 0 {
								other = append(other, x)
							} else if len(repl) > 0 {
								other = append(other, repl[0])
								repl = repl[1:]
							}
						}
						other = append(other, repl...)
					}
					totals := func(rs []row, n int) (c, s []float64) {
						var vals []float64
						var units []int32
						for _, x := range rs {
							vals = append(vals, x.v, x.g)
							units = append(units, x.u)
						}
						if !users {
							units = nil
						}
						c, s, err := p.Totals(ctx, table(t, 2, vals, units, n), users)
						if err != nil {
							t.Fatal(err)
						}
						return c, s
					}
					c0, s0 := totals(base, nu+1)
					c1, s1 := totals(other, nu+1)
					var dc1, dc2, ds1, ds2 float64
					for j := range c0 {
						dc := math.Abs(c0[j] - c1[j])
						ds := math.Abs(s0[j] - s1[j])
						dc1, dc2 = dc1+dc, dc2+dc*dc
						ds1, ds2 = ds1+ds, ds2+ds*ds
					}
					dc2, ds2 = math.Sqrt(dc2), math.Sqrt(ds2)
					if dc1 > cl1 || dc2 > cl2*(1+1e-12) || ds1 > p.SumL1+p.Excess || ds2 > p.SumL2+p.Excess {
						t.Fatalf("users=%v k=%d %v trial %d: counts move %v (ℓ1) %v (ℓ2), sums %v %v; sensitivities %v %v, %v %v",
							users, k, nb, trial, dc1, dc2, ds1, ds2, cl1, cl2, p.SumL1, p.SumL2)
					}
					worstC1, worstC2 = max(worstC1, dc1), max(worstC2, dc2)
					worstS1, worstS2 = max(worstS1, ds1), max(worstS2, ds2)
				}
				// the random trials come near the bounds: they are tight
				if 2*k > 4 {
					continue // A and B cannot be disjoint among 4 groups: the bound is not reached
				}
				if worstC1 < cl1 || worstS1 < 0.8*p.SumL1 || worstS2 < 0.8*p.SumL2 {
					t.Errorf("users=%v k=%d %v: worst moves %v %v (counts), %v %v (sums), bounds %v %v, %v %v: the trials never come near the bounds",
						users, k, nb, worstC1, worstC2, worstS1, worstS2, cl1, cl2, p.SumL1, p.SumL2)
				}
			}
		}
	}
}

// Plans fix the noise from public facts and refuse what cannot run.
func TestPlanGroups(t *testing.T) {
	bins := regions(t)
	for _, c := range []struct {
		spec       GroupSpec
		eps, delta float64
		nb         accounting.Neighbour
		err        error
	}{
		{GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 0}, 1, 0, accounting.AddRemove, ErrMaxGroups},
		{GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 5}, 1, 0, accounting.AddRemove, ErrMaxGroups},
		{GroupSpec{Stat: GroupSum, Groups: bins, MaxGroups: 1, Lo: 1, Hi: 1}, 1, 0, accounting.AddRemove, ErrBounds},
		{GroupSpec{Stat: GroupSum, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1e300}, 1, 0, accounting.AddRemove, ErrBoundsRange},
		{GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1, CountShare: 0}, 1, 0, accounting.AddRemove, ErrShare},
		{GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1, CountShare: 0.2}, 1e-12, 0, accounting.AddRemove, noise.ErrCoarse},
		{GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1, CountShare: 1}, 1, 1e-6, accounting.AddRemove, ErrShare},
		{GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1, CountShare: 0.2}, math.Inf(1), 1e-6, accounting.AddRemove, ErrEps},
		{GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 1}, -1, 0, accounting.AddRemove, ErrEps},
		{GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 1}, 1, 1, accounting.AddRemove, ErrDelta},
		{GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 1}, 1e-12, 0, accounting.AddRemove, noise.ErrCoarse},
		{GroupSpec{Stat: GroupStat(7), Groups: bins, MaxGroups: 1}, 1, 0, accounting.AddRemove, ErrStat},
	} {
		if _, err := PlanGroups(c.spec, c.eps, c.delta, c.nb); !errors.Is(err, c.err) {
			t.Errorf("%+v ε=%v δ=%v: %v, want %v", c.spec, c.eps, c.delta, err, c.err)
		}
	}
	// Laplace counts: b = ℓ1/ε over 4 coordinates; Gaussian sums:
	// σ = ℓ2/√(2ρ); a mean splits ρ 20/80 and charges ρ.
	p, err := PlanGroups(GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 2}, 0.5, 0, accounting.ReplaceOne)
	if err != nil || p.CountL1 != 4 || math.Abs(p.CountScale/(4/0.5)-1) > 1e-9 || p.Event.Kind != accounting.PureDP || p.Event.Eps != 0.5 {
		t.Errorf("count plan %+v, %v", p, err)
	}
	p, err = PlanGroups(GroupSpec{Stat: GroupSum, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 10}, 1, 1e-6, accounting.ReplaceOne)
	rho := accounting.RhoForTarget(1, 1e-6)
	if err != nil || !p.Gaussian || math.Abs(p.SumScale/((p.SumL2+p.Excess)/math.Sqrt(2*rho))-1) > 1e-9 || p.Event.Rho != rho {
		t.Errorf("sum plan %+v, %v", p, err)
	}
	p, err = PlanGroups(GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 10, CountShare: 0.2}, 1, 1e-6, accounting.AddRemove)
	if err != nil || p.Event.Kind != accounting.ZCDP || p.Event.Rho != rho || p.CountRho+p.SumRho > rho ||
		math.Abs(p.CountRho/(0.2*rho)-1) > 1e-12 || math.Abs(p.CountScale/(1/math.Sqrt(2*0.2*rho))-1) > 1e-9 ||
		math.Abs(p.SumScale/((10+p.Excess)/math.Sqrt(2*0.8*rho))-1) > 1e-9 {
		t.Errorf("mean plan %+v, %v", p, err)
	}
	if !reflect.DeepEqual(p.Keys(), []string{"north", "south", "east", "other"}) {
		t.Errorf("keys %q", p.Keys())
	}
	// Without δ a mean is pure ε: Laplace b = ℓ1/ε-share on the counts
	// (20 %) and on the sums (80 %, sensitivity plus the rounding
	// excess), the shares adding up to no more than the charged ε.
	p, err = PlanGroups(GroupSpec{Stat: GroupMean, Groups: bins, MaxGroups: 2, Lo: 0, Hi: 10, CountShare: 0.2}, 1, 0, accounting.AddRemove)
	if err != nil || p.Gaussian || p.Event.Kind != accounting.PureDP || p.Event.Eps != 1 || p.CountEps+p.SumEps > 1 ||
		math.Abs(p.CountEps/0.2-1) > 1e-12 || math.Abs(p.CountScale/(p.CountL1/0.2)-1) > 1e-9 ||
		math.Abs(p.SumScale/((p.SumL1+p.Excess)/0.8)-1) > 1e-9 || p.CountL1 != 2 || p.SumL1 != 20 {
		t.Errorf("pure-ε mean plan %+v, %v", p, err)
	}
}

// Exact totals follow the public rules: row level, every row in its
// group (indices outside the domain, NaN and non-integers in "other"),
// values clamped; user level, each user in the first k distinct groups
// of their rows in row order, once per group, with the mean of their
// clamped values there.
func TestGroupTotals(t *testing.T) {
	ctx := context.Background()
	bins := regions(t)
	// (value, group)
	vals := []float64{
		5, 0, // user 0: north
		50, 1, // user 1: south (clamped to 10)
		3, 0, // user 0: north again
		math.NaN(), 2, // user 2: east, counts 0
		7, 7, // user 1: other
		-4, 1.5, // user 0: other (clamped to 0)
		1, 1, // user 0: south, beyond k = 2 for user 0
		2, math.NaN(), // user 3: other
	}
	units := []int32{0, 1, 0, 2, 1, 0, 0, 3}
	sum := func(k int) *GroupPlan {
		p, err := PlanGroups(GroupSpec{Stat: GroupMean, Groups: bins, Lo: 0, Hi: 10, MaxGroups: k, CountShare: 0.2}, 1, 1e-6, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		users        bool
		k            int
		wantC, wantS []float64
	}{
		{false, 1, []float64{2, 2, 1, 3}, []float64{8, 11, 0, 9}},
		// k = 1: users 0..3 in north, south, east, other
		{true, 1, []float64{1, 1, 1, 1}, []float64{4, 10, 0, 2}},
		// k = 2: user 0 north+other, user 1 south+other
		{true, 2, []float64{1, 1, 1, 3}, []float64{4, 10, 0, 0 + 7 + 2}},
		// k = 4: user 0 also south
		{true, 4, []float64{1, 2, 1, 3}, []float64{4, 11, 0, 9}},
	} {
		var us []int32
		if c.users {
			us = units
		}
		cs, ss, err := sum(c.k).Totals(ctx, table(t, 2, vals, us, 4), c.users)
		if err != nil || !reflect.DeepEqual(cs, c.wantC) || !reflect.DeepEqual(ss, c.wantS) {
			t.Errorf("users=%v k=%d: counts %v sums %v (%v), want %v %v", c.users, c.k, cs, ss, err, c.wantC, c.wantS)
		}
		// counts alone read the grouping column alone
		p, err := PlanGroups(GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: c.k}, 1, 0, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		var g []float64
		for i := 1; i < len(vals); i += 2 {
			g = append(g, vals[i])
		}
		cs, ss, err = p.Totals(ctx, table(t, 1, g, us, 4), c.users)
		if err != nil || !reflect.DeepEqual(cs, c.wantC) || ss != nil {
			t.Errorf("users=%v k=%d: counts alone %v %v (%v)", c.users, c.k, cs, ss, err)
		}
	}
	// many groups per user: the map-indexed lookup gives the same totals
	big, err := NewCategoryBins([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var bv []float64
	var bu []int32
	for range 3000 {
		bv = append(bv, r.Float64()*20-5, float64(r.IntN(14)))
		bu = append(bu, int32(r.IntN(30)))
	}
	for _, k := range []int{3, 9, 13} {
		p, err := PlanGroups(GroupSpec{Stat: GroupSum, Groups: big, Lo: 0, Hi: 10, MaxGroups: k}, 1, 0, accounting.AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := p.Totals(ctx, table(t, 2, bv, bu, 30), true)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceUserSums(bv, bu, 30, 13, k, 0, 10)
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-9*max(1, math.Abs(want[j])) {
				t.Errorf("k=%d group %d: %v, want %v", k, j, got[j], want[j])
			}
		}
	}
}

// referenceUserSums is the user-level rule written plainly.
func referenceUserSums(vals []float64, units []int32, nu, groups, k int, lo, hi float64) []float64 {
	type acc struct{ s, n float64 }
	per := make([]map[int]*acc, nu)
	order := make([][]int, nu)
	for i, u := range units {
		v, g := vals[2*i], int(vals[2*i+1])
		if g >= groups-1 || g < 0 {
			g = groups - 1
		}
		if per[u] == nil {
			per[u] = map[int]*acc{}
		}
		a, ok := per[u][g]
		if !ok {
			if len(order[u]) >= k {
				continue
			}
			a = &acc{}
			per[u][g] = a
			order[u] = append(order[u], g)
		}
		a.s += Clamp(v, lo, hi)
		a.n++
	}
	out := make([]float64, groups)
	for u := range per {
		for g, a := range per[u] {
			out[g] += Clamp(a.s/a.n, lo, hi)
		}
	}
	return out
}

// Row-level sums are rowpass's pairwise sums per group, to the bit, not
// running sums.
func TestGroupSumsArePairwise(t *testing.T) {
	bins := regions(t)
	r := rand.New(rand.NewPCG(3, 4))
	n := 5000
	vals := make([]float64, 0, 2*n)
	for range n {
		vals = append(vals, math.Ldexp(r.Float64()-0.3, r.IntN(60)-30), float64(r.IntN(4)))
	}
	p, err := PlanGroups(GroupSpec{Stat: GroupSum, Groups: bins, Lo: -1e10, Hi: 1e10, MaxGroups: 1}, 1, 0, accounting.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := p.Totals(context.Background(), table(t, 2, vals, nil, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	want := rowpass.SumVec(n, 4, rowpass.Options{Workers: 1}, func(dst []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[int(vals[2*i+1])] += vals[2*i]
		}
	})
	running := make([]float64, 4)
	for i := range n {
		running[int(vals[2*i+1])] += vals[2*i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sums %v, want the pairwise %v", got, want)
	}
	if reflect.DeepEqual(running, want) {
		t.Fatal("the running sums equal the pairwise ones: pick data that tell them apart")
	}
}

// The released values carry noise of the planned scales: over seeded
// releases the median absolute error of the counts (rounded), the sums and
// the means' parts is b·ln 2 or 0.6745·σ within 12% (about four standard
// errors of a median of 2000 draws), and means are sum/max(count, 1).
func TestGroupNoiseScale(t *testing.T) {
	ctx := context.Background()
	bins := regions(t)
	vals := []float64{1, 0, 2, 0, 3, 1, 4, 2, 9, 3}
	exactC := []float64{2, 1, 1, 1}
	exactS := []float64{3, 3, 4, 9}
	for _, c := range []struct {
		stat  GroupStat
		delta float64
	}{{GroupCount, 0}, {GroupCount, 1e-6}, {GroupSum, 0}, {GroupSum, 1e-6}} {
		p, err := PlanGroups(GroupSpec{Stat: c.stat, Groups: bins, Lo: 0, Hi: 10, MaxGroups: 1}, 0.2, c.delta, accounting.ReplaceOne)
		if err != nil {
			t.Fatal(err)
		}
		src := table(t, 2, vals, nil, 0)
		exact, scale := exactS, p.SumScale
		if c.stat == GroupCount {
			var g []float64
			for i := 1; i < len(vals); i += 2 {
				g = append(g, vals[i])
			}
			src, exact, scale = table(t, 1, g, nil, 0), exactC, p.CountScale
		}
		s := noise.NewSeeded(7)
		var errs []float64
		for range 500 {
			out, err := p.Run(ctx, src, false, s)
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range out {
				if c.stat == GroupCount && v != math.Round(v) {
					t.Fatalf("count %v is not an integer", v)
				}
				errs = append(errs, math.Abs(v-exact[j]))
			}
		}
		sort.Float64s(errs)
		med := errs[len(errs)/2]
		want := scale * math.Ln2
		if p.Gaussian {
			want = scale * 0.6745
		}
		if math.Abs(med/want-1) > 0.12 {
			t.Errorf("%v δ=%v: median |error| %v, want %v", c.stat, c.delta, med, want)
		}
	}
	// a mean with ε large: the ratio is the groups' means within four
	// standard deviations of the sums' noise (σ ≈ 0.12; the counts' is 0.02)
	p, err := PlanGroups(GroupSpec{Stat: GroupMean, Groups: bins, Lo: 0, Hi: 10, MaxGroups: 1, CountShare: 0.2}, 1e4, 1e-6, accounting.ReplaceOne)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(ctx, table(t, 2, vals, nil, 0), false, noise.NewSeeded(8))
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{1.5, 3, 4, 9} {
		if math.Abs(out[j]-want) > 0.5 {
			t.Errorf("mean of group %d: %v, want about %v", j, out[j], want)
		}
	}
}

// Runs cannot fail on the data: no rows, every row in "other", NaN and
// infinities, users without rows; an empty group's mean divides by
// max(noisy count, 1) and stays finite.
func TestGroupRunNeverFailsOnData(t *testing.T) {
	bins := regions(t)
	s := noise.NewSeeded(3)
	for _, stat := range []GroupStat{GroupCount, GroupSum, GroupMean} {
		for _, users := range []bool{false, true} {
			p, err := PlanGroups(GroupSpec{Stat: stat, Groups: bins, Lo: -1, Hi: 1, MaxGroups: 2, CountShare: 0.2}, 1, 1e-6, accounting.ReplaceOne)
			if err != nil {
				t.Fatal(err)
			}
			width := 2
			if stat == GroupCount {
				width = 1
			}
			for _, vals := range [][]float64{{}, {7, 7, 7, 7}, {math.NaN(), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64}, {0.5, 1e9}} {
				vals = vals[:len(vals)/width*width]
				var units []int32
				if users {
					units = make([]int32, len(vals)/width)
				}
				out, err := p.Run(context.Background(), table(t, width, vals, units, 3), users, s)
				if err != nil || len(out) != 4 {
					t.Fatalf("%v users=%v %v: %v, %v", stat, users, vals, out, err)
				}
				for _, v := range out {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("%v users=%v %v: %v", stat, users, vals, out)
					}
				}
			}
		}
	}
	// the wrong number of columns is the caller's error, not the data's
	p, _ := PlanGroups(GroupSpec{Stat: GroupSum, Groups: bins, Lo: -1, Hi: 1, MaxGroups: 1}, 1, 0, accounting.ReplaceOne)
	if _, err := p.Run(context.Background(), table(t, 1, []float64{1}, nil, 0), false, s); !errors.Is(err, ErrGroupDim) {
		t.Errorf("one column for a sum: %v", err)
	}
}

// Without a grouping column a GroupMean is the bounded mean of one column:
// one value, private_sum's sensitivity for its sum and 1 for its count.
func TestOneGroupMean(t *testing.T) {
	p, err := PlanGroups(GroupSpec{Stat: GroupMean, Lo: 0, Hi: 10, MaxGroups: 1, CountShare: 0.2}, 1e4, 1e-6, accounting.ReplaceOne)
	if err != nil {
		t.Fatal(err)
	}
	if p.SumL1 != up(10) || p.SumL2 != up(10) || p.CountL1 != 1 || p.CountL2 != 1 { // hi − lo rounded up, as PlanSum's
		t.Errorf("sensitivities %v %v %v %v", p.SumL1, p.SumL2, p.CountL1, p.CountL2)
	}
	for _, users := range []bool{false, true} {
		var units []int32
		if users {
			units = []int32{0, 0, 1, 2} // user means 5, 4, 10 → 19/3
		}
		out, err := p.Run(context.Background(), table(t, 1, []float64{2, 8, 4, 30}, units, 3), users, noise.NewSeeded(1))
		want := 6.0 // (2 + 8 + 4 + 10)/4
		if users {
			want = 19.0 / 3
		}
		if err != nil || len(out) != 1 || math.Abs(out[0]-want) > 0.1 {
			t.Errorf("users=%v: %v %v, want about %v", users, out, err, want)
		}
	}
}

// A released total is one more coordinate of the counts' vector: a unit
// moves one count and the total (add-remove) or two counts (replace-one),
// so ℓ1 = 2 and ℓ2 = √2 under both, and the noise is calibrated to them
// over G+1 coordinates. Run returns the G counts, then the total. Only
// counts with max_groups 1 take one.
func TestGroupTotal(t *testing.T) {
	bins, _ := NewCategoryBins([]string{"a", "b"}, "other")
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		for _, delta := range []float64{0, 1e-6} {
			p, err := PlanGroups(GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 1, Total: true}, 1, delta, nb)
			if err != nil {
				t.Fatal(err)
			}
			if p.CountL1 != 2 || p.CountL2 < math.Sqrt2 || p.CountL2 > math.Sqrt2*(1+1e-15) {
				t.Errorf("%v δ=%v: sensitivities %v, %v, want 2, √2", nb, delta, p.CountL1, p.CountL2)
			}
			plain, _ := PlanGroups(GroupSpec{Stat: GroupCount, Groups: bins, MaxGroups: 1}, 1, delta, nb)
			if nb == accounting.AddRemove && !(p.CountScale > 1.9*plain.CountScale) && delta == 0 {
				t.Errorf("%v: total's Laplace scale %v, plain %v: want twice", nb, p.CountScale, plain.CountScale)
			}
			src := rows.FromDense(mat.NewDense(5, 1, []float64{0, 1, 1, 2, 7}))
			vals, err := p.Run(context.Background(), src, false, noise.NewSeeded(1))
			if err != nil || len(vals) != 4 {
				t.Fatalf("Run: %v %v, want 3 counts and a total", vals, err)
			}
		}
	}
	for _, spec := range []GroupSpec{
		{Stat: GroupCount, Groups: bins, MaxGroups: 2, Total: true},
		{Stat: GroupSum, Groups: bins, MaxGroups: 2, Lo: 0, Hi: 1, Total: true},
		{Stat: GroupMean, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 1, CountShare: 0.5, Total: true},
	} {
		if _, err := PlanGroups(spec, 1, 0, accounting.AddRemove); !errors.Is(err, ErrTotal) {
			t.Errorf("%+v: %v, want ErrTotal", spec, err)
		}
	}
}

// The sums' total is one more coordinate of the sums' vector: its
// sensitivities are the largest moves of (S_1, …, S_G, T) over every pair
// of neighbouring rows, found here by brute force over a grid of values
// (a row in group 0 or 1, or in none) and set against the closed form; Run
// returns the G sums, then their total, which (with negligible noise) is
// their sum. User-level data take no total.
func TestGroupSumTotal(t *testing.T) {
	bins, _ := NewCategoryBins([]string{"a"}, "other")
	for _, c := range []struct{ lo, hi float64 }{{0, 10}, {-1, 1}, {-3, 5}, {2, 3}, {-7, -2}} {
		for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
			l1, l2 := GroupSumTotalSensitivity(c.lo, c.hi, nb)
			// move returns the change of (S_0, S_1, T) when a row of
			// value a in group ga (−1: none) becomes b in gb.
			var b1, b2 float64
			for i := range 21 {
				a := c.lo + (c.hi-c.lo)*float64(i)/20
				for j := range 21 {
					b := c.lo + (c.hi-c.lo)*float64(j)/20
					for _, g := range [][2]int{{0, 0}, {0, 1}, {0, -1}, {-1, 0}} {
						if nb == accounting.AddRemove && g[1] != -1 {
							continue // add-remove: a row removed
						}
						d := []float64{0, 0, 0}
						if g[0] >= 0 {
							d[g[0]] -= a
							d[2] -= a
						}
						if g[1] >= 0 {
							d[g[1]] += b
							d[2] += b
						}
						n1, n2 := 0.0, 0.0
						for _, x := range d {
							n1 += math.Abs(x)
							n2 += x * x
						}
						b1, b2 = max(b1, n1), max(b2, math.Sqrt(n2))
					}
				}
			}
			if l1 < b1*(1-1e-12) || l1 > b1*(1+1e-9) || l2 < b2*(1-1e-12) || l2 > b2*(1+1e-9) {
				t.Errorf("[%v, %v] %v: sensitivities %v, %v, brute force %v, %v", c.lo, c.hi, nb, l1, l2, b1, b2)
			}
		}
	}
	p, err := PlanGroups(GroupSpec{Stat: GroupSum, Groups: bins, MaxGroups: 1, Lo: 0, Hi: 10, Total: true}, 1e6, 0, accounting.ReplaceOne)
	if err != nil {
		t.Fatal(err)
	}
	if l1, _ := GroupSumTotalSensitivity(0, 10, accounting.ReplaceOne); p.SumL1 != l1 || p.Excess != 2*SumExcess(10) {
		t.Errorf("plan: ℓ1 %v, excess %v", p.SumL1, p.Excess)
	}
	// Column 0 the value, column 1 the key's code (0 = "a", else other).
	src := table(t, 2, []float64{1, 0, 2, 0, 4, 1, 8, 5, 20, 0}, nil, 0)
	vals, err := p.Run(context.Background(), src, false, noise.NewSeeded(1))
	if err != nil || len(vals) != 3 || math.Abs(vals[0]-13) > 0.01 || math.Abs(vals[1]-12) > 0.01 || math.Abs(vals[2]-25) > 0.01 {
		t.Errorf("Run: %v %v, want about 13, 12 and their total 25", vals, err)
	}
	if _, err := p.Run(context.Background(), table(t, 2, []float64{1, 0}, []int32{0}, 1), true, noise.NewSeeded(1)); !errors.Is(err, ErrTotal) {
		t.Errorf("user-level: %v, want ErrTotal", err)
	}
}
