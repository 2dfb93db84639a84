package release

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// tabSnapCSV is data with every case the column analyses' rules name:
// ages below and above the bounds [0, 100], x on bins' edges, an
// unbounded column w with
// huge values, regions outside the domain ("west") and missing (both
// "other"), and rows the registration drops (a NaN age, a missing one).
// With users, each user has rows in several regions.
func tabSnapCSV(users bool) string {
	var b strings.Builder
	b.WriteString("age,w,x,region")
	if users {
		b.WriteString(",uid")
	}
	b.WriteString("\n")
	regions := []string{"north", "south", "east", "west", ""}
	for i := range 240 {
		age := fmt.Sprint((i*37)%160 - 20) // -20 … 139
		switch i {
		case 7:
			age = "nan"
		case 11:
			age = ""
		}
		w := fmt.Sprint(float64((i*13)%17) - 8)
		if i%50 == 3 {
			w = "1e300"
		}
		x := float64(i%70)/20 - 1.5 // on edges of bins over [-1, 2] that the quotient misses
		fmt.Fprintf(&b, "%s,%s,%v,%s", age, w, x, regions[(i*7/3)%5])
		if users {
			fmt.Fprintf(&b, ",u%d", i%31)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tabSnapshot builds the snapshot of tabSnapCSV and its schema, as the
// registry would hold them.
func tabSnapshot(t *testing.T, users bool) (ledger.Schema, *snapshot.Reader) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(src, []byte(tabSnapCSV(users)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := snapshot.Spec{From: src, BadRows: "drop", Bounds: map[string][2]float64{"age": {0, 100}, "x": {-1, 2}},
		Categories: map[string][]string{"region": {"north", "south", "east"}}}
	sc := tabSchema("replace-one", "row")
	sc.Columns, sc.D, sc.Bounds = []string{"age", "w", "x"}, 3, map[string][2]float64{"age": {0, 100}, "x": {-1, 2}}
	if users {
		spec.UserColumn = "uid"
		sc.Unit, sc.UserColumn = "user", "uid"
	}
	info, err := snapshot.Build(context.Background(), spec, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := snapshot.Open(info.Path, info.Hash)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return sc, rd
}

// scanCounter is a source that counts its passes and refuses them: data
// the engine path must not read row by row. It keeps the metadata
// (NumRows, NumUnits) a count takes without a pass.
type scanCounter struct {
	rows.Source
	scans *atomic.Int64
}

func (s scanCounter) Scan(context.Context) (rows.Cursor, error) {
	s.scans.Add(1)
	return nil, errors.New("a pass over rows on the engine path")
}

func (s scanCounter) NumRows() int64 { return s.Source.(rowCounter).NumRows() }

func (s scanCounter) NumUnits() int {
	if u, ok := s.Source.(rows.Units); ok {
		return u.NumUnits()
	}
	return 0
}

// tabData is the snapshot's data as snapshotData gives them: with the
// engine (sql) or without it (the row path), and with the rows behind
// a scanCounter when scans is set.
func tabData(t *testing.T, sc ledger.Schema, rd *snapshot.Reader, sql bool, scans *atomic.Int64) *Data {
	t.Helper()
	columns := func(names []string) (rows.Source, error) {
		s, err := rd.Source(names)
		if err != nil || scans == nil {
			return s, err
		}
		return scanCounter{s, scans}, nil
	}
	src, err := columns(sc.Columns)
	if err != nil {
		t.Fatal(err)
	}
	d := &Data{Schema: sc, Rows: src, Columns: columns}
	if sql {
		d.SQL = rd
	}
	return d
}

// tabValues are a release's values.
func tabValues(t *testing.T, v any) []float64 {
	t.Helper()
	switch x := v.(type) {
	case *Count:
		return []float64{x.Value}
	case *Sum:
		return []float64{x.Value}
	case *Quantile:
		return []float64{x.Value}
	case *Mean:
		return append(append(append([]float64(nil), x.Values...), x.Sums...), x.Counts...)
	case *Groups:
		return append(append(append([]float64(nil), x.Values...), x.Sums...), x.Counts...)
	case *Histogram:
		return x.Counts
	}
	t.Fatalf("release of type %T", v)
	return nil
}

// tabCalls are the column analyses on the two snapshots: every form, on
// the dataset and on subsets (numeric filters on clamped and unbounded
// columns, categorical ones on a category and on "other").
var tabCalls = []struct {
	fn      string
	users   bool
	vals    map[string]any
	filters []Filter
}{
	{"private_count", false, nil, nil},
	{"private_count", false, map[string]any{"delta": 1e-6}, []Filter{{"age", ">=", 100}}},
	{"private_count", false, nil, []Filter{{"region", "==", 3}}},
	{"private_count", false, nil, []Filter{{"age", "==", 100}}}, // the clamped value: every age from 100 up
	{"private_sum", false, map[string]any{"col": "age"}, []Filter{{"age", "==", 0}, {"w", ">", -1e300}}},
	{"private_count", false, map[string]any{"by": "region"}, nil},
	// Filters with non-finite values (a data service's client may send
	// them): the same outcome on every finite value.
	{"private_count", false, nil, []Filter{{"w", "<", math.Inf(1)}, {"age", "!=", math.NaN()}}},
	{"private_count", false, nil, []Filter{{"w", ">", math.Inf(1)}}},
	{"private_count", false, map[string]any{"by": "region", "other": false, "consistent": true}, []Filter{{"w", "<", 0.5}}},
	{"private_sum", false, map[string]any{"col": "age"}, nil},
	{"private_sum", false, map[string]any{"col": "age", "delta": 1e-6}, []Filter{{"region", "!=", 3}, {"age", ">", 0}}},
	{"private_sum", false, map[string]any{"col": "age", "by": "region"}, nil},
	{"private_sum", false, map[string]any{"col": "age", "by": "region", "consistent": true}, []Filter{{"w", ">=", -3}}},
	{"private_mean", false, map[string]any{"col": "age"}, []Filter{{"age", "<=", 50}}},
	{"private_mean", false, map[string]any{"col": "age", "delta": 1e-6}, nil},
	{"private_mean", false, map[string]any{"col": "age", "by": "region"}, []Filter{{"region", "!=", 0}}},
	{"private_histogram", false, map[string]any{"col": "region"}, nil},
	{"private_histogram", false, map[string]any{"col": "region", "other": false}, []Filter{{"age", "<", 100}}},
	{"private_histogram", false, map[string]any{"col": "age", "bins": 7}, nil},
	// (x − lo)/((hi − lo)/n) puts some x one bin too high (bins=10:
	// -0.1, 0.8) or too low (bins=15: 0.2, 0.4, 1.4): the edges correct it.
	{"private_histogram", false, map[string]any{"col": "x", "bins": 10}, nil},
	{"private_histogram", false, map[string]any{"col": "x", "bins": 15}, nil},
	{"private_histogram", false, map[string]any{"col": "age", "bins": 3, "delta": 1e-6}, []Filter{{"w", "!=", 0}}},
	{"private_quantile", false, map[string]any{"col": "age", "q": 0.3}, nil},
	{"private_quantile", false, map[string]any{"col": "age", "q": 0.9}, []Filter{{"region", "==", 1}}},
	{"private_count", true, nil, nil},
	{"private_count", true, nil, []Filter{{"region", "==", 2}}},
	{"private_count", true, map[string]any{"by": "region", "max_groups": 2}, nil},
	{"private_count", true, map[string]any{"by": "region", "max_groups": 4, "delta": 1e-6}, []Filter{{"age", ">", 30}}},
	{"private_histogram", true, map[string]any{"col": "region", "max_groups": 3}, nil},
	{"private_histogram", true, map[string]any{"col": "age", "bins": 5, "max_groups": 2}, []Filter{{"region", "!=", 3}}},
	{"private_sum", true, map[string]any{"col": "age"}, nil},
	{"private_sum", true, map[string]any{"col": "age", "delta": 1e-6}, []Filter{{"age", ">=", 60}}},
	{"private_sum", true, map[string]any{"col": "age", "by": "region", "max_groups": 2}, nil},
	{"private_mean", true, map[string]any{"col": "age"}, []Filter{{"region", "==", 3}}},
	{"private_mean", true, map[string]any{"col": "x", "by": "region", "max_groups": 3, "delta": 1e-6}, nil},
	{"private_mean", true, map[string]any{"col": "age", "by": "region", "other": false}, []Filter{{"w", ">", -5}}},
	{"private_quantile", true, map[string]any{"col": "age", "q": 0.5}, nil},
	{"private_quantile", true, map[string]any{"col": "x", "q": 0.2}, []Filter{{"region", "!=", 1}}},
}

// On a snapshot every column analysis runs its statement in the data
// engine and reads no row (its sources refuse any pass), and with the
// same noise its release is the row path's: the same counts, sums equal
// up to the sums' roundings, a quantile within one step of its grid.
func TestTabularEnginePath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, users := range []bool{false, true} {
		sc, rd := tabSnapshot(t, users)
		for i, c := range tabCalls {
			if c.users != users {
				continue
			}
			name := fmt.Sprintf("%d %s %v %v", i, c.fn, c.vals, c.filters)
			src := Ref{Name: "t", Schema: sc}
			if c.filters != nil {
				sub := sc
				sub.Name = "t | subset"
				src = Ref{Name: "t", Schema: sub, Derived: &Derivation{ParentSchema: sc, Filters: c.filters, Lineage: "t | subset"}}
			}
			seed := uint64(100 + i)
			env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) }}
			p, err := env.Plan(Call{Func: c.fn, Dataset: src, Args: tabArgs(c.fn, c.vals)})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var scans atomic.Int64
			data := func(sql bool, scans *atomic.Int64) *Data {
				d := tabData(t, sc, rd, sql, scans)
				if src.Derived != nil {
					if d, err = derive(d, src.Schema, src.Derived); err != nil {
						t.Fatal(err)
					}
				}
				return d
			}
			engine, err := p.run(ctx, data(true, &scans))
			if err != nil {
				t.Fatalf("%s: engine path: %v", name, err)
			}
			if n := scans.Load(); n != 0 {
				t.Errorf("%s: the engine path made %d passes over rows", name, n)
			}
			rowPath, err := p.run(ctx, data(false, nil))
			if err != nil {
				t.Fatalf("%s: row path: %v", name, err)
			}
			got, want := tabValues(t, engine), tabValues(t, rowPath)
			if len(got) != len(want) {
				t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
			}
			tol := 1e-9
			if c.fn == "private_quantile" {
				tol = 100.0 / (1 << 20) // one step of the grid over [0, 100] (and less over [-1, 2])
			}
			for j := range got {
				if math.Abs(got[j]-want[j]) > tol*max(1, math.Abs(want[j])) {
					t.Errorf("%s: value %d is %v on the engine path, %v on the row path", name, j, got[j], want[j])
				}
			}
		}
	}
}

// The engine's sums are charged as the pairwise float sums they replace:
// their terms lie on the fixed-point grid, within half a step of the
// clamped values, and their rounding is a conversion of an exact integer
// (and for a consistent total, one more exact accumulation and
// rounding, tabTotal), so the sensitivity of the grid's terms plus those
// roundings must stay within what the tabular plans charge: Sensitivity +
// Excess (SumPlan), SumL1/SumL2 + Excess (GroupPlan).
func TestTabularGridWithinPlan(t *testing.T) {
	t.Parallel()
	for _, b := range [][2]float64{{0, 100}, {-3, 10}, {5, 10}, {-1e250, 1e250}, {1e-100, 3e-100}, {-7, -2}, {0, 1}} {
		lo, hi := b[0], b[1]
		g, err := sqlplan.GridOf(tabSum("x", lo, hi))
		if err != nil {
			t.Fatalf("[%v, %v]: %v", lo, hi, err)
		}
		gm := g.Magnitude()
		// Two conversions of the group sums, and of the total's exact
		// accumulation and rounding (tabTotal), between neighbours.
		rounding := sqlplan.RoundingExcess(gm) + 4*0x1p-53*tabular.MaxRows*gm
		for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
			sp, err := tabular.PlanSum(lo, hi, 1, 0, nb)
			if err != nil {
				t.Fatal(err)
			}
			gs := max(math.Abs(g.Low()), math.Abs(g.High()))
			if nb == accounting.ReplaceOne {
				gs = g.High() - g.Low()
			}
			if gs+rounding > sp.Sensitivity+sp.Excess {
				t.Errorf("[%v, %v] %s: the grid's sum needs %v, the plan charges %v", lo, hi, nb, gs+rounding, sp.Sensitivity+sp.Excess)
			}
			for _, groups := range []int{1, 4} {
				var dom []string
				for j := range groups {
					dom = append(dom, fmt.Sprint(j))
				}
				bins, err := tabular.NewDomainBins(dom)
				if err != nil {
					t.Fatal(err)
				}
				gp, err := tabular.PlanGroups(tabular.GroupSpec{Stat: tabular.GroupSum, Groups: bins, Lo: lo, Hi: hi, MaxGroups: 1, AddRemoveToo: true}, 1, 0, nb)
				if err != nil {
					t.Fatal(err)
				}
				l1, l2 := tabular.GroupSumSensitivity(g.Low(), g.High(), groups, 1, nb, true)
				if l1+rounding > gp.SumL1+gp.Excess || l2+rounding > gp.SumL2+gp.Excess {
					t.Errorf("[%v, %v] %s, %d groups: the grid's sums need (%v, %v), the plan charges (%v, %v)", lo, hi, nb, groups, l1+rounding, l2+rounding, gp.SumL1+gp.Excess, gp.SumL2+gp.Excess)
				}
			}
		}
	}
}

