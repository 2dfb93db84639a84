package release

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// runTab plans fn on sc with vals and runs it on data, with seeded noise.
func runTab(t *testing.T, seed uint64, fn string, vals map[string]any, d *Data) (any, *Plan) {
	t.Helper()
	env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) }}
	p, err := tabPlan(t, env, fn, d.Schema, vals)
	if err != nil {
		t.Fatalf("%s %v: %v", fn, vals, err)
	}
	out, err := p.run(context.Background(), d)
	if err != nil {
		t.Fatalf("%s %v: %v", fn, vals, err)
	}
	return out, p
}

// nonnegative=true (the default) shows no negative count; false shows the
// raw counts, which fall below 0 about half the time around a true 0. The
// rule is named in the note either way.
func TestNonnegativeCounts(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	// region values 3 and 4 are outside the domain: every key but
	// "other" counts 0 rows.
	data := colData(sc, map[string][]float64{"region": {3, 4}, "age": {1, 2}}, nil, 2)
	for _, c := range []struct {
		fn   string
		vals map[string]any
	}{
		{"private_histogram", map[string]any{"col": "region"}},
		{"private_count", map[string]any{"by": "region"}},
		{"private_count", map[string]any{"by": "region", "delta": 1e-6}},
	} {
		for _, nonneg := range []bool{true, false} {
			negative := 0
			for seed := range uint64(200) {
				vals := map[string]any{"eps": 0.5, "nonnegative": nonneg}
				for k, v := range c.vals {
					vals[k] = v
				}
				out, p := runTab(t, seed, c.fn, vals, data)
				if nonneg != strings.Contains(p.Note, "nonnegative=true") {
					t.Errorf("%s nonnegative=%v: note %q", c.fn, nonneg, p.Note)
				}
				var counts []float64
				switch r := out.(type) {
				case *Histogram:
					counts = r.Counts
				case *Groups:
					counts = r.Values
				}
				for _, v := range counts[:3] {
					if v < 0 {
						negative++
					}
				}
			}
			// 600 counts of a true 0: the raw ones are negative with
			// probability about 0.4 (discrete noise puts mass on 0), so
			// fewer than 150 would be a 10-σ event.
			if nonneg && negative != 0 || !nonneg && negative < 150 {
				t.Errorf("%s %v nonnegative=%v: %d negative counts of 600", c.fn, c.vals, nonneg, negative)
			}
		}
	}
	// the one count: no rows, a tiny ε
	empty := colData(sc, map[string][]float64{"age": {}}, nil, 0)
	empty.Rows = emptySource{}
	for seed := range uint64(50) {
		for _, delta := range []float64{0, 1e-6} {
			out, _ := runTab(t, seed, "private_count", map[string]any{"eps": 0.1, "delta": delta}, empty)
			if v := out.(*Count).Value; v < 0 {
				t.Fatalf("private_count delta=%v: %v below 0 with nonnegative=true", delta, v)
			}
		}
	}
}

// clamp=true (the default) keeps every mean within the column's bounds,
// one column or per key; clamp=false may leave them.
func TestClampedMeans(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	data := colData(sc, map[string][]float64{"age": {50, 60, 70}, "region": {0, 1, 3}}, nil, 3)
	for _, vals := range []map[string]any{
		{"col": "age"},
		{"col": "age", "delta": 1e-6},
		{"col": "age", "by": "region"},
		{"col": "age", "by": "region", "delta": 1e-6},
	} {
		for _, clamp := range []bool{true, false} {
			outside := 0
			for seed := range uint64(100) {
				v := map[string]any{"eps": 0.05, "clamp": clamp}
				for k, x := range vals {
					v[k] = x
				}
				out, p := runTab(t, seed, "private_mean", v, data)
				if clamp != strings.Contains(p.Note, "clamp=true") {
					t.Errorf("%v clamp=%v: note %q", vals, clamp, p.Note)
				}
				var means []float64
				switch r := out.(type) {
				case *Mean:
					means = r.Values
				case *Groups:
					means = r.Values
				}
				for _, m := range means {
					if m < 0 || m > 100 {
						outside++
					}
				}
			}
			// At ε = 0.05 a key's noisy count is often near 0 or below, and
			// its mean far outside [0, 100].
			if clamp && outside != 0 || !clamp && outside == 0 {
				t.Errorf("%v clamp=%v: %d means outside [0, 100]", vals, clamp, outside)
			}
		}
	}
}

