package chsource_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// tabCall is a column analysis: fn with its arguments (eps 1 unless
// given), on the dataset or on its subset by filters.
type tabCall struct {
	fn      string
	args    map[string]any
	filters []release.Filter
}

// callTab runs c on store's dataset name with the given seed.
func callTab(t *testing.T, st *ledger.Store, name string, seed uint64, c tabCall) (*release.Release, error) {
	t.Helper()
	given := map[string]any{"eps": 1.0}
	for k, v := range c.args {
		given[k] = v
	}
	return execute(t, st, c.fn, name, c.filters, seed, given, nil, nil)
}

// sameRelease compares two releases' values and receipts as JSON.
func sameRelease(t *testing.T, what string, got, want *release.Release) {
	t.Helper()
	gv, _ := json.Marshal(got.Value)
	wv, _ := json.Marshal(want.Value)
	if string(gv) != string(wv) {
		t.Errorf("%s: the live table released\n%s\nthe snapshot\n%s", what, gv, wv)
	}
	gr, _ := json.Marshal(got.Receipt)
	wr, _ := json.Marshal(want.Receipt)
	if string(gr) != string(wr) {
		t.Errorf("%s: the live table's receipt\n%s\nthe snapshot's\n%s", what, gr, wr)
	}
}

// Region's categories by index (the filters' values): north 0, south 1,
// east 2, west 3.
var rowCalls = []tabCall{
	{"private_count", nil, nil}, // n: a COUNT statement, not metadata
	{"private_count", map[string]any{"delta": 1e-6}, []release.Filter{{Column: "age", Op: ">=", Value: 60}}},
	{"private_count", nil, []release.Filter{{Column: "region", Op: "==", Value: 3}}},
	{"private_count", map[string]any{"by": "region"}, nil},
	{"private_count", map[string]any{"by": "sex", "other": false, "consistent": true}, []release.Filter{{Column: "income", Op: "<", Value: 50000}}},
	{"private_sum", map[string]any{"col": "age"}, nil},
	{"private_sum", map[string]any{"col": "income", "delta": 1e-6}, []release.Filter{{Column: "region", Op: "!=", Value: 3}, {Column: "age", Op: ">", Value: 0}}},
	{"private_sum", map[string]any{"col": "age", "by": "sex"}, nil},
	{"private_mean", map[string]any{"col": "age"}, []release.Filter{{Column: "age", Op: "<=", Value: 50}}},
	{"private_mean", map[string]any{"col": "income", "by": "region"}, nil},
	{"private_histogram", map[string]any{"col": "region"}, nil}, // "mars" falls in other
	{"private_histogram", map[string]any{"col": "age", "bins": 7}, nil},
	{"private_histogram", map[string]any{"col": "income", "bins": 64}, []release.Filter{{Column: "age", Op: ">", Value: 30}}},
	{"private_histogram", map[string]any{"col": "sex", "other": false}, []release.Filter{{Column: "age", Op: "<", Value: 100}}},
	{"private_quantile", map[string]any{"col": "age", "q": 0.3}, nil},
	{"private_quantile", map[string]any{"col": "income", "q": 0.9}, []release.Filter{{Column: "region", Op: "==", Value: 1}}},
}

// sameMean compares private_mean's row-vector releases of two columns
// clipped at clip: both sums are within half the charged excess of the
// exact one (RowSumDrift ≤ RowSumExcess/2: TestRowSumExcessCharged), as
// the engine sums on a grid and the snapshot in float64; the noisy
// counts and the receipts are the same.
func sameMean(clip float64) func(t *testing.T, what string, got, want *release.Release) {
	return func(t *testing.T, what string, got, want *release.Release) {
		t.Helper()
		gv, wv := got.Value.(*release.Mean), want.Value.(*release.Mean)
		tol := tabular.RowSumExcess(2, clip)
		if len(gv.Sums) != 2 || len(wv.Sums) != 2 || gv.Counts[0] != wv.Counts[0] {
			t.Fatalf("%s: ClickHouse %+v, the snapshot %+v", what, gv, wv)
		}
		for j := range gv.Sums {
			if d := math.Abs(gv.Sums[j] - wv.Sums[j]); d > tol || math.IsNaN(d) {
				t.Errorf("%s: sum %d is %v on ClickHouse, %v on the snapshot (tolerance %g)", what, j, gv.Sums[j], wv.Sums[j], tol)
			}
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("%s: ClickHouse's receipt\n%s\nthe snapshot's\n%s", what, gr, wr)
		}
	}
}