// A user-level dataset with a column named file_row_number hides the
// engine's row positions from every statement over its table reference:
// its calls keep the row path (no pass) instead of a statement that would
// fail after the charge; row-level data are unaffected.
func TestTabularEngineRowPositions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		unit, col string
		engine    bool
	}{{"user", "file_row_number", false}, {"user", "w", true}, {"row", "file_row_number", true}} {
		sc := tabSchema("replace-one", c.unit)
		sc.Columns = []string{"age", c.col}
		sc.UserColumn = "uid"
		pass, err := newTabPass(Ref{Name: "t", Schema: sc}, nil, []sqlplan.Aggregate{tabSum("age", 0, 100)}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (pass != nil) != c.engine {
			t.Errorf("%s-level data with a column %q: engine pass %v, want %v", c.unit, c.col, pass != nil, c.engine)
		}
	}
}

// The engine's clipped row sum (sqlplan.PrintRowSum, run here by the
// snapshot's DuckDB) is the row pass's (tabular.ClippedRowSum) within
// the rounding the plan charges, with the same number of rows, on both
// branches of the clipping rule and with values clamped to their bounds.
func TestRowSumInEngine(t *testing.T) {
	sc, rd := tabSnapshot(t, false)
	d := tabData(t, sc, rd, true, nil)
	idx := []int{0, 1, 2}
	for _, clip := range []float64{0.5, 30, 1e4, 1e50} {
		want, wn, err := tabular.ClippedRowSum(context.Background(), d.Rows, idx, clip)
		if err != nil {
			t.Fatal(err)
		}
		got, gn, err := engineRowSum(context.Background(), d, sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: clip})
		if err != nil {
			t.Fatal(err)
		}
		if gn != wn || gn == 0 {
			t.Errorf("clip %g: %d rows in the engine, %d in the row pass", clip, gn, wn)
		}
		tol := tabular.RowSumExcess(len(idx), clip)/2 + sqlplan.RowSumDrift(len(idx))*clip
		for j := range want {
			if dv := math.Abs(got[j] - want[j]); !(dv <= tol) {
				t.Errorf("clip %g: sum %d is %v in the engine, %v in the row pass (tolerance %g)", clip, j, got[j], want[j], tol)
			}
		}
		if clip == 30 && math.Abs(want[0]) < 1 {
			t.Errorf("clip %g: the sums %v test nothing", clip, want)
		}
	}
	// A failing statement, or a result of another shape, leaves the
	// sums and the count 0 (the noise alone), its message unseen.
	for _, rows := range [][][]any{nil, {{int64(1), int64(2), int64(3)}}, {{int64(1), int64(2), int64(3), "x"}}} {
		got, n, err := engineRowSum(context.Background(), &Data{Schema: sc, SQL: failingSQL{rows}}, sqlplan.Moments{Columns: sc.Columns, Clip: 1})
		if err != nil || n != 0 || got[0] != 0 || got[2] != 0 {
			t.Errorf("statement result %v: %v, %d, %v", rows, got, n, err)
		}
	}
}

