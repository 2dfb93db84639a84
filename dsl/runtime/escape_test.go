package runtime

// Escape tests of docs/threat-model.md: each is an attempt by a cell to
// leak private data or to spend more than a budget, run through a real
// engine (dsl/interp) on a temporary state directory. Each must fail to
// leak or to overspend.

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/privnotes/privnotes/dsl/release"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// secretTable has a distinctive row count and values, so that a leak of
// either is visible in any output.
const secretRows = 137

func secretTable() *dataset.Table {
	t := table(secretRows, 4, 99, 0.2)
	t.X[0], t.X[1] = 0.123456789, -0.987654321
	return t
}

// ledgerHash matches the ledger's hashes as %ledger prints them (12 or 64
// hex digits): random-looking digits that may contain "137" by chance.
var ledgerHash = regexp.MustCompile(`\b[0-9a-f]{12}(?:[0-9a-f]{52})?\b`)

// leaks reports the private facts found in text (outside ledger hashes).
func leaks(text string) []string {
	text = ledgerHash.ReplaceAllString(text, "HASH")
	var found []string
	for _, s := range []string{"137", "0.123456789", "0.12345", "-0.98765", "0.98765"} {
		if strings.Contains(text, s) {
			found = append(found, s)
		}
	}
	return found
}

func newSecretSession(t *testing.T, b accounting.Budget, mode accounting.Mode) (*session, string) {
	dir := t.TempDir()
	register(t, dir, "secret", secretTable(), b, mode)
	return newSession(t, dir), dir
}

// Escape 1: reading the CSV or the state database through any importable
// package. No file, process, network or reflection package is importable.
func TestEscapeNoFileAccess(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	for _, pkg := range []string{"os", "io", "io/ioutil", "io/fs", "bufio", "net", "net/http", "os/exec", "syscall",
		"unsafe", "reflect", "runtime", "runtime/debug", "plugin", "database/sql", "path/filepath", "embed",
		"github.com/privnotes/privnotes/dsl/ledger", "github.com/privnotes/privnotes/mechanisms/noise",
		"github.com/privnotes/privnotes/mechanisms/pca", "github.com/privnotes/privnotes/dsl/runtime",
		"modernc.org/sqlite", "testing/fstest", "crypto/rand", "crypto/tls", "crypto/x509"} {
		res, _ := s.run(fmt.Sprintf("import %q\n", pkg))
		if res.Error == nil || res.Error.Name != "ImportError" {
			t.Errorf("import %q: got %+v, want ImportError", pkg, res.Error)
		}
	}
	// No allowlisted package reads files: the allowlist holds none of the
	// packages that can.
	deny := regexp.MustCompile(`^(os|io|io/.*|bufio|net|net/.*|syscall|unsafe|reflect|runtime|runtime/.*|plugin|database/.*|path/filepath|embed|debug/.*|testing.*|archive/.*|compress/.*|mime/.*|log.*|crypto/.*|internal/.*|github.com/.*|modernc.org/.*|golang.org/.*)$`)
	// Of crypto/, only the pure digests (issue 11): crypto/rand reads the
	// host's entropy and crypto/x509 its certificate files.
	digests := map[string]bool{"crypto/md5": true, "crypto/sha1": true, "crypto/sha256": true, "crypto/sha512": true}
	for _, p := range interp.AllowedImports() {
		if deny.MatchString(p) && !digests[p] {
			t.Errorf("allowlisted package %q can reach files, processes or the runtime", p)
		}
	}
	// The state directory's path never reaches a cell.
	res, out := s.run(`ds := dataset("secret")
fmt.Println(ds, ds.Columns(), ds.D(), ds.Clip(), ds.Unit(), ds.Budget())
%datasets
%ledger
%budget
`)
	text := out.all(res)
	if res.Error != nil {
		t.Fatalf("cell failed: %s", text)
	}
	if strings.Contains(text, dir) {
		t.Errorf("the state directory's path reached the cell:\n%s", text)
	}
	if l := leaks(text); len(l) > 0 {
		t.Errorf("private facts %v reached the cell:\n%s", l, text)
	}
}

