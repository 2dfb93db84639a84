package runtime

// The neighbouring-datasets harness (docs/threat-model.md, "Outcome
// classes"): every private DSL function, over a grid of public parameters
// with extremes, runs on datasets that share their public facts but differ
// in private ones (n vs n+1 rows or users, one row or user replaced by an
// extreme one, a single unit). What the analyst sees must be the same on
// all of them except for the noisy values: success or the error's name and
// text, the receipt's fields, the shape of the result and the ledger
// record. A call that was charged must return a release. A call on a
// registered dataset is calibrated under the relation the owner
// registered. No call may take longer than a hang bound.
//
// `go test ./dsl/runtime -run TestNeighbouringDatasets` runs the default
// grid (part of `make test`): every base call under every relation, and a
// sample of the (parameter value, relation) pairs drawn with a fixed seed
// (-audit.seed; .ci/run draws one per commit and logs it, so a failure is
// reproducible with that seed). `make audit` runs the whole grid and adds
// -audit.wide, which crosses more values.

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

var (
	auditWide = flag.Bool("audit.wide", false, "neighbouring-datasets harness: cross more parameter values (make audit)")
	auditRun  = flag.String("audit.run", "", "neighbouring-datasets harness: only the calls whose text matches this regular expression")
	auditSeed = flag.Uint64("audit.seed", envSeed("PRIVNOTES_AUDIT_SEED", 1), "neighbouring-datasets harness: the seed of the default grid's sample of varied calls (default $PRIVNOTES_AUDIT_SEED, else 1)")
	auditAll  = flag.Bool("audit.all", false, "neighbouring-datasets harness: run every varied call under every relation (no sample; implied by -audit.wide and -audit.run)")
)

// harnessSample is the fraction of (varied call, relation) pairs the
// default grid runs. Base calls, fixed calls and each varied parameter's
// first and last value run under every relation. The default grid must
// stay under two minutes on two cores: the whole grid took 352 s idle
// before the SQL, regression and synthesis rows were added, a fifth 140 s
// after the user-level, consistent and r2 rows, so it runs 0.15. The pairs
// are drawn by a hash threshold, so a smaller fraction runs a subset of a
// larger one's; every pair is still run by some seed, and `make audit`
// runs all of them.
const harnessSample = 0.15

