package release

import (
	"context"
	"fmt"
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

// colData is a hand-made Data whose Columns gives the named columns of
// cols (category indices for "region"), row by row, with unit indices.
func colData(sc ledger.Schema, cols map[string][]float64, units []int32, nu int) *Data {
	return &Data{Schema: sc, Columns: func(names []string) (rows.Source, error) {
		n := len(cols[names[0]])
		if n == 0 {
			return emptyWide(len(names)), nil
		}
		x := mat.NewDense(n, len(names), nil)
		for j, name := range names {
			for i, v := range cols[name] {
				x.Set(i, j, v)
			}
		}
		src := rows.FromDense(x)
		if units == nil {
			return src, nil
		}
		return src.WithUnits(units, nu)
	}}
}

type emptyWide int

func (e emptyWide) Dim() int                                { return int(e) }
func (emptyWide) Scan(context.Context) (rows.Cursor, error) { return emptyCursor{}, nil }
func (emptyWide) NumUnits() int                             { return 0 }

// The grouped forms plan from the public schema, calibrate under the
// registered relation and name it, the mechanism, the columns and the
// keys; the one-column mean is a MeanResult's plan of one column.
func TestGroupPlans(t *testing.T) {
	env := &Local{}
	for _, nb := range []string{"replace-one", "add-remove"} {
		sc := tabSchema(nb, "user")
		for _, c := range []struct {
			fn     string
			vals   map[string]any
			method string
			kind   accounting.Kind
			cols   []string
		}{
			{"private_count", map[string]any{"by": "region", "max_groups": 2}, "count-by/laplace", accounting.PureDP, []string{"region"}},
			{"private_count", map[string]any{"by": "region", "delta": 1e-6}, "count-by/gaussian", accounting.ZCDP, []string{"region"}},
			{"private_sum", map[string]any{"col": "age", "by": "region"}, "sum-by/laplace", accounting.PureDP, []string{"age", "region"}},
			{"private_sum", map[string]any{"col": "age", "by": "region", "delta": 1e-6, "max_groups": 4}, "sum-by/gaussian", accounting.ZCDP, []string{"age", "region"}},
			{"private_mean", map[string]any{"col": "age", "by": "region", "delta": 1e-6}, "mean-by/gaussian", accounting.ZCDP, []string{"age", "region"}},
			{"private_mean", map[string]any{"col": "age", "delta": 1e-6}, "bounded-mean/gaussian", accounting.ZCDP, []string{"age"}},
		} {
			p, err := tabPlan(t, env, c.fn, sc, c.vals)
			if err != nil {
				t.Fatalf("%s %v: %v", c.fn, c.vals, err)
			}
			// the noise is the mechanism's under the registered relation
			want := expectedGroupPlan(t, c.fn, c.vals, nb)
			scale := want.SumScale
			if c.fn == "private_count" {
				scale = want.CountScale
			}
			if !strings.Contains(p.Noise, fmt.Sprintf("%.4g", scale)) || p.Cost.Rho != want.Event.Rho || p.Cost.Eps != want.Event.Eps {
				t.Errorf("%s %v on %s: noise %q, cost %v; want scale %.4g, cost %v", c.fn, c.vals, nb, p.Noise, p.Cost, scale, want.Event)
			}
			if p.Method != c.method || p.Cost.Kind != c.kind || p.Cost.Mechanism != c.method || p.Params["neighbour"] != nb ||
				!reflect.DeepEqual(p.Columns, c.cols) || !strings.Contains(p.Noise, nb) {
				t.Errorf("%s %v on %s: %+v", c.fn, c.vals, nb, p)
			}
			if _, grouped := c.vals["by"]; grouped && (p.Params["keys"] != 4 || !strings.Contains(p.Note, `categorical column "region": its 3 categories and "other"`)) {
				t.Errorf("%s %v: params %v, note %q", c.fn, c.vals, p.Params, p.Note)
			}
		}
	}
}

// expectedGroupPlan is tabular's plan for a call of TestGroupPlans on
// tabSchema's data (age in [0, 100], region of 3 categories).
func expectedGroupPlan(t *testing.T, fn string, vals map[string]any, nb string) *tabular.GroupPlan {
	t.Helper()
	spec := tabular.GroupSpec{Stat: tabular.GroupCount, Lo: 0, Hi: 100, MaxGroups: 1, CountShare: meanCountShare}
	switch fn {
	case "private_sum":
		spec.Stat = tabular.GroupSum
	case "private_mean":
		spec.Stat = tabular.GroupMean
	}
	if vals["by"] != nil {
		bins, err := tabular.NewCategoryBins([]string{"north", "south", "east"}, ledger.OtherCategory)
		if err != nil {
			t.Fatal(err)
		}
		spec.Groups = bins
	}
	if k, ok := vals["max_groups"].(int); ok {
		spec.MaxGroups = k
	}
	delta, _ := vals["delta"].(float64)
	relation, err := accounting.ParseNeighbour(nb)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := tabular.PlanGroups(spec, 1, delta, relation)
	if err != nil {
		t.Fatal(err)
	}
	return gp
}

// Everything that can fail fails in the plan, with a message that says
// what to do.
func TestGroupPlansRefuse(t *testing.T) {
	env := &Local{}
	rowsSc, usersSc := tabSchema("replace-one", "row"), tabSchema("replace-one", "user")
	blob := rowsSc
	blob.Categorical = nil
	for _, c := range []struct {
		fn   string
		sc   ledger.Schema
		vals map[string]any
		want string
	}{
		{"private_count", rowsSc, map[string]any{"by": "age"}, `column "age" is numeric; by= groups by a categorical column`},
		{"private_count", blob, map[string]any{"by": "age"}, `dataset "t" has no categorical column`},
		{"private_sum", rowsSc, map[string]any{"col": "age", "by": "nope"}, `no column "nope" to group by; categorical columns: region`},
		{"private_sum", rowsSc, map[string]any{"col": "w", "by": "region"}, "--bounds w=lo:hi"},
		{"private_count", rowsSc, map[string]any{"by": "region", "max_groups": 2}, "applies to user-level data"},
		{"private_count", usersSc, map[string]any{"by": "region", "max_groups": 5}, "from 1 to 4"},
		{"private_count", usersSc, map[string]any{"max_groups": 2}, `needs by="column"`},
		{"private_histogram", rowsSc, map[string]any{"col": "region", "max_groups": 2}, "max_groups=2 applies to user-level data"},
		{"private_histogram", usersSc, map[string]any{"col": "region", "max_groups": 5}, `from 1 to 4, the number of keys of the histogram of "region"`},
		{"private_histogram", usersSc, map[string]any{"col": "age", "bins": 3, "max_groups": 0}, `max_groups=0 must be an integer from 1 to 3`},
		{"private_sum", usersSc, map[string]any{"col": "age", "max_groups": 2}, `needs by="column"`},
		{"private_mean", usersSc, map[string]any{"col": "age", "max_groups": 2, "delta": 1e-6}, `needs by="column"`},
		{"private_mean", rowsSc, map[string]any{"by": "region", "delta": 1e-6}, "give col="},
		{"private_mean", rowsSc, map[string]any{"columns": []string{"age"}, "delta": 0.0}, "needs delta > 0"},
		{"private_mean", rowsSc, map[string]any{"col": "region", "delta": 1e-6}, "is categorical"},
		{"private_mean", rowsSc, map[string]any{"col": "age", "clip": 2.0, "delta": 1e-6}, "clip= belongs to the row-vector form"},
		{"private_count", rowsSc, map[string]any{"by": "region", "eps": 1e-12}, "too large relative to the sensitivity"},
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
}

// Neighbouring data sets give the same outcome class: on n rows, n + 1
// rows, one row replaced by an extreme one (a value of ±MaxFloat64 or NaN
// in "other"), no rows at all and every row in "other", every grouped
// form returns a release with the same keys and number of values, and no
// error, at row and at user level (the runtime's harness registers blob
// datasets, which have no categorical column, and snapshot datasets; this
// test covers the data pairs directly).
func TestGroupNeighboursSameOutcome(t *testing.T) {
	env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(1) }}
	ctx := context.Background()
	base := map[string][]float64{"age": {20, 35, 50, 150, math.NaN()}, "region": {0, 1, 2, 3, 1}}
	plus := map[string][]float64{"age": {20, 35, 50, 150, math.NaN(), 99}, "region": {0, 1, 2, 3, 1, 0}}
	repl := map[string][]float64{"age": {-math.MaxFloat64, 35, 50, 150, math.NaN()}, "region": {math.NaN(), 1, 2, 3, 1}}
	other := map[string][]float64{"age": {1, 2}, "region": {3, 7.5}}
	empty := map[string][]float64{"age": {}, "region": {}}
	datasets := []struct {
		name  string
		cols  map[string][]float64
		units []int32
	}{
		{"5 rows", base, []int32{0, 1, 0, 2, 1}},
		{"6 rows", plus, []int32{0, 1, 0, 2, 1, 3}},
		{"one replaced", repl, []int32{0, 1, 0, 2, 1}},
		{"all other", other, []int32{0, 0}},
		{"empty", empty, nil},
	}
	for _, unit := range []string{"row", "user"} {
		for _, nb := range []string{"replace-one", "add-remove"} {
			sc := tabSchema(nb, unit)
			for _, c := range []map[string]any{
				{"by": "region"},
				{"by": "region", "delta": 1e-6},
				{"col": "age", "by": "region"},
				{"col": "age", "by": "region", "delta": 1e-6},
				{"col": "age", "by": "region", "delta": 1e-6, "fn": "private_mean"},
				{"col": "age", "delta": 1e-6, "fn": "private_mean"},
			} {
				vals := map[string]any{}
				fn := "private_count"
				for k, v := range c {
					if k == "fn" {
						fn = v.(string)
					} else {
						vals[k] = v
					}
				}
				if _, ok := vals["col"]; ok && fn == "private_count" {
					fn = "private_sum"
				}
				if unit == "user" && vals["by"] != nil {
					vals["max_groups"] = 2
				}
				p, err := tabPlan(t, env, fn, sc, vals)
				if err != nil {
					t.Fatalf("%s %v: %v", fn, vals, err)
				}
				var shape string
				for _, d := range datasets {
					units := d.units
					if unit == "row" {
						units = nil
					}
					out, err := p.run(ctx, colData(sc, d.cols, units, 4))
					if err != nil {
						t.Fatalf("%s %v on %s (%s, %s): %v", fn, vals, d.name, unit, nb, err)
					}
					var s string
					var values []float64
					switch r := out.(type) {
					case *Groups:
						s, values = strings.Join(append([]string{r.Stat, r.Column, r.By}, r.Keys...), ",")+"|"+string(rune('0'+len(r.Values))), r.Values
					case *Mean:
						s, values = "mean|"+string(rune('0'+len(r.Values))), r.Values
					default:
						t.Fatalf("%T", out)
					}
					for _, v := range values {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							t.Errorf("%s %v on %s: value %v", fn, vals, d.name, v)
						}
					}
					if shape == "" {
						shape = s
					} else if s != shape {
						t.Errorf("%s %v (%s, %s): shape %q on %s, %q on the first", fn, vals, unit, nb, s, d.name, shape)
					}
				}
			}
		}
	}
}