// Escape 2: printing or marshalling a handle, directly or inside a cell's
// own struct (fmt prints unexported fields it cannot call methods on).
func TestEscapeHandleOpaque(t *testing.T) {
	s, _ := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	res, out := s.run(`import "encoding/json"
ds := dataset("secret")
type wrap struct{ d Dataset }
type Wrap struct{ D Dataset }
fmt.Printf("%v|%+v|%#v|%s|%q|%d|%x|%T\n", ds, ds, ds, ds, ds, ds, ds, ds)
fmt.Printf("%v|%+v|%#v\n", wrap{ds}, wrap{ds}, &wrap{ds})
fmt.Printf("%v|%+v|%#v\n", Wrap{ds}, []Dataset{ds}, map[string]Dataset{"a": ds})
b1, _ := json.Marshal(ds)
b2, _ := json.Marshal(Wrap{ds})
b3, _ := json.Marshal(wrap{ds})
fmt.Println(string(b1), string(b2), string(b3))
var zero Dataset
fmt.Println(zero)
ds
`)
	text := out.all(res)
	if res.Error != nil {
		t.Fatalf("cell failed:\n%s", text)
	}
	if l := leaks(text); len(l) > 0 {
		t.Errorf("private facts %v reached the cell:\n%s", l, text)
	}
	if !strings.Contains(text, `"name":"secret"`) || !strings.Contains(text, "Dataset(secret: d=4") {
		t.Errorf("the handle does not show its public schema:\n%s", text)
	}
	// The handle's only field is its id.
	ty := reflect.TypeOf(Dataset{})
	if ty.NumField() != 1 || ty.Field(0).Name != "id" || ty.Field(0).Type.Kind() != reflect.Uint64 {
		t.Errorf("Dataset must hold an id only, has %d fields", ty.NumField())
	}
	// Inspecting the name shows the public description.
	insp := s.eng.Inspect("ds", 2, 0)
	if l := leaks(fmt.Sprint(insp.Data)); len(l) > 0 {
		t.Errorf("inspect leaks %v: %v", l, insp.Data)
	}
}

// Escape 3 and 4: shadowing or redefining DSL functions and internals.
func TestEscapeRedefine(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	s.ok(`ds := dataset("secret")`)
	for _, cell := range []string{
		`private_pca := 3`,
		`var private_count = func(x any, kw ...any) int { return 0 }`,
		`func dataset(name string) int { return 0 }`,
		`var remaining int`,
		`const private_mean = 1`,
		`__pn_budget_end()`,
		`__pn_charge := 1`,
		`x := __pn_kw("eps", 0.1)`,
		`type private_fedrep struct{}`,
	} {
		res, _ := s.run(cell)
		// Refused by the translator, before anything runs, for this
		// reason: not any error (a typo would also fail).
		if res.Error == nil || res.Error.Name != "SyntaxError" ||
			!(strings.Contains(res.Error.Value, "cannot redefine") || strings.Contains(res.Error.Value, "reserved for privnotes")) {
			t.Errorf("cell %q: %+v; it must be refused as a redefinition or a reserved name", cell, res.Error)
		}
	}
	// A function value of a DSL function is still the runtime's: it is
	// validated and charged like a call.
	res, _ := s.run(`f := private_count
f(ds)`)
	if res.Error == nil || res.Error.Name != NameArgumentError {
		t.Errorf("calling a DSL function value without eps: %+v, want ArgumentError", res.Error)
	}
	s.ok(`g := private_count
budget eps=0.5 {
	r := private_count(ds, eps=0.2)
}`)
	if st := status(t, dir, "secret"); math.Abs(st.Spent.Eps-0.2) > 1e-12 || st.Charges != 1 {
		t.Errorf("spent %v in %d charges, want ε=0.2 in 1", st.Spent, st.Charges)
	}
}