// The column analyses on the Distributed table run as statements in
// ClickHouse, over two shards, and with the same seeded noise release
// what they release on the snapshot (DuckDB), with the same receipts:
// the statements compute the same exact integer aggregates, which the
// shards' partial sums do not change. private_mean's row-vector form
// sums the clipped rows in one statement (sqlplan.PrintRowSum) and
// releases the snapshot's within the rounding the plan charges
// (sameMean); clips below and above the rows' norms exercise both
// branches of the clipping rule. (User-level data:
// TestTabularUserLevelSameAsSnapshot.)
func TestTabularSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	type sameCase struct {
		call tabCall
		seed uint64
		same func(t *testing.T, what string, got, want *release.Release)
	}
	var cases []sameCase
	for i, c := range rowCalls {
		cases = append(cases, sameCase{c, uint64(200 + i), sameRelease})
	}
	for i, clip := range []float64{50, 1e6} {
		c := tabCall{"private_mean", map[string]any{"columns": []string{"age", "hours"}, "clip": clip, "delta": 1e-6}, nil}
		cases = append(cases, sameCase{c, uint64(400 + i), sameMean(clip)})
	}
	for _, c := range cases {
		what := fmt.Sprintf("%s %v %v", c.call.fn, c.call.args, c.call.filters)
		want, err := callTab(t, f.snap, "people", c.seed, c.call)
		if err != nil {
			t.Fatalf("%s on the snapshot: %v", what, err)
		}
		got, err := callTab(t, f.live, "people", c.seed, c.call)
		if err != nil {
			t.Fatalf("%s on ClickHouse: %v", what, err)
		}
		c.same(t, what, got, want)
	}
	// The data were read: the noise alone (an engine failure) would
	// release a count or a mean of about 0.
	for _, c := range []struct {
		call   tabCall
		value  func(*release.Release) float64
		lo, hi float64
	}{
		{tabCall{"private_count", map[string]any{"eps": 10.0}, nil},
			func(r *release.Release) float64 { return r.Value.(*release.Count).Value }, 2900, 3100},
		// The mean age is about 49.5.
		{tabCall{"private_mean", map[string]any{"columns": []string{"age"}, "clip": 200.0, "eps": 10.0, "delta": 1e-6}, nil},
			func(r *release.Release) float64 { return r.Value.(*release.Mean).Values[0] }, 40, 60},
	} {
		r, err := callTab(t, f.live, "people", 1, c.call)
		if err != nil {
			t.Fatal(err)
		}
		if v := c.value(r); v < c.lo || v > c.hi {
			t.Errorf("%s %v on ClickHouse released %v, want it in [%v, %v]", c.call.fn, c.call.args, v, c.lo, c.hi)
		}
	}
	if err := f.live.Verify(); err != nil {
		t.Errorf("ledger verify: %v", err)
	}
}

// What a live table cannot run is refused before the charge, the ledger
// unchanged: a function that reads rows, the row-vector mean of a subset,
// and a statement longer than the server parses (a histogram's key is
// written out in SELECT, WHERE and GROUP BY, with the value once per
// bin). (A column analysis without a statement, whose bounds are too
// close to 0 for the sums' grid, is refused by the same check,
// dsl/release's TestEngineCheck; its noise scale is below the samplers'
// range anyway.)
func TestTabularRefusals(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name string
		call tabCall
		want string
	}{
		{"people", tabCall{"private_mean", map[string]any{"columns": []string{"age"}, "clip": 100.0, "delta": 1e-6}, []release.Filter{{Column: "age", Op: ">", Value: 30}}}, "whole table only"},
		{"people", tabCall{catalog.PrivateLinearRegression.Name, map[string]any{"x": []string{"age"}, "y": "income", "delta": 1e-6}, nil}, "needs the rows"},
		{"people", tabCall{"private_histogram", map[string]any{"col": "income", "bins": 5000}, nil}, "bytes its server accepts"},
	} {
		before := charges(t, f.live)
		_, err := callTab(t, f.live, c.name, 1, c.call)
		var re *release.Error
		if err == nil || !errors.As(err, &re) || re.Name != release.NameArgumentError || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was charged") {
			t.Errorf("%s %v on %s: %v, want an ArgumentError saying %q", c.call.fn, c.call.args, c.name, err, c.want)
		}
		if after := charges(t, f.live); after != before {
			t.Errorf("%s %v on %s: charges %d, were %d", c.call.fn, c.call.args, c.name, after, before)
		}
	}
}
