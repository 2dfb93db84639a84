package tabular

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// logDyadic is ln(m·2^e).
func logDyadic(x dyadic) float64 { return math.Log(float64(x.m)) + float64(x.e)*math.Ln2 }

// quantileLogWeights returns ln f(loss(k)) for every grid point k of p on
// the values: the exponential mechanism's unnormalised log-probabilities,
// exactly those sampleHist draws from.
func quantileLogWeights(p *QuantilePlan, values []float64) []float64 {
	hist := make([]int, p.Grid+1)
	for _, v := range values {
		hist[p.below(v)]++
	}
	for k := 1; k < len(hist); k++ {
		hist[k] += hist[k-1]
	}
	r := newRanksN(p.Q, len(values))
	w := newWeights(p.ratio)
	out := make([]float64, len(hist))
	for k, rank := range hist {
		out[k] = logDyadic(w.at(r.loss(rank)))
	}
	return out
}

// boundedRangeWidth is max_k − min_k of ln P(k | a) − ln P(k | b): the
// normalisers shift every k alike, so the unnormalised weights give it.
func boundedRangeWidth(a, b []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for k := range a {
		d := a[k] - b[k]
		lo, hi = min(lo, d), max(hi, d)
	}
	return hi - lo
}

// TestQuantileIsBoundedRange checks, exactly (from the sampler's own
// weights, no sampling), the property behind the quantile's price of
// ε²/8 in zCDP (accounting.BoundedRange): on neighbouring data (a value
// added, removed or replaced) the log-ratio of the output probabilities
// spans at most ε over the grid, and the worst cases come close to ε, so
// the bound is the right one. A ratio R above e^(ε/2) would fail it.
func TestQuantileIsBoundedRange(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	worst := 0.0
	for trial := 0; trial < 60; trial++ {
		eps := []float64{0.1, 0.5, 1, 3}[trial%4]
		q := []float64{0.5, 0.1, 0.9, 0.37}[trial/4%4]
		p, err := PlanQuantile(0, 1, q, eps)
		if err != nil {
			t.Fatal(err)
		}
		// A coarse grid keeps the exact check cheap; the property does not
		// depend on the grid's size.
		p.Grid = 64
		p.step = 1.0 / 64
		n := 1 + r.IntN(40)
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Round(r.Float64()*64) / 64 // values on and between grid points
			if r.IntN(3) == 0 {
				x[i] = r.Float64()
			}
		}
		sort.Float64s(x)
		v := r.Float64()
		added := append(append([]float64(nil), x...), v)
		removed := append([]float64(nil), x[1:]...)
		replaced := append([]float64(nil), x...)
		replaced[r.IntN(n)] = v
		wx := quantileLogWeights(p, x)
		for name, y := range map[string][]float64{"add": added, "remove": removed, "replace": replaced} {
			if len(y) == 0 {
				continue
			}
			sort.Float64s(y)
			width := boundedRangeWidth(wx, quantileLogWeights(p, y))
			if width > eps*(1+1e-12) {
				t.Fatalf("trial %d (%s, ε=%v, q=%v, n=%d): the log-ratio spans %.6g > ε", trial, name, eps, q, n, width)
			}
			worst = max(worst, width/eps)
		}
	}
	if worst < 0.9 {
		t.Errorf("the widest span was %.3g·ε: the test no longer reaches the bound", worst)
	}
}

// TestSelectorIsBoundedRange is the same exact check for the Selector
// (the adaptive power method's gap selection, the JL classifier's pool):
// losses of sensitivity 1 move every weight by a factor in [1/R, R].
func TestSelectorIsBoundedRange(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	worst := 0.0
	for trial := 0; trial < 200; trial++ {
		eps := []float64{0.05, 0.3, 1, 2.5}[trial%4]
		s, err := NewSelector(eps)
		if err != nil {
			t.Fatal(err)
		}
		m := 2 + r.IntN(20)
		a, b := make([]float64, m), make([]float64, m)
		w := newWeights(s.ratio)
		for j := 0; j < m; j++ {
			la := int64(r.IntN(30))
			lb := max(la+int64(r.IntN(3))-1, 0) // a neighbour: each loss moves by at most 1
			a[j] = logDyadic(w.at(int(la)))
			b[j] = logDyadic(w.at(int(lb)))
		}
		width := boundedRangeWidth(a, b)
		if width > eps*(1+1e-12) {
			t.Fatalf("trial %d (ε=%v): the log-ratio spans %.6g > ε", trial, eps, width)
		}
		worst = max(worst, width/eps)
	}
	if worst < 0.9 {
		t.Errorf("the widest span was %.3g·ε: the test no longer reaches the bound", worst)
	}
}