// Escape 5: calling mechanisms directly through exported Go symbols. No
// mechanism package is importable (TestEscapeNoFileAccess); here, no
// exported function, type or method reachable from a cell hands out the
// store, the data or a noise sampler.
func TestEscapeNoUnchargedPath(t *testing.T) {
	rt, _ := New(Config{StateDir: t.TempDir()})
	forbidden := regexp.MustCompile(`ledger\.(Store|Data)|noise\.Sampler|runtime\.Runtime|\*sql\.|pca\.(Plan|Options)|dataset\.Table`)
	seen := map[reflect.Type]bool{}
	var walk func(where string, ty reflect.Type)
	walk = func(where string, ty reflect.Type) {
		if ty == nil || seen[ty] {
			return
		}
		seen[ty] = true
		if forbidden.MatchString(ty.String()) {
			t.Errorf("%s exposes %s", where, ty)
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(where, ty.Elem())
		case reflect.Map:
			walk(where, ty.Key())
			walk(where, ty.Elem())
		case reflect.Func:
			for i := 0; i < ty.NumIn(); i++ {
				walk(where, ty.In(i))
			}
			for i := 0; i < ty.NumOut(); i++ {
				walk(where, ty.Out(i))
			}
		case reflect.Struct:
			for i := 0; i < ty.NumField(); i++ {
				if f := ty.Field(i); f.IsExported() {
					walk(where+"."+f.Name, f.Type)
				}
			}
		}
		for _, t2 := range []reflect.Type{ty, reflect.PointerTo(ty)} {
			for i := 0; i < t2.NumMethod(); i++ {
				walk(where+"."+t2.Method(i).Name, t2.Method(i).Type)
			}
		}
	}
	for name, v := range rt.Exports() {
		walk(name, v.Type())
	}
	if len(seen) < 10 {
		t.Fatalf("walked only %d types", len(seen))
	}
}

// Escape 6: spending from many goroutines at once never exceeds the budget.
func TestEscapeGoroutines(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	out := s.ok(`ds := dataset("secret")
done := make(chan bool)
for i := 0; i < 24; i++ {
	go func() {
		ok := false
		defer func() {
			recover()
			done <- ok
		}()
		private_count(ds, eps=0.15)
		ok = true
	}()
}
okc := 0
for i := 0; i < 24; i++ {
	if <-done {
		okc++
	}
}
fmt.Println(okc)
`)
	if strings.TrimSpace(out) != "6" {
		t.Errorf("%q charges succeeded, want 6 (budget 1, 0.15 each)", out)
	}
	st := status(t, dir, "secret")
	if st.Spent.Eps > 1+1e-12 || st.Charges != 6 {
		t.Errorf("spent %v in %d charges", st.Spent, st.Charges)
	}
	verify(t, dir)
}

