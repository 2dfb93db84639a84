package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// openTestMemoryTable is the binary's opener (cmd/privnotes), counting
// the loads.
func openTestMemoryTable(loads *atomic.Int64) MemoryTableOpener {
	return func(ctx context.Context, m *MemoryRows) (MemoryTable, error) {
		loads.Add(1)
		mt, err := snapshot.OpenMemoryTable(ctx, (*snapshot.MemoryRows)(m))
		if err != nil {
			return nil, err
		}
		return mt, nil
	}
}

// tabMemory is the snapshot's rows as the registry's memory format holds
// them (numeric columns, users by their dense index, in row order), and
// their schema: the snapshot's without its categorical column, which the
// memory format does not hold.
func tabMemory(t *testing.T, sc ledger.Schema, rd *snapshot.Reader) *ledger.Data {
	t.Helper()
	sel, order := strings.Join(sc.Columns, ", "), ""
	if sc.Unit == "user" {
		sel += ", " + sc.UserColumn
		order = " ORDER BY " + sqlplan.RowColumn
	}
	out, err := rd.Query(context.Background(), "SELECT "+sel+" FROM "+rd.Table()+order)
	if err != nil {
		t.Fatal(err)
	}
	msc := sc
	msc.Categorical = nil
	d := len(sc.Columns)
	ld := &ledger.Data{Schema: msc, X: mat.NewDense(len(out), d, nil)}
	for i, r := range out {
		for j := range d {
			ld.X.Set(i, j, r[j].(float64))
		}
		if sc.Unit == "user" {
			u := r[d].(int32)
			ld.Users = append(ld.Users, u)
			ld.NumUsers = max(ld.NumUsers, int(u)+1)
		}
	}
	return ld
}

// denseCounter is data held in memory whose passes are counted and
// refused, keeping what a count takes without a pass.
type denseCounter struct {
	rows.Source
	scans *atomic.Int64
}

func (s denseCounter) Scan(context.Context) (rows.Cursor, error) {
	s.scans.Add(1)
	return nil, errors.New("a pass over rows on the engine path")
}

func (s denseCounter) NumRows() int { return s.Source.(interface{ NumRows() int }).NumRows() }

func (s denseCounter) NumUnits() int { return s.Source.(rows.Units).NumUnits() }

// tabCallUses reports whether a call of tabCalls reads column col.
func tabCallUses(fn string, vals map[string]any, filters []Filter, col string) bool {
	if vals["col"] == col || vals["by"] == col || (fn == "private_histogram" && vals["col"] == nil) {
		return true
	}
	return slices.ContainsFunc(filters, func(f Filter) bool { return f.Column == col })
}

// tabMemoryCalls are calls of tabCalls' forms whose bound of each user's
// rows (their first max_groups groups, in row order) reads no categorical
// column, so that memory data test it too.
var tabMemoryCalls = []struct {
	fn      string
	users   bool
	vals    map[string]any
	filters []Filter
}{
	{"private_histogram", true, map[string]any{"col": "age", "bins": 5, "max_groups": 2}, nil},
	{"private_histogram", true, map[string]any{"col": "x", "bins": 4, "max_groups": 1}, []Filter{{"age", ">", 20}}},
}

