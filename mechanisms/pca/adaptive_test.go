package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// bucket must implement score ≤ θ̂_k ⇔ bucket(score) ≤ k exactly, including
// at grid points and their floating-point neighbours.
func TestBucketExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(s float64) {
		b := bucket(s)
		for k := 0; k <= gridTop; k++ {
			if (s <= gridPoint(k)) != (b <= k) && !(s > 1 && k == gridTop) {
				t.Fatalf("score %g: bucket %d, but score ≤ θ̂_%d is %v", s, b, k, s <= gridPoint(k))
			}
		}
	}
	for k := 0; k <= gridTop; k++ {
		g := gridPoint(k)
		check(g)
		check(math.Nextafter(g, 0))
		check(math.Nextafter(g, 2))
	}
	for i := 0; i < 10000; i++ {
		check(math.Ldexp(rng.Float64(), -rng.IntN(80)))
	}
	check(0)
	check(5e-324)
	if bucket(1+1e-15) != gridTop {
		t.Error("scores rounded above 1 must fall in the top bucket")
	}
}

// Check 4 for adaptive: without noise and without filtering, the method is
// exact power iteration on C.
func TestAdaptiveZeroNoiseIsPowerIteration(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	data, _ := spikedRows(rng, 2000, 10, []float64{15})
	truth := exactTop(t, data, 3, 1)
	prev := math.Inf(1)
	for _, T := range []int{2, 8, 32, 128} {
		opt := withKnob(Options{Eps: 1, Delta: 1e-6, Iters: T, Clip: 3, Noise: noise.NewSeeded(1)}, testKnob{noiseScale: 0, keepAll: true})
		res, err := Adaptive(context.Background(), data, opt)
		if err != nil {
			t.Fatal(err)
		}
		e := SinThetaSq(truth, res.Components)
		if T > 2 && !(e < prev/4 || e < 1e-14) {
			t.Errorf("T=%d: error %g did not fall geometrically from %g", T, e, prev)
		}
		prev = e
		for _, th := range res.Thresholds {
			if th != 1 {
				t.Fatalf("keepAll chose θ̂=%v", th)
			}
		}
	}
	if prev > 1e-14 {
		t.Errorf("after 128 exact iterations the error is %g", prev)
	}
}