// Escape 7: restarting the kernel, opening a second one concurrently, or
// pointing a cell at another state directory does not regain budget.
func TestEscapeRestartAndSecondKernel(t *testing.T) {
	s1, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	s1.ok(`ds := dataset("secret")
c := private_count(ds, eps=0.4)`)
	before := s1.ok(`fmt.Println(remaining(ds))`)
	// restart: a new runtime and engine on the same state directory
	s2 := newSession(t, dir)
	after := s2.ok(`ds := dataset("secret")
fmt.Println(remaining(ds))`)
	if before != after || !strings.Contains(after, "remaining ε=0.6") {
		t.Errorf("remaining before restart %q, after %q", before, after)
	}
	// two kernels racing for the rest: together they never exceed it
	var wg sync.WaitGroup
	var mu sync.Mutex
	okc := 0
	for _, s := range []*session{s1, s2} {
		wg.Add(1)
		go func(s *session) {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				res, _ := s.run(`c := private_count(ds, eps=0.1)`)
				if res.Error == nil {
					mu.Lock()
					okc++
					mu.Unlock()
				} else if res.Error.Name != NameBudgetExceeded {
					t.Errorf("unexpected error %s: %s", res.Error.Name, res.Error.Value)
				}
			}
		}(s)
	}
	wg.Wait()
	if okc != 6 {
		t.Errorf("%d charges of 0.1 succeeded after spending 0.4 of 1, want 6", okc)
	}
	if st := status(t, dir, "secret"); st.Spent.Eps > 1+1e-12 {
		t.Errorf("spent %v > budget", st.Spent)
	}
	verify(t, dir)
	// another state directory: no API takes a path, and a name resolves in
	// the session's own directory only.
	other := t.TempDir()
	register(t, other, "fresh", secretTable(), accounting.Budget{Eps: 100, Delta: 0}, accounting.ModeBasic)
	for _, cell := range []string{`x := dataset("fresh")`, `x := dataset(` + strconv.Quote(other+"/state.db") + `)`, `x := dataset("../secret")`} {
		s2.fails(cell, NameDatasetError)
	}
	// download's string is the name the browser saves under, put into an
	// HTML attribute, never opened: a path is refused all the same.
	s2.ok(`var c *CountResult`)
	for _, name := range []string{other + "/state.db", "../state.db", "state.db"} {
		res, _ := s2.fails(`download(c, `+strconv.Quote(name)+`)`, NameArgumentError)
		if !strings.Contains(res.Error.Value, "file name") {
			t.Errorf("download to %q: %s, want the file name refused", name, res.Error.Value)
		}
	}
	// eps_for's string names a private function, looked up in the
	// catalog and never opened: a path is refused as an unknown function.
	for _, name := range []string{other + "/state.db", "../state.db"} {
		res, _ := s2.fails(`eps_for(dataset("secret"), `+strconv.Quote(name)+`, within=1)`, NameArgumentError)
		if !strings.Contains(res.Error.Value, "has no interval of values to invert") {
			t.Errorf("eps_for of %q: %s, want the name refused", name, res.Error.Value)
		}
	}
	for name, v := range s2.rt.Exports() {
		if v.Kind() == reflect.Func && name != "dataset" && name != "__pn_kw" && name != "__pn_magic" && name != "__pn_budget_begin" && name != "__pn_block" && name != "download" && name != "eps_for" {
			for i := 0; i < v.Type().NumIn(); i++ {
				if v.Type().In(i).Kind() == reflect.String {
					t.Errorf("%s takes a string argument: it must not name a state directory", name)
				}
			}
		}
	}
}