// other=false leaves the key "other" out and its rows in no group: the
// keys are the domain's, and (at ε = 1000, where rounding removes the
// noise) the counts and sums are those of the rows inside the domain.
// On user-level data a user's rows outside the domain take none of their
// max_groups.
func TestOtherFalse(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	region := []float64{0, 3, 1, 1, 4, 2}
	age := []float64{10, 99, 20, 30, 99, 40}
	data := colData(sc, map[string][]float64{"region": region, "age": age}, nil, 6)
	domain := []string{"north", "south", "east"}
	for _, c := range []struct {
		fn   string
		vals map[string]any
		want []float64
	}{
		{"private_count", map[string]any{"by": "region"}, []float64{1, 2, 1}},
		{"private_sum", map[string]any{"col": "age", "by": "region"}, []float64{10, 50, 40}},
		{"private_histogram", map[string]any{"col": "region"}, []float64{1, 2, 1}},
	} {
		vals := map[string]any{"eps": 1000.0, "other": false}
		for k, v := range c.vals {
			vals[k] = v
		}
		out, p := runTab(t, 1, c.fn, vals, data)
		if !strings.Contains(p.Note, "other=false") || p.Params["keys"] != 3 {
			t.Errorf("%s: note %q, params %v", c.fn, p.Note, p.Params)
		}
		var keys []string
		var got []float64
		switch r := out.(type) {
		case *Histogram:
			keys, got = r.Keys, r.Counts
		case *Groups:
			keys, got = r.Keys, r.Values
		}
		if !reflect.DeepEqual(keys, domain) {
			t.Errorf("%s: keys %q, want %q", c.fn, keys, domain)
		}
		for i := range got {
			if d := got[i] - c.want[i]; d > 0.5 || d < -0.5 {
				t.Errorf("%s: values %v, want %v", c.fn, got, c.want)
				break
			}
		}
	}
	// user 0's first row is outside the domain: with other=false it takes
	// no group, so max_groups=1 counts the user in south.
	usc := tabSchema("add-remove", "user")
	udata := colData(usc, map[string][]float64{"region": {3, 1, 0}}, []int32{0, 0, 1}, 2)
	out, _ := runTab(t, 1, "private_count", map[string]any{"by": "region", "eps": 1000.0, "other": false}, udata)
	if g := out.(*Groups); !reflect.DeepEqual(g.Values, []float64{1, 1, 0}) {
		t.Errorf("user-level other=false: %q %v, want north 1, south 1, east 0", g.Keys, g.Values)
	}
}

// other=false applies to a categorical grouping only: without by=, or on
// a numeric histogram, it is refused before the charge.
func TestOtherFalseRefused(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	env := &Local{}
	for _, c := range []struct {
		fn   string
		vals map[string]any
		want string
	}{
		{"private_count", map[string]any{}, "other=false needs by="},
		{"private_sum", map[string]any{"col": "age"}, "other=false needs by="},
		{"private_mean", map[string]any{"col": "age"}, "other=false needs by="},
		{"private_histogram", map[string]any{"col": "age", "bins": 4}, "other=false applies to a categorical column"},
	} {
		c.vals["other"] = false
		_, err := tabPlan(t, env, c.fn, sc, c.vals)
		if e, ok := err.(*Error); !ok || e.Name != NameArgumentError || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an ArgumentError with %q", c.fn, c.vals, err, c.want)
		}
	}
}