// envSeed is the unsigned integer in the environment variable name, or
// def when it is unset or not a number.
func envSeed(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// sampled reports whether the default grid runs call under relation
// config c for seed: a hash of the three, so a call keeps its fate when
// other calls are added to the grid.
func sampled(seed uint64, c harnessConfig, call harnessCall) bool {
	if call.vary == "" || call.edge {
		return true
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%s", seed, c, call)
	return float64(h.Sum64()>>11)/(1<<53) < harnessSample
}

// hangBound is how long one call may take before the harness calls it a
// hang: the grid's calls take milliseconds on the harness's tiny data, and
// the failures it looks for (an accountant loop) never return.
const hangBound = 30 * time.Second

// world is one state directory holding the datasets "rows" (unit row) and
// "users" (unit user, with a label) of one variant. Worlds with the same
// public key must give the same outcomes.
type world struct {
	name      string // the private variant, for failure messages
	publicKey string // the public facts of its datasets
	rt        *Runtime
	dir       string
}

// variant is how a world's data differ from the others'.
type variant struct {
	name    string
	units   int  // rows (unit row) or users (unit user)
	extreme bool // one unit replaced by an extreme one
}

func harnessVariants() []variant {
	return []variant{
		{"1 unit", 1, false},
		{"10 units", 10, false},
		{"11 units", 11, false},
		{"10 units, one extreme", 10, true},
	}
}

// harnessTable builds the rows of a variant: units rows (or users of 3
// rows each) of 3 features in a band a clip of 1 keeps; the extreme unit's
// values are as large as a float64 holds.
func harnessTable(v variant, users bool) *dataset.Table {
	t := &dataset.Table{Columns: []string{"x1", "x2", "x3"}}
	rowsPer := 1
	if users {
		rowsPer = 3
		t.UserColumn, t.NumUsers, t.Label = "uid", v.units, "y"
	}
	for u := 0; u < v.units; u++ {
		for r := 0; r < rowsPer; r++ {
			x := []float64{0.3 * math.Sin(float64(u+r)), 0.2 * math.Cos(float64(3*u+r)), 0.1 * float64((u+r)%3)}
			y := 0.5 * math.Sin(float64(u))
			if v.extreme && u == 0 {
				x = []float64{math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64}
				y = -math.MaxFloat64
			}
			t.X = append(t.X, x...)
			t.Rows++
			if users {
				t.Users = append(t.Users, int32(u))
				t.Y = append(t.Y, y)
			}
		}
	}
	return t
}

// harnessCSV is harnessTable as CSV with a categorical column g (domain
// {a, b}; c and the extreme unit's zzz are "other"), for a snapshot
// dataset: the unit's rows cycle through a, b and c.
func harnessCSV(v variant, users bool) string {
	t := harnessTable(v, users)
	var b strings.Builder
	b.WriteString("x1,x2,x3,g")
	if users {
		b.WriteString(",uid")
	}
	b.WriteString("\n")
	rowsPer := 1
	if users {
		rowsPer = 3
	}
	for i := range t.Rows {
		u := i / rowsPer
		x := t.X[3*i : 3*i+3]
		g := []string{"a", "b", "c"}[(u+i)%3]
		if v.extreme && u == 0 {
			g = "zzz"
		}
		for _, f := range x {
			if f == math.SmallestNonzeroFloat64 {
				f = 0
			}
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64) + ",")
		}
		b.WriteString(g)
		if users {
			fmt.Fprintf(&b, ",u%d", u)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// harnessConfig is the public configuration a group of worlds shares.
type harnessConfig struct {
	neighbour accounting.Neighbour
	// publicN registers the datasets with their unit count declared
	// public: worlds of different sizes then differ in a public fact, and
	// only worlds of the same size are compared.
	publicN bool
}

func (c harnessConfig) String() string {
	if c.publicN {
		return c.neighbour.String() + ", public n"
	}
	return c.neighbour.String()
}

func newWorld(t *testing.T, c harnessConfig, v variant) *world {
	t.Helper()
	dir := t.TempDir()
	budget := accounting.Budget{Eps: 1e4, Delta: 0.5}
	for _, users := range []bool{false, true} {
		name := "rows"
		if users {
			name = "users"
		}
		registerWith(t, dir, ledger.Registration{Name: name, Table: harnessTable(v, users), Budget: budget, Accountant: accounting.ModeZCDP,
			Neighbour: c.neighbour, Clip: 1, LabelClip: 1, Source: "harness", PublicN: c.publicN,
			Bounds: harnessBounds})
	}
	if !c.publicN {
		// Snapshot datasets with a categorical column, for the grouped
		// forms and categorical histograms (a public n changes nothing
		// for them, so the public-n worlds skip them).
		for _, users := range []bool{false, true} {
			name, spec := "cats", snapshot.Spec{Bounds: harnessBounds, Categories: map[string][]string{"g": {"a", "b"}}}
			if users {
				name, spec.UserColumn = "ucats", "uid"
			}
			registerSnapshot(t, dir, name, harnessCSV(v, users), spec, ledger.Registration{Budget: budget, Accountant: accounting.ModeZCDP,
				Neighbour: c.neighbour, Clip: 1})
		}
		// The same data under the gdp accountant, whose Gaussian calls
		// are calibrated to μ*(ε, δ) instead of ρ*(ε, δ).
		registerWith(t, dir, ledger.Registration{Name: "grows", Table: harnessTable(v, false), Budget: budget, Accountant: accounting.ModeGDP,
			Neighbour: c.neighbour, Clip: 1, LabelClip: 1, Source: "harness", Bounds: harnessBounds})
		registerSnapshot(t, dir, "gcats", harnessCSV(v, false), snapshot.Spec{Bounds: harnessBounds, Categories: map[string][]string{"g": {"a", "b"}}},
			ledger.Registration{Budget: budget, Accountant: accounting.ModeGDP, Neighbour: c.neighbour, Clip: 1})
		// And under the rdp accountant (a Rényi filter beside the pure-ε
		// one), which prices pure, bounded-range and Gaussian calls by
		// their Rényi curves and refuses (ε, δ) ones when planned.
		registerSnapshot(t, dir, "rcats", harnessCSV(v, false), snapshot.Spec{Bounds: harnessBounds, Categories: map[string][]string{"g": {"a", "b"}}},
			ledger.Registration{Budget: budget, Accountant: accounting.ModeRDP, Neighbour: c.neighbour, Clip: 1})
		// Matrix datasets (matrix_test.go): neighbours differ in one entry.
		registerHarnessMatrices(t, dir, v, budget)
	}
	rt, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	key := c.String()
	if c.publicN {
		key += fmt.Sprintf(", n=%d", v.units)
	}
	return &world{name: v.name, publicKey: key, rt: rt, dir: dir}
}

// harnessBounds are the public bounds of the harness's columns: x1 and x2
// have bounds (the extreme unit's values are clamped to them), x3 has
// none, so the column analyses refuse it.
var harnessBounds = map[string][2]float64{"x1": {-0.5, 0.5}, "x2": {-1, 2}}

// harnessCall is one cell's private call: a function, a dataset and
// keywords.
type harnessCall struct {
	fn      string
	dataset string
	kws     []KW
	// filter, if set, runs the call on filter(dataset, col=, op=, value=),
	// and cols on select_columns(…, cols=) of that.
	filter []KW
	cols   []string
	// federate runs the call on federate(dataset): a one-member
	// federation, the provider's side of a federated call.
	federate bool
	// query is private_sql's query, passed instead of the dataset handle
	// (its FROM names the dataset; dataset names the ledger to watch).
	query string
	// vary names the keyword this call varies from its base call ("" for
	// a base or fixed call); edge marks the first and last value of the
	// variation. The default grid samples the varied calls (sampled).
	vary string
	edge bool
}

func (c harnessCall) String() string {
	ds := fmt.Sprintf("dataset(%q)", c.dataset)
	if c.query != "" {
		ds = "`" + c.query + "`"
	}
	if c.filter != nil {
		var fs []string
		for _, k := range c.filter {
			fs = append(fs, fmt.Sprintf("%s=%#v", k.name, k.value))
		}
		ds = "filter(" + ds + ", " + strings.Join(fs, ", ") + ")"
	}
	if c.cols != nil {
		ds = fmt.Sprintf("select_columns(%s, cols=%#v)", ds, c.cols)
	}
	if c.federate {
		ds = "federate(" + ds + ")"
	}
	parts := []string{ds}
	for _, k := range c.kws {
		parts = append(parts, fmt.Sprintf("%s=%#v", k.name, k.value))
	}
	return c.fn + "(" + strings.Join(parts, ", ") + ")"
}

// outcome is what the analyst sees of a call, noisy values aside.
type outcome struct {
	class   string // "ok", an error name, or "hang"
	text    string // the error's text, or the receipt and the result's shape
	charged bool   // the ledger holds a new record
	ledger  string // the new ledger record's public fields
	notes   []string
	value   any // the release itself, for comparing engines under seeded noise
	// memory is the number of statements the call ran on memory tables
	// (snapshot_test.go's memoryStatements).
	memory int64
}

// callPrivate calls the private function fn through the binding a cell
// gets (Exports), so that the harness runs exactly what cells run.
func callPrivate(rt *Runtime, fn string, ds any, kws ...KW) any {
	f, ok := catalog.Lookup(fn)
	if !ok || !f.Private {
		panic(fmt.Sprintf("harness: %s is not a private function of the catalog", fn))
	}
	b, err := rt.privateBinding(f)
	if err != nil {
		panic(fmt.Sprintf("harness: %v", err))
	}
	return b.CallSlice([]reflect.Value{reflect.ValueOf(&ds).Elem(), reflect.ValueOf(kws)})[0].Interface()
}

// Every private function of the catalog has a row in the harness's grid.
func TestHarnessCoversEveryPrivateFunction(t *testing.T) {
	grid := map[string]bool{}
	for _, c := range harnessGrid(false) {
		grid[c.fn] = true
	}
	for _, f := range catalog.Private() {
		if !grid[f.Name] {
			t.Errorf("private function %s is not in the neighbouring-datasets harness: add a call of it to harnessGrid", f.Name)
		}
	}
	for fn := range grid {
		if f, ok := catalog.Lookup(fn); !ok || !f.Private {
			t.Errorf("the harness grid calls %s, which is not a private function of the catalog", fn)
		}
	}
}

// run makes one call in a cell of its own and records its outcome. The
// noise is seeded alike in every world, so that even post-processing of
// noisy values starts from the same draws.
func (w *world) run(t *testing.T, i int, c harnessCall) outcome {
	before := w.ledgerLen(t, c.dataset)
	statements := memoryStatements.Load()
	cell := &interp.Cell{ID: "harness", ExecutionCount: i + 1, Out: &recOutput{}}
	if err := w.rt.Begin(context.Background(), cell); err != nil {
		t.Fatalf("%s: Begin: %v", c, err)
	}
	type result struct {
		v   any
		err any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: r}
			}
		}()
		ds := w.rt.dataset(c.dataset)
		if c.filter != nil {
			ds = w.rt.filter(ds, c.filter...)
		}
		if c.cols != nil {
			ds = w.rt.selectColumns(ds, newKW("cols", c.cols))
		}
		var arg any = ds
		if c.query != "" {
			arg = c.query
		}
		if c.federate {
			arg = w.rt.federate(ds)
		}
		done <- result{v: callPrivate(w.rt, c.fn, arg, c.kws...)}
	}()
	var o outcome
	select {
	case r := <-done:
		w.rt.End(cell)
		if r.err != nil {
			e, ok := r.err.(interface {
				error
				ErrorName() string
			})
			if !ok {
				o.class, o.text = "panic", fmt.Sprint(r.err)
			} else {
				o.class, o.text = e.ErrorName(), e.Error()
			}
		} else {
			o.class, o.text, o.value = "ok", describeRelease(r.v), r.v
			if rc := receiptOf(r.v); rc != nil && rc.Params != nil {
				if nb, ok := rc.Params["neighbour"].(string); ok {
					o.notes = append(o.notes, "neighbour="+nb)
				}
			}
		}
	case <-time.After(hangBound):
		return outcome{class: "hang", text: fmt.Sprintf("no answer within %v", hangBound)}
	}
	after := w.ledgerLen(t, c.dataset)
	o.charged = after > before
	if o.charged {
		o.ledger = w.lastRecord(t, c.dataset)
	}
	o.memory = memoryStatements.Load() - statements
	return o
}

// memoryDatasets are the harness's datasets registered in the registry's
// memory format; the others are snapshots and matrices.
var memoryDatasets = map[string]bool{"rows": true, "users": true, "grows": true}

