package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The pre-check resolves a handle defined in an earlier cell: a cell over
// the dataset's remaining budget is refused whole, before anything of it
// runs, even though the block's own cap allows the call.
func TestPrecheckAcrossCells(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	register(t, dir, "big", secretTable(), accounting.Budget{Eps: 50, Delta: 1e-5}, accounting.ModeZCDP)
	s.ok(`bc := dataset("secret")
pbc := &bc`)

	cells := map[string]string{
		"block": `fmt.Println("side effect")
budget eps=5, delta=1e-6 {
	p := private_pca(bc, k=1, eps=2, delta=1e-6)
}`,
		"no block": `fmt.Println("side effect")
n := private_count(bc, eps=3)`,
		"used before": `fmt.Println("side effect", bc.Columns())
show(remaining(bc))
n := private_count(bc, eps=3)`,
		"pointer handle": `fmt.Println("side effect")
n := private_count(pbc, eps=3)`,
	}
	for name, cell := range cells {
		res, out := s.run(cell)
		if res.Error == nil || res.Error.Name != NameBudgetExceeded {
			t.Errorf("%s: %+v, want BudgetExceeded before the cell runs", name, res.Error)
			continue
		}
		if out.stdout() != "" {
			t.Errorf("%s: the refused cell ran: printed %q", name, out.stdout())
		}
		for _, want := range []string{`dataset "secret"`, "this call asks eps=", "remaining", "nothing ran", "What still fits"} {
			if !strings.Contains(res.Error.Value, want) {
				t.Errorf("%s: error %q does not say %q", name, res.Error.Value, want)
			}
		}
	}
	if st := status(t, dir, "secret"); st.Charges != 0 {
		t.Errorf("refused cells charged %d times", st.Charges)
	}

	// Rebinding the variable in the cell before the call makes the call
	// dynamic: the pre-check must not check the old dataset.
	out := s.ok(`name := "big"
bc = dataset(name)
fmt.Println("ran")
budget eps=5, delta=1e-6 {
	p := private_pca(bc, k=1, eps=2, delta=1e-6)
}
fmt.Println(p.Receipt.Dataset)`)
	if strings.TrimSpace(out) != "ran\nbig" {
		t.Errorf("shadowed handle: got %q", out)
	}
	// So does a write through a pointer (pbc aliases bc).
	s.ok(`bc = dataset("secret")`)
	out = s.ok(`*pbc = dataset("big")
n := private_count(bc, eps=3)
fmt.Println(n.Receipt.Dataset)`)
	if strings.TrimSpace(out) != "big" {
		t.Errorf("handle rebound through a pointer: got %q", out)
	}
	// So does a call of a user function before it (it may assign bc).
	s.ok(`func toSecret() { bc = dataset("secret") }
func toBig() { bc = dataset("big") }`)
	s.ok(`toSecret()`)
	out = s.ok(`toBig()
n := private_count(bc, eps=3)
fmt.Println(n.Receipt.Dataset)`)
	if strings.TrimSpace(out) != "big" {
		t.Errorf("handle rebound by a function: got %q", out)
	}
	if st := status(t, dir, "secret"); st.Charges != 0 {
		t.Errorf("secret was charged %d times", st.Charges)
	}
}

// The block's cap is checked before the cell runs even when the dataset
// cannot be known; with the dataset (and so its composition rule)
// unknown, the cell is refused only when every rule would refuse it.
func TestPrecheckBlockUnknownDataset(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeBasic)
	s.ok(`hs := []Dataset{dataset("secret")}`)
	res, out := s.run(`fmt.Println("side effect")
budget eps=0.5, delta=1e-6 {
	r := private_pca(hs[0], k=1, eps=0.6, delta=1e-6)
}`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || out.stdout() != "" {
		t.Fatalf("over the block cap with an unknown dataset: %+v, output %q", res.Error, out.stdout())
	}
	if !strings.Contains(res.Error.Value, "budget block at line 2 of cell [2]") {
		t.Errorf("error %q does not name the block", res.Error.Value)
	}
	// Two Laplace counts of ε=0.5 fit a block of ε=1 under the basic
	// rule of this dataset (under zCDP they would not): not refused.
	out2 := s.ok(`budget eps=1, delta=1e-6 {
	a := private_count(hs[0], eps=0.5)
	b := private_count(hs[0], eps=0.5)
}
fmt.Println(a.Receipt.Charged, b.Receipt.Charged)`)
	if strings.TrimSpace(out2) != "true true" {
		t.Errorf("got %q", out2)
	}
	if st := status(t, dir, "secret"); st.Charges != 2 {
		t.Errorf("charges = %d, want 2", st.Charges)
	}
}