// A named call stored before the post-processing keywords existed keeps
// replaying: its stored parameters equal those of the same call now,
// with the keywords at their defaults, given or not; another value of one
// of them is another call.
func TestPostProcessingKeepsNamedCalls(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	ref := Ref{Name: "t", Schema: sc}
	params := func(vals map[string]any) string {
		t.Helper()
		s, err := PublicParams(Call{Func: "private_count", Dataset: ref, Args: tabArgs("private_count", vals)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := `{"args":{"by":"region","delta":0,"eps":1,"max_groups":1},"dataset":"t","function":"private_count"}`
	if got := params(map[string]any{"by": "region"}); got != before {
		t.Errorf("defaults: %s, want the parameters stored before: %s", got, before)
	}
	if got := params(map[string]any{"by": "region", "nonnegative": true, "other": true}); got != before {
		t.Errorf("defaults given: %s, want %s", got, before)
	}
	if got := params(map[string]any{"by": "region", "nonnegative": false}); got == before || !strings.Contains(got, `"nonnegative":false`) {
		t.Errorf("nonnegative=false: %s", got)
	}
}

// What is shown as fitting fits: rounded down to 3 digits, and round
// values shown as they are.
func TestFitEps(t *testing.T) {
	for _, c := range []struct {
		eps  float64
		want string
	}{{0.1, "0.1"}, {0.09999999, "0.0999"}, {0.09999999999999999, "0.0999"}, {0.001, "0.001"}, {123456, "1.23e+05"}, {0.7568, "0.756"}, {0.7564, "0.756"}, {1, "1"}, {12.97, "12.9"}, {0, "0 (none fits)"}, {1e-5, "1e-05"}, {0.30000000000000004, "0.3"}} {
		if got := fitEps(c.eps); got != c.want {
			t.Errorf("fitEps(%v) = %q, want %q", c.eps, got, c.want)
		}
	}
}

// The consistent fit: parts that add up to the rounded fitted total,
// integers, nonnegative when asked, and the least-squares values before
// rounding.
func TestConsistentCounts(t *testing.T) {
	for _, c := range []struct {
		y      []float64
		nonneg bool
		want   []float64
	}{
		// Σy = 30 = T: nothing moves
		{[]float64{10, 20, 30}, false, []float64{10, 20}},
		// Σy = 30, T = 33: each of the three coordinates moves by 1
		{[]float64{10, 20, 33}, false, []float64{11, 21}},
		// Σy = 0, T = 2: parts 2/3 each, total 4/3 → 1: the first key
		// gets the unit
		{[]float64{0, 0, 2}, false, []float64{1, 0}},
		// a negative part: projected to 0, the total kept
		{[]float64{-5, 9, 4}, true, []float64{0, 4}},
		{[]float64{-5, 9, 4}, false, []float64{-5, 9}},
		// a negative total: all 0
		{[]float64{-3, -1, -4}, true, []float64{0, 0}},
	} {
		y := append([]float64(nil), c.y...)
		got := consistentCounts(y, c.nonneg)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("consistentCounts(%v, %v) = %v, want %v", c.y, c.nonneg, got, c.want)
		}
	}
}

// consistent=true on a grouped count: the parts add up to the shown total
// in every run, the total is more accurate than the sum of independent
// parts, and the call is refused without by= or with max_groups > 1.
func TestConsistentGroupedCount(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	region := []float64{0, 1, 1, 2, 2, 2, 5}
	data := colData(sc, map[string][]float64{"region": region}, nil, len(region))
	var errPlain, errFit float64
	const runs = 400
	for seed := range uint64(runs) {
		for _, consistent := range []bool{false, true} {
			out, p := runTab(t, seed, "private_count", map[string]any{"by": "region", "eps": 1.0, "consistent": consistent, "nonnegative": false}, data)
			g := out.(*Groups)
			total := 0.0
			for _, v := range g.Values {
				total += v
			}
			e := (total - 7) * (total - 7)
			if consistent {
				errFit += e
				if !strings.Contains(p.Note, "consistent=true") || !strings.Contains(p.Noise, "and their total") {
					t.Fatalf("note %q noise %q", p.Note, p.Noise)
				}
			} else {
				errPlain += e
			}
		}
	}
	// G = 4 keys (3 categories and "other"), Laplace of scale b = 1/ε per
	// key without the total: the plain total has variance 4·2b² = 8b².
	// With it the sensitivity is 2, each coordinate has variance 2(2b)²,
	// and the fitted total (Σy + G·T)/(G+1) has 8b²·G/(G+1) = 6.4b²: an
	// expected ratio of 0.8 (about 0.78 measured at seed 0..399); 0.95 is
	// several standard errors of the ratio over 400 runs above it.
	t.Logf("total's MSE: consistent %.3g, plain %.3g (ratio %.3f)", errFit/runs, errPlain/runs, errFit/errPlain)
	if !(errFit < 0.95*errPlain) {
		t.Errorf("total's MSE: consistent %.3g, plain %.3g", errFit/runs, errPlain/runs)
	}
	env := &Local{}
	for _, vals := range []map[string]any{{"consistent": true}, {"by": "region", "consistent": true, "max_groups": 2}} {
		usc := tabSchema("add-remove", "user")
		if _, err := tabPlan(t, env, "private_count", usc, vals); err == nil || !strings.Contains(err.Error(), "consistent=true") {
			t.Errorf("%v: %v, want a refusal naming consistent=true", vals, err)
		}
	}
}

// consistentSums: the least-squares fit of the parts to the total, each
// of the G+1 coordinates moving by (T − Σy)/(G+1), projected onto the
// nonnegative sums with the same total only when asked; never rounded.
func TestConsistentSums(t *testing.T) {
	for _, c := range []struct {
		y      []float64
		nonneg bool
		want   []float64
	}{
		{[]float64{10, 20, 30}, false, []float64{10, 20}},
		{[]float64{10, 20, 33}, false, []float64{11, 21}},
		{[]float64{0.5, 0, 2}, false, []float64{1, 0.5}},
		{[]float64{-5, 9, 4}, false, []float64{-5, 9}},
		{[]float64{-5, 9, 4}, true, []float64{0, 4}},
		{[]float64{-3, -1, -4}, true, []float64{0, 0}},
		{[]float64{-3, -1, -4}, false, []float64{-3, -1}},
	} {
		got := consistentSums(append([]float64(nil), c.y...), c.nonneg)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("consistentSums(%v, %v) = %v, want %v", c.y, c.nonneg, got, c.want)
		}
	}
}

// consistent=true on a grouped sum: the total of the shown parts is more
// accurate than the sum of independent parts, the parts are nonnegative
// when the bounds are ≥ 0, the receipt carries the fitted parts' error
// model (an interval around each key's least-squares fit, which the
// release keeps) and names the rule; refused on user-level data and with max_groups > 1.
func TestConsistentGroupedSum(t *testing.T) {
	sc := tabSchema("add-remove", "row")
	region := []float64{0, 1, 1, 2, 2, 2, 5}
	age := []float64{10, 20, 30, 40, 50, 60, 70}
	data := colData(sc, map[string][]float64{"region": region, "age": age}, nil, len(region))
	var errPlain, errFit float64
	const runs = 400
	for seed := range uint64(runs) {
		for _, consistent := range []bool{false, true} {
			out, p := runTab(t, seed, "private_sum", map[string]any{"col": "age", "by": "region", "eps": 1.0, "consistent": consistent}, data)
			g := out.(*Groups)
			total := 0.0
			for _, v := range g.Values {
				total += v
			}
			e := (total - 280) * (total - 280)
			if consistent {
				errFit += e
				for _, v := range g.Values {
					if v < 0 {
						t.Fatalf("a negative part %v with bounds [0, 100]", g.Values)
					}
				}
				if m, ok := ErrorOf(p.Params); !ok || m.Kind != ErrFitted || m.Parts != len(g.Keys) || !m.Nonnegative || m.Rounded || len(g.Fitted) != len(g.Keys) || !strings.Contains(p.Note, "consistent=true") || !strings.Contains(p.Note, "made nonnegative") || !strings.Contains(p.Noise, "and their total") {
					t.Fatalf("params %v note %q noise %q", p.Params, p.Note, p.Noise)
				}
			} else {
				errPlain += e
			}
		}
	}
	// G = 4 keys, Laplace of scale b = 100/ε per key alone: the plain
	// total has variance 8b². With the total the sensitivity is 200, each
	// coordinate's variance 2(2b)², and the fit's total 6.4b²: about 0.8
	// of the plain one. The projection onto nonnegative parts keeps the
	// total, except that a negative one (true 280, std ≈ 506 here) is
	// raised to 0, which only lowers its error: 0.55 measured.
	t.Logf("total's MSE: consistent %.3g, plain %.3g (ratio %.3f)", errFit/runs, errPlain/runs, errFit/errPlain)
	if !(errFit < 0.95*errPlain) {
		t.Errorf("total's MSE: consistent %.3g, plain %.3g", errFit/runs, errPlain/runs)
	}
	env := &Local{}
	for _, c := range []struct {
		unit string
		vals map[string]any
	}{
		{"row", map[string]any{"col": "age", "consistent": true}},
		{"user", map[string]any{"col": "age", "by": "region", "consistent": true}},
		{"user", map[string]any{"col": "age", "by": "region", "consistent": true, "max_groups": 2}},
	} {
		if _, err := tabPlan(t, env, "private_sum", tabSchema("add-remove", c.unit), c.vals); err == nil || !strings.Contains(err.Error(), "consistent=true") {
			t.Errorf("%v: %v, want a refusal naming consistent=true", c.vals, err)
		}
	}
}
