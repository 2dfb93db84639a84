package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The matrix datasets of the neighbouring-datasets harness: "mat", a
// symmetric 4×4 matrix, and "rmat", a rectangular 3×2 one, both with
// entry bound 1. Worlds differ in one entry (and its mirror), changed
// within the bound, which is the registered relation "entry"; their
// public facts (shape, bound, budget) are the same.
const harnessEntryBound = 1.0

// harnessMatrix is a variant's matrix: the base matrix with one entry
// moved to an end of the bound (none for the first variant).
func harnessMatrix(v variant, rows, cols int, symmetric bool) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = make([]float64, cols)
		for j := range m[i] {
			a, b := i, j
			if symmetric && b < a {
				a, b = b, a
			}
			m[i][j] = 0.5 * math.Sin(float64(3*a+b+1))
		}
	}
	set := func(i, j int, x float64) {
		m[i][j] = x
		if symmetric {
			m[j][i] = x
		}
	}
	switch {
	case v.extreme:
		set(0, 0, -harnessEntryBound) // a diagonal entry
	case v.units == 10:
		set(0, 1, harnessEntryBound)
	case v.units == 11:
		set(rows-1, cols-1, -harnessEntryBound)
	}
	return m
}

func matrixCSV(m [][]float64) string {
	var b strings.Builder
	for j := range m[0] {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "c%d", j+1)
	}
	b.WriteByte('\n')
	for _, row := range m {
		for j, x := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, x)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// registerHarnessMatrices registers "mat" and "rmat" of variant v in dir.
func registerHarnessMatrices(t *testing.T, dir string, v variant, budget accounting.Budget) {
	for _, ms := range []ledger.MatrixShape{
		{Rows: 4, Cols: 4, Symmetric: true, EntryBound: harnessEntryBound},
		{Rows: 3, Cols: 2, EntryBound: harnessEntryBound},
	} {
		name := "mat"
		if !ms.Symmetric {
			name = "rmat"
		}
		shape := ms
		registerSnapshot(t, dir, name, matrixCSV(harnessMatrix(v, ms.Rows, ms.Cols, ms.Symmetric)), snapshot.Spec{},
			ledger.Registration{Budget: budget, Accountant: accounting.ModeZCDP, Clip: harnessEntryBound, Matrix: &shape})
	}
}

func isMatrixCall(c harnessCall) bool { return c.dataset == "mat" || c.dataset == "rmat" }