// onMemoryTable reports whether a call runs its data pass on a memory
// table when it is charged: a column analysis (private_mean with col=
// among them) on a dataset held in memory, or on a subset of one. A
// count of a whole dataset runs no statement on any engine: it takes the
// number of rows or users the data know (unitCount), as on a snapshot.
func onMemoryTable(c harnessCall) bool {
	if !memoryDatasets[c.dataset] || c.query != "" || c.federate {
		return false
	}
	has := func(name string) bool {
		return slices.ContainsFunc(c.kws, func(k KW) bool { return k.name == name })
	}
	switch c.fn {
	case "private_sum", "private_histogram", "private_quantile":
		return true
	case "private_count":
		return c.filter != nil || c.cols != nil || has("by")
	case "private_mean":
		return has("col")
	}
	return false
}

func (w *world) ledgerLen(t *testing.T, name string) int {
	st, err := w.rt.Store()
	if err != nil {
		t.Fatal(err)
	}
	es, err := st.Entries(name)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// lastRecord is the newest ledger record without its time and hashes,
// which differ by construction.
var callIDParam = regexp.MustCompile(`"call_id":"[^"]*"`)

func (w *world) lastRecord(t *testing.T, name string) string {
	st, _ := w.rt.Store()
	es, err := st.Entries(name)
	if err != nil || len(es) == 0 {
		t.Fatalf("ledger of %s: %v", name, err)
	}
	e := es[len(es)-1]
	ev := "-"
	if e.Event != nil {
		ev = e.Event.String()
	}
	// A federated call's id is random: the same in no two worlds.
	params := callIDParam.ReplaceAllString(string(e.Params), `"call_id":"…"`)
	return fmt.Sprintf("id=%d kind=%s dataset=%s mechanism=%s event=%s cell=%s params=%s", e.ID, e.Kind, e.Dataset, e.Mechanism, ev, e.Cell, params)
}

func receiptOf(v any) *Receipt {
	switch r := v.(type) {
	case *PCAResult:
		return r.Receipt
	case *LowRankResult:
		return r.Receipt
	case *CountResult:
		return r.Receipt
	case *MeanResult:
		return r.Receipt
	case *FedRepResult:
		return r.Receipt
	case *ClassifyJLResult:
		return r.Receipt
	case *SumResult:
		return r.Receipt
	case *HistogramResult:
		return r.Receipt
	case *QuantileResult:
		return r.Receipt
	case *TableResult:
		return r.Receipt
	}
	return nil
}

// describeRelease is a release's receipt and shape, without its values.
func describeRelease(v any) string {
	var shape string
	switch r := v.(type) {
	case *PCAResult:
		rows, cols := 0, 0
		if r.Components != nil {
			rows, cols = r.Components.Dims()
		}
		shape = fmt.Sprintf("components %d×%d, %d values, %d support, method %s, columns %v", rows, cols, len(r.Values), len(r.Support), r.Method, r.Columns) + rightShape(r.Right)
	case *LowRankResult:
		shape = lowRankShape(r)
	case *CountResult:
		shape = "count" + groupShape(r.GroupResult)
	case *MeanResult:
		shape = fmt.Sprintf("mean of %d columns %v", len(r.Values), r.Columns) + groupShape(r.GroupResult)
	case *FedRepResult:
		rows, cols := 0, 0
		if r.U != nil {
			rows, cols = r.U.Dims()
		}
		shape = fmt.Sprintf("U %d×%d, columns %v", rows, cols, r.Columns)
	case *ClassifyJLResult:
		rows, cols := 0, 0
		if r.U != nil {
			rows, cols = r.U.Dims()
		}
		shape = fmt.Sprintf("U_priv %d×%d, columns %v", rows, cols, r.Columns)
	case *SumResult:
		shape = "sum of " + r.Column + groupShape(r.GroupResult)
	case *HistogramResult:
		shape = fmt.Sprintf("histogram of %s, %d counts, keys %q", r.Column, len(r.Counts), r.Keys)
	case *QuantileResult:
		shape = fmt.Sprintf("quantile %v of %s", r.Q, r.Column)
	case *TableResult:
		keys := make([]string, 0, len(r.Rows))
		for _, row := range r.Rows {
			for j, c := range row {
				if r.Kinds[j] == "key" {
					keys = append(keys, cellText(c))
				}
			}
		}
		shape = fmt.Sprintf("table %v %v, %d rows, keys %q", r.Columns, r.Kinds, len(r.Rows), keys)
		if r.Receipt != nil && strings.Contains(r.Receipt.Mechanism, "partition-selection") {
			// DP partition selection releases the groups that pass a
			// noisy threshold: which ones is a private output, like a
			// noisy value, not an outcome class.
			shape = fmt.Sprintf("table %v %v, groups by partition selection", r.Columns, r.Kinds)
		}
	default:
		shape = fmt.Sprintf("%T", v)
	}
	rc := receiptOf(v)
	if rc == nil {
		return shape + "; no receipt"
	}
	keys := make([]string, 0, len(rc.Params))
	for k := range rc.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var params []string
	for _, k := range keys {
		params = append(params, fmt.Sprintf("%s=%v", k, rc.Params[k]))
	}
	return fmt.Sprintf("%s; receipt: %s/%s ε=%v δ=%v cost=%v accountant=%s charged=%v ledger=%d block=%q remaining=%v noise=%q note=%q params=%v",
		shape, rc.Function, rc.Mechanism, rc.Eps, rc.Delta, rc.Cost, rc.Accountant, rc.Charged, rc.LedgerID, rc.Block, rc.Remaining, rc.NoiseScale, rc.Note, params)
}

// groupShape is a grouped result's shape: its statistic, columns, keys
// and number of values.
func groupShape(g *GroupResult) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf(" by %s: %s of %q, keys %q, %d values", g.By, g.Stat, g.Column, g.Keys, len(g.Values))
}

// Extreme values of the grid.
var (
	harnessEps   = []float64{math.SmallestNonzeroFloat64, 1e-300, 1e-12, 0.05, 1, 40, 1e6, 1.3e154, 1e300, math.MaxFloat64, -1, 0}
	harnessDelta = []float64{0, math.SmallestNonzeroFloat64, 1e-300, 1e-9, 0.1, 0.999, 1}
	// The clip grid steps by at most 10^3 between 1e-300 and 1e-3, so a
	// failure threshold proportional to clip/n for n in 1..1000 falls
	// between two of its values.
	harnessClip = func() []float64 {
		c := []float64{math.SmallestNonzeroFloat64, 1.39e-271}
		for e := -300; e <= 300; e += 3 {
			if e > -3 && e < 3 {
				continue
			}
			c = append(c, math.Pow(10, float64(e)))
		}
		return append(c, 0.5, 1, 2, math.MaxFloat64, -1)
	}()
	harnessInts = []int{-1, 0, 1, 2, 3, 4, 1000, 1 << 20, math.MaxInt32}
	harnessLR   = []float64{-1, math.SmallestNonzeroFloat64, 1e-300, 0.5, 2.5, 1e10, 1e300, math.MaxFloat64}
	harnessFrac = []float64{-0.5, 0, 1e-300, 0.2, 0.999, 1, 2}
)

