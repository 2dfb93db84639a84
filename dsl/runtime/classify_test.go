package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// private_classify_jl runs from a cell in both variants on public
// synthetic users (synth_fedrep's responses read by sign) and releases a
// d×k U_priv with its variant and k′ on the receipt.
func TestClassifyJLCell(t *testing.T) {
	seedNoise(t, 4)
	s := newSession(t, t.TempDir())
	out := s.ok(`fr := synth_fedrep(users=200, m=8, d=10, k=2, seed=2)
a := private_classify_jl(fr, k=2, eps=8, candidates=200)
b := private_classify_jl(fr, k=2, eps=8, delta=1e-6, variant="fedrep-jl")
ra, ca := a.U.Dims()
rb, cb := b.U.Dims()
fmt.Println(ra, ca, rb, cb, a.Receipt.Params["variant"], b.Receipt.Params["variant"], a.Receipt.Params["k_prime"], a.Receipt.Params["candidates"])`)
	if got, want := strings.TrimSpace(out), "10 2 10 2 pool fedrep-jl 4 200"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// The pre-check's cost is the plan's, for both variants.
func TestClassifyJLCostMatchesPlan(t *testing.T) {
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c", "d", "e", "f"}, D: 6, Clip: 1, Unit: "user", UserColumn: "u", Label: "y",
		Neighbour: "replace-one", Accountant: "zcdp", Center: "none", PublicN: 100}
	plan := planVia("private_classify_jl")
	for _, c := range []struct {
		variant string
		delta   float64
		kind    accounting.Kind
	}{{"pool", 0, accounting.PureDP}, {"fedrep-jl", 1e-6, accounting.ZCDP}} {
		a, err := parseArgs("private_classify_jl", []KW{newKW("eps", 0.7), newKW("delta", c.delta), newKW("variant", c.variant)})
		if err != nil {
			t.Fatal(err)
		}
		p := plan(&source{name: "x", schema: sc}, a)
		want, ok := costFor("private_classify_jl", "", "", "zcdp", 0.7, c.delta)
		if !ok || !sameCost(p.Cost, want) || p.Cost.Kind != c.kind {
			t.Errorf("%s: plan costs %+v, costFor %+v", c.variant, p.Cost, want)
		}
	}
}

// Every refusal comes before the charge, with a message saying what to
// do, and nothing reaches the ledger.
func TestClassifyJLRefusals(t *testing.T) {
	dir := t.TempDir()
	registerWith(t, dir, ledger.Registration{Name: "users", Table: harnessTable(variant{"10 units", 10, false}, true),
		Budget: accounting.Budget{Eps: 10, Delta: 1e-3}, Accountant: accounting.ModeZCDP, Clip: 1, LabelClip: 1, Source: "test"})
	registerWith(t, dir, ledger.Registration{Name: "rows", Table: harnessTable(variant{"10 units", 10, false}, false),
		Budget: accounting.Budget{Eps: 10, Delta: 1e-3}, Accountant: accounting.ModeZCDP, Clip: 1, Source: "test"})
	s := newSession(t, dir)
	for _, c := range []struct{ call, want string }{
		{`private_classify_jl(dataset("rows"), eps=1)`, "--unit user"},
		{`private_classify_jl(dataset("users"), eps=1, delta=1e-6)`, "pure ε"},
		{`private_classify_jl(dataset("users"), eps=1, variant="fedrep-jl")`, "delta > 0"},
		{`private_classify_jl(dataset("users"), eps=1, delta=1e-6, variant="fedrep-jl")`, "public-n"},
		{`private_classify_jl(dataset("users"), eps=1, candidates=0, k=2)`, "toy exact mode"},
		{`private_classify_jl(dataset("users"), eps=1, rho=0)`, "rho"},
		{`private_classify_jl(dataset("users"), eps=1, k=4)`, "k=4"},
	} {
		res, _ := s.fails(`_ = `+c.call, "ArgumentError")
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %q, want it to mention %q", c.call, res.Error.Value, c.want)
		}
	}
	if st := status(t, dir, "users"); st.Spent.Eps != 0 {
		t.Errorf("refused calls spent %v", st.Spent)
	}
	// A pool call on the same data is charged pure ε.
	s.ok(`r := private_classify_jl(dataset("users"), eps=1, candidates=10)
fmt.Println(r.Receipt.Params["variant"])`)
	if st := status(t, dir, "users"); !(st.Spent.Eps > 0) {
		t.Errorf("the pool call was not charged: %v", st.Spent)
	}
}
