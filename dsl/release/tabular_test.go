package release

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// tabSchema has a bounded numeric column "age", an unbounded one "w" and a
// categorical column "region".
func tabSchema(nb, unit string) ledger.Schema {
	return ledger.Schema{Name: "t", Columns: []string{"age", "w"}, D: 2, Clip: 1, Unit: unit, Neighbour: nb, Accountant: "zcdp", Center: "none",
		Bounds:      map[string][2]float64{"age": {0, 100}},
		Categorical: map[string][]string{"region": {"north", "south", "east"}}}
}

// tabArgs are the arguments of a call of fn giving eps=1 unless vals
// gives it, and vals.
func tabArgs(fn string, vals map[string]any) *Args {
	kw := map[string]any{"eps": 1.0}
	maps.Copy(kw, vals)
	return mustArgs(fn, kw)
}

func tabPlan(t *testing.T, env *Local, fn string, sc ledger.Schema, vals map[string]any) (*Plan, error) {
	t.Helper()
	return env.Plan(Call{Func: fn, Dataset: Ref{Name: "t", Schema: sc}, Args: tabArgs(fn, vals)})
}

// Everything that can fail fails in the plan, from the public schema,
// with a message that says what to do.
func TestTabularPlansRefuse(t *testing.T) {
	env := &Local{}
	sc := tabSchema("replace-one", "row")
	centred := sc
	centred.Center = "public-mean"
	for _, c := range []struct {
		fn   string
		sc   ledger.Schema
		vals map[string]any
		want string
	}{
		{"private_sum", sc, map[string]any{"col": "w"}, "--bounds w=lo:hi"},
		{"private_sum", sc, map[string]any{"col": "nope"}, `no column "nope"; numeric columns: age, w; categorical columns: region`},
		{"private_sum", sc, map[string]any{"col": "region"}, "is categorical"},
		{"private_sum", centred, map[string]any{"col": "age"}, "--center public-mean"},
		{"private_sum", sc, map[string]any{"col": "age", "eps": 1e-12}, "too large relative to the sensitivity"},
		{"private_histogram", sc, map[string]any{"col": "age"}, "give bins=N (1..10000)"},
		{"private_histogram", sc, map[string]any{"col": "age", "bins": 10001}, "bins must be an integer in 1..10000"},
		{"private_histogram", sc, map[string]any{"col": "age", "bins": -1}, "bins must be an integer in 1..10000"},
		{"private_histogram", sc, map[string]any{"col": "w", "bins": 3}, "--bounds w=lo:hi"},
		{"private_histogram", sc, map[string]any{"col": "region", "bins": 3}, "bins must be left out"},
		{"private_quantile", sc, map[string]any{"col": "age", "delta": 1e-6}, "pure ε-DP: leave delta out"},
		{"private_quantile", sc, map[string]any{"col": "age", "q": 1.0}, "strictly between 0 and 1"},
		{"private_quantile", sc, map[string]any{"col": "region"}, "is categorical"},
		{"private_quantile", sc, map[string]any{"col": "w"}, "--bounds w=lo:hi"},
	} {
		_, err := tabPlan(t, env, c.fn, c.sc, c.vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want an error containing %q", c.fn, c.vals, err, c.want)
			continue
		}
		if e, ok := err.(*Error); !ok || e.Name != NameArgumentError {
			t.Errorf("%s %v: %T %v, want an ArgumentError", c.fn, c.vals, err, err)
		}
	}
	other := sc
	other.Categorical = map[string][]string{"region": {"north", ledger.OtherCategory}}
	if _, err := tabPlan(t, env, "private_histogram", other, map[string]any{"col": "region"}); err == nil {
		t.Error("a domain with a category named like the bucket of other values was accepted")
	}
}