// Data held in memory run the column analyses on the data engine too: a
// memory table of the snapshot's rows gives every call that reads no
// categorical column (which the memory format does not hold) the
// snapshot's release with the same noise, value for value, and the
// rows' path's release on the same memory data, and reads no row. The
// table is loaded once for all the calls.
func TestTabularMemoryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var loads atomic.Int64
	cache := &memTables{max: memoryTablesCached}
	defer cache.closeAll()
	open := openTestMemoryTable(&loads)
	ran := 0
	for _, users := range []bool{false, true} {
		sc, rd := tabSnapshot(t, users)
		ld := tabMemory(t, sc, rd)
		msc := ld.Schema
		loadsBefore := loads.Load()
		for i, c := range append(slices.Clone(tabCalls), tabMemoryCalls...) {
			if c.users != users || tabCallUses(c.fn, c.vals, c.filters, "region") {
				continue
			}
			name := fmt.Sprintf("%d %s %v %v", i, c.fn, c.vals, c.filters)
			src := Ref{Name: "t", Schema: msc}
			if c.filters != nil {
				sub := msc
				sub.Name = "t | subset"
				src = Ref{Name: "t", Schema: sub, Derived: &Derivation{ParentSchema: msc, Filters: c.filters, Lineage: "t | subset"}}
			}
			seed := uint64(100 + i)
			env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(seed) }}
			p, err := env.Plan(Call{Func: c.fn, Dataset: src, Args: tabArgs(c.fn, c.vals)})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			derived := func(d *Data) *Data {
				if src.Derived != nil {
					if d, err = derive(d, src.Schema, src.Derived); err != nil {
						t.Fatal(err)
					}
				}
				return d
			}
			var scans atomic.Int64
			md, err := memoryDataWith(open, cache, "t", ld)
			if err != nil {
				t.Fatal(err)
			}
			if md.SQL == nil {
				t.Fatalf("%s: the memory data have no engine", name)
			}
			parent := md.Columns
			md.Rows = denseCounter{md.Rows, &scans}
			md.Columns = func(names []string) (rows.Source, error) {
				s, err := parent(names)
				return denseCounter{s, &scans}, err
			}
			memory, err := p.run(ctx, derived(md))
			md.Close()
			if err != nil {
				t.Fatalf("%s: memory data: %v", name, err)
			}
			if n := scans.Load(); n != 0 {
				t.Errorf("%s: the memory data's engine path made %d passes over rows", name, n)
			}
			snap, err := p.run(ctx, derived(tabData(t, msc, rd, true, nil)))
			if err != nil {
				t.Fatalf("%s: snapshot: %v", name, err)
			}
			got, want := tabValues(t, memory), tabValues(t, snap)
			if !slices.Equal(got, want) {
				t.Errorf("%s: memory data release %v, the snapshot's %v", name, got, want)
			}
			// And the rows' path it replaces (a build without the
			// engine) gives the same release too.
			rowsData, err := memoryDataWith(nil, cache, "t", ld)
			if err != nil {
				t.Fatal(err)
			}
			if rowsData.SQL != nil {
				t.Fatalf("%s: memory data without an engine have one", name)
			}
			byRows, err := p.run(ctx, derived(rowsData))
			rowsData.Close()
			if err != nil {
				t.Fatalf("%s: memory data's rows: %v", name, err)
			}
			if rows := tabValues(t, byRows); !slices.Equal(got, rows) {
				t.Errorf("%s: memory data release %v on the engine, %v on the rows' path", name, got, rows)
			}
			ran++
		}
		if n := loads.Load() - loadsBefore; n != 1 {
			t.Errorf("users %v: the memory table was loaded %d times, want once", users, n)
		}
	}
	if ran < 18+len(tabMemoryCalls) {
		t.Errorf("%d calls ran on memory data, want the %d that read no categorical column", ran, 18+len(tabMemoryCalls))
	}
}

