package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Every tabular result of a cell carries its interval: r.Interval(level)
// and r.IntervalOf(key, level) return it, the text and HTML show "± h"
// at 95 %, the quantile its rank bound, and the receipt's Params hold the
// 95 % figures. The half-widths are those of the noise scales the plans
// chose (checked against mechanisms/noise directly for the count).
func TestIntervalsFromCells(t *testing.T) {
	seedNoise(t, 28)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
n := private_count(ds, eps=0.5)
lo, hi := n.Interval(0.95)
fmt.Println(n.Value-lo, hi-n.Value)
lo, hi = n.Interval(0.5)
fmt.Println(hi-lo)
a := private_sum(ds, col="age", eps=1)
lo, hi = a.Interval(0.9)
fmt.Println(lo < a.Value, a.Value < hi)
m := private_mean(ds, col="age", eps=1, delta=1e-6)
lo, hi = m.Interval(0.95)
fmt.Println(lo <= hi, lo >= 0, hi <= 120)
g := private_mean(ds, col="age", by="region", eps=2)
lo, hi = g.IntervalOf("north", 0.95)
fmt.Println(lo <= hi, lo >= 0, hi <= 120)
c := private_count(ds, by="region", eps=1, delta=1e-6)
lo, hi = c.IntervalOf("south", 0.95)
fmt.Println(c.Get("south")-lo == hi-c.Get("south"))
h := private_histogram(ds, col="age", bins=4, eps=1)
lo, hi = h.IntervalOf("[0, 30)", 0.99)
fmt.Println(hi - lo)
q := private_quantile(ds, col="age", q=0.5, eps=1)
fmt.Println(q.RankError(0.95))`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 {
		t.Fatalf("output:\n%s", out)
	}
	// The count: Laplace of b = LaplaceScale(1, 0.5, 1), rounded: the
	// half-width is ⌈h⌉ of the noise's.
	b := noise.LaplaceScale(1, 0.5, 1)
	h95, _ := noise.LaplaceHalfWidth(b, 0.95)
	h50, _ := noise.LaplaceHalfWidth(b, 0.5)
	// The interval's ends are widened by an ulp of the value.
	var dlo, dhi, w50 float64
	fmt.Sscan(lines[0], &dlo, &dhi)
	fmt.Sscan(lines[1], &w50)
	if math.Abs(dlo-math.Ceil(h95)) > 1e-9 || math.Abs(dhi-math.Ceil(h95)) > 1e-9 {
		t.Errorf("count's 95 %% interval: value − %v, value + %v; want ± %v", dlo, dhi, math.Ceil(h95))
	}
	if math.Abs(w50-2*math.Ceil(h50)) > 1e-9 {
		t.Errorf("count's 50 %% interval width %v, want %v", w50, 2*math.Ceil(h50))
	}
	for i, want := range []string{"", "", "true true", "true true true", "true true true", "true"} {
		if i >= 2 && lines[i] != want {
			t.Errorf("line %d: %q, want %q", i, lines[i], want)
		}
	}
	// Laplace b ≈ 2 per count of the histogram (replace-one: ℓ1
	// sensitivity 2): a 99 % interval ±⌈2·ln 100⌉ = ±10.
	var hw float64
	fmt.Sscan(lines[6], &hw)
	if math.Abs(hw-20) > 1e-9 {
		t.Errorf("histogram's 99 %% width %v", hw)
	}
	var k int
	fmt.Sscan(lines[7], &k)
	if k < 10 || k > 100 {
		t.Errorf("quantile rank bound %d", k)
	}

	// Displays: the ± column and its note; the quantile's rank bound.
	shown := s.ok(`fmt.Println(n.String())
fmt.Println(g.String())
fmt.Println(h.HTML())
fmt.Println(q.String())`)
	for _, w := range []string{
		fmt.Sprintf("private count ≈ %s ± %v\n", strings.Fields(s.ok(`fmt.Println(n.Value)`))[0], math.Ceil(h95)),
		"± : 95 % confidence interval from the noisy sum and count (Fieller",
		"<th>± 95 %</th>",
		"its rank is within ±",
	} {
		if !strings.Contains(shown, w) {
			t.Errorf("display lacks %q:\n%s", w, shown)
		}
	}
	// The receipt stores the 95 % figures.
	got := s.ok(`fmt.Println(n.Receipt.Params["error"])`)
	if !strings.Contains(got, fmt.Sprint(math.Ceil(h95))) {
		t.Errorf("count receipt's error: %s", got)
	}
	verify(t, dir)

	// Refusals.
	for _, c := range []struct{ code, want string }{
		{`n.Interval(1.5)`, "level=1.5 must be a confidence level"},
		{`c.Interval(0.95)`, "grouped by region: give the key"},
		{`c.IntervalOf("west", 0.95)`, `no key "west"`},
		{`q.RankError(0)`, "level=0 must be"},
	} {
		res, _ := s.fails(c.code, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %q, want %q", c.code, res.Error.Value, c.want)
		}
	}
}

// A dry run states the half-width the call would get, before anything is
// spent.
func TestDryRunShowsInterval(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 50, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`fmt.Println(private_count(dataset("people"), eps=0.5, dry_run=true))`)
	b := noise.LaplaceScale(1, 0.5, 1)
	h, _ := noise.LaplaceHalfWidth(b, 0.95)
	if want := fmt.Sprintf("95 %% interval: ± %v", math.Ceil(h)); !strings.Contains(out, want) {
		t.Errorf("dry run lacks %q:\n%s", want, out)
	}
	if st := status(t, dir, "people"); st.Charges != 0 {
		t.Errorf("a dry run charged %d times", st.Charges)
	}
}

func TestFmtHalfWidth(t *testing.T) {
	for _, c := range []struct {
		h    float64
		want string
	}{{6, "6"}, {5.99, "5.99"}, {5.991, "6"}, {0.012341, "0.0124"}, {123.01, "124"}, {12345.2, "12346"}, {0, "0"}} {
		if got := fmtHalfWidth(c.h); got != c.want {
			t.Errorf("fmtHalfWidth(%v) = %q, want %q", c.h, got, c.want)
		}
	}
}

// A receipt's Params read back from JSON (as verify and replays read them)
// give the same model.
func TestErrorModelFromJSON(t *testing.T) {
	rb := releaseBase{&Receipt{Params: map[string]any{release.ErrorParam: map[string]any{"kind": "gaussian", "scale": 2.0}}}}
	lo, hi, ok := rb.valueInterval([]float64{10}, nil, nil, 0, 0.95)
	want, _ := noise.GaussianHalfWidth(2, 0.95)
	if !ok || math.Abs((hi-lo)/2-want-noise.LatticeStep(2)) > 1e-12 {
		t.Errorf("interval [%v, %v], want half-width %v", lo, hi, want)
	}
}

// eps_for inverts the half-width from public parameters: at the ε it
// returns the call's half-width is within the target, and 2 % below it is
// not; it charges nothing and refuses means and quantiles.
func TestEpsFor(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 50, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")`)
	for _, c := range []struct {
		call   string
		within float64
		run    string // a call at ε = x and its interval
	}{
		{`eps_for(ds, "private_count", within=10)`, 10, `r := private_count(ds, eps=x)
lo, hi := r.Interval(0.95)`},
		{`eps_for(ds, "private_sum", col="age", within=100, delta=1e-6)`, 100, `r := private_sum(ds, col="age", eps=x, delta=1e-6)
lo, hi := r.Interval(0.95)`},
		{`eps_for(ds, "private_histogram", col="age", bins=4, within=5, level=0.9)`, 5, `r := private_histogram(ds, col="age", bins=4, eps=x)
lo, hi := r.IntervalOf("[0, 30)", 0.9)`},
		{`eps_for(ds, "private_count", by="region", within=20)`, 20, `r := private_count(ds, by="region", eps=x)
lo, hi := r.IntervalOf("north", 0.95)`},
	} {
		before := status(t, dir, "people").Charges
		var e float64
		if _, err := fmt.Sscan(s.ok(`fmt.Println(`+c.call+`)`), &e); err != nil || !(e > 0) {
			t.Fatalf("%s: %v", c.call, err)
		}
		if after := status(t, dir, "people").Charges; after != before {
			t.Errorf("%s charged %d times", c.call, after-before)
		}
		half := func(x float64) float64 {
			var h float64
			fmt.Sscan(s.ok(fmt.Sprintf("x := %v\n%s\nfmt.Println((hi - lo) / 2)", x, c.run)), &h)
			return h
		}
		if h := half(e); h > c.within*(1+1e-12) {
			t.Errorf("%s = %v: half-width %v > %v", c.call, e, h, c.within)
		}
		if h := half(e * 0.98); h <= c.within {
			t.Errorf("%s = %v: at 0.98 of it the half-width is %v, still within %v", c.call, e, h, c.within)
		}
	}
	for _, c := range []struct{ code, want string }{
		{`eps_for(dataset("people"), "private_mean", col="age", within=1)`, "has no interval of values to invert"},
		{`eps_for(dataset("people"), "private_quantile", col="age", within=1)`, "a quantile's error is a rank bound"},
		{`eps_for(dataset("people"), "private_count", within=-1)`, "within=-1 must be"},
		{`eps_for(dataset("people"), "private_count", col="age", within=1)`, "private_count has no keyword col"},
		{`eps_for(dataset("people"), "private_count", within=0.1)`, "no ε up to"},
	} {
		res, _ := s.fails(c.code, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %q, want %q", c.code, res.Error.Value, c.want)
		}
	}
}