// The plans calibrate under the registered relation and name it, the
// mechanism and the column.
func TestTabularPlans(t *testing.T) {
	env := &Local{}
	for _, nb := range []string{"replace-one", "add-remove"} {
		sc := tabSchema(nb, "row")
		for _, c := range []struct {
			fn     string
			vals   map[string]any
			method string
			kind   accounting.Kind
		}{
			{"private_sum", map[string]any{"col": "age"}, "sum/laplace", accounting.PureDP},
			{"private_sum", map[string]any{"col": "age", "delta": 1e-6}, "sum/gaussian", accounting.ZCDP},
			{"private_histogram", map[string]any{"col": "age", "bins": 5}, "histogram/laplace", accounting.PureDP},
			{"private_histogram", map[string]any{"col": "region", "delta": 1e-6}, "histogram/gaussian", accounting.ZCDP},
			{"private_quantile", map[string]any{"col": "age", "q": 0.25}, "quantile/exponential", accounting.PureDP},
		} {
			p, err := tabPlan(t, env, c.fn, sc, c.vals)
			if err != nil {
				t.Fatalf("%s %v: %v", c.fn, c.vals, err)
			}
			if p.Method != c.method || p.Cost.Kind != c.kind || p.Cost.Mechanism != c.method || p.Params["neighbour"] != nb ||
				!reflect.DeepEqual(p.Columns, []string{c.vals["col"].(string)}) || !strings.Contains(p.Noise, nb) {
				t.Errorf("%s %v on %s: %+v", c.fn, c.vals, nb, p)
			}
		}
	}
}

// memData is a hand-made Data whose Columns gives one column of values
// (category indices for a categorical column), with unit indices.
func memData(sc ledger.Schema, vals []float64, units []int32, nu int) *Data {
	src := rows.FromDense(mat.NewDense(len(vals), 1, vals))
	var s rows.Source = src
	if units != nil {
		us, err := src.WithUnits(units, nu)
		if err != nil {
			panic(err)
		}
		s = us
	}
	return &Data{Schema: sc, Columns: func([]string) (rows.Source, error) { return s, nil }}
}

// A categorical histogram has one key per category of the public domain
// and "other", in order, whatever the data; on user-level data a user
// counts once, in the category of their first row. ε = 1000 makes the
// noise's scale 0.002, so the rounded counts are the exact ones (the
// noise exceeds 0.5 with probability e^-250).
func TestCategoricalHistogram(t *testing.T) {
	env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(1) }}
	ctx := context.Background()
	idx := []float64{0, 1, 1, 2, 3, 7, math.NaN(), 2, 2}
	users := []int32{0, 1, 0, 2, 3, 3, 4, 1, 5}
	for _, c := range []struct {
		unit  string
		units []int32
		k     int
		want  []float64
	}{
		{"row", nil, 1, []float64{1, 2, 3, 3}},
		// users 0..5 first show 0, 1, 2, 3, NaN, 2: north, south,
		// east, other, other, east
		{"user", users, 1, []float64{1, 1, 2, 2}},
		// with max_groups=2 user 0 also counts in south (its second
		// row) and user 1 in east; users 3 and 4 have one key each
		{"user", users, 2, []float64{1, 2, 3, 2}},
	} {
		sc := tabSchema("add-remove", c.unit)
		vals := map[string]any{"col": "region", "eps": 1000.0}
		if c.k != 1 {
			vals["max_groups"] = c.k
		}
		p, err := tabPlan(t, env, "private_histogram", sc, vals)
		if err != nil {
			t.Fatal(err)
		}
		if p.Params["max_groups"] != c.k || !strings.Contains(p.Note, fmt.Sprintf("the first %d distinct bin(s)", c.k)) == (c.unit == "user") {
			t.Errorf("%s max_groups=%d: receipt params %v, note %q", c.unit, c.k, p.Params, p.Note)
		}
		// the sensitivity under add-remove is k in ℓ1
		if want := fmt.Sprintf("ℓ1 sensitivity %d under", c.k); !strings.Contains(p.Noise, want) {
			t.Errorf("%s max_groups=%d: noise %q, want %q", c.unit, c.k, p.Noise, want)
		}
		out, err := p.run(ctx, memData(sc, idx, c.units, 6))
		if err != nil {
			t.Fatal(err)
		}
		h := out.(*Histogram)
		if !reflect.DeepEqual(h.Keys, []string{"north", "south", "east", "other"}) || !reflect.DeepEqual(h.Counts, c.want) {
			t.Errorf("%s: %q %v, want counts %v", c.unit, h.Keys, h.Counts, c.want)
		}
	}
	// no rows at all: every key, counts around 0
	sc := tabSchema("add-remove", "row")
	p, _ := tabPlan(t, env, "private_histogram", sc, map[string]any{"col": "region", "eps": 1000.0})
	empty := &Data{Schema: sc, Columns: func([]string) (rows.Source, error) { return emptySource{}, nil }}
	out, err := p.run(ctx, empty)
	if err != nil || !reflect.DeepEqual(out.(*Histogram).Counts, []float64{0, 0, 0, 0}) {
		t.Errorf("empty data: %v %v", out, err)
	}
}