// harnessGrid is the list of calls: each function (and each method of
// private_pca) at a base point, then each parameter over its extremes
// with the others at the base. wide adds pairs of extremes.
func harnessGrid(wide bool) []harnessCall {
	kw := newKW
	var calls []harnessCall
	add := func(fn, ds string, base []KW, vary string, vals []any) {
		for i, v := range vals {
			var kws []KW
			replaced := false
			for _, k := range base {
				if k.name == vary {
					kws = append(kws, kw(vary, v))
					replaced = true
				} else {
					kws = append(kws, k)
				}
			}
			if !replaced {
				kws = append(kws, kw(vary, v))
			}
			calls = append(calls, harnessCall{fn: fn, dataset: ds, kws: kws, vary: vary, edge: i == 0 || i == len(vals)-1})
		}
	}
	floats := func(xs []float64) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	ints := func(xs []int) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	neighbours := []any{"", "replace-one", "add-remove"}
	clips := harnessClip
	if !wide {
		clips = nil
		for i, c := range harnessClip {
			if i%3 == 0 || c >= 0.5 || c < 1e-250 { // every 10^9 below, all the small and large ends
				clips = append(clips, c)
			}
		}
	}

	// private_pca, every method, on rows and on users.
	for _, m := range []string{"auto", "npm", "adaptive", "gauss", "dppca", "oja", "oja-shuffle", "federated"} {
		for _, ds := range []string{"rows", "users"} {
			k := 2
			if m == "dppca" || m == "oja" || m == "oja-shuffle" || m == "adaptive" {
				k = 1
			}
			base := []KW{kw("k", k), kw("eps", 1.0), kw("delta", 1e-6), kw("method", m), kw("iters", 3)}
			if m == "oja-shuffle" {
				// One step per row, no iters; the harness's few rows are
				// below the shuffling bound's n at every ε, so every call
				// is refused before the charge, alike in all worlds.
				base = []KW{kw("k", k), kw("eps", 0.05), kw("delta", 0.1), kw("method", m)}
			}
			if m == "dppca" || m == "oja" {
				// The harness's data are far below what their minibatches
				// need: pad=true runs them; without it they are refused.
				base = append(base, kw("pad", true))
				add("private_pca", ds, base, "pad", []any{false})
			}
			calls = append(calls, harnessCall{fn: "private_pca", dataset: ds, kws: base})
			if ds == "users" && !wide {
				continue
			}
			add("private_pca", ds, base, "eps", floats(harnessEps))
			add("private_pca", ds, base, "delta", floats(harnessDelta))
			add("private_pca", ds, base, "clip", floats(clips))
			add("private_pca", ds, base, "k", ints(harnessInts))
			add("private_pca", ds, base, "iters", ints(harnessInts))
			add("private_pca", ds, base, "neighbour", neighbours)
			add("private_pca", ds, base, "calibration", []any{"zcdp", "paper"})
			// gap="auto" (the adaptive method's private gap selection) and
			// bad gap values, refused before the charge on every method.
			add("private_pca", ds, base, "gap", []any{"auto", "", "foo", -1, 0.3})
			// center=true: a private mean, then the method on the centred
			// rows (gauss, npm, adaptive, auto); refused before the charge
			// for the other methods.
			add("private_pca", ds, base, "center", []any{true, false})
			if m == "gauss" {
				centred := append(append([]KW(nil), base...), kw("center", true))
				add("private_pca", ds, centred, "center_share", []any{0.5, 0.7})
			}
			if m == "adaptive" {
				auto := append(append([]KW(nil), base...), kw("gap", "auto"))
				// Lean: the clip and the runs are plain adaptive's (above);
				// iters 2000 gives the guess κ = 0.125 more than MaxIters.
				add("private_pca", ds, auto, "eps", floats(harnessEps))
				add("private_pca", ds, auto, "delta", floats(harnessDelta))
				add("private_pca", ds, auto, "iters", ints([]int{-1, 0, 1, 2000, math.MaxInt32}))
				add("private_pca", ds, auto, "neighbour", neighbours)
				add("private_pca", ds, auto, "calibration", []any{"zcdp", "paper"})
			}
			if m == "federated" {
				add("private_pca", ds, base, "providers", ints(append(harnessInts, 1001)))
				add("private_pca", ds, base, "sparsity", ints(harnessInts))
			}
		}
	}
	// private_pca on a one-member federation: the provider's side of a
	// federated call (federated.Session, as a data service runs it).
	for _, ds := range []string{"rows", "users"} {
		base := []KW{kw("k", 2), kw("eps", 1.0), kw("delta", 1e-6), kw("method", "federated"), kw("iters", 3)}
		n := len(calls)
		calls = append(calls, harnessCall{fn: "private_pca", dataset: ds, kws: base})
		if ds == "rows" || wide {
			add("private_pca", ds, base, "eps", floats(harnessEps))
			add("private_pca", ds, base, "delta", floats(harnessDelta))
			add("private_pca", ds, base, "clip", floats(clips))
			add("private_pca", ds, base, "k", ints(harnessInts))
			add("private_pca", ds, base, "iters", ints(harnessInts))
			add("private_pca", ds, base, "sparsity", ints(harnessInts))
			add("private_pca", ds, base, "providers", []any{0, 1, 2})
		}
		for i := n; i < len(calls); i++ {
			calls[i].federate = true
		}
	}
	// private_fedrep on users (and on rows, which it refuses).
	fbase := []KW{kw("k", 1), kw("eps", 2.0), kw("delta", 1e-6), kw("rounds", 2)}
	calls = append(calls, harnessCall{fn: "private_fedrep", dataset: "rows", kws: fbase})
	calls = append(calls, harnessCall{fn: "private_fedrep", dataset: "users", kws: fbase})
	add("private_fedrep", "users", fbase, "eps", floats(harnessEps))
	add("private_fedrep", "users", fbase, "delta", floats(harnessDelta))
	add("private_fedrep", "users", fbase, "clip", floats(clips))
	add("private_fedrep", "users", fbase, "k", ints(harnessInts))
	add("private_fedrep", "users", fbase, "rounds", ints(harnessInts))
	add("private_fedrep", "users", fbase, "lr", floats(harnessLR))
	add("private_fedrep", "users", fbase, "init_frac", floats(harnessFrac))
	add("private_fedrep", "users", fbase, "init", []any{"private", "random"})
	add("private_fedrep", "users", fbase, "neighbour", neighbours)
	add("private_fedrep", "users", fbase, "calibration", []any{"zcdp", "paper"})
	if wide {
		for _, init := range []string{"private", "random"} {
			for _, c := range harnessClip {
				for _, lr := range harnessLR {
					calls = append(calls, harnessCall{fn: "private_fedrep", dataset: "users",
						kws: []KW{kw("k", 1), kw("eps", 2.0), kw("delta", 1e-6), kw("rounds", 2), kw("init", init), kw("clip", c), kw("lr", lr)}})
				}
			}
		}
	}
	// private_fedrep on a one-member federation: the silo's side of a
	// cross-silo call (fedrep.Silo, as a data service runs it).
	n := len(calls)
	calls = append(calls, harnessCall{fn: "private_fedrep", dataset: "rows", kws: fbase})
	calls = append(calls, harnessCall{fn: "private_fedrep", dataset: "users", kws: fbase})
	add("private_fedrep", "users", fbase, "eps", floats(harnessEps))
	add("private_fedrep", "users", fbase, "clip", floats(clips))
	add("private_fedrep", "users", fbase, "k", ints(harnessInts))
	add("private_fedrep", "users", fbase, "rounds", ints(harnessInts))
	add("private_fedrep", "users", fbase, "init", []any{"private", "random"})
	for i := n; i < len(calls); i++ {
		calls[i].federate = true
	}
	// private_classify_jl on users (and on rows, which it refuses): the
	// pool, its γ-cover (k′ = k = 1 at rho=1) and fedrep-jl.
	jbase := []KW{kw("k", 1), kw("eps", 2.0), kw("candidates", 20)}
	calls = append(calls, harnessCall{fn: "private_classify_jl", dataset: "rows", kws: jbase})
	calls = append(calls, harnessCall{fn: "private_classify_jl", dataset: "users", kws: jbase})
	add("private_classify_jl", "users", jbase, "eps", floats(harnessEps))
	add("private_classify_jl", "users", jbase, "delta", floats(harnessDelta))
	add("private_classify_jl", "users", jbase, "clip", floats(clips))
	add("private_classify_jl", "users", jbase, "k", ints(harnessInts))
	add("private_classify_jl", "users", jbase, "candidates", ints(append(harnessInts, 65536, 65537)))
	add("private_classify_jl", "users", jbase, "rho", floats([]float64{-1, 0, math.SmallestNonzeroFloat64, 0.1, 0.5, 1, 2, math.Inf(1)}))
	add("private_classify_jl", "users", jbase, "score_margin", floats([]float64{-1, 0, 0.5, 1, 2, math.NaN()}))
	add("private_classify_jl", "users", jbase, "variant", []any{"pool", "fedrep-jl", "nope"})
	add("private_classify_jl", "users", jbase, "neighbour", neighbours)
	gridBase := []KW{kw("k", 1), kw("eps", 2.0), kw("candidates", 0), kw("rho", 1.0)}
	add("private_classify_jl", "users", gridBase, "gamma", floats([]float64{-1, 0, 1e-300, 1e-3, 0.1, 0.5, 1, 2}))
	fjbase := []KW{kw("k", 1), kw("eps", 2.0), kw("delta", 1e-6), kw("variant", "fedrep-jl")}
	calls = append(calls, harnessCall{fn: "private_classify_jl", dataset: "users", kws: fjbase})
	add("private_classify_jl", "users", fjbase, "eps", floats(harnessEps))
	add("private_classify_jl", "users", fjbase, "delta", floats(harnessDelta))
	add("private_classify_jl", "users", fjbase, "clip", floats(clips))
	add("private_classify_jl", "users", fjbase, "k", ints(harnessInts))
	add("private_classify_jl", "users", fjbase, "neighbour", neighbours)
	// private_count and private_mean on rows and users.
	for _, ds := range []string{"rows", "users"} {
		cbase := []KW{kw("eps", 1.0)}
		calls = append(calls, harnessCall{fn: "private_count", dataset: ds, kws: cbase})
		add("private_count", ds, cbase, "eps", floats(harnessEps))
		add("private_count", ds, cbase, "delta", floats(harnessDelta))
		gbase := []KW{kw("eps", 1.0), kw("delta", 1e-6)} // the Gaussian count
		add("private_count", ds, gbase, "eps", floats(harnessEps))
		mbase := []KW{kw("eps", 1.0), kw("delta", 1e-6)}
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: mbase})
		add("private_mean", ds, mbase, "eps", floats(harnessEps))
		add("private_mean", ds, mbase, "delta", floats(harnessDelta))
		add("private_mean", ds, mbase, "clip", floats(clips))
		add("private_mean", ds, mbase, "columns", []any{[]string{"x1"}, []string{"x3", "x1"}, []string{"nope"}, []string{"x1", "x1"}})
	}
	// the column analyses on rows and users: x3 has no bounds, "nope"
	// does not exist.
	cols := []any{"x2", "x3", "nope", ""}
	for _, ds := range []string{"rows", "users"} {
		sbase := []KW{kw("col", "x1"), kw("eps", 1.0)}
		calls = append(calls, harnessCall{fn: "private_sum", dataset: ds, kws: sbase})
		add("private_sum", ds, sbase, "eps", floats(harnessEps))
		add("private_sum", ds, sbase, "delta", floats(harnessDelta))
		add("private_sum", ds, sbase, "col", cols)
		hbase := []KW{kw("col", "x1"), kw("bins", 4), kw("eps", 1.0)}
		calls = append(calls, harnessCall{fn: "private_histogram", dataset: ds, kws: hbase})
		add("private_histogram", ds, hbase, "bins", ints(append(harnessInts, 10000, 10001)))
		add("private_histogram", ds, hbase, "eps", floats(harnessEps))
		add("private_histogram", ds, hbase, "delta", floats(harnessDelta))
		add("private_histogram", ds, hbase, "col", cols)
		qbase := []KW{kw("col", "x1"), kw("q", 0.5), kw("eps", 1.0)}
		calls = append(calls, harnessCall{fn: "private_quantile", dataset: ds, kws: qbase})
		add("private_quantile", ds, qbase, "q", floats(append(harnessFrac, math.SmallestNonzeroFloat64, math.Nextafter(1, 0))))
		add("private_quantile", ds, qbase, "eps", floats(harnessEps))
		add("private_quantile", ds, qbase, "delta", floats(harnessDelta))
		add("private_quantile", ds, qbase, "col", cols)
		if wide {
			for _, e := range harnessEps {
				for _, b := range harnessInts {
					calls = append(calls, harnessCall{fn: "private_histogram", dataset: ds, kws: []KW{kw("col", "x2"), kw("bins", b), kw("eps", e), kw("delta", 1e-6)}})
				}
				for _, q := range harnessFrac {
					calls = append(calls, harnessCall{fn: "private_quantile", dataset: ds, kws: []KW{kw("col", "x2"), kw("q", q), kw("eps", e)}})
				}
			}
		}
	}
	// private_linear_regression and private_logistic_regression on the
	// snapshot datasets: x3 has no bounds, g is categorical, user-level
	// data are refused, and a subset's neighbours may add or remove rows.
	lr := []KW{kw("y", "x2"), kw("x", []string{"x1"}), kw("eps", 1.0), kw("delta", 1e-6)}
	calls = append(calls, harnessCall{fn: "private_linear_regression", dataset: "cats", kws: lr},
		harnessCall{fn: "private_linear_regression", dataset: "ucats", kws: lr},
		harnessCall{fn: "private_linear_regression", dataset: "cats", kws: lr, filter: []KW{kw("col", "x1"), kw("op", ">="), kw("value", 0.0)}})
	add("private_linear_regression", "cats", lr, "eps", floats([]float64{0, 1e-300, 1e300}))
	add("private_linear_regression", "cats", lr, "delta", floats([]float64{0, 1e-300, 1}))
	add("private_linear_regression", "cats", lr, "x", []any{[]string{"x3"}, []string{"nope"}, []string{"x1", "x1"}, []string{}, []string{"x2"}, []string{"g"}})
	add("private_linear_regression", "cats", lr, "y", []any{"x3", "g"})
	add("private_linear_regression", "cats", lr, "r2", []any{true, false})
	calls = append(calls, harnessCall{fn: "private_linear_regression", dataset: "gcats", kws: append(append([]KW(nil), lr...), kw("r2", true))},
		harnessCall{fn: "private_linear_regression", dataset: "cats", kws: append(append([]KW(nil), lr...), kw("r2", true)), filter: []KW{kw("col", "x1"), kw("op", ">="), kw("value", 0.0)}})
	lg := []KW{kw("y", "g"), kw("positive", "a"), kw("x", []string{"x1", "x2"}), kw("eps", 1.0), kw("delta", 1e-6), kw("iters", 3)}
	calls = append(calls, harnessCall{fn: "private_logistic_regression", dataset: "cats", kws: lg},
		harnessCall{fn: "private_logistic_regression", dataset: "ucats", kws: lg},
		harnessCall{fn: "private_logistic_regression", dataset: "cats", kws: []KW{kw("y", "x1"), kw("x", []string{"x2"}), kw("eps", 1.0), kw("delta", 1e-6), kw("iters", 2)}})
	add("private_logistic_regression", "cats", lg, "positive", []any{"", "zzz", "other"})
	add("private_logistic_regression", "cats", lg, "iters", ints([]int{0, 1, 10001}))
	add("private_logistic_regression", "cats", lg, "l2", floats([]float64{-1, 0, math.Inf(1)}))
	add("private_logistic_regression", "cats", lg, "eps", floats([]float64{1e-300, 1e300}))
	add("private_logistic_regression", "cats", lg, "delta", floats([]float64{0, 1}))
	// private_synthesize on the snapshot datasets (and the gdp one): x3
	// has no bounds, user-level data are refused, a subset's neighbours
	// may add or remove rows; rows and bins never change the cost.
	sy := []KW{kw("cols", []string{"g", "x1", "x2"}), kw("eps", 1.0), kw("delta", 1e-6), kw("rows", 50), kw("bins", 3)}
	calls = append(calls, harnessCall{fn: "private_synthesize", dataset: "cats", kws: sy},
		harnessCall{fn: "private_synthesize", dataset: "gcats", kws: sy},
		harnessCall{fn: "private_synthesize", dataset: "ucats", kws: sy},
		harnessCall{fn: "private_synthesize", dataset: "cats", kws: sy, filter: []KW{kw("col", "x1"), kw("op", ">="), kw("value", 0.0)}})
	add("private_synthesize", "cats", sy, "cols", []any{[]string{"g"}, []string{"g", "x3"}, []string{"g", "g"}, []string{"g", "nope"}, []string{"x1", "x2"}})
	add("private_synthesize", "cats", sy, "eps", floats([]float64{0, 1e-300, 1e300}))
	add("private_synthesize", "cats", sy, "delta", floats([]float64{0, 1}))
	add("private_synthesize", "cats", sy, "bins", ints([]int{0, 1, 1025}))
	add("private_synthesize", "cats", sy, "rows", ints([]int{-1, 1}))
	// calls on subsets: the neighbour's extra or replaced row may enter
	// or leave the subset, and the subset's size is private (so the
	// methods that need n refuse it, in every world alike).
	for _, ds := range []string{"rows", "users"} {
		for _, f := range [][]KW{
			{kw("col", "x1"), kw("op", ">="), kw("value", 0.0)},
			{kw("col", "x2"), kw("op", "<"), kw("value", -5.0)}, // empty
		} {
			for _, c := range []harnessCall{
				{fn: "private_count", kws: []KW{kw("eps", 1.0), kw("delta", 1e-6)}},
				{fn: "private_sum", kws: []KW{kw("col", "x2"), kw("eps", 1.0)}},
				{fn: "private_sum", kws: []KW{kw("col", "x2"), kw("eps", 1.0), kw("delta", 1e-6)}},
				{fn: "private_histogram", kws: []KW{kw("col", "x1"), kw("bins", 3), kw("eps", 1.0)}},
				{fn: "private_quantile", kws: []KW{kw("col", "x2"), kw("eps", 1.0)}},
				{fn: "private_mean", kws: []KW{kw("eps", 1.0), kw("delta", 1e-6)}},
				{fn: "private_pca", kws: []KW{kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6), kw("method", "gauss")}},
				{fn: "private_pca", kws: []KW{kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6), kw("method", "npm"), kw("iters", 3)}},
				{fn: "private_pca", kws: []KW{kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6), kw("method", "dppca"), kw("pad", true)}},
			} {
				c.dataset, c.filter = ds, f
				calls = append(calls, c)
				if c.fn == "private_sum" || c.fn == "private_pca" && c.kws[3].value == "gauss" {
					c.cols = []string{"x2", "x1"}
					calls = append(calls, c)
				}
			}
		}
	}
	// grouped counts, sums and means, and the one-column mean, on the
	// snapshot datasets with the categorical column g; by= on the blob
	// datasets (no categorical column) is refused.
	for _, ds := range []string{"cats", "ucats"} {
		bys := []any{"x1", "nope", "", "g"}
		groups := ints(harnessInts)
		cbase := []KW{kw("by", "g"), kw("eps", 1.0)}
		if ds == "ucats" {
			cbase = append(cbase, kw("max_groups", 2))
		}
		calls = append(calls, harnessCall{fn: "private_count", dataset: ds, kws: cbase})
		add("private_count", ds, cbase, "eps", floats(harnessEps))
		add("private_count", ds, cbase, "delta", floats(harnessDelta))
		add("private_count", ds, cbase, "by", bys)
		add("private_count", ds, cbase, "max_groups", groups)
		sbase := append([]KW{kw("col", "x1")}, cbase...)
		calls = append(calls, harnessCall{fn: "private_sum", dataset: ds, kws: sbase})
		add("private_sum", ds, sbase, "eps", floats(harnessEps))
		add("private_sum", ds, sbase, "delta", floats(harnessDelta))
		add("private_sum", ds, sbase, "col", cols)
		add("private_sum", ds, sbase, "by", bys)
		add("private_sum", ds, sbase, "max_groups", groups)
		mbase := append([]KW{kw("delta", 1e-6)}, sbase...)
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: mbase})
		add("private_mean", ds, mbase, "eps", floats(harnessEps))
		add("private_mean", ds, mbase, "delta", floats(harnessDelta))
		add("private_mean", ds, mbase, "col", cols)
		add("private_mean", ds, mbase, "by", bys)
		add("private_mean", ds, mbase, "max_groups", groups)
		add("private_mean", ds, mbase, "clip", []any{0.0, 1.0})
		obase := []KW{kw("col", "x2"), kw("eps", 1.0), kw("delta", 1e-6)} // one column's mean
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: obase})
		add("private_mean", ds, obase, "eps", floats(harnessEps))
		add("private_mean", ds, obase, "delta", floats(harnessDelta))
		add("private_mean", ds, obase, "col", cols)
		add("private_mean", ds, obase, "max_groups", []any{1, 2})
		hbase := []KW{kw("col", "g"), kw("eps", 1.0)} // a categorical histogram
		calls = append(calls, harnessCall{fn: "private_histogram", dataset: ds, kws: hbase})
		add("private_histogram", ds, hbase, "eps", floats(harnessEps))
		add("private_histogram", ds, hbase, "delta", floats(harnessDelta))
		add("private_histogram", ds, hbase, "bins", []any{0, 2})
		if wide {
			for _, e := range harnessEps {
				for _, g := range harnessInts {
					calls = append(calls, harnessCall{fn: "private_sum", dataset: ds, kws: []KW{kw("col", "x2"), kw("by", "g"), kw("max_groups", g), kw("eps", e), kw("delta", 1e-6)}})
				}
			}
		}
	}
	// The post-processing keywords: other=false changes which rows count
	// (a public rule on the row's own value, before aggregation; refused
	// without a categorical grouping), nonnegative and clamp only the
	// shown values.
	for _, ds := range []string{"cats", "ucats", "rows"} {
		by := []KW{kw("by", "g")}
		if ds == "ucats" {
			by = append(by, kw("max_groups", 2))
		}
		if ds == "rows" {
			by = nil
		}
		cb := append([]KW{kw("eps", 1.0)}, by...)
		add("private_count", ds, cb, "other", []any{true, false})
		add("private_count", ds, cb, "nonnegative", []any{false, true})
		add("private_count", ds, cb, "consistent", []any{false, true})
		mb := append([]KW{kw("col", "x2"), kw("eps", 1.0), kw("delta", 1e-6)}, by...)
		add("private_mean", ds, mb, "other", []any{true, false})
		add("private_mean", ds, mb, "clamp", []any{false, true})
		add("private_sum", ds, append([]KW{kw("col", "x1"), kw("eps", 1.0)}, by...), "other", []any{true, false})
		// consistent=true on sums: the total is one more coordinate of
		// the noisy vector (refused without by= and on user-level data).
		add("private_sum", ds, append([]KW{kw("col", "x1"), kw("eps", 1.0)}, by...), "consistent", []any{false, true})
		add("private_sum", ds, append([]KW{kw("col", "x2"), kw("eps", 1.0), kw("delta", 1e-6)}, by...), "consistent", []any{true})
		hb := []KW{kw("col", "g"), kw("eps", 1.0)}
		if ds == "rows" {
			hb = []KW{kw("col", "x1"), kw("bins", 3), kw("eps", 1.0)}
		}
		add("private_histogram", ds, hb, "other", []any{true, false})
		add("private_histogram", ds, hb, "nonnegative", []any{false, true})
	}
	for _, ds := range []string{"rows", "users"} {
		calls = append(calls, harnessCall{fn: "private_count", dataset: ds, kws: []KW{kw("by", "x1"), kw("eps", 1.0)}})
		calls = append(calls, harnessCall{fn: "private_sum", dataset: ds, kws: []KW{kw("col", "x1"), kw("by", "x2"), kw("eps", 1.0)}})
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: []KW{kw("col", "x1"), kw("eps", 1.0), kw("delta", 1e-6)}})
	}
	// Gaussian calls on the gdp datasets, calibrated to μ*(ε, δ).
	gbase := []KW{kw("eps", 1.0), kw("delta", 1e-6)}
	calls = append(calls, harnessCall{fn: "private_count", dataset: "grows", kws: gbase})
	add("private_count", "grows", gbase, "eps", floats(harnessEps))
	add("private_count", "grows", gbase, "delta", floats(harnessDelta))
	add("private_mean", "grows", gbase, "eps", floats(harnessEps))
	for _, c := range []harnessCall{
		{fn: "private_sum", kws: []KW{kw("col", "x1")}},
		{fn: "private_sum", kws: []KW{kw("col", "x2"), kw("by", "g")}},
		{fn: "private_mean", kws: []KW{kw("col", "x2"), kw("by", "g")}},
		{fn: "private_mean", kws: []KW{kw("col", "x2")}},
		{fn: "private_count", kws: []KW{kw("by", "g")}},
	} {
		base := append(c.kws, gbase...)
		calls = append(calls, harnessCall{fn: c.fn, dataset: "gcats", kws: base})
		add(c.fn, "gcats", base, "eps", floats(harnessEps))
	}
	for _, m := range []string{"gauss", "npm", "auto"} {
		pb := []KW{kw("k", 1), kw("method", m), kw("eps", 1.0), kw("delta", 1e-6)}
		calls = append(calls, harnessCall{fn: "private_pca", dataset: "grows", kws: pb})
		add("private_pca", "grows", pb, "eps", floats(harnessEps))
	}
	// The adaptive method on the gdp dataset: its sparse-vector steps and
	// Gaussian releases within one μ*-GDP charge, alone and with
	// gap="auto" (four runs and the selection).
	ad := []KW{kw("k", 1), kw("method", "adaptive"), kw("iters", 4), kw("eps", 1.0), kw("delta", 1e-6)}
	calls = append(calls, harnessCall{fn: "private_pca", dataset: "grows", kws: ad})
	add("private_pca", "grows", ad, "eps", floats(harnessEps))
	ga := []KW{kw("k", 1), kw("method", "adaptive"), kw("iters", 4), kw("gap", "auto"), kw("eps", 1.0), kw("delta", 1e-6)}
	calls = append(calls, harnessCall{fn: "private_pca", dataset: "grows", kws: ga})
	add("private_pca", "grows", ga, "eps", floats(harnessEps))
	// Calls on the rdp dataset: pure and Gaussian counts, a quantile
	// (bounded range), a grouped sum.
	rc := []KW{kw("eps", 1.0)}
	calls = append(calls, harnessCall{fn: "private_count", dataset: "rcats", kws: rc})
	add("private_count", "rcats", rc, "eps", floats(harnessEps))
	add("private_count", "rcats", rc, "delta", floats(harnessDelta))
	rq := []KW{kw("col", "x2"), kw("eps", 1.0)}
	calls = append(calls, harnessCall{fn: "private_quantile", dataset: "rcats", kws: rq})
	calls = append(calls, harnessCall{fn: "private_sum", dataset: "rcats", kws: []KW{kw("col", "x1"), kw("by", "g"), kw("eps", 1.0), kw("delta", 1e-6)}})
	hg := []KW{kw("col", "g"), kw("eps", 1.0), kw("delta", 1e-6)}
	calls = append(calls, harnessCall{fn: "private_histogram", dataset: "gcats", kws: hg})
	add("private_histogram", "gcats", hg, "delta", floats(harnessDelta))
	// Pure-ε means (col= and by= without delta: Laplace on sums and counts).
	for _, ds := range []string{"cats", "ucats"} {
		pbase := []KW{kw("col", "x2"), kw("eps", 1.0)}
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: pbase})
		add("private_mean", ds, pbase, "eps", floats(harnessEps))
		gbase := append([]KW{kw("by", "g")}, pbase...)
		if ds == "ucats" {
			gbase = append(gbase, kw("max_groups", 2))
		}
		calls = append(calls, harnessCall{fn: "private_mean", dataset: ds, kws: gbase})
		add("private_mean", ds, gbase, "eps", floats(harnessEps))
		add("private_mean", ds, gbase, "max_groups", ints(harnessInts))
	}
	// private_histogram's max_groups: a user counts in up to k bins
	// (numeric bins of x1, the categories of g); refused on row-level data
	// and outside 1..the number of keys.
	for _, c := range []struct {
		ds  string
		col []KW
	}{
		{"users", []KW{kw("col", "x1"), kw("bins", 4)}},
		{"ucats", []KW{kw("col", "g")}},
		{"rows", []KW{kw("col", "x1"), kw("bins", 4)}},
		{"cats", []KW{kw("col", "g")}},
	} {
		hbase := append(append([]KW(nil), c.col...), kw("eps", 1.0), kw("max_groups", 2))
		calls = append(calls, harnessCall{fn: "private_histogram", dataset: c.ds, kws: hbase})
		add("private_histogram", c.ds, hbase, "max_groups", ints(harnessInts))
		add("private_histogram", c.ds, hbase, "eps", floats(harnessEps))
		add("private_histogram", c.ds, hbase, "delta", floats(harnessDelta))
	}
	// private_sql: fixed refusals and a seeded sample of its grammar
	// (sql_harness_test.go); the wide grid samples more.
	sqlQueries := 14
	if wide {
		sqlQueries = 200
	}
	calls = append(calls, sqlHarnessCalls(sqlQueries)...)
	return append(calls, harnessMatrixGrid(wide)...)
}