// Escape 8: errors, warnings and receipts do not depend on private values:
// two datasets with the same public schema but different rows (and row
// counts) give identical messages.
func TestEscapeErrorsDataIndependent(t *testing.T) {
	dir := t.TempDir()
	b := accounting.Budget{Eps: 3, Delta: 1e-5}
	register(t, dir, "a", table(40, 4, 1, 0.2), b, accounting.ModeZCDP)
	register(t, dir, "b", table(97, 4, 2, 5.0), b, accounting.ModeZCDP)
	cells := []string{
		`r := private_pca(ds, k=5, eps=0.1, delta=1e-6)`,                     // k > d
		`r := private_pca(ds, k=2, eps=0.1, delta=1e-6, method="dppca")`,     // k=1 only
		`r := private_pca(ds, k=1, eps=0.1, delta=1e-6, method="adaptive")`,  // needs iters
		`r := private_pca(ds, eps=0.1)`,                                      // no delta
		`r := private_mean(ds, eps=0.1, delta=1e-6, columns=[]string{"zz"})`, // unknown column
		`r := private_pca(ds, k=1, eps=0.5, delta=1e-6, method="dppca", calibration="paper")
show(r.Receipt.String())`, // needs a public n: refused before the charge
		`r := private_pca(ds, k=1, eps=0.5, delta=1e-6, method="oja", iters=200)
show(r.Receipt.String())`, // the same
		`r := private_fedrep(ds, k=1, eps=1, delta=1e-6)`, // not user-level
		`r := private_count(ds, eps=100)`,                 // over budget
		`r := private_pca(ds, k=2, eps=0.3, delta=1e-6, method="gauss")
show(r.Receipt.String())`,
		`r := private_mean(ds, eps=0.3, delta=1e-6)
show(r.Receipt.String())`,
		`r := private_count(ds, eps=0.2)
show(r.Receipt.String())`,
		`r := private_pca(ds, k=1, eps=0.3, delta=1e-6, method="npm", iters=3)
show(r.Receipt.String())`,
		`r := private_pca(ds, k=1, eps=0.3, delta=1e-6, method="federated", providers=2, iters=3)
show(r.Receipt.String())`,
	}
	msgs := map[string][]string{}
	for _, name := range []string{"a", "b"} {
		s := newSession(t, dir)
		s.ok(fmt.Sprintf("ds := dataset(%q)", name))
		for _, c := range cells {
			res, out := s.run(c)
			text := ""
			if res.Error != nil {
				text = res.Error.Name + ": " + res.Error.Value
			}
			for _, d := range out.disp {
				text += fmt.Sprint(d.Data["text/plain"])
			}
			text = strings.ReplaceAll(text, `"`+name+`"`, "DS")
			text = strings.ReplaceAll(text, " on "+name, " on DS")
			text = regexp.MustCompile(`dataset `+name+`\b`).ReplaceAllString(text, "dataset DS")
			text = regexp.MustCompile(`ledger record \d+`).ReplaceAllString(text, "ledger record N")
			text = regexp.MustCompile(`test\[\d+\]`).ReplaceAllString(text, "test[N]")
			msgs[name] = append(msgs[name], text)
		}
	}
	for i := range cells {
		if msgs["a"][i] != msgs["b"][i] {
			t.Errorf("cell %q: messages differ between datasets:\n a: %s\n b: %s", cells[i], msgs["a"][i], msgs["b"][i])
		}
		if msgs["a"][i] == "" {
			t.Errorf("cell %q: no message to compare", cells[i])
		}
	}
	// DP-PCA and private Oja need the row count public: on data that keep
	// it private they are refused before the charge, whatever n.
	for _, i := range []int{5, 6} {
		if !strings.HasPrefix(msgs["a"][i], NameArgumentError) || !strings.Contains(msgs["a"][i], "--public-n") {
			t.Errorf("dppca/oja on 40 and 97 private rows: %s, want a refusal naming --public-n", msgs["a"][i])
		}
	}
	if st := status(t, dir, "a"); st.Charges == 0 {
		t.Errorf("no charge at all: the receipts compared above were not released")
	}
}

// Escape 9: a refused cell has no side effects: nothing before the private
// call runs (not even a print) and nothing is charged.
func TestEscapeRefusedCellNoSideEffects(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	s.ok(`ds := dataset("secret")`)
	cells := map[string]string{
		"over the block cap": `fmt.Println("side effect")
x := 1
budget eps=0.5, delta=1e-6 {
	fmt.Println("inside")
	r := private_pca(ds, k=1, eps=0.6, delta=1e-6)
}`,
		"over the block cap, two calls": `fmt.Println("side effect")
budget eps=0.5, delta=1e-6 {
	r1 := private_pca(ds, k=1, eps=0.4, delta=1e-7)
	r2 := private_pca(ds, k=1, eps=0.4, delta=1e-7)
}`,
		"over the dataset": `fmt.Println("side effect")
r := private_pca(dataset("secret"), k=1, eps=2, delta=1e-7)`,
		"%%budget cell": `%%budget eps=0.1 delta=1e-6
fmt.Println("side effect")
r := private_count(ds, eps=0.2)`,
	}
	for name, cell := range cells {
		res, out := s.run(cell)
		if res.Error == nil || res.Error.Name != NameBudgetExceeded {
			t.Errorf("%s: %+v, want BudgetExceeded", name, res.Error)
			continue
		}
		if out.stdout() != "" {
			t.Errorf("%s: the refused cell printed %q", name, out.stdout())
		}
		for _, want := range []string{"spent", "remaining", "nothing ran"} {
			if !strings.Contains(res.Error.Value, want) {
				t.Errorf("%s: error %q does not say %q", name, res.Error.Value, want)
			}
		}
		// a call's refusal says what it asked; a block's, what it requested
		if !strings.Contains(res.Error.Value, "this call asks eps=") && !strings.Contains(res.Error.Value, "requested") {
			t.Errorf("%s: error %q says neither what the call asked nor what was requested", name, res.Error.Value)
		}
	}
	if st := status(t, dir, "secret"); st.Charges != 0 {
		t.Errorf("refused cells charged %d times", st.Charges)
	}
	res, _ := s.run(`x`)
	if res.Error == nil {
		t.Error("x was defined by a refused cell")
	}
}