// The engine's row sum is covered by what private_mean's row-vector form
// charges (tabular.RowSumExcess, for its float64 row pass): the
// neighbours' released sums differ by at most the sensitivity plus
// sqlplan.RowSumExcess, and each is within sqlplan.RowSumDrift of the
// exact sum, which the interval allows half the charged excess for.
func TestRowSumExcessCharged(t *testing.T) {
	for _, m := range []int{1, 2, 3, 10, 100, 256, 257, 1000, 1 << 14, 1 << 20} {
		for _, clip := range []float64{1e-3, 1, 1e6} {
			charged := tabular.RowSumExcess(m, clip)
			if e := sqlplan.RowSumExcess(m) * clip; !(e <= charged) {
				t.Errorf("m=%d clip=%g: the engine's excess %g is above the charged %g", m, clip, e, charged)
			}
			if e := sqlplan.RowSumDrift(m) * clip; !(e <= charged/2) {
				t.Errorf("m=%d clip=%g: the engine's drift %g is above the interval's %g", m, clip, e, charged/2)
			}
		}
	}
}

// dialectReader is a live table's reader: a dialect of its own.
type dialectReader struct {
	failingSQL
	d sqlplan.Dialect
}

func (r dialectReader) Dialect() sqlplan.Dialect { return r.d }