func TestNeighbouringDatasets(t *testing.T) {
	testtier.Long(t)
	seed := uint64(1)
	old := newSampler
	newSampler = func() *noise.Sampler { return noise.NewSeeded(seed) }
	t.Cleanup(func() { newSampler = old })

	calls := harnessGrid(*auditWide)
	all := *auditAll || *auditWide || *auditRun != ""
	if !all {
		t.Logf("default grid: a %.0f %% sample of the varied calls with -audit.seed=%d (-audit.all runs every one)", 100*harnessSample, *auditSeed)
	}
	if *auditRun != "" {
		re := regexp.MustCompile(*auditRun)
		var kept []harnessCall
		for _, c := range calls {
			if re.MatchString(c.String()) {
				kept = append(kept, c)
			}
		}
		calls = kept
	}
	start := time.Now()
	runs, charged := 0, 0
	spent := map[string]time.Duration{} // per function, for the log
	configs := []harnessConfig{{accounting.ReplaceOne, false}, {accounting.AddRemove, false}, {accounting.ReplaceOne, true}, {accounting.AddRemove, true}}
	for _, c := range configs {
		var worlds []*world
		for _, v := range harnessVariants() {
			if c.publicN && v.units == 11 {
				continue // alone in its public group
			}
			worlds = append(worlds, newWorld(t, c, v))
		}
		for i, call := range calls {
			if c.publicN && !needsN(call) {
				continue // a public n changes nothing for it: covered above
			}
			if !all && !sampled(*auditSeed, c, call) {
				continue
			}
			first := map[string]*world{}
			firstO := map[string]outcome{}
			for _, w := range worlds {
				seed = uint64(i + 1)
				began := time.Now()
				o := w.run(t, i, call)
				spent[call.fn] += time.Since(began)
				runs++
				if o.charged {
					charged++
				}
				checkOutcome(t, c, w, call, o)
				if o.charged && o.class == "ok" && onMemoryTable(call) && o.memory == 0 {
					// The rows' path gives the same release: only the
					// count of statements shows which one ran.
					t.Errorf("%s data, %s on %q: charged, but no statement ran on its memory table (the rows' path ran instead)", c, call, w.name)
				}
				f, ok := first[w.publicKey]
				if !ok {
					first[w.publicKey], firstO[w.publicKey] = w, o
					continue
				}
				fo := firstO[w.publicKey]
				if o.class != fo.class || o.text != fo.text || o.charged != fo.charged || o.ledger != fo.ledger {
					t.Errorf("%s data, %s: outcome differs between %q and %q:\n  %s: %s %s charged=%v %s\n  %s: %s %s charged=%v %s",
						c, call, f.name, w.name,
						f.name, fo.class, fo.text, fo.charged, fo.ledger,
						w.name, o.class, o.text, o.charged, o.ledger)
				}
			}
		}
		for _, w := range worlds {
			verify(t, w.dir)
		}
	}
	t.Logf("%d calls × worlds = %d runs (%d charged) in %v", len(calls), runs, charged, time.Since(start).Round(time.Millisecond))
	fns := make([]string, 0, len(spent))
	for fn := range spent {
		fns = append(fns, fn)
	}
	sort.Slice(fns, func(i, j int) bool { return spent[fns[i]] > spent[fns[j]] })
	for _, fn := range fns {
		t.Logf("  %-20s %v", fn, spent[fn].Round(time.Millisecond))
	}
	if charged == 0 || charged == runs {
		t.Errorf("%d of %d runs charged: the grid must hold both refused and charged calls", charged, runs)
	}
}