// A normal private_pca in a budget block works and charges exactly the
// planned event; the ledger verifies.
func TestPrivatePCAChargesPlannedEvent(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 2, Delta: 1e-5}, accounting.ModeZCDP)
	out := s.ok(`ds := dataset("secret")
budget eps=1, delta=1e-6 {
	pc := private_pca(ds, k=2, eps=0.7, delta=1e-6, method="npm", iters=5)
}
r, c := pc.Components.Dims()
fmt.Println(r, c, pc.Method, pc.Receipt.LedgerID)`)
	if strings.TrimSpace(out) != "4 2 pca/npm 2" {
		t.Errorf("got %q", out)
	}
	pl, err := pca.PlanNoisyPower(pca.Options{K: 2, Iters: 5, Eps: 0.7, Delta: 1e-6, Clip: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.Entries("secret")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Event == nil || *es[1].Event != pl.Cost {
		t.Fatalf("ledger %+v, want the planned event %+v", es, pl.Cost)
	}
	if !strings.HasPrefix(es[1].Cell, "test[") {
		t.Errorf("ledger cell %q", es[1].Cell)
	}
	var params map[string]any
	if err := json.Unmarshal(es[1].Params, &params); err != nil || params["method"] != "npm" || params["k"] != float64(2) {
		t.Errorf("ledger params %s", es[1].Params)
	}
	verify(t, dir)
}

// Run-time refusals: calls whose cost is not static (in a loop) are
// charged one by one against the block's cap and the dataset; the refusal
// names the block, with requested, spent and remaining.
func TestRuntimeRefusals(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	res, out := s.run(`ds := dataset("secret")
n := 0
budget eps=0.5 {
	for i := 0; i < 10; i++ {
		c := private_count(ds, eps=0.1)
		n++
	}
}`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || !strings.Contains(res.Error.Value, "budget block at line 3 of cell [1]") {
		t.Fatalf("got %+v, want BudgetExceeded of the block", res.Error)
	}
	_ = out
	if got := s.ok(`fmt.Println(n)`); strings.TrimSpace(got) != "5" {
		t.Errorf("%s charges in the block, want 5", got)
	}
	res, _ = s.run(`for i := 0; i < 10; i++ {
	c := private_count(ds, eps=0.2)
}`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || !strings.Contains(res.Error.Value, `dataset "secret"`) {
		t.Fatalf("got %+v, want BudgetExceeded of the dataset", res.Error)
	}
	// the refused call in the terms it was asked, and what still fits
	for _, want := range []string{"this call asks eps=0.2, priced by the basic composition", "spent (ε=0.9, δ=0)", "remaining (ε=0.1, δ=0)",
		`What still fits on dataset "secret", one call alone: pure ε≤0.0999, quantile ε≤0.0999`} {
		if !strings.Contains(res.Error.Value, want) {
			t.Errorf("error %q lacks %q", res.Error.Value, want)
		}
	}
	if st := status(t, dir, "secret"); math.Abs(st.Spent.Eps-0.9) > 1e-9 || st.Charges != 7 {
		t.Errorf("spent %v in %d charges, want ε=0.9 in 7", st.Spent, st.Charges)
	}
	verify(t, dir)
	// Nested blocks at run time, and a block left open by an error.
	s.fails(`func f() {
	budget eps=0.1 {
		c := private_count(ds, eps=0.05)
	}
}
budget eps=0.2 {
	f()
}`, NameBudgetBlock)
	s.fails(`budget eps=0.3 {
	panic("stop")
}`, "RuntimeError")
	// no block is left open: only the dataset's remaining 0.1 limits
	s.ok(`c := private_count(ds, eps=0.1)`)
}

// A goroutine that outlives its cell cannot spend. The goroutine waits on
// a gate that the test opens only after Execute of its cell has returned,
// and the next cell starts only after the goroutine's call has returned,
// so the call falls between the two cells on any machine (sleeps here made
// the order, and so the result, depend on the scheduler).
func TestGoroutineAfterCell(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "secret", secretTable(), accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	gate, called := make(chan struct{}), make(chan struct{})
	s := newSessionWith(t, dir, map[string]reflect.Value{
		"test_gate":   reflect.ValueOf(func() { <-gate }),
		"test_called": reflect.ValueOf(func() { close(called) }),
	})
	s.ok(`ds := dataset("secret")
result := make(chan string, 1)
go func() {
	test_gate()
	defer func() { result <- fmt.Sprint(recover()); test_called() }()
	private_count(ds, eps=0.1)
}()`)
	close(gate)
	select {
	case <-called:
	case <-time.After(20 * time.Second): // a hang, not a timing bound
		t.Fatal("the goroutine's call did not return within 20 s")
	}
	out := s.ok(`fmt.Println(<-result)`)
	if !strings.Contains(out, "after its cell ended") {
		t.Errorf("late call: %q", out)
	}
	if st := status(t, dir, "secret"); st.Charges != 0 {
		t.Errorf("%d charges", st.Charges)
	}
}

// The engine contract: an interrupted mechanism keeps its charge and the
// ledger stays valid.
func TestInterruptKeepsCharge(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "big", table(2000, 20, 3, 0.1), accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("big")`)
	// The hook holds the mechanism, after its charge and load, until the
	// cell is cancelled, then lets it start on the cancelled context: the
	// interrupt lands while the mechanism runs on every machine, fast or
	// loaded. (That mechanisms stop on a cancelled context between
	// iterations is tested in their packages.)
	started := make(chan int, 1)
	testRunHook = func(run func(context.Context, *release.Data) (any, error)) func(context.Context, *release.Data) (any, error) {
		return func(ctx context.Context, d *release.Data) (any, error) {
			started <- status(t, dir, "big").Charges
			<-ctx.Done()
			return run(ctx, d)
		}
	}
	t.Cleanup(func() { testRunHook = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &recOutput{}
	done := make(chan engine.ExecuteResult)
	go func() {
		done <- s.eng.Execute(ctx, engine.ExecuteRequest{Code: `r := private_pca(ds, k=3, eps=1, delta=1e-6, method="npm", iters=2000)`, CellID: "int"}, out)
	}()
	select {
	case charges := <-started:
		if charges != 1 {
			t.Fatalf("the mechanism started with %d charges on disk, want 1", charges)
		}
	case res := <-done:
		t.Fatalf("the cell ended before its mechanism started: %+v", res.Error)
	}
	cancel()
	res := <-done
	if res.Error == nil || res.Error.Name != NameInterrupted {
		t.Fatalf("got %+v; want an interrupt", res.Error)
	}
	if st := status(t, dir, "big"); st.Charges != 1 {
		t.Errorf("%d charges after the interrupt, want 1", st.Charges)
	}
	verify(t, dir)
}

// Escape 6c: a goroutine an earlier cell started that calls a private
// function while a later cell runs is refused with NoCell, whatever the
// go statement looks like: it is not charged under the running cell's id
// or block. The goroutines take the session's variables as arguments:
// reading a global while the next cell runs is a data race inside yaegi
// (it resizes the global frame), unrelated to what is tested here.
func TestGoroutineOfEarlierCell(t *testing.T) {
	cases := []struct {
		name, start, finish string
	}{
		{"literal", `gate := make(chan bool)
result := make(chan string, 1)
go func(gate chan bool, result chan string, ds Dataset) {
	<-gate
	defer func() { result <- fmt.Sprint(recover()) }()
	private_count(ds, eps=0.1)
}(gate, result, ds)`, `close(gate)
fmt.Println(<-result)`},
		{"nested", `gate := make(chan bool)
result := make(chan string, 1)
go func(gate chan bool, result chan string, ds Dataset) {
	go func() {
		<-gate
		defer func() { result <- fmt.Sprint(recover()) }()
		private_count(ds, eps=0.1)
	}()
}(gate, result, ds)`, `close(gate)
fmt.Println(<-result)`},
		// go f(x) is not rewritten by the engine; the goroutine still
		// carries its cell's labels.
		{"named function", `gate := make(chan bool)
result := make(chan string, 1)
func spend(d Dataset, g chan bool, r chan string) {
	<-g
	defer func() { r <- fmt.Sprint(recover()) }()
	private_count(d, eps=0.1)
}
go spend(ds, gate, result)`, `close(gate)
fmt.Println(<-result)`},
		// The later cell's budget block must not pay for the goroutine.
		{"inside a block", `gate := make(chan bool)
result := make(chan string, 1)
go func(gate chan bool, result chan string, ds Dataset) {
	<-gate
	defer func() { result <- fmt.Sprint(recover()) }()
	private_count(ds, eps=0.1)
}(gate, result, ds)`, `budget eps=0.15 {
	close(gate)
	fmt.Println(<-result)
	private_count(ds, eps=0.15)
	fmt.Println("own charged")
}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
			s.ok(`ds := dataset("secret")`)
			s.ok(tc.start)
			out := s.ok(tc.finish)
			if !strings.Contains(out, "NoCell") && !strings.Contains(out, "after its cell ended") {
				t.Errorf("the earlier cell's goroutine was not refused: %q", out)
			}
			want := 0
			if strings.Contains(tc.finish, "own") {
				want = 1
				if !strings.Contains(out, "own charged") {
					t.Errorf("the running cell's own call was not charged in its block: %q", out)
				}
			}
			if st := status(t, dir, "secret"); st.Charges != want {
				t.Errorf("%d charges, want %d", st.Charges, want)
			}
			verify(t, dir)
		})
	}
}

// Goroutines of the running cell charge normally: nested ones, ones started
// by go f(x), and ones a function declared in an earlier cell starts while
// this cell calls it.
func TestGoroutinesOfRunningCellCharge(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 0}, accounting.ModeBasic)
	s.ok(`ds := dataset("secret")
func spend(d Dataset, r chan string) {
	defer func() { r <- fmt.Sprint(recover()) }()
	private_count(d, eps=0.1)
}
func fan(d Dataset, n int) []string {
	r := make(chan string, n)
	for i := 0; i < n; i++ {
		go spend(d, r)
	}
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, <-r)
	}
	return out
}`)
	out := s.ok(`r := make(chan string, 2)
go func() {
	go func() {
		defer func() { r <- fmt.Sprint(recover()) }()
		private_count(ds, eps=0.1)
	}()
}()
go spend(ds, r)
fmt.Println(<-r, <-r)
fmt.Println(fan(ds, 3))`)
	if want := "<nil> <nil>\n[<nil> <nil> <nil>]\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if st := status(t, dir, "secret"); st.Charges != 5 {
		t.Errorf("%d charges, want 5", st.Charges)
	}
	verify(t, dir)
}