// On a live table every statement of a column analysis is checked in the
// engine's dialect before the charge: a pass without a statement (which
// would read rows) and a bounded plan ClickHouse cannot print are
// ArgumentErrors; a pass the dialect prints is admitted. A user-level
// pass's outer statement is printed in the engine's dialect too.
func TestEngineCheck(t *testing.T) {
	sc := tabSchema("replace-one", "row")
	sc.Columns, sc.D, sc.Bounds = []string{"age"}, 1, map[string][2]float64{"age": {0, 100}}
	sc.Categorical = map[string][]string{"region": {"north", "south"}}
	sc.Unit, sc.UserColumn = "user", "uid"
	src := Ref{Name: "t", Schema: sc}
	c := tabColumn{name: "age", numeric: true, lo: 0, hi: 100, bounded: true}
	key := tabKey(sc, "region", true)
	sum := func(term *sqlplan.Expr) []sqlplan.Aggregate { return []sqlplan.Aggregate{tabSumOf(term, 0, 100)} }
	plain, err := newTabUserPass(src, c, nil, 0, sum, nil)
	if err != nil || plain == nil {
		t.Fatal(plain, err)
	}
	bounded, err := newTabUserPass(src, c, &key, 2, sum, nil)
	if err != nil || bounded == nil {
		t.Fatal(bounded, err)
	}
	facts := func(d sqlplan.Dialect) *engineFacts {
		return &engineFacts{fn: "private_sum", name: "t", kind: "test", dialect: d, table: "T"}
	}
	for _, tc := range []struct {
		d    sqlplan.Dialect
		p    *Plan
		want string // "" admitted
	}{
		{sqlplan.PostgreSQL, &Plan{Func: "private_sum", tab: plain}, ""},
		{sqlplan.PostgreSQL, &Plan{Func: "private_sum", tab: bounded}, ""},
		{sqlplan.ClickHouse, &Plan{Func: "private_sum", tab: plain}, ""},
		// ClickHouse bounds with arrays, not windows (BoundedRows).
		{sqlplan.ClickHouse, &Plan{Func: "private_sum", tab: bounded}, ""},
		{sqlplan.PostgreSQL, &Plan{Func: "private_sum"}, "no statement to run"},
		{sqlplan.ClickHouse, &Plan{Func: "private_mean", rowSum: &sqlplan.Moments{Columns: []string{"age"}, Clip: 1}}, ""},
		{sqlplan.ClickHouse, &Plan{Func: "private_mean", rowSum: &sqlplan.Moments{Columns: []string{"age"}, Clip: 1e300}}, "cannot express"},
	} {
		err := facts(tc.d).check(tc.p)
		var e *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %+v: %v", tc.d, tc.p, err)
		case tc.want != "" && (!errors.As(err, &e) || e.Name != NameArgumentError || !strings.Contains(e.Msg, tc.want) || !strings.Contains(e.Msg, "nothing was charged")):
			t.Errorf("%s %+v: %v, want an ArgumentError saying %q", tc.d, tc.p, err, tc.want)
		}
	}
	// The outer statement over the users' terms is printed in the
	// reader's dialect, not DuckDB's.
	for _, d := range []sqlplan.Dialect{sqlplan.PostgreSQL, sqlplan.ClickHouse} {
		n := nestedSQL{dialectReader{d: d}, plain.inner}
		if got := dialectOf(n); got != d {
			t.Errorf("the users' terms on %s are printed in %s", d, got)
		}
		if tb := n.Table(); !strings.Contains(tb, d.Ident("__pn_users")) || strings.Contains(tb, "AS DOUBLE)") != (d == sqlplan.DuckDB) {
			t.Errorf("the users' terms on %s: %s", d, tb)
		}
	}
}

