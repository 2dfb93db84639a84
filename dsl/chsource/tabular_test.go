package chsource_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/noise"
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
	env := &release.Local{
		Store:      func() (*ledger.Store, error) { return st, nil },
		NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) },
	}
	given := map[string]any{"eps": 1.0}
	for k, v := range c.args {
		given[k] = v
	}
	args, err := release.ArgsFor(c.fn, given)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	src := release.Ref{Name: name, Schema: sc}
	if c.filters != nil {
		lineage := fmt.Sprintf("%s | %v", name, c.filters)
		sub := sc
		sub.Name, sub.PublicN = lineage, 0
		src = release.Ref{Name: name, Schema: sub, Derived: &release.Derivation{ParentSchema: sc, Filters: c.filters, Lineage: lineage}}
	}
	return env.Execute(context.Background(), release.Call{Func: c.fn, Dataset: src, Args: args}, nil)
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

// The column analyses on the Distributed table run as statements in
// ClickHouse, over two shards, and with the same seeded noise release
// what they release on the snapshot (DuckDB), with the same receipts:
// the statements compute the same exact integer aggregates, which the
// shards' partial sums do not change. (User-level data, whose bounded
// plans need window functions ClickHouse 18.16 lacks, cannot be
// registered in ClickHouse: TestDescribeRefusesUserLevel.)
func TestTabularSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	for i, c := range rowCalls {
		what := fmt.Sprintf("call %d %s %v %v", i, c.fn, c.args, c.filters)
		seed := uint64(200 + i)
		want, err := callTab(t, f.snap, "people", seed, c)
		if err != nil {
			t.Fatalf("%s on the snapshot: %v", what, err)
		}
		got, err := callTab(t, f.live, "people", seed, c)
		if err != nil {
			t.Fatalf("%s on ClickHouse: %v", what, err)
		}
		sameRelease(t, what, got, want)
	}
	// The data were read: the noise alone (an engine failure) would
	// release about 0 rows.
	r, err := callTab(t, f.live, "people", 1, tabCall{"private_count", map[string]any{"eps": 10.0}, nil})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Value.(*release.Count).Value; n < 2900 || n > 3100 {
		t.Errorf("private_count released %v of 3000 rows", n)
	}
	if err := f.live.Verify(); err != nil {
		t.Errorf("ledger verify: %v", err)
	}
}

// private_mean's row-vector form sums the clipped rows in one statement
// (sqlplan.PrintRowSum): with the same seeded noise its release is the
// snapshot's within the rounding the plan charges (the engine sums on a
// grid, the snapshot in float64), and the receipts agree. Clips below and
// above the rows' norms exercise both branches of the clipping rule.
func TestRowMeanSameAsSnapshot(t *testing.T) {
	f := newFixture(t)
	for i, clip := range []float64{50, 1e6} {
		c := tabCall{"private_mean", map[string]any{"columns": []string{"age", "hours"}, "clip": clip, "delta": 1e-6}, nil}
		seed := uint64(400 + i)
		want, err := callTab(t, f.snap, "people", seed, c)
		if err != nil {
			t.Fatalf("clip %v on the snapshot: %v", clip, err)
		}
		got, err := callTab(t, f.live, "people", seed, c)
		if err != nil {
			t.Fatalf("clip %v on ClickHouse: %v", clip, err)
		}
		gv, wv := got.Value.(*release.Mean), want.Value.(*release.Mean)
		// Both sums are within half the charged excess of the exact one
		// (RowSumDrift ≤ RowSumExcess/2: TestRowSumExcessCharged); the
		// noisy counts are the same.
		tol := tabular.RowSumExcess(2, clip)
		if len(gv.Sums) != 2 || len(wv.Sums) != 2 || gv.Counts[0] != wv.Counts[0] {
			t.Fatalf("clip %v: ClickHouse %+v, the snapshot %+v", clip, gv, wv)
		}
		for j := range gv.Sums {
			if d := math.Abs(gv.Sums[j] - wv.Sums[j]); d > tol || math.IsNaN(d) {
				t.Errorf("clip %v: sum %d is %v on ClickHouse, %v on the snapshot (tolerance %g)", clip, j, gv.Sums[j], wv.Sums[j], tol)
			}
		}
		gr, _ := json.Marshal(got.Receipt)
		wr, _ := json.Marshal(want.Receipt)
		if string(gr) != string(wr) {
			t.Errorf("clip %v: ClickHouse's receipt\n%s\nthe snapshot's\n%s", clip, gr, wr)
		}
	}
	// The rows were read: the noise alone would average to about 0.
	r, err := callTab(t, f.live, "people", 1, tabCall{"private_mean", map[string]any{"columns": []string{"age"}, "clip": 200.0, "eps": 10.0, "delta": 1e-6}, nil})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Value.(*release.Mean).Values[0]; m < 40 || m > 60 {
		t.Errorf("the mean age on ClickHouse is %v, want about 49.5", m)
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
