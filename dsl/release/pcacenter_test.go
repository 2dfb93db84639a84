package release

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// A private_pca call named before center and center_share existed keeps
// replaying: with both at their defaults, given or not, its public
// parameters are those stored before; center=true is another call.
func TestPCACenterKeepsNamedCalls(t *testing.T) {
	ref := Ref{Name: "t", Schema: tabSchema("replace-one", "row")}
	params := func(vals map[string]any) string {
		t.Helper()
		kw := map[string]any{"eps": 1.0, "delta": 1e-6}
		for k, v := range vals {
			kw[k] = v
		}
		s, err := PublicParams(Call{Func: "private_pca", Dataset: ref, Args: mustArgs("private_pca", kw)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := params(nil)
	if strings.Contains(before, "center") {
		t.Errorf("defaults: %s names center", before)
	}
	if got := params(map[string]any{"center": false, "center_share": 0.0}); got != before {
		t.Errorf("defaults given: %s, want %s", got, before)
	}
	if got := params(map[string]any{"center": true}); got == before || !strings.Contains(got, `"center":true`) {
		t.Errorf("center=true: %s", got)
	}
}

// centerModel's interval is Fieller's set of the Gaussian ratio in units
// of the clip, times the clip: {μ ∈ [−1, 1] : |s − μc| ≤ z·σ·√(1 + μ²)}
// (Zs − μZc has std σ√(1 + μ²)), whose ends are the roots of
// (c² − z²σ²)μ² − 2scμ + s² − z²σ² = 0. The computed interval holds the
// exact one and is wider only by the slack (the lattice's step and the
// sum's rounding excess) and the quantile's margin.
func TestCenterModelInterval(t *testing.T) {
	t.Parallel()
	z := math.Sqrt2 * math.Erfinv(0.95)
	excess := pca.CenterExcess()
	for _, tc := range []struct {
		name          string
		s, c, std     float64
		clip          float64
		wantLo, wantH float64 // in the data's units; NaN: the Fieller roots
	}{
		{"a large count", 50, 100, 2, 1, math.NaN(), math.NaN()},
		{"a negative mean, clip 3", -30, 200, 5, 3, math.NaN(), math.NaN()},
		{"a small count", 4, 12, 1.5, 2, math.NaN(), math.NaN()},
		{"no count: the bounds", 0, 0, 1, 2.5, -2.5, 2.5},
	} {
		m := centerModel(tc.std, excess, tc.clip)
		if m.Kind != ErrRatio || m.Noise != ErrGaussian || m.Unit != tc.clip || m.Lo != -1 || m.Hi != 1 || m.Excess != excess {
			t.Fatalf("%s: model %+v", tc.name, m)
		}
		lo, hi, err := m.RatioInterval(tc.s, tc.c, 0.95)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantLo, wantHi := tc.wantLo, tc.wantH
		if math.IsNaN(wantLo) {
			zs := z * tc.std
			a, b, c := tc.c*tc.c-zs*zs, -2*tc.s*tc.c, tc.s*tc.s-zs*zs
			r := math.Sqrt(b*b - 4*a*c)
			wantLo, wantHi = (-b-r)/(2*a)*tc.clip, (-b+r)/(2*a)*tc.clip
			if !(wantLo > -tc.clip && wantHi < tc.clip) {
				t.Fatalf("%s: the case's roots [%v, %v] leave the bounds", tc.name, wantLo, wantHi)
			}
		}
		// The slack moves each end by at most slack/(c − zσ) (the slope
		// of |s − μc| − zσ√(1 + μ²) in μ is at least that), doubled for
		// the bisection and the quantile's margin.
		tol := 1e-9 * (wantHi - wantLo)
		if tc.c > 0 {
			slack := noise.LatticeStep(tc.std) + excess + noise.LatticeStep(tc.std)
			tol += 2 * slack / (tc.c - z*tc.std) * tc.clip
		}
		if lo > wantLo || hi < wantHi || lo < wantLo-tol || hi > wantHi+tol {
			t.Errorf("%s: [%v, %v], want [%v, %v] widened by at most %v", tc.name, lo, hi, wantLo, wantHi, tol)
		}
		// The 95 % figures the receipt stores are the parts', in units of
		// the clip.
		if hs, _ := noise.GaussianHalfWidth(tc.std, 0.95); !(m.SumHalfWidth >= hs+excess && m.SumHalfWidth < (hs+excess)*(1+1e-9)+noise.LatticeStep(tc.std)) {
			t.Errorf("%s: sum half-width %v, want about %v", tc.name, m.SumHalfWidth, hs+excess)
		}
	}
	// A model read back from the ledger's JSON is the same, and another
	// kind, or a unit that is not a positive number, has no interval.
	m := centerModel(2, excess, 3)
	b, _ := json.Marshal(map[string]any{CenterErrorParam: m})
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, ok := CenterErrorOf(back); !ok || got != m {
		t.Errorf("read back %+v (%v), want %+v", got, ok, m)
	}
	if _, ok := CenterErrorOf(map[string]any{CenterErrorParam: ratioModel(true, 1, 1, 0, -1, 1)}); ok {
		t.Error("a ratio model without a unit read as the mean's")
	}
	for _, u := range []float64{-1, math.Inf(1), math.NaN()} {
		bad := m
		bad.Unit = u
		if _, _, err := bad.RatioInterval(50, 100, 0.95); err == nil {
			t.Errorf("unit %v: an interval", u)
		}
	}
}

// The 95 % intervals of a centred private_pca's mean (the plan's stored
// model, the run's released parts) cover each coordinate of the true mean
// of the clipped rows in 94–96 % of seeded runs. The budget is small
// enough that the count's noise matters (the intervals are not
// symmetric), and some rows are longer than the clip.
func TestCenterIntervalCoverage(t *testing.T) {
	testtier.Long(t)
	t.Parallel()
	const n, d, clip = 200, 3, 2.0
	r := rand.New(rand.NewPCG(28, 27))
	x := mat.NewDense(n, d, nil)
	trueMean := make([]float64, d)
	for i := range n {
		row := []float64{1 + r.NormFloat64(), -0.5 + 0.8*r.NormFloat64(), 0.3 * r.NormFloat64()}
		x.SetRow(i, row)
		s := math.Min(1, clip/math.Hypot(math.Hypot(row[0], row[1]), row[2]))
		for j, v := range row {
			trueMean[j] += s * v / n
		}
	}
	s := noise.NewSeeded(2827)
	env := &Local{NewSampler: func() *noise.Sampler { return s }}
	sc := ledger.Schema{Name: "t", Columns: []string{"a", "b", "c"}, D: d, Clip: clip, Unit: "row", Neighbour: "add-remove", Accountant: "zcdp", Center: "none"}
	p, err := tabPlan(t, env, "private_pca", sc, map[string]any{"method": "gauss", "k": 1, "eps": 0.5, "delta": 1e-6, "center": true, "center_share": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := CenterErrorOf(p.Params)
	if !ok {
		t.Fatalf("no mean model in %v", p.Params)
	}
	data := &Data{Schema: sc, Rows: rows.FromDense(x)}
	covered := make([]int, d)
	asym := 0
	for range coverageRuns {
		v, err := p.run(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		res := v.(*PCA)
		if len(res.CenterSums) != d || len(res.Center) != d {
			t.Fatalf("released parts %v, %v", res.CenterSums, res.CenterCount)
		}
		for j := range d {
			lo, hi, err := m.RatioInterval(res.CenterSums[j], res.CenterCount, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if lo <= trueMean[j] && trueMean[j] <= hi {
				covered[j]++
			}
			if mid := res.CenterSums[j] / res.CenterCount * clip; math.Abs((hi-mid)-(mid-lo)) > 0.05*(hi-lo) {
				asym++
			}
		}
	}
	for j := range d {
		checkCoverage(t, "centred mean "+sc.Columns[j], covered[j], coverageRuns)
	}
	if asym == 0 {
		t.Errorf("every interval was symmetric: the count's noise did not matter at this budget")
	}
}