// harnessMatrixGrid: the matrix functions on matrix datasets over their
// parameters' extremes, and every kind mismatch (refused before the
// charge).
func harnessMatrixGrid(wide bool) []harnessCall {
	kw := newKW
	var calls []harnessCall
	vary := func(fn, ds string, base []KW, name string, vals []any) {
		for i, v := range vals {
			var kws []KW
			replaced := false
			for _, k := range base {
				if k.name == name {
					k = kw(name, v)
					replaced = true
				}
				kws = append(kws, k)
			}
			if !replaced {
				kws = append(kws, kw(name, v))
			}
			calls = append(calls, harnessCall{fn: fn, dataset: ds, kws: kws, vary: name, edge: i == 0 || i == len(vals)-1})
		}
	}
	anys := func(xs ...any) []any { return xs }
	eps := make([]any, len(harnessEps))
	for i, e := range harnessEps {
		eps[i] = e
	}
	delta := make([]any, len(harnessDelta))
	for i, d := range harnessDelta {
		delta[i] = d
	}
	ks := anys(-1, 0, 1, 2, 3, 5, math.MaxInt32)
	iters := anys(-1, 0, 1, 3, 1000, 1<<20)
	for _, ds := range []string{"mat", "rmat"} {
		pb := []KW{kw("k", 1), kw("method", "ppm-entry"), kw("eps", 1.0), kw("delta", 1e-6), kw("iters", 3)}
		calls = append(calls, harnessCall{fn: "private_pca", dataset: ds, kws: pb})
		vary("private_pca", ds, pb, "k", ks)
		vary("private_pca", ds, pb, "eps", eps)
		vary("private_pca", ds, pb, "delta", delta)
		vary("private_pca", ds, pb, "iters", iters)
		vary("private_pca", ds, pb, "calibration", anys("zcdp", "paper"))
		vary("private_pca", ds, pb, "method", anys("auto", "npm", "gauss", "adaptive", "dppca", "oja", "federated"))
		vary("private_pca", ds, pb, "neighbour", anys("replace-one"))
		lb := []KW{kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6), kw("iters", 3)}
		calls = append(calls, harnessCall{fn: "private_low_rank", dataset: ds, kws: lb})
		vary("private_low_rank", ds, lb, "k", ks)
		vary("private_low_rank", ds, lb, "eps", eps)
		vary("private_low_rank", ds, lb, "delta", delta)
		vary("private_low_rank", ds, lb, "iters", iters)
		vary("private_low_rank", ds, lb, "calibration", anys("zcdp", "paper"))
		// the Laplace variant: pure ε, δ must stay 0
		lap := []KW{kw("k", 1), kw("eps", 1.0), kw("noise", "laplace"), kw("iters", 3)}
		calls = append(calls, harnessCall{fn: "private_low_rank", dataset: ds, kws: lap})
		vary("private_low_rank", ds, lap, "eps", eps)
		vary("private_low_rank", ds, lap, "delta", delta)
		vary("private_low_rank", ds, lap, "k", ks)
		vary("private_low_rank", ds, lap, "iters", iters)
		if wide {
			for _, e := range harnessEps {
				for _, k := range []int{1, 2} {
					calls = append(calls, harnessCall{fn: "private_low_rank", dataset: ds, kws: []KW{kw("k", k), kw("eps", e), kw("noise", "laplace")}})
					calls = append(calls, harnessCall{fn: "private_pca", dataset: ds, kws: []KW{kw("k", k), kw("method", "ppm-entry"), kw("eps", e), kw("delta", 1e-6)}})
				}
			}
		}
		// row functions on a matrix dataset, and a subset of one
		for _, c := range []harnessCall{
			{fn: "private_count", kws: []KW{kw("eps", 1.0)}},
			{fn: "private_mean", kws: []KW{kw("eps", 1.0), kw("delta", 1e-6)}},
			{fn: "private_sum", kws: []KW{kw("col", "c1"), kw("eps", 1.0)}},
			{fn: "private_histogram", kws: []KW{kw("col", "c1"), kw("bins", 2), kw("eps", 1.0)}},
			{fn: "private_quantile", kws: []KW{kw("col", "c1"), kw("eps", 1.0)}},
		} {
			c.dataset = ds
			calls = append(calls, c)
		}
		calls = append(calls, harnessCall{fn: "private_low_rank", dataset: ds, kws: lb, filter: []KW{kw("col", "c1"), kw("op", ">="), kw("value", 0.0)}})
	}
	// matrix functions on row datasets
	for _, ds := range []string{"rows", "users"} {
		calls = append(calls,
			harnessCall{fn: "private_low_rank", dataset: ds, kws: []KW{kw("k", 1), kw("eps", 1.0), kw("delta", 1e-6)}},
			harnessCall{fn: "private_pca", dataset: ds, kws: []KW{kw("k", 1), kw("method", "ppm-entry"), kw("eps", 1.0), kw("delta", 1e-6)}})
	}
	return calls
}

func dims(m interface{ Dims() (int, int) }) string {
	if m == nil {
		return "none"
	}
	r, c := m.Dims()
	return fmt.Sprintf("%d×%d", r, c)
}

func rightShape(m *mat.Dense) string {
	if m == nil {
		return ""
	}
	return ", right " + dims(m)
}

func lowRankShape(r *LowRankResult) string {
	if r.Matrix == nil {
		return "low rank: none, method " + r.Method
	}
	return fmt.Sprintf("low rank %s, components %s%s, %d values, method %s", dims(r.Matrix), dims(r.Components), rightShape(r.Right), len(r.Values), r.Method)
}