// The memory tables' cache keys a table by the dataset's name and its
// content: the same rows share a table, a change of any value, of the
// users, of a column's name, or a dataset of the same name registered
// again, loads a new one. It keeps the last memoryTablesCached tables,
// and closes an evicted one when its last reader is done.
func TestMemoryTableCache(t *testing.T) {
	t.Parallel()
	var loads atomic.Int64
	cache := &memTables{max: 2}
	defer cache.closeAll()
	open := openTestMemoryTable(&loads)
	base := &ledger.Data{Schema: ledger.Schema{Name: "m", Columns: []string{"a", "b"}, D: 2, Unit: "user", UserColumn: "u"},
		X: mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6}), Users: []int32{0, 1, 0}, NumUsers: 2}
	variant := func(f func(d *ledger.Data)) *ledger.Data {
		d := *base
		d.X = mat.DenseCopyOf(base.X)
		d.Users = slices.Clone(base.Users)
		d.Schema.Columns = slices.Clone(base.Schema.Columns)
		f(&d)
		return &d
	}
	count := func(name string, ld *ledger.Data) (SQLReader, *Data) {
		t.Helper()
		d, err := memoryDataWith(open, cache, name, ld)
		if err != nil || d.SQL == nil {
			t.Fatalf("%s: %v, engine %v", name, err, d != nil && d.SQL != nil)
		}
		q, err := d.SQL.(*lazyTable).get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return q, d
	}
	q0, d0 := count("m", base)
	d0.Close()
	for _, c := range []struct {
		name string
		ld   *ledger.Data
	}{
		{"a value", variant(func(d *ledger.Data) { d.X.Set(2, 1, 6.5) })},
		{"a user", variant(func(d *ledger.Data) { d.Users[2] = 1 })},
		{"a column's name", variant(func(d *ledger.Data) { d.Schema.Columns[1] = "c" })},
		{"the dataset's name", base},
	} {
		dsName := "m"
		if c.name == "the dataset's name" {
			dsName = "m2"
		}
		before := loads.Load()
		q, d := count(dsName, c.ld)
		d.Close()
		if loads.Load() != before+1 || q == q0 {
			t.Errorf("%s changed: loads %d → %d, same table %v", c.name, before, loads.Load(), q == q0)
		}
	}
	// The same content again: one of the last two tables, or a new load.
	before := loads.Load()
	q, d := count("m2", variant(func(*ledger.Data) {}))
	d.Close()
	if loads.Load() != before {
		t.Errorf("the same rows loaded again")
	}
	// An evicted table stays open while a call reads it.
	q, d = count("m", base)
	if loads.Load() != before+1 {
		t.Errorf("an evicted table was not loaded again")
	}
	for _, name := range []string{"x", "y"} {
		_, e := count(name, base)
		e.Close()
	}
	if _, err := q.Query(context.Background(), "SELECT count(*) FROM "+q.Table()); err != nil {
		t.Errorf("an evicted table in use: %v", err)
	}
	d.Close()
	if _, err := q.Query(context.Background(), "SELECT count(*) FROM "+q.Table()); err == nil {
		t.Errorf("an evicted table stayed open after its last reader")
	}
}

// Data the store loaded are keyed by their registration hash, which the
// store computed when it checked them (ledger.Data.Hash), so a call hashes
// no row: two loads of one registration share a table even where the
// rows handed in differ (which the store never does, but it shows the
// rows are not hashed again), and another registration of the same rows
// (a new salt) or of other rows, or other column names, is another table.
func TestMemoryTableCacheRegistered(t *testing.T) {
	var loads atomic.Int64
	cache := &memTables{max: 8}
	defer cache.closeAll()
	open := openTestMemoryTable(&loads)
	st := testfix.Store(t, "")
	reg := func(name, csv string) {
		testfix.Register(t, st, ledger.Registration{Name: name, Table: testfix.Table(t, csv),
			Budget: accounting.Budget{Eps: 1, Delta: 1e-6}, Accountant: accounting.ModeZCDP, Clip: 1})
	}
	reg("m", "a,b\n1,2\n3,4\n")
	reg("m2", "a,b\n1,2\n3,4\n")
	reg("m3", "a,b\n1,2\n3,4.5\n")
	load := func(name string) *ledger.Data {
		t.Helper()
		ld, err := st.Load(name)
		if err != nil || ld.Hash == "" {
			t.Fatalf("Load(%s): %v, hash %q", name, err, ld.Hash)
		}
		return ld
	}
	table := func(key string, ld *ledger.Data) SQLReader {
		t.Helper()
		d, err := memoryDataWith(open, cache, key, ld)
		if err != nil || d.SQL == nil {
			t.Fatalf("%s: %v, engine %v", key, err, d != nil && d.SQL != nil)
		}
		defer d.Close()
		q, err := d.SQL.(*lazyTable).get()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return q
	}
	m := load("m")
	q0 := table("k", m)
	if loads.Load() != 1 {
		t.Fatalf("%d loads, want 1", loads.Load())
	}
	again := load("m")
	again.X.Set(1, 1, 99) // the same registration hash: the key does not read the rows
	if q := table("k", again); q != q0 || loads.Load() != 1 {
		t.Errorf("a second load of one registration: same table %v, %d loads", q == q0, loads.Load())
	}
	renamed := load("m")
	renamed.Schema.Columns = []string{"a", "c"}
	for _, c := range []struct {
		name string
		ld   *ledger.Data
	}{
		{"another registration of the same rows", load("m2")},
		{"other rows", load("m3")},
		{"a column's name", renamed},
	} {
		before := loads.Load()
		if q := table("k", c.ld); q == q0 || loads.Load() != before+1 {
			t.Errorf("%s: same table %v, loads %d → %d", c.name, q == q0, before, loads.Load())
		}
	}
	// The same rows without a registration hash (public synthetic data)
	// are keyed by their content, never by a registration's.
	anon := load("m")
	anon.Hash = ""
	before := loads.Load()
	if q := table("k", anon); q == q0 || loads.Load() != before+1 {
		t.Errorf("unregistered rows took a registered table: same %v, loads %d → %d", q == q0, before, loads.Load())
	}
}