// On a subset of replace-one data the one-column mean's sum takes the
// larger of the two relations' sensitivities (a replaced parent row may
// enter or leave the subset), as private_sum does; grouped sums already
// have the larger one.
func TestGroupSubsetSensitivity(t *testing.T) {
	env := &Local{}
	sc := tabSchema("replace-one", "row")
	sc.Bounds = map[string][2]float64{"age": {50, 60}}
	ref := Ref{Name: "t", Schema: sc}
	sub := ref
	sub.Derived = &Derivation{ParentSchema: sc, Lineage: "t | age >= 55"}
	plan := func(r Ref, vals map[string]any) *Plan {
		p, err := env.Plan(Call{Func: "private_mean", Dataset: r, Args: tabArgs("private_mean", vals)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := map[string]any{"col": "age", "delta": 1e-6}
	if a, b := plan(ref, one).Noise, plan(sub, one).Noise; !strings.Contains(a, "sensitivity 10 under") || !strings.Contains(b, "sensitivity 60 under") {
		t.Errorf("one-column mean: %q on the dataset, %q on a subset", a, b)
	}
	by := map[string]any{"col": "age", "by": "region", "delta": 1e-6}
	if a, b := plan(ref, by).Noise, plan(sub, by).Noise; a != b || !strings.Contains(a, "ℓ2 sensitivity 84.85") {
		t.Errorf("grouped mean: %q on the dataset, %q on a subset", a, b)
	}
}