// needsN reports whether a call runs a mechanism that needs a public n.
func needsN(c harnessCall) bool {
	if c.fn == "private_fedrep" {
		return true
	}
	for _, k := range c.kws {
		// adaptive's default T (iters=0, and every guess of gap="auto")
		// reads the public n.
		if k.name == "method" && (k.value == "dppca" || k.value == "oja" || k.value == "oja-shuffle" || k.value == "adaptive") {
			return true
		}
	}
	return false
}

// checkOutcome checks the rules that hold for a single run: no hang, no
// failure after the charge, and the calibration under the registered
// relation.
func checkOutcome(t *testing.T, c harnessConfig, w *world, call harnessCall, o outcome) {
	t.Helper()
	switch {
	case o.class == "hang":
		// The call's goroutine may spin on: stop here.
		t.Fatalf("%s data (%s), %s: %s", c, w.name, call, o.text)
	case o.class == "panic":
		t.Errorf("%s data (%s), %s: a raw panic reached the cell: %s", c, w.name, call, o.text)
	case o.charged && o.class != "ok":
		t.Errorf("%s data (%s), %s: charged, then %s: %s (after the charge a call must return a release)", c, w.name, call, o.class, o.text)
	case !o.charged && o.class == "ok":
		t.Errorf("%s data (%s), %s: a release without a ledger record", c, w.name, call)
	}
	registered := c.neighbour.String()
	if isMatrixCall(call) {
		registered = ledger.NeighbourEntry
	}
	for _, n := range o.notes {
		if n != "neighbour="+registered {
			t.Errorf("%s data (%s), %s: calibrated under %s, not under the registered relation", c, w.name, call, n)
		}
	}
}