// Concurrent calls on the same rows load their table once.
func TestMemoryTableConcurrent(t *testing.T) {
	t.Parallel()
	var loads atomic.Int64
	cache := &memTables{max: 2}
	defer cache.closeAll()
	open := openTestMemoryTable(&loads)
	ld := &ledger.Data{Schema: ledger.Schema{Name: "m", Columns: []string{"a"}, D: 1, Unit: "row"}, X: mat.NewDense(2, 1, []float64{1, 2})}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			d, err := memoryDataWith(open, cache, "m", ld)
			if err != nil || d.SQL == nil {
				t.Errorf("%v, engine %v", err, d != nil && d.SQL != nil)
				return
			}
			defer d.Close()
			out, err := d.SQL.Query(context.Background(), "SELECT sum(a) FROM "+d.SQL.Table())
			if err != nil || len(out) != 1 || out[0][0] != 3.0 {
				t.Errorf("sum: %v, %v", out, err)
			}
		})
	}
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
}

// Data without a table the statements could read keep the row path: a
// schema with categorical columns or user-level data without users
// (which no producer of data held in memory makes:
// TestMemoryRegistrationsHaveTables), a build without the engine.
func TestMemoryDataRowPath(t *testing.T) {
	t.Parallel()
	var loads atomic.Int64
	cache := &memTables{max: 2}
	defer cache.closeAll()
	sc := ledger.Schema{Name: "m", Columns: []string{"a"}, D: 1, Unit: "row"}
	x := mat.NewDense(2, 1, []float64{1, 2})
	cat := sc
	cat.Categorical = map[string][]string{"r": {"x"}}
	user := sc
	user.Unit, user.UserColumn = "user", "u"
	for _, c := range []struct {
		name string
		open MemoryTableOpener
		ld   *ledger.Data
	}{
		{"categorical", openTestMemoryTable(&loads), &ledger.Data{Schema: cat, X: x}},
		{"no users", openTestMemoryTable(&loads), &ledger.Data{Schema: user, X: x}},
		{"no engine", nil, &ledger.Data{Schema: sc, X: x}},
	} {
		d, err := memoryDataWith(c.open, cache, "m", c.ld)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.SQL != nil || d.Columns == nil {
			t.Errorf("%s: engine %v, columns %v", c.name, d.SQL != nil, d.Columns != nil)
		}
	}
	if n := loads.Load(); n != 0 {
		t.Errorf("%d loads", n)
	}
}