type emptySource struct{}

func (emptySource) Dim() int                                  { return 1 }
func (emptySource) Scan(context.Context) (rows.Cursor, error) { return emptyCursor{}, nil }
func (emptyCursor) Next(dst *rows.Batch) error                { dst.N = 0; return io.EOF }
func (emptyCursor) Close() error                              { return nil }

type emptyCursor struct{}

// Sums, numeric histograms and quantiles run end to end through Execute
// on public data with bounds: the column is clamped, NaN and infinities
// do not fail the run.
func TestTabularExecute(t *testing.T) {
	env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(2) }}
	sc := tabSchema("replace-one", "row")
	sc.Bounds = map[string][2]float64{"age": {0, 100}, "w": {-1, 1}}
	x := mat.NewDense(6, 2, []float64{20, 0.5, 30, math.NaN(), 40, 9, 150, -3, -5, 0.25, 60, math.Inf(1)})
	ref := Ref{Name: "synthetic:t", Schema: sc, Public: &ledger.Data{Schema: sc, X: x}}
	run := func(fn string, vals map[string]any) any {
		rel, err := env.Execute(context.Background(), Call{Func: fn, Dataset: ref, Args: tabArgs(fn, vals)}, nil)
		if err != nil {
			t.Fatalf("%s %v: %v", fn, vals, err)
		}
		return rel.Value
	}
	// ages clamped: 20 30 40 100 0 60 = 250; w: 0.5 0 1 -1 0.25 1 = 1.75
	if v := run("private_sum", map[string]any{"col": "age", "eps": 1e4}).(*Sum).Value; math.Abs(v-250) > 1 {
		t.Errorf("sum of age %v, want about 250", v)
	}
	if v := run("private_sum", map[string]any{"col": "w", "eps": 1e4}).(*Sum).Value; math.Abs(v-1.75) > 0.01 {
		t.Errorf("sum of w %v, want about 1.75", v)
	}
	h := run("private_histogram", map[string]any{"col": "age", "bins": 4, "eps": 1e3}).(*Histogram)
	if !reflect.DeepEqual(h.Keys, []string{"[0, 25)", "[25, 50)", "[50, 75)", "[75, 100]"}) || !reflect.DeepEqual(h.Counts, []float64{2, 2, 1, 1}) {
		t.Errorf("histogram %q %v", h.Keys, h.Counts)
	}
	q := run("private_quantile", map[string]any{"col": "age", "eps": 1e3}).(*Quantile)
	if q.Q != 0.5 || q.Value < 30 || q.Value >= 40 {
		t.Errorf("median %+v, want a point of [30, 40) (3 of 6 values ≤ it)", q)
	}
}

// private_mean's row-vector form calibrates its sum's noise to the clip's
// sensitivity plus the clipped sum's public floating-point bound
// (tabular.RowSumExcess), as the PCA methods' sums do, and widens its
// interval by the computed sum's distance to the exact one.
func TestVectorMeanChargesRowSumExcess(t *testing.T) {
	env := &Local{}
	for _, nb := range []string{"replace-one", "add-remove"} {
		sc := tabSchema(nb, "row")
		sc.Clip = 2.5
		p, err := tabPlan(t, env, "private_mean", sc, map[string]any{"delta": 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		sens := sc.Clip
		if nb == "replace-one" {
			sens = 2 * sc.Clip
		}
		excess := tabular.RowSumExcess(len(sc.Columns), sc.Clip)
		if !(excess > 0) {
			t.Fatalf("RowSumExcess(%d, %v) = %g", len(sc.Columns), sc.Clip, excess)
		}
		rho, _, _ := tabular.GaussianTarget(1, 1e-6, tabular.CalibrateZCDP)
		z := 1 / math.Sqrt(2*(1-meanCountShare)*rho)
		m, ok := p.Params[ErrorParam].(ErrorModel)
		if !ok {
			t.Fatalf("%s: no error model in %v", nb, p.Params)
		}
		if want := noise.GaussianScale((sens+excess)*(1+1e-9), z, len(sc.Columns)); m.Scale != want {
			t.Errorf("%s: sum's σ %v, want %v (sensitivity %v plus the excess %g)", nb, m.Scale, want, sens, excess)
		}
		if m.Excess != excess/2 {
			t.Errorf("%s: the interval's excess %g, want half the charged %g", nb, m.Excess, excess)
		}
	}
}
