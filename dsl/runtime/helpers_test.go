package runtime

import (
	"context"
	"fmt"
	"github.com/privnotes/privnotes/dsl/release"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testfix"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// recOutput records a cell's outputs.
type recOutput struct {
	mu   sync.Mutex
	out  strings.Builder
	err  strings.Builder
	disp []engine.Display
}

func (o *recOutput) Stream(name, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name == "stdout" {
		o.out.WriteString(text)
	} else {
		o.err.WriteString(text)
	}
}

func (o *recOutput) Display(d engine.Display) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.disp = append(o.disp, d)
}

func (o *recOutput) ClearOutput(bool) {}

func (o *recOutput) stdout() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.String()
}

// all returns everything the cell showed as text (streams, displays of
// every MIME type, the result and the error).
func (o *recOutput) all(res engine.ExecuteResult) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	b.WriteString(o.out.String())
	b.WriteString(o.err.String())
	for _, d := range o.disp {
		for k, v := range d.Data {
			fmt.Fprintf(&b, "%s:%v\n", k, v)
		}
		fmt.Fprintf(&b, "%v\n", d.Metadata)
	}
	if res.Value != nil {
		for k, v := range res.Value.Data {
			fmt.Fprintf(&b, "%s:%v\n", k, v)
		}
		fmt.Fprintf(&b, "%v\n", res.Value.Metadata)
	}
	if res.Error != nil {
		fmt.Fprintf(&b, "%s: %s\n%s\n", res.Error.Name, res.Error.Value, strings.Join(res.Error.Traceback, "\n"))
	}
	return b.String()
}

// session is an engine with the DSL runtime on a state directory.
type session struct {
	t   testing.TB
	rt  *Runtime
	eng *interp.Engine
	n   int
}

func newSession(t testing.TB, dir string) *session {
	t.Helper()
	rt, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := interp.New(interp.Config{StateDir: dir, Plugin: rt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &session{t: t, rt: rt, eng: eng}
}

// extraExports is the runtime as a plugin with test-only functions added
// to what cells can call (for synchronising with a cell's goroutines).
type extraExports struct {
	*Runtime
	extra map[string]reflect.Value
}

func (p extraExports) Exports() map[string]reflect.Value {
	ex := p.Runtime.Exports()
	for k, v := range p.extra {
		ex[k] = v
	}
	return ex
}

// newSessionWith is newSession with extra exports.
func newSessionWith(t testing.TB, dir string, extra map[string]reflect.Value) *session {
	t.Helper()
	rt, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := interp.New(interp.Config{StateDir: dir, Plugin: extraExports{rt, extra}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &session{t: t, rt: rt, eng: eng}
}

// run executes a cell and returns its result and output.
func (s *session) run(code string) (engine.ExecuteResult, *recOutput) {
	s.t.Helper()
	s.n++
	out := &recOutput{}
	res := s.eng.Execute(context.Background(), engine.ExecuteRequest{Code: code, CellID: "test", ExecutionCount: s.n}, out)
	return res, out
}

// ok runs a cell that must succeed and returns its stdout.
func (s *session) ok(code string) string {
	s.t.Helper()
	res, out := s.run(code)
	if res.Error != nil {
		s.t.Fatalf("cell failed: %s: %s\n%s\ncell:\n%s", res.Error.Name, res.Error.Value, strings.Join(res.Error.Traceback, "\n"), code)
	}
	return out.stdout()
}

// fails runs a cell that must fail with the named error.
func (s *session) fails(code, name string) (engine.ExecuteResult, *recOutput) {
	s.t.Helper()
	res, out := s.run(code)
	if res.Error == nil {
		s.t.Fatalf("cell succeeded, want %s\ncell:\n%s\noutput: %s", name, code, out.stdout())
	}
	if res.Error.Name != name {
		s.t.Fatalf("cell failed with %s: %s, want %s\ncell:\n%s", res.Error.Name, res.Error.Value, name, code)
	}
	return res, out
}

// table is a small dataset: n rows of d Gaussian columns (seeded), scaled.
func table(n, d int, seed uint64, scale float64) *dataset.Table {
	r := rand.New(rand.NewPCG(seed, 7))
	t := &dataset.Table{Rows: n}
	for j := 0; j < d; j++ {
		t.Columns = append(t.Columns, fmt.Sprintf("x%d", j+1))
	}
	for i := 0; i < n*d; i++ {
		t.X = append(t.X, scale*r.NormFloat64())
	}
	return t
}

// register adds a dataset to the state directory dir.
func register(t testing.TB, dir, name string, tab *dataset.Table, b accounting.Budget, mode accounting.Mode) {
	t.Helper()
	registerWith(t, dir, ledger.Registration{Name: name, Table: tab, Budget: b, Accountant: mode, Clip: 1, Source: "test"})
}

// registerPublicN is register with the row (or user) count declared
// public by the owner, as DP-PCA, private Oja and FedRep need.
func registerPublicN(t testing.TB, dir, name string, tab *dataset.Table, b accounting.Budget, mode accounting.Mode) {
	t.Helper()
	registerWith(t, dir, ledger.Registration{Name: name, Table: tab, Budget: b, Accountant: mode, Clip: 1, Source: "test", PublicN: true})
}

// registerWith registers r in the state directory dir.
func registerWith(t testing.TB, dir string, r ledger.Registration) {
	t.Helper()
	testfix.RegisterIn(t, dir, r)
}

// breastCancer registers the breast cancer data (30 features) as name.
func breastCancer(t testing.TB, dir, name string, b accounting.Budget) {
	t.Helper()
	f, err := os.Open("testdata/breast_cancer.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := dataset.Read(f, dataset.Options{Columns: []string{"1-30"}})
	if err != nil {
		t.Fatal(err)
	}
	testfix.RegisterIn(t, dir, ledger.Registration{Name: name, Table: tab, Budget: b, Accountant: accounting.ModeZCDP, Clip: 3000, Source: "breast_cancer.csv"})
}

func status(t testing.TB, dir, name string) *ledger.Status {
	t.Helper()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func verify(t testing.TB, dir string) {
	t.Helper()
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatalf("ledger verify: %v", err)
	}
}

func timeSleep() { time.Sleep(time.Millisecond) }

// planRT is a runtime without a state directory, whose execution core
// plans calls for the tests that inspect plans.
var planRT = func() *Runtime {
	rt, err := New(Config{})
	if err != nil {
		panic(err)
	}
	return rt
}()

// planVia plans calls of fn through the execution core, as a private
// call does before its charge; it panics with the plan's error.
func planVia(fn string) func(*source, *args) *release.Plan {
	return func(src *source, a *args) *release.Plan { return planRT.planCall(fn, src, a) }
}

var (
	planPCA    = planVia("private_pca")
	planFedRep = planVia("private_fedrep")
	planCount  = planVia("private_count")
	planMean   = planVia("private_mean")
)

// releaseOn runs a call of fn on data taken as public (so nothing is
// charged) through the execution core and returns its value: the same
// plan and mechanism as on a registered dataset, for the statistical tests.
func releaseOn(t *testing.T, fn string, a *args, data *ledger.Data) any {
	t.Helper()
	rel, err := planRT.exec.Execute(context.Background(), release.Call{Func: fn, Args: a.Args,
		Dataset: release.Ref{Name: "synthetic:test", Schema: data.Schema, Public: data}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rel.Value
}