// The static pre-check prices matrix calls as their plans do.
func TestMatrixCostForMatchesPlans(t *testing.T) {
	for _, ms := range []ledger.MatrixShape{
		{Rows: 6, Cols: 6, Symmetric: true, EntryBound: 2},
		{Rows: 5, Cols: 3, EntryBound: 2},
	} {
		shape := ms
		sc := ledger.Schema{Name: "m", Columns: []string{"c1", "c2", "c3", "c4", "c5", "c6"}[:ms.Cols], D: ms.Cols, Clip: 2, Unit: "row",
			Accountant: "zcdp", Center: "none", Kind: ledger.KindMatrix, Matrix: &shape, Neighbour: ledger.NeighbourEntry}
		src := &source{name: "m", schema: sc}
		for _, calib := range []string{"zcdp", "paper"} {
			for _, method := range []string{"ppm-entry", "auto"} {
				a, err := parseArgs("private_pca", []KW{newKW("k", 2), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", method), newKW("calibration", calib)})
				if err != nil {
					t.Fatal(err)
				}
				p := planPCA(src, a)
				want, ok := costFor("private_pca", method, calib, "zcdp", 0.5, 1e-6)
				if !ok || !sameCost(p.Cost, want) || p.Method != "pca/ppm-entry" {
					t.Errorf("%v private_pca method=%s calibration=%s: plan %s costs %+v, costFor %+v", ms, method, calib, p.Method, p.Cost, want)
				}
				// On a gdp dataset ppm-entry keeps its zCDP calibration, and
				// the pre-check names auto's method so that it prices it so.
				gsc := sc
				gsc.Accountant = "gdp"
				if calib == "paper" {
					// The paper's calibration is an (ε, δ) event, which the
					// gdp accountant cannot compose: refused when planned.
					if msg := panicText(func() { planPCA(&source{name: "m", schema: gsc}, a) }); !strings.Contains(msg, "cannot compose") || !strings.Contains(msg, "zcdp") {
						t.Errorf("%v on a gdp dataset, private_pca method=%s calibration=paper: planned (%q), want a refusal naming zcdp", ms, method, msg)
					}
				} else {
					gp := planPCA(&source{name: "m", schema: gsc}, a)
					if want, ok := costFor("private_pca", staticPCAMethod(method, gsc), calib, "gdp", 0.5, 1e-6); !ok || !sameCost(gp.Cost, want) {
						t.Errorf("%v on a gdp dataset, private_pca method=%s calibration=%s: plan costs %+v, the pre-check %+v", ms, method, calib, gp.Cost, want)
					}
				}
				// Neighbours replace an entry within [−B, B]: it moves by 2B.
				if !strings.Contains(p.Note, "one symmetric entry pair changes by ≤ 4)") {
					t.Errorf("%v: note %q does not calibrate to an entry change of 2B = 4", ms, p.Note)
				}
			}
			a, _ := parseArgs("private_low_rank", []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("calibration", calib)})
			p := planVia("private_low_rank")(src, a)
			if want, ok := costFor("private_low_rank", "", calib, "zcdp", 0.5, 1e-6); !ok || !sameCost(p.Cost, want) {
				t.Errorf("%v private_low_rank calibration=%s: plan %+v, costFor %+v", ms, calib, p.Cost, want)
			}
		}
		a, _ := parseArgs("private_low_rank", []KW{newKW("k", 1), newKW("eps", 0.5), newKW("noise", "laplace")})
		p := planVia("private_low_rank")(src, a)
		want, ok := costFor("private_low_rank", "", "", "zcdp", 0.5, 0)
		if !ok || !sameCost(p.Cost, want) || p.Cost.Kind != accounting.PureDP {
			t.Errorf("%v private_low_rank noise=laplace: plan %+v, costFor %+v, want pure ε", ms, p.Cost, want)
		}
	}
}

// Matrix datasets in cells: the matrix functions run and are charged;
// row functions on them, matrix functions on row data and subsets of a
// matrix are refused before the charge, saying which kind each takes.
func TestMatrixCells(t *testing.T) {
	dir := t.TempDir()
	budget := accounting.Budget{Eps: 10, Delta: 1e-5}
	registerHarnessMatrices(t, dir, variant{units: 10}, budget)
	register(t, dir, "rows", table(50, 3, 1, 0.3), budget, accounting.ModeZCDP)
	s := newSession(t, dir)
	out := s.ok(`m := dataset("mat")
r := private_pca(m, method="ppm-entry", k=2, eps=1, delta=1e-6)
fmt.Println(r.Method, r.Components.RawMatrix().Rows, len(r.Values), r.Receipt.Params["neighbour"])
a := private_pca(m, k=1, eps=0.5, delta=1e-6)
fmt.Println(a.Method)
l := private_low_rank(m, k=1, eps=0.5, noise="laplace")
fmt.Println(l.Method, l.Matrix.RawMatrix().Rows, l.Receipt.Cost)
q := private_low_rank(dataset("rmat"), k=1, eps=0.5, delta=1e-6)
fmt.Println(q.Matrix.RawMatrix().Rows, q.Matrix.RawMatrix().Cols, q.Right.RawMatrix().Rows, q.Components.RawMatrix().Rows)
p := private_pca(dataset("rmat"), method="ppm-entry", eps=0.5, delta=1e-6)
fmt.Println(p.Components.RawMatrix().Rows, p.Right.RawMatrix().Rows, p.Columns)`)
	for _, want := range []string{"pca/ppm-entry 4 2 entry", "pca/lra 4 pca/lra: pure ε=0.5", "3 2 2 3", "3 2 [r1 r2 r3]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	before := status(t, dir, "mat").Charges
	for _, c := range []struct{ code, want string }{
		{`private_count(dataset("mat"), eps=0.1)`, `private_count takes a row dataset, and "mat" is a matrix dataset`},
		{`private_mean(dataset("mat"), eps=0.1, delta=1e-6)`, `private_mean takes a row dataset, and "mat" is a matrix dataset`},
		{`private_pca(dataset("mat"), method="npm", eps=0.1, delta=1e-6)`, `private_pca takes it with method="ppm-entry" only`},
		{`private_low_rank(filter(dataset("mat"), col="c1", op=">", value=0.0), eps=0.1, delta=1e-6)`, "cannot be filtered"},
		{`private_low_rank(dataset("rows"), eps=0.1, delta=1e-6)`, `private_low_rank takes a matrix dataset (registered with privnotes dataset add --matrix), and "rows" is a row dataset`},
		{`private_pca(dataset("rows"), method="ppm-entry", eps=0.1, delta=1e-6)`, `private_pca with method="ppm-entry" takes a matrix dataset`},
		{`private_low_rank(dataset("mat"), eps=0.1)`, `Gaussian noise needs δ > 0`},
		{`private_pca(dataset("mat"), method="ppm-entry", clip=2, eps=0.1, delta=1e-6)`, `clip= is for row datasets`},
		{`private_pca(dataset("mat"), neighbour="replace-one", eps=0.1, delta=1e-6)`, `neighbour= is for row datasets`},
		{`private_low_rank(dataset("mat"), eps=0.1, delta=1e-6, noise="laplace")`, `noise="laplace" is pure ε-DP`},
		{`private_pca(dataset("rmat"), method="ppm-entry", k=3, eps=0.1, delta=1e-6)`, `k=3: use 1 ≤ k ≤ 2 for this 3×2 matrix`},
	} {
		res, _ := s.fails(c.code, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %s, want %q", c.code, res.Error.Value, c.want)
		}
	}
	if after := status(t, dir, "mat").Charges; after != before {
		t.Errorf("refused calls charged mat: %d → %d records", before, after)
	}
	if st := status(t, dir, "rows"); st.Charges != 0 {
		t.Errorf("refused calls charged rows %d times", st.Charges)
	}
}

func TestMatrixHandle(t *testing.T) {
	ms := &ledger.MatrixShape{Rows: 3, Cols: 2, EntryBound: 0.5}
	got := describeSchema(ledger.Schema{Name: "m", Kind: ledger.KindMatrix, Matrix: ms, Budget: accounting.Budget{Eps: 2, Delta: 1e-6}})
	if want := "Dataset(m: 3×2 rectangular matrix, neighbours=entry (|entry| ≤ 0.5), budget ε=2 δ=1e-06)"; got != want {
		t.Errorf("handle %q, want %q", got, want)
	}
}

// A named matrix release replays whole: the approximation, both sets of
// singular vectors and the component row names, at no charge.
func TestMatrixNamedReplay(t *testing.T) {
	dir := t.TempDir()
	registerHarnessMatrices(t, dir, variant{units: 10}, accounting.Budget{Eps: 10, Delta: 1e-5})
	s := newSession(t, dir)
	show := `fmt.Println(q.Matrix.RawMatrix().Data, q.Right.RawMatrix().Data, q.Components.RawMatrix().Data, q.Values)
fmt.Println(p.Right.RawMatrix().Data, p.Columns, p.Values)`
	calls := `q := private_low_rank(dataset("rmat"), k=1, eps=0.5, delta=1e-6, name="lr")
p := private_pca(dataset("rmat"), method="ppm-entry", eps=0.5, delta=1e-6, name="pc")
`
	first := s.ok(calls + show)
	before := status(t, dir, "rmat").Charges
	again := s.ok(calls + show + "\nfmt.Println(q.Receipt.Replayed, p.Receipt.Replayed)")
	if got := status(t, dir, "rmat").Charges; got != before {
		t.Errorf("the replays charged: %d charges, want %d", got, before)
	}
	if !strings.HasPrefix(again, first) || !strings.HasSuffix(strings.TrimSpace(again), "true true") {
		t.Errorf("replay differs from the first release:\nfirst %s\nagain %s", first, again)
	}
	// A low-rank release downloads as its matrix; a dry run has nothing to save.
	if res, o := s.run(`download(q, "lr.csv")`); res.Error != nil || !strings.Contains(o.all(res), "lr.csv:") {
		t.Errorf("download of a low-rank release: %s", o.all(res))
	}
	res, o := s.run(`download(private_low_rank(dataset("rmat"), k=1, eps=0.5, delta=1e-6, dry_run=true), "d.csv")`)
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "dry run") {
		t.Errorf("download of a dry run: %s", o.all(res))
	}
}

// panicText runs f and returns the text of its panic ("" if none).
func panicText(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
