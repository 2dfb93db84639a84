package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Method gauss's eigenvalues, total variance and explained-variance ratios
// carry intervals from the receipt's public noise description: the text
// and HTML state them, the accessors return intervals around the released
// values (the ratio's inside [0, 1] and around the released ratio), a
// named replay gives the same, and a method without them refuses the
// accessors with an ArgumentError: npm has no total variance, federated
// no eigenvalue estimates (npm's are TestPCALastStepIntervals').
func TestPCAIntervals(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "off", offsetTable(5000, 4, 7), accounting.Budget{Eps: 40, Delta: 1e-4}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("off")`)
	out := s.ok(`g := private_pca(ds, k=2, eps=2, delta=1e-6, method="gauss", clip=6, center=true, name="g")
lo, hi := g.ValueInterval(1, 0.95)
tlo, thi := g.TotalVarianceInterval(0.95)
rlo, rhi := g.RatioInterval(1, 0.95)
fmt.Println(g.Values[0], lo, hi, g.TotalVariance, tlo, thi, g.ExplainedVarianceRatio[0], rlo, rhi)
g2 := private_pca(ds, k=2, eps=2, delta=1e-6, method="gauss", clip=6, center=true, name="g")
lo2, hi2 := g2.ValueInterval(1, 0.95)
fmt.Println(lo2 == lo, hi2 == hi)
fmt.Println(g)
fmt.Println(g.HTML())`)
	var v, lo, hi, tv, tlo, thi, ratio, rlo, rhi float64
	if _, err := fmt.Sscan(out, &v, &lo, &hi, &tv, &tlo, &thi, &ratio, &rlo, &rhi); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !(lo < v && v < hi) || !(tlo < tv && tv < thi) || math.Abs((v-lo)-(hi-v)) > 1e-9*math.Abs(v)+1e-9 {
		t.Errorf("eigenvalue %v in [%v, %v], total %v in [%v, %v]: want symmetric intervals around the released values", v, lo, hi, tv, tlo, thi)
	}
	if !(0 <= rlo && rlo <= ratio && ratio <= rhi && rhi <= 1) {
		t.Errorf("ratio %v in [%v, %v]: want an interval inside [0, 1] around it", ratio, rlo, rhi)
	}
	for _, want := range []string{"true true", "± at 95 %: every eigenvalue ±", "<th>± at 95 %</th>"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	res, o := s.run(`n := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", clip=6)
n.TotalVarianceInterval(0.95)`)
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "no confidence interval") {
		t.Errorf("npm's TotalVarianceInterval: got %v, want an ArgumentError saying it has no interval (npm releases no total):\n%s", res.Error, o.all(res))
	}
	res, o = s.run(`f := private_pca(ds, k=1, eps=1, delta=1e-6, method="federated", iters=3, clip=6)
f.ValueInterval(1, 0.95)`)
	if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, "no interval") {
		t.Errorf("federated's ValueInterval: got %v, want an ArgumentError saying it has no interval:\n%s", res.Error, o.all(res))
	}
}

// The intervals are in the data's units: the receipt's noise line gives
// the std per coordinate in clip units, and the eigenvalues' half-width is
// that std times clip² times √((d + 1)·ln(2d/0.05)) (plus a rounding
// excess far below the tolerance).
func TestPCAIntervalsScale(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "off", offsetTable(2000, 4, 9), accounting.Budget{Eps: 40, Delta: 1e-4}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("off")`)
	out := s.ok(`g := private_pca(ds, k=1, eps=1, delta=1e-6, method="gauss", clip=6)
lo, hi := g.ValueInterval(1, 0.95)
fmt.Println(hi - lo)
fmt.Println(g.Receipt.NoiseScale)`)
	var width, std float64
	if _, err := fmt.Sscan(out, &width); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	i := strings.Index(out, ", std ")
	if i < 0 {
		t.Fatalf("no std in the receipt:\n%s", out)
	}
	if _, err := fmt.Sscan(out[i+len(", std "):], &std); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	want := 2 * std * 36 * math.Sqrt(5*math.Log(2*4/0.05))
	if math.Abs(width-want) > 1e-3*want {
		t.Errorf("eigenvalue interval width %v, want 2·std·clip²·√(5·ln(160)) = %v (std %v)", width, want, std)
	}
}
