package runtime

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// dryRunOf turns a named call into its dry run (a named one would replay).
var dryRunOf = regexp.MustCompile(`name="[a-z]+"\)`)

// npm's and adaptive's eigenvalue estimates carry the last step's
// interval (release.ErrLastStep): ValueInterval is symmetric around the
// released value with the receipt's 95 % half-width, the text, the HTML
// and a dry run state it, and a replay by name gives the same bounds.
func TestPCALastStepIntervals(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "off", offsetTable(2000, 4, 5), accounting.Budget{Eps: 40, Delta: 1e-4}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("off")`)
	for _, call := range []string{
		`private_pca(ds, k=2, eps=1, delta=1e-6, method="npm", clip=6, name="n")`,
		`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, clip=6, name="a")`,
		`private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", clip=6, center=true, name="c")`,
	} {
		out := s.ok(fmt.Sprintf(`r := %s
lo, hi := r.ValueInterval(1, 0.95)
r2 := %s
lo2, hi2 := r2.ValueInterval(1, 0.95)
fmt.Println(r.Values[0], lo, hi, lo2 == lo && hi2 == hi)
fmt.Println(r)
fmt.Println(r.HTML())
fmt.Println(%s)`, call, call, dryRunOf.ReplaceAllString(call, "dry_run=true)")))
		var v, lo, hi, shown float64
		var same bool
		if _, err := fmt.Sscan(out, &v, &lo, &hi, &same); err != nil {
			t.Fatalf("%s: %v:\n%s", call, err, out)
		}
		const lead = "95 % interval: every eigenvalue estimate ± "
		i := strings.Index(out, lead)
		if i < 0 {
			t.Fatalf("%s: no half-width in the text:\n%s", call, out)
		}
		if _, err := fmt.Sscan(out[i+len(lead):], &shown); err != nil {
			t.Fatalf("%s: %v:\n%s", call, err, out)
		}
		// The text rounds h up to 3 significant digits.
		h := (hi - lo) / 2
		if !(h > 0) || math.Abs((v-lo)-(hi-v)) > 1e-9*(math.Abs(v)+h) || !(shown >= h*(1-1e-9) && shown <= h*1.01) || !same {
			t.Errorf("%s: value %v in [%v, %v]: want symmetric, with the half-width the text shows (%v), the same on replay (%v)", call, v, lo, hi, shown, same)
		}
		for _, want := range []string{
			" at once, around the value its last power step would give without that step's noise",
			"<th>error</th>",
			"error: 95 % interval: every eigenvalue estimate ±", // the dry run's receipt
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", call, want, out)
			}
		}
	}
	// A method whose release has no sound interval says so, in the
	// display and in the accessor's error.
	res, o := s.run(`f := private_pca(ds, k=1, eps=1, delta=1e-6, method="federated", iters=3, clip=6)
fmt.Println(f)
f.ValueInterval(1, 0.95)`)
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "no interval: the release is a set of directions") {
		t.Errorf("federated's ValueInterval: got %v, want an ArgumentError saying why it has no interval:\n%s", res.Error, o.all(res))
	}
	if !strings.Contains(o.all(res), "no interval: the release is a set of directions") {
		t.Errorf("federated's text does not say it has no interval:\n%s", o.all(res))
	}
}

// private_fedrep and both variants of private_classify_jl state their
// error: no interval on U (and why), and the pool's selection guarantee.
func TestRepresentationErrorText(t *testing.T) {
	seedNoise(t, 4)
	s := newSession(t, t.TempDir())
	out := s.ok(`fr := synth_fedrep(users=200, m=8, d=10, k=2, seed=2)
u := private_fedrep(fr, k=2, eps=8, delta=1e-6)
a := private_classify_jl(fr, k=2, eps=8, candidates=200)
b := private_classify_jl(fr, k=2, eps=8, delta=1e-6, variant="fedrep-jl")
fmt.Println(u)
fmt.Println(u.HTML())
fmt.Println(a)
fmt.Println(a.HTML())
fmt.Println(b)`)
	for _, want := range []string{
		"FedRepResult: shared representation U",
		"no interval: the release is a shared representation U",
		"<p class=\"privnotes-error\">no interval: the release is a shared representation U",
		"the chosen candidate's total score is within ",
		"users of the best of the 200 candidates'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "no interval: the release is a shared representation U"); n != 3 {
		t.Errorf("%d representations say they have no interval, want 3 (fedrep text and HTML, fedrep-jl):\n%s", n, out)
	}
}