// A numeric histogram's bins in the engine are NumericBins.Bin's for
// every value, the hard ones included: each edge of every bin count
// tried, one step of float64 either side of it, the bounds and values
// beyond them (clamped into the end bins), for bounds whose edges are
// round, unround, negative and far apart.
func TestTabularBinsOnEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counts := []int{1, 2, 3, 7, 10, 15, 64, 100}
	for _, b := range [][2]float64{{-1, 2}, {0, 100}, {-7.3, -0.2}, {0.1, 0.3}, {-1e250, 1e250}, {1e-3, 1e6}} {
		lo, hi := b[0], b[1]
		var xs []float64
		for _, n := range counts {
			nb, err := tabular.NewNumericBins(lo, hi, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range nb.Edges() {
				xs = append(xs, e, math.Nextafter(e, math.Inf(-1)), math.Nextafter(e, math.Inf(1)))
			}
		}
		xs = append(xs, lo-1, hi+1, -math.MaxFloat64, math.MaxFloat64, lo/2+hi/2)
		dir := t.TempDir()
		var csv strings.Builder
		csv.WriteString("x\n")
		for _, x := range xs {
			csv.WriteString(strconv.FormatFloat(x, 'g', -1, 64) + "\n")
		}
		path := filepath.Join(dir, "x.csv")
		if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := snapshot.Build(ctx, snapshot.Spec{From: path, Bounds: map[string][2]float64{"x": b}}, dir, "x")
		if err != nil {
			t.Fatal(err)
		}
		rd, err := snapshot.Open(info.Path, info.Hash)
		if err != nil {
			t.Fatal(err)
		}
		sc := tabSchema("replace-one", "row")
		sc.Columns, sc.D, sc.Bounds = []string{"x"}, 1, map[string][2]float64{"x": b}
		for _, n := range counts {
			nb, _ := tabular.NewNumericBins(lo, hi, n)
			want := make([]float64, n)
			for _, x := range xs {
				want[nb.Bin(min(max(x, lo), hi))]++
			}
			pass, err := newTabPass(Ref{Name: "x", Schema: sc}, []sqlplan.Key{tabBinKey("x", nb)},
				[]sqlplan.Aggregate{{Name: "n", Kind: sqlplan.Count}}, 0, nil)
			if err != nil || pass == nil {
				t.Fatalf("bounds %v, %d bins: no pass (%v)", b, n, err)
			}
			ex, _, err := pass.exact(ctx, tabData(t, sc, rd, true, nil))
			if err != nil {
				t.Fatal(err)
			}
			if len(ex) != 1 || !slices.Equal(ex[0], want) {
				t.Errorf("bounds %v, %d bins: the engine counts %v, NumericBins %v", b, n, ex, want)
			}
		}
		rd.Close()
	}
}