// harnessBlockCells are cells that spend from inside a budget block after
// the block has closed (issue 10, break 3). On every world they must
// give the same outcome, and what the ledger admitted must fit the
// block's cap.
var harnessBlockCells = []struct {
	cell string
	cap  accounting.Budget
	each accounting.Event
}{
	{`e := 1.0
func() {
	budget eps=0.1, delta=1e-6 {
		defer private_count(ds, eps=e, delta=1e-6)
	}
}()`, accounting.Budget{Eps: 0.1, Delta: 1e-6}, accounting.ZcdpFor(1, 1e-6)},
	{`done := make(chan bool)
budget eps=0.2, delta=1e-6 {
	go func() {
		<-done
		for i := 0; i < 10; i++ {
			func() {
				defer func() { recover() }()
				private_count(ds, eps=0.1, delta=1e-6)
			}()
		}
		done <- true
	}()
}
done <- true
<-done`, accounting.Budget{Eps: 0.2, Delta: 1e-6}, accounting.ZcdpFor(0.1, 1e-6)},
	// Gaussian calls without delta take the block's δ (issue 11).
	{`budget eps=0.3, delta=1e-6 {
	for i := 0; i < 6; i++ {
		func() {
			defer func() { recover() }()
			private_mean(ds, eps=0.1)
		}()
	}
}`, accounting.Budget{Eps: 0.3, Delta: 1e-6}, accounting.ZcdpFor(0.1, 1e-6)},
}