// Receipts and errors name a block by the cell's execution count and the
// block's line; the ledger keeps the front end's full cell id for audit.
func TestReadableBlockLabels(t *testing.T) {
	s, dir := newSecretSession(t, accounting.Budget{Eps: 5, Delta: 1e-5}, accounting.ModeZCDP)
	const rawID = "8a0a18ec-5b2c-4c1e-9d1f-0c3f2b7a6e11_10742_5"
	run := func(code string, count int) string {
		out := &recOutput{}
		res := s.eng.Execute(context.Background(), engine.ExecuteRequest{Code: code, CellID: rawID, ExecutionCount: count}, out)
		if res.Error != nil {
			return res.Error.Name + ": " + res.Error.Value
		}
		return out.stdout()
	}
	run(`ds := dataset("secret")`, 3)
	got := run(`x := 1
  budget eps=1, delta=1e-6 {
	p := private_pca(ds, k=1, eps=0.5, delta=1e-6)
}
fmt.Println(p.Receipt.Block)
fmt.Println(p.Receipt)`, 4)
	if !strings.HasPrefix(got, "cell [4], block at line 2, column 3\n") || strings.Contains(got, rawID) {
		t.Errorf("receipt: %q", got)
	}
	got = run(`budget eps=0.1, delta=1e-6 {
	for i := 0; i < 2; i++ {
		c := private_pca(ds, k=1, eps=0.2, delta=1e-6)
	}
}`, 5)
	if !strings.Contains(got, "budget block at line 1 of cell [5]") || strings.Contains(got, rawID) {
		t.Errorf("run-time refusal: %q", got)
	}
	got = run(`budget eps=0.1, delta=1e-6 {
	c := private_pca(ds, k=1, eps=0.2, delta=1e-6)
}`, 6)
	if !strings.Contains(got, "budget block at line 1 of cell [6]") || strings.Contains(got, rawID) {
		t.Errorf("pre-check refusal: %q", got)
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
	if len(es) != 2 || es[1].Cell != rawID+"[4]" {
		t.Errorf("ledger records %+v, want the charge of cell %s[4]", es, rawID)
	}
}

// The pre-check prices a call by planning it: a keyword whose value is not
// a literal is planned at its default only when the catalog marks it
// CostFree; one that can change the cost (method, calibration) leaves the
// call to the run-time charge.
func TestStaticEventPlansCostFreeKeywordsAtDefaults(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(60, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	rt, _ := New(Config{StateDir: dir})
	defer rt.Close()
	sc, err := rt.mustStore().Schema("d")
	if err != nil {
		t.Fatal(err)
	}
	src := &source{name: "d", schema: sc}
	fn := catalog.PrivatePCA
	c := syntax.Call{Func: fn.Name, Eps: 0.5, Delta: 1e-6, Static: true}
	a, err := parseArgs(fn.Name, []KW{newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", "npm")})
	if err != nil {
		t.Fatal(err)
	}
	npm := rt.planCall(fn.Name, src, a).Event()
	for _, tc := range []struct {
		lits map[string]any
		ok   bool
	}{
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": "npm"}, true},
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": "npm", "k": nonLiteral{}}, true},
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": "npm", "iters": nonLiteral{}}, true},
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": nonLiteral{}}, false},
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": "npm", "calibration": nonLiteral{}}, false},
		{map[string]any{"eps": 0.5, "delta": 1e-6, "method": "npm", "k": 7}, false}, // k > d: refused when it runs
	} {
		ev, ok := rt.staticEvent(c, fn, src, tc.lits)
		if ok != tc.ok {
			t.Errorf("%v: priced %v, want %v", tc.lits, ok, tc.ok)
			continue
		}
		if ok && (!sameCost(ev, npm) || ev.Mechanism != fn.Name) {
			t.Errorf("%v: event %+v, want the plan's %+v named %s", tc.lits, ev, npm, fn.Name)
		}
	}
	// On a dataset the pre-check cannot know it composes floors: pure ε,
	// or ρ*(ε, δ); nothing for a function that needs δ > 0 at δ = 0.
	for _, tc := range []struct {
		f          *catalog.Func
		eps, delta float64
		want       accounting.Event
		ok         bool
	}{
		{catalog.PrivateCount, 0.5, 0, accounting.Pure(0.5), true},
		{catalog.PrivatePCA, 0.5, 1e-6, accounting.ZcdpFor(0.5, 1e-6), true},
		{catalog.PrivatePCA, 0.5, 0, accounting.Event{}, false},
	} {
		ev, ok := floorEvent(tc.f, tc.eps, tc.delta)
		if ok != tc.ok || ok && !sameCost(ev, tc.want) {
			t.Errorf("floor of %s at (%g, %g): %+v %v, want %+v %v", tc.f.Name, tc.eps, tc.delta, ev, ok, tc.want, tc.ok)
		}
	}
}
