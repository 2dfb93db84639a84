package interp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/engine"
)

// budgetErr is a DSL error with a name.
type budgetErr struct{ msg string }

func (e budgetErr) Error() string     { return e.msg }
func (e budgetErr) ErrorName() string { return "BudgetExceeded" }

// fakeDSL is a plugin like the DSL's: it rewrites "spend(x)" calls with a
// keyword, refuses cells whose static total is over a cap, and its
// compiled function panics with a named error at run time.
type fakeDSL struct {
	mu     sync.Mutex
	log    []string
	spent  float64
	cap    float64
	out    engine.Output
	ctx    context.Context
	lastGo string
}

type posErr struct{ l, c int }

func (p posErr) Error() string             { return "unknown keyword epz (valid: eps)" }
func (p posErr) Position() (line, col int) { return p.l, p.c }

func (f *fakeDSL) Exports() map[string]reflect.Value {
	return map[string]reflect.Value{
		"spend": reflect.ValueOf(func(eps float64) float64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.spent+eps > f.cap {
				panic(budgetErr{fmt.Sprintf("requested ε=%g, spent %g, remaining %g", eps, f.spent, f.cap-f.spent)})
			}
			f.spent += eps
			f.out.Stream("stdout", fmt.Sprintf("charged %g\n", eps))
			return f.spent
		}),
		"ctx_alive": reflect.ValueOf(func() bool { return f.ctx.Err() == nil }),
		"pca_like":  reflect.ValueOf(func() *pcaLike { return &pcaLike{Components: mat.NewDense(2, 1, nil)} }),
	}
}

// pcaLike is a compiled result type like the runtime's PCAResult.
type pcaLike struct {
	Components *mat.Dense
	hidden     int
}

func (r *pcaLike) Component(j int) []float64 { return mat.Col(nil, j-1, r.Components) }

// Rewrite turns "spend(eps=X)" into "spend(X)" (same length: spaces),
// and reports "epz=" as an error at its position.
func (f *fakeDSL) Rewrite(src string) (Program, error) {
	for i, line := range strings.Split(src, "\n") {
		if c := strings.Index(line, "epz="); c >= 0 {
			return Program{}, posErr{i + 1, c + 1}
		}
	}
	g := strings.ReplaceAll(src, "spend(eps=", "spend(    ")
	f.lastGo = g
	return Program{Go: g, Plan: strings.Count(src, "spend(")}, nil
}

func (f *fakeDSL) Begin(ctx context.Context, c *Cell) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "begin "+c.ID)
	f.out, f.ctx = c.Out, ctx
	if strings.Contains(c.Source, "spend(eps=100)") {
		return budgetErr{"requested ε=100 exceeds the remaining budget"}
	}
	return nil
}

func (f *fakeDSL) End(c *Cell) {
	f.mu.Lock()
	f.log = append(f.log, "end "+c.ID)
	f.mu.Unlock()
}

func (f *fakeDSL) Names() []string { return []string{"spend", "private_pca"} }
func (f *fakeDSL) Keywords(name string) []string {
	if name == "private_pca" {
		return []string{"k", "eps", "delta", "method"}
	}
	return nil
}

// Strings lists dataset names in dataset("…") and, in col="…", the
// columns of a "handle" (here the string "tab").
func (f *fakeDSL) Strings(fn, kw string, pos int, first any) []string {
	switch {
	case fn == "dataset" && kw == "" && pos == 0:
		return []string{"wine", "wide"}
	case kw == "col" && first == "tab":
		return []string{"alcohol", "ash"}
	}
	return nil
}

func (f *fakeDSL) Choices(fn, kw string) []string {
	if fn == "private_pca" && kw == "method" {
		return []string{"auto", "npm", "adaptive", "oja"}
	}
	if fn == "private_pca" && kw == "neighbours" {
		return []string{"", "replace-one", "add-remove"}
	}
	return nil
}

func (f *fakeDSL) Doc(name string) (string, bool) {
	if name == "private_pca" {
		return "private_pca(ds, k=1, eps=, delta=0, method=\"auto\")\n\nPrivate PCA.", true
	}
	return "", false
}