func TestNeighbouringDatasetsBlocks(t *testing.T) {
	testtier.Long(t)
	for _, c := range []harnessConfig{{accounting.ReplaceOne, false}, {accounting.AddRemove, false}} {
		for i, bc := range harnessBlockCells {
			var first string
			for j, v := range harnessVariants() {
				w := newWorld(t, c, v)
				eng, err := interp.New(interp.Config{StateDir: w.dir, Plugin: w.rt})
				if err != nil {
					t.Fatal(err)
				}
				out := &recOutput{}
				res := eng.Execute(context.Background(), engine.ExecuteRequest{Code: "ds := dataset(\"rows\")\n" + bc.cell, CellID: "harness", ExecutionCount: 1}, out)
				charges := w.ledgerLen(t, "rows") - 1 // the registration
				got := fmt.Sprintf("error=%v charges=%d", res.Error != nil, charges)
				if res.Error != nil {
					got += " " + res.Error.Name + ": " + res.Error.Value
				}
				acc, err := accounting.NewAccountant(accounting.ModeZCDP, bc.cap)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; k < charges; k++ {
					if err := acc.Spend(bc.each); err != nil {
						t.Errorf("%s data (%s), block cell %d: %d charges exceed the block's cap %v", c, v.name, i, charges, bc.cap)
						break
					}
				}
				if j == 0 {
					first = got
				} else if got != first {
					t.Errorf("%s data, block cell %d: outcome differs: %q vs %q", c, i, first, got)
				}
			}
		}
	}
}