// Centred Analyze Gauss in the engine (the snapshot's DuckDB here): the
// private mean from the engine's row sums, then the moments of the rows
// shifted by it, release with the same seeded noise what the row pass
// releases, within the rounding the plan charges, on both branches of the
// clipping rule and with values clamped to their bounds. A failing
// engine, or a result of another shape, after the charge gives the noise
// alone: the release of an empty table.
func TestCenteredGaussInEngine(t *testing.T) {
	sc, rd := tabSnapshot(t, false)
	d := tabData(t, sc, rd, true, nil)
	plan := func(clip float64, seed uint64) *pca.Plan {
		pl, err := pca.PlanMethod(pca.MethodGauss, pca.Options{K: 2, Eps: 1, Delta: 1e-6, Clip: clip, Center: true, Noise: noise.NewSeeded(seed)}, len(sc.Columns))
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	for i, clip := range []float64{0.5, 30, 1e4} {
		seed := uint64(11 + i)
		want, err := plan(clip, seed).RunSource(context.Background(), d.Rows)
		if err != nil {
			t.Fatal(err)
		}
		pl := plan(clip, seed)
		got, err := engineGauss(context.Background(), d, pl, clip)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Center) != len(sc.Columns) {
			t.Fatalf("clip %g: centre %v", clip, got.Center)
		}
		for j := range want.Center {
			if dv := math.Abs(got.Center[j] - want.Center[j]); !(dv <= pca.CenterRoundingExcess()*clip) {
				t.Errorf("clip %g: centre %v in the engine, %v in the row pass", clip, got.Center, want.Center)
				break
			}
		}
		// The data's mean is far from 0, so a statement that shifted
		// the rows by another vector (or none) would move the moments
		// far beyond the rounding.
		tol := pl.RoundingExcess * clip * clip
		for j := range want.Values {
			if dv := math.Abs(got.Values[j] - want.Values[j]); !(dv <= tol) {
				t.Errorf("clip %g: eigenvalue %d is %v in the engine, %v in the row pass (tolerance %g)", clip, j, got.Values[j], want.Values[j], tol)
			}
		}
		if dv := math.Abs(got.TotalVariance - want.TotalVariance); !(dv <= 3*tol) {
			t.Errorf("clip %g: total variance %v in the engine, %v in the row pass", clip, got.TotalVariance, want.TotalVariance)
		}
	}
	// The noise alone: the mean of no sums and no rows, and the moments
	// of no rows, with the same draws.
	pl := plan(1, 5)
	mu, err := pl.CenterOfSum(make([]float64, len(sc.Columns)), 0)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := pl.RunGram(context.Background(), mat.NewSymDense(len(sc.Columns), nil), mu)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range [][][]any{nil, {{int64(1), int64(2)}}, {{"x", int64(2), int64(3), int64(4)}}} {
		got, err := engineGauss(context.Background(), &Data{Schema: sc, SQL: failingSQL{res}}, plan(1, 5), 1)
		if err != nil {
			t.Fatalf("statement result %v: %v", res, err)
		}
		if fmt.Sprint(got.Center, got.Values, got.TotalVariance) != fmt.Sprint(empty.Center, empty.Values, empty.TotalVariance) {
			t.Errorf("statement result %v: %v %v %v, the empty table's %v %v %v", res, got.Center, got.Values, got.TotalVariance, empty.Center, empty.Values, empty.TotalVariance)
		}
	}
}