// Check 5 (spec §5): for a fixed unit x and threshold θ̂, the filtered
// product changes by at most θ̂ when a row is added or removed and by at
// most 2θ̂ when one is replaced; the counts change by at most 1.
func TestAdaptiveSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const d = 5
	randRow := func() []float64 {
		v := make([]float64, d)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Exp(rng.NormFloat64())
		}
		return v
	}
	filtered := func(rows [][]float64, x []float64, k int) ([]float64, int) {
		m := mat.NewDense(len(rows), d, nil)
		for i, r := range rows {
			m.SetRow(i, r)
		}
		acc := prepareRows(m, 1.5, 1).apmPass(x)
		v := make([]float64, d)
		q := 0
		for b := 0; b <= k; b++ {
			floats.Add(v, acc.sums[b*d:(b+1)*d])
			q += acc.hist[b]
		}
		return v, q
	}
	worst := map[accounting.Neighbour]float64{}
	for trial := 0; trial < 2000; trial++ {
		x := randRow()
		floats.Scale(1/floats.Norm(x, 2), x)
		k := 50 + rng.IntN(15)
		theta := gridPoint(k)
		base := [][]float64{randRow(), randRow(), randRow(), randRow()}
		a, b := randRow(), randRow()
		if trial%2 == 0 {
			// Adversarial rows with score just at θ̂ whose contributions
			// point in nearly opposite directions.
			perp := randRow()
			floats.AddScaled(perp, -floats.Dot(perp, x), x)
			floats.Scale(1/floats.Norm(perp, 2), perp)
			c := math.Sqrt(1 - theta*theta)
			a = make([]float64, d)
			b = make([]float64, d)
			for i := range a {
				a[i] = 1.5 * (theta*x[i] + c*perp[i])
				b[i] = 1.5 * (theta*x[i] - c*perp[i])
			}
		}
		v0, q0 := filtered(base, x, k)
		vAdd, qAdd := filtered(append(append([][]float64{}, base...), a), x, k)
		rep := append(append([][]float64{}, base[:3]...), b)
		base4 := append(append([][]float64{}, base[:3]...), a)
		vR1, qR1 := filtered(base4, x, k)
		vR2, qR2 := filtered(rep, x, k)
		dAdd := floats.Distance(v0, vAdd, 2)
		dRep := floats.Distance(vR1, vR2, 2)
		if dAdd > theta*(1+1e-12) || dRep > 2*theta*(1+1e-12) {
			t.Fatalf("trial %d: add/remove moved the product by %g·θ̂, replace by %g·θ̂", trial, dAdd/theta, dRep/theta)
		}
		if abs(qAdd-q0) > 1 || abs(qR1-qR2) > 1 {
			t.Fatalf("counts moved by %d and %d", qAdd-q0, qR1-qR2)
		}
		worst[accounting.AddRemove] = math.Max(worst[accounting.AddRemove], dAdd/theta)
		worst[accounting.ReplaceOne] = math.Max(worst[accounting.ReplaceOne], dRep/theta)
	}
	if worst[accounting.AddRemove] < 0.99 || worst[accounting.ReplaceOne] < 1.9 {
		t.Errorf("worst cases %v: the bounds θ̂ and 2θ̂ should be nearly attained", worst)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// apmRecipe runs adaptive on the spec §5 check 1 data for each seed and
// returns the errors and the traces.
func apmRecipe(t *testing.T, n int, eps float64, seeds int, cal Calibration) ([]float64, []*trace) {
	t.Helper()
	var errs []float64
	var traces []*trace
	for s := 0; s < seeds; s++ {
		data, err := synth.APMGaussian(uint64(100+s), n, 20, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		tr := &trace{}
		opt := withKnob(Options{Eps: eps, Delta: 1e-6, PublicN: n, Gap: 0.75, Calibration: cal, Noise: noise.NewSeeded(uint64(s))}, testKnob{noiseScale: 1, trace: tr})
		res, err := Adaptive(context.Background(), data.X, opt)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, SinThetaSq(data.U, res.Components))
		traces = append(traces, tr)
	}
	return errs, traces
}

// Check 1 (spec §5.1): on the APM Gaussian recipe (d=20, δ=1e−6, zCDP),
// the median sin² over 9 seeds falls as ε grows and as n grows. The spec's
// pilot (add/remove) medians at n=1e4 are 0.13, 0.030, 0.0098, 0.0053 for
// ε = 0.5, 1, 2, 4; we run replace-one (twice the Gaussian noise). Issue 12's
// targets are asserted at ε = 1: ≤ 0.04 at n=1e4 and ≤ 0.0018 at n=1e5
// (measured with the default T = ⌈ln(nε/β)/ln(1/(1−κ₀))⌉, f = 0.25 and
// monotone queries: 0.0152 and 0.00076; with the spec's T, f = 0.5 and
// Lap(4/ε_s) they were about 0.07 and 0.003). Under PRIVNOTES_LONG=1 the
// n=1e5 row runs for every ε.
func TestAdaptiveRecipeTrends(t *testing.T) {
	testtier.Long(t)
	epsGrid := []float64{0.5, 1, 2, 4}
	med := map[int][]float64{}
	for _, eps := range epsGrid {
		e, _ := apmRecipe(t, 10000, eps, 9, CalibZCDP)
		med[10000] = append(med[10000], median(e))
	}
	bigEps := []float64{1}
	if long() {
		bigEps = epsGrid
	}
	for _, eps := range bigEps {
		e, _ := apmRecipe(t, 100000, eps, 9, CalibZCDP)
		med[100000] = append(med[100000], median(e))
	}
	t.Logf("median sin²: n=1e4 %v; n=1e5 (ε=%v) %v", med[10000], bigEps, med[100000])
	for i := 1; i < len(epsGrid); i++ {
		if !(med[10000][i] < med[10000][i-1]) {
			t.Errorf("n=1e4: error did not fall from ε=%v to ε=%v: %v", epsGrid[i-1], epsGrid[i], med[10000])
		}
	}
	if med[10000][3] > 0.04 || med[10000][1] > 0.04 {
		t.Errorf("n=1e4: median %v at ε=1 and %v at ε=4, want both ≤ 0.04", med[10000][1], med[10000][3])
	}
	// n grows tenfold at ε=1: the error must fall, and meet issue 12's
	// target of ≤ 0.0018 at n=1e5.
	at1 := slices.Index(bigEps, 1.0)
	if !(med[100000][at1] < med[10000][1]/3) || med[100000][at1] > 0.0018 {
		t.Errorf("ε=1: median %v at n=1e5 vs %v at n=1e4; want a fall by 3× and ≤ 0.0018", med[100000][at1], med[10000][1])
	}
	for i := 1; i < len(bigEps); i++ {
		if !(med[100000][i] < med[100000][i-1]) {
			t.Errorf("n=1e5: error did not fall from ε=%v to ε=%v: %v", bigEps[i-1], bigEps[i], med[100000])
		}
	}
}

// Checks 2 and 3 (spec §5): the fraction of iterations with θ̂_t ≤ 2^−64 +
// 2·max score is ≥ 1 − β (eq. 6 with our grid floor), and the number of
// rows filtered per iteration is ≤ 8(ln 65 + 2 ln(2/β))/ε_step (Lemma B.1
// with ln(#queries) = ln 65 for our grid) in a fraction ≥ 1 − 2β of the
// iterations. Both accountings.
func TestAdaptiveThresholdAndFilteredCount(t *testing.T) {
	const beta = 0.05
	for _, cal := range []Calibration{CalibZCDP, CalibPaper} {
		pl, err := PlanAdaptive(Options{Eps: 1, Delta: 1e-6, PublicN: 10000, Gap: 0.75, Calibration: cal}, 20)
		if err != nil {
			t.Fatal(err)
		}
		limit := 8 * (math.Log(gridTop+1) + 2*math.Log(2/beta)) / pl.SVTEps
		_, traces := apmRecipe(t, 10000, 1, 9, cal)
		total, thetaOK, countOK := 0, 0, 0
		maxRatio := 0.0
		for _, tr := range traces {
			for i, th := range tr.thetas {
				total++
				if th <= gridPoint(0)+2*tr.maxScores[i] {
					thetaOK++
				}
				maxRatio = math.Max(maxRatio, th/tr.maxScores[i])
				if float64(tr.filtered[i]) <= limit {
					countOK++
				}
			}
		}
		t.Logf("%v: θ̂ ≤ 2·max score in %d/%d iterations (max ratio %.2f); filtered ≤ %.0f in %d/%d",
			cal, thetaOK, total, maxRatio, limit, countOK, total)
		if float64(thetaOK) < (1-beta)*float64(total) {
			t.Errorf("%v: θ̂ ≤ 2·max score in only %d of %d iterations", cal, thetaOK, total)
		}
		if float64(countOK) < (1-2*beta)*float64(total) {
			t.Errorf("%v: filtered count within the Lemma B.1 bound in only %d of %d iterations", cal, countOK, total)
		}
	}
}

// Paper accounting is much noisier (spec §5.1 pilot: 0.96 vs 0.030 at
// n=1e4, ε=1); zCDP must win on the same data and seeds.
func TestAdaptivePaperVsZCDP(t *testing.T) {
	z, _ := apmRecipe(t, 10000, 2, 9, CalibZCDP)
	p, _ := apmRecipe(t, 10000, 2, 9, CalibPaper)
	if !(median(z) < median(p)) {
		t.Errorf("zCDP median %v not below paper median %v", median(z), median(p))
	}
}