func TestPluginSeam(t *testing.T) {
	dsl := &fakeDSL{cap: 1}
	e, err := New(Config{Plugin: dsl})
	if err != nil {
		t.Fatal(err)
	}
	// A cell whose static pre-check fails is refused whole: the print
	// before the call must not run.
	out := &recOutput{}
	r := e.Execute(context.Background(), engine.ExecuteRequest{Code: "fmt.Println(\"side effect\")\nspend(eps=100)", CellID: "c1"}, out)
	if r.Error == nil || r.Error.Name != "BudgetExceeded" {
		t.Fatalf("want BudgetExceeded, got %+v", r.Error)
	}
	if len(out.items) != 0 {
		t.Fatalf("a refused cell produced output: %q", out.items)
	}
	// Run-time charges through a bare, dot-imported DSL function.
	out = &recOutput{}
	r = e.Execute(context.Background(), engine.ExecuteRequest{Code: "a := spend(eps=0.5)\nalive := ctx_alive()\na", CellID: "c2"}, out)
	if r.Error != nil || r.Value.Data["text/plain"] != "0.5" || out.stdout() != "charged 0.5\n" {
		t.Fatalf("got %+v %+v %q", r.Value, r.Error, out.items)
	}
	if value(t, e, "alive") != "true" {
		t.Fatalf("the runtime did not get the cell's live context")
	}
	// A charge refused at run time stops the cell with the DSL's name.
	out = &recOutput{}
	r = e.Execute(context.Background(), engine.ExecuteRequest{Code: "b := spend(eps=0.4)\nc := spend(eps=0.4)\nfmt.Println(\"not reached\")", CellID: "c3"}, out)
	if r.Error == nil || r.Error.Name != "BudgetExceeded" || !strings.Contains(r.Error.Value, "remaining") {
		t.Fatalf("want a run-time BudgetExceeded, got %+v", r.Error)
	}
	if strings.Contains(out.stdout(), "not reached") {
		t.Fatalf("statements after the refused call ran")
	}
	// Rewrite errors keep the plugin's position.
	r = e.Execute(context.Background(), engine.ExecuteRequest{Code: "x := 1\n  spend(epz=1)", CellID: "c4"}, &recOutput{})
	if r.Error == nil || r.Error.Name != "SyntaxError" || !strings.HasPrefix(r.Error.Value, "line 2:9: unknown keyword") {
		t.Fatalf("rewrite error: %+v", r.Error)
	}
	if tb := r.Error.Traceback; len(tb) != 3 || tb[1] != "      spend(epz=1)" || tb[2] != "            ^" {
		t.Errorf("rewrite error traceback should show the line and a caret: %q", tb)
	}
	// Begin/End pair for every cell that passed the pre-check.
	want := "begin c1 begin c2 end c2 begin test end test begin c3 end c3"
	if got := strings.Join(dsl.log, " "); got != want {
		t.Errorf("Begin/End calls:\n got %s\nwant %s", got, want)
	}
}

func TestRegisterPlugin(t *testing.T) {
	defer unregisterPlugin()
	var gotDir string
	RegisterPlugin(func(dir string) (Plugin, error) { gotDir = dir; return &fakeDSL{cap: 1}, nil })
	e, err := New(Config{StateDir: "/tmp/state-x"})
	if err != nil || gotDir != "/tmp/state-x" {
		t.Fatalf("factory not used: %v %q", err, gotDir)
	}
	if v := value(t, e, "spend(0.25)"); v != "0.25" {
		t.Fatalf("spend = %s", v)
	}
	unregisterPlugin()
	RegisterPlugin(func(string) (Plugin, error) { return nil, errors.New("no ledger") })
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "no ledger") {
		t.Fatalf("factory error not reported: %v", err)
	}
	for _, tc := range []struct {
		name string
		f    func(string) (Plugin, error)
		want string
	}{
		{"second registration", func(string) (Plugin, error) { return nil, nil }, "interp: RegisterPlugin called twice"},
		{"nil factory", nil, "interp: RegisterPlugin with a nil factory"},
	} {
		func() {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("%s: panic %v, want %q", tc.name, r, tc.want)
				}
			}()
			RegisterPlugin(tc.f)
		}()
	}
}

func TestBasicPluginMagics(t *testing.T) {
	e := newEngine(t)
	out := &recOutput{}
	r := e.Execute(context.Background(), engineReq("x := 1\n%help math.Sqrt\nfmt.Println(x)"), out)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := out.stdout(); !strings.Contains(got, "func math.Sqrt(float64) float64") || !strings.HasSuffix(got, "1\n") {
		t.Fatalf("stdout = %q", got)
	}
	r = e.Execute(context.Background(), engineReq("%nope"), &recOutput{})
	if r.Error == nil || r.Error.Name != "MagicError" {
		t.Fatalf("unknown magic: %+v", r.Error)
	}
	r = e.Execute(context.Background(), engineReq("%%budget eps=1\nx"), &recOutput{})
	if r.Error == nil || !strings.Contains(r.Error.Value, "need the privnotes DSL") {
		t.Fatalf("cell magic without the DSL: %+v", r.Error)
	}
}
