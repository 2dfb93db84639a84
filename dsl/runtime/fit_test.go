package runtime

import (
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

var fitRE = regexp.MustCompile(`The largest eps that fits at delta=([0-9.e+-]+) is ([0-9.e+-]+)`)

// A refused call says what would have fitted, and what it says fits: the
// same call with the suggested eps (and delta) is accepted.
func TestBudgetExceededSaysWhatFits(t *testing.T) {
	dir := t.TempDir()
	registerPublicN(t, dir, "d", table(300, 4, 3, 0.3), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	for _, c := range []struct{ name, call string }{
		{"static, too large", `r := private_pca(ds, k=1, eps=5, delta=1e-6, method="gauss")`},
		{"static, a count", `r := private_count(ds, eps=3, delta=1e-6)`},
		{"static, the call's δ is the budget's", `r := private_pca(ds, k=1, eps=0.5, delta=1e-6, method="dppca", pad=true)`},
	} {
		s := newSession(t, dir)
		s.ok(`ds := dataset("d")`)
		res, out := s.fails(c.call, NameBudgetExceeded)
		m := fitRE.FindStringSubmatch(res.Error.Value)
		if m == nil {
			t.Errorf("%s: the refusal does not say what fits:\n%s", c.name, out.all(res))
			continue
		}
		fixed := strings.NewReplacer("eps=5", "eps="+m[2], "eps=3", "eps="+m[2], "eps=0.5", "eps="+m[2], "delta=1e-6", "delta="+m[1]).Replace(c.call)
		res, out = s.run(fixed)
		if res.Error != nil {
			t.Errorf("%s: the suggested call %s is refused: %s", c.name, fixed, out.all(res))
		}
		// Spend the dataset back to a known state for the next case.
		dir2 := t.TempDir()
		registerPublicN(t, dir2, "d", table(300, 4, 3, 0.3), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
		dir = dir2
	}
}

// A refusal at run time (a loop) says the same.
func TestRunTimeRefusalSaysWhatFits(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(300, 4, 3, 0.3), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	s := newSession(t, dir)
	res, out := s.fails(`ds := dataset("d")
for i := 0; i < 10; i++ {
	r := private_count(ds, eps=0.5, delta=1e-6)
	_ = r
}`, NameBudgetExceeded)
	if !fitRE.MatchString(res.Error.Value) {
		t.Errorf("the run-time refusal does not say what fits:\n%s", out.all(res))
	}
}

// A Gaussian call in a block without δ is told to add delta= to the
// block's header, statically and at run time.
func TestBlockWithoutDeltaHint(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(300, 4, 3, 0.3), accounting.Budget{Eps: 5, Delta: 1e-6}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")`)
	for _, cell := range []string{
		"budget eps=0.5 {\n\tr := private_count(ds, eps=0.3, delta=1e-6)\n}",
		"budget eps=0.5 {\n\tfor i := 0; i < 1; i++ {\n\t\tr := private_count(ds, eps=0.3, delta=1e-6)\n\t\t_ = r\n\t}\n}",
	} {
		res, out := s.fails(cell, NameBudgetExceeded)
		if !strings.Contains(res.Error.Value, "add delta= to the block's header") {
			t.Errorf("%s: no hint to add delta:\n%s", cell, out.all(res))
		}
	}

}

var receiptFitsRE = regexp.MustCompile(`one more call alone: pure ε≤([0-9.e+-]+), quantile ε≤([0-9.e+-]+), Gaussian ε≤([0-9.e+-]+) at δ=([0-9.e+-]+)\)`)

// A charge's receipt says what one more call alone may still spend
// (issue 28, item 4), and it is exactly what the accountant admits: the
// pure and the Gaussian call it names fit (a dry run is accepted), and the
// same call at 1.05 times that ε does not. (The quantile's figure comes
// from the same search, accounting.Fits, tested there.)
func TestReceiptSaysWhatFits(t *testing.T) {
	dir := t.TempDir()
	registerPublicN(t, dir, "d", table(300, 4, 3, 0.3), accounting.Budget{Eps: 1, Delta: 1e-6}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")`)
	res, out := s.run(`r := private_count(ds, eps=0.3, delta=1e-6)
r.Receipt.String()`)
	if res.Error != nil {
		t.Fatal(out.all(res))
	}
	m := receiptFitsRE.FindStringSubmatch(out.all(res))
	if m == nil {
		t.Fatalf("the receipt does not say what fits:\n%s", out.all(res))
	}
	for _, c := range []struct{ what, call, eps string }{
		{"pure", `private_count(ds, eps=%s, dry_run=true)`, m[1]},
		{"Gaussian", `private_count(ds, eps=%s, delta=` + m[4] + `, dry_run=true)`, m[3]},
	} {
		if res, out := s.run(strings.Replace(c.call, "%s", c.eps, 1)); res.Error != nil {
			t.Errorf("%s: the receipt says ε≤%s fits, but the call is refused: %s", c.what, c.eps, out.all(res))
		}
		over := strings.Replace(c.call, "%s", c.eps+"*1.05", 1)
		if res, out := s.run(over); res.Error == nil || res.Error.Name != NameBudgetExceeded {
			t.Errorf("%s: 1.05 × the ε the receipt says fits (%s) is not refused: %s", c.what, c.eps, out.all(res))
		}
	}
}