// Every registration the memory format can hold has a memory table: its
// schema has no categorical column and is no matrix, since only
// snapshots and live tables carry those (ledger's registeredSchema sets
// neither; the CLI takes --categories with --from and --sql only, which
// write snapshots, and registers matrices as snapshots). Were that to
// change, memoryRowsOf would send the new data to the rows' path, which
// cannot read a categorical column either (ledger.Data holds no
// categorical values): this test is where that shows.
func TestMemoryRegistrationsHaveTables(t *testing.T) {
	t.Parallel()
	st := testfix.Store(t, "")
	x := []float64{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		name string
		tab  *dataset.Table
		r    ledger.Registration
	}{
		{"rows", &dataset.Table{Columns: []string{"a", "b"}, X: x, Rows: 3}, ledger.Registration{}},
		{"label", &dataset.Table{Columns: []string{"a", "b"}, X: x, Rows: 3, Label: "y", Y: []float64{0, 1, 0}},
			ledger.Registration{LabelClip: 1, Bounds: map[string][2]float64{"a": {0, 10}}, PublicN: true}},
		{"users", &dataset.Table{Columns: []string{"a", "b"}, X: x, Rows: 3, UserColumn: "u", Users: []int32{0, 1, 0}, NumUsers: 2},
			ledger.Registration{Neighbour: accounting.AddRemove}},
	} {
		r := c.r
		r.Name, r.Table, r.Budget, r.Accountant, r.Clip = c.name, c.tab, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP, 1
		testfix.Register(t, st, r)
		ld, err := st.Load(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(ld.Schema.Categorical) > 0 || ld.Schema.IsMatrix() {
			t.Errorf("%s: a memory registration with categorical columns %v, matrix %v", c.name, ld.Schema.Categorical, ld.Schema.IsMatrix())
		}
		m, ok := memoryRowsOf(ld)
		if !ok {
			t.Errorf("%s: no memory table for a memory registration", c.name)
			continue
		}
		if m.N != 3 || (c.tab.Label != "") != (m.Label != "") || (c.tab.UserColumn != "") != (m.UserColumn != "") {
			t.Errorf("%s: the table has %d rows, label %q, user column %q", c.name, m.N, m.Label, m.UserColumn)
		}
	}
}

// testMemoryLoads counts the loads of the registered opener.
var testMemoryLoads atomic.Int64

// The package's tests run data held in memory on the engine, as the
// binary does.
func init() {
	if err := RegisterMemoryTables(openTestMemoryTable(&testMemoryLoads)); err != nil {
		panic(err)
	}
}

// BenchmarkMemoryCall times a small column analysis on a dataset held in
// the registry's memory format, through the execution core and the
// ledger (plan, charge, load, run): on the row path, and on the engine
// path with its table cached after the first call.
func BenchmarkMemoryCall(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		var csv strings.Builder
		csv.WriteString("a,b,c\n")
		for i := range n {
			fmt.Fprintf(&csv, "%d,%d,%d\n", i%97, i%13, i%1000)
		}
		st := testfix.Store(b, "")
		sc := testfix.Register(b, st, ledger.Registration{Name: "m", Table: testfix.Table(b, csv.String()),
			Budget: accounting.Budget{Eps: 1e9, Delta: 0.5}, Accountant: accounting.ModeZCDP, Neighbour: accounting.ReplaceOne, Clip: 1,
			Bounds: map[string][2]float64{"a": {0, 100}, "b": {0, 20}}})
		env := &Local{Store: func() (*ledger.Store, error) { return st, nil }}
		for _, fn := range []struct {
			name string
			vals map[string]any
		}{{"private_mean", map[string]any{"col": "a", "eps": 0.001}}, {"private_histogram", map[string]any{"col": "b", "bins": 5, "eps": 0.001}}} {
			call := Call{Func: fn.name, Dataset: Ref{Name: "m", Schema: sc}, Args: mustArgs(fn.name, fn.vals)}
			for _, engine := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/n=%d/engine=%v", fn.name, n, engine), func(b *testing.B) {
					snapshotsMu.Lock()
					saved := memoryTables
					if !engine {
						memoryTables = nil
					}
					snapshotsMu.Unlock()
					defer func() {
						snapshotsMu.Lock()
						memoryTables = saved
						snapshotsMu.Unlock()
					}()
					if _, err := env.Execute(context.Background(), call, nil); err != nil { // the first load
						b.Fatal(err)
					}
					loads := testMemoryLoads.Load()
					for b.Loop() {
						if _, err := env.Execute(context.Background(), call, nil); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(testMemoryLoads.Load()-loads)/float64(b.N), "loads/op")
				})
			}
		}
	}
}

// BenchmarkMemoryTableCached times the engine's fixed cost on data held
// in memory after the first load: the content key (a SHA-256 of the
// rows, for data without a registration hash), the cache's lookup and a
// one-row statement.
func BenchmarkMemoryTableCached(b *testing.B) {
	var loads atomic.Int64
	cache := &memTables{max: memoryTablesCached}
	defer cache.closeAll()
	open := openTestMemoryTable(&loads)
	for _, n := range []int{1000, 100_000} {
		ld := &ledger.Data{Schema: ledger.Schema{Name: "m", Columns: []string{"a", "b", "c"}, D: 3, Unit: "row"}, X: mat.NewDense(n, 3, nil)}
		for i := range n {
			ld.X.SetRow(i, []float64{float64(i % 97), float64(i % 13), float64(i)})
		}
		call := func(b *testing.B) {
			d, err := memoryDataWith(open, cache, "m", ld)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.SQL.Query(context.Background(), "SELECT count(*) FROM "+d.SQL.Table()); err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			call(b) // the first load
			before := loads.Load()
			for b.Loop() {
				call(b)
			}
			b.ReportMetric(float64(loads.Load()-before)/float64(b.N), "loads/op")
		})
	}
}
