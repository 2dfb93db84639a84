package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// On a dataset registered with the rdp accountant (issue 28, item 3) the
// pure-ε calls cost what exact composition says: on a (4.4, 10⁻⁵) budget
// four ε = 1 Laplace counts fit, where the zcdp accountant refuses the
// first; receipts name the Rényi filter and its order, %budget states
// both branches of the filter, a block without δ composes by the basic
// rule, and an approximate (ε, δ) call (DP-PCA with the paper's calibration) is
// refused before anything is charged, saying which accountant runs it.
func TestRDPAccountantEndToEnd(t *testing.T) {
	dir := t.TempDir()
	budget := accounting.Budget{Eps: 4.4, Delta: 1e-5}
	register(t, dir, "r", table(200, 3, 1, 1), budget, accounting.ModeRDP)
	register(t, dir, "z", table(200, 3, 1, 1), budget, accounting.ModeZCDP)
	s := newSession(t, dir)

	s.fails(`private_count(dataset("z"), eps=1)`, release.NameBudgetExceeded)
	for i := 0; i < 4; i++ {
		out := s.ok(`fmt.Println(private_count(dataset("r"), eps=1).Receipt)`)
		if !strings.Contains(out, "Rényi filter ρ(α=") || !strings.Contains(out, "(pure ε=1)") {
			t.Fatalf("count %d: the receipt does not name the Rényi filter's price:\n%s", i+1, out)
		}
	}
	if st := status(t, dir, "r"); st.Spent.Eps > 4.4+1e-9 {
		t.Errorf("four ε=1 counts spent %v of (4.4, 1e-5)", st.Spent)
	}
	res, out := s.fails(`private_count(dataset("r"), eps=1)`, release.NameBudgetExceeded)
	if text := out.all(res); !strings.Contains(text, "budget") {
		t.Errorf("the fifth count's refusal does not speak of the budget:\n%s", text)
	}
	res, out = s.run(`%budget r`)
	budgetText := out.all(res)
	if !strings.Contains(budgetText, "Rényi filter at α=") || !strings.Contains(budgetText, "pure ε-DP filter Σε=4") {
		t.Errorf("%%budget does not state the two branches of the filter:\n%s", budgetText)
	}
	// What still fits, in the analyst's terms (issue 28, item 4): a call
	// of exactly the reported ε is admitted on both accountants, where the
	// ε = 1 the zcdp dataset refused is above it.
	fits := s.ok(`bz := remaining(dataset("z"))
br := remaining(dataset("r"))
fmt.Println(bz.FitsPure > 0.5, bz.FitsPure < 1, br.FitsPure > 0, br.FitsPure < 1, bz.FitsGaussian > 1)
fmt.Println(bz)
private_count(dataset("z"), eps=bz.FitsPure)
private_count(dataset("r"), eps=br.FitsPure)`)
	if !strings.Contains(fits, "true true true true true") || !strings.Contains(fits, "one more call fits: pure ε≤") {
		t.Errorf("remaining() does not say what fits:\n%s", fits)
	}
	verify(t, dir)
}

// Approximate (ε, δ) events have no Rényi bound: the rdp accountant
// refuses them when it plans the call, before anything is charged, and the
// refusal says to register with zcdp. A budget block without δ on an rdp dataset composes by the basic
// rule, as zcdp's and gdp's do.
func TestRDPRefusesApproximateCalls(t *testing.T) {
	dir := t.TempDir()
	registerPublicN(t, dir, "r", table(400, 4, 2, 1), accounting.Budget{Eps: 4.4, Delta: 1e-5}, accounting.ModeRDP)
	s := newSession(t, dir)
	res, out := s.fails(`private_pca(dataset("r"), k=1, eps=0.5, delta=1e-6, method="dppca", calibration="paper", pad=true)`, release.NameArgumentError)
	text := out.all(res)
	if !strings.Contains(text, "zcdp") {
		t.Errorf("the refusal of an (ε, δ) call does not say to use the zcdp accountant:\n%s", text)
	}
	if st := status(t, dir, "r"); st.Spent.Eps != 0 {
		t.Errorf("a refused call spent %v", st.Spent)
	}
	if m := blockMode(0, accounting.ModeRDP.String()); m != accounting.ModeBasic {
		t.Errorf("a block without δ on an rdp dataset composes by %v, want basic", m)
	}
}
