package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Check 5 for Analyze Gauss: the noised coordinates v(C) = (C_ii, √2·C_ij)
// move by at most gaussSensitivity, attained at a = e1 (add) and a = e1,
// b = e2 (replace).
func TestGaussSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const d = 4
	upper := func(rows [][]float64) []float64 {
		m := mat.NewDense(len(rows), d, nil)
		for i, r := range rows {
			m.SetRow(i, r)
		}
		c := prepareRows(m, 1, 1).gram(context.Background())
		var out []float64
		for i := 0; i < d; i++ {
			out = append(out, c.At(i, i))
			for j := i + 1; j < d; j++ {
				out = append(out, math.Sqrt2*c.At(i, j))
			}
		}
		return out
	}
	dist := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += (a[i] - b[i]) * (a[i] - b[i])
		}
		return math.Sqrt(s)
	}
	row := func() []float64 {
		v := make([]float64, d)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	worstAdd, worstRep := 0.0, 0.0
	for trial := 0; trial < 500; trial++ {
		base := [][]float64{row(), row(), row()}
		a, b := row(), row()
		switch trial {
		case 0:
			a, b = []float64{1, 0, 0, 0}, []float64{0, 1, 0, 0}
		case 1: // all off-diagonal mass: still ‖aaᵀ‖_F = 1
			a, b = []float64{0.5, 0.5, 0.5, 0.5}, []float64{0.5, -0.5, 0.5, -0.5}
		}
		add := dist(upper(base), upper(append(append([][]float64{}, base...), a)))
		rep := dist(upper(append(append([][]float64{}, base...), a)), upper(append(append([][]float64{}, base...), b)))
		worstAdd, worstRep = math.Max(worstAdd, add), math.Max(worstRep, rep)
	}
	if worstAdd > gaussSensitivity(accounting.AddRemove)*(1+1e-12) || worstRep > gaussSensitivity(accounting.ReplaceOne)*(1+1e-12) {
		t.Errorf("sensitivities %v, %v exceed the bounds", worstAdd, worstRep)
	}
	if worstAdd < 1-1e-12 || worstRep < math.Sqrt2-1e-12 {
		t.Errorf("bounds not attained: %v, %v", worstAdd, worstRep)
	}
}

func TestGaussZeroNoiseAndTrend(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	data, u := spikedRows(rng, 20000, 10, []float64{6, 3})
	clip := 6.0
	truth := exactTop(t, data, clip, 2)
	res, err := AnalyzeGauss(context.Background(), data, withKnob(Options{K: 2, Eps: 1, Delta: 1e-6, Clip: clip, Noise: noise.NewSeeded(1)}, testKnob{noiseScale: 0}))
	if err != nil {
		t.Fatal(err)
	}
	if e := SinThetaSq(truth, res.Components); e > 1e-14 {
		t.Errorf("noise-free Analyze Gauss error %g", e)
	}
	var meds []float64
	for _, eps := range []float64{0.1, 0.5, 2} {
		var errs []float64
		for s := uint64(0); s < 9; s++ {
			res, err := AnalyzeGauss(context.Background(), data, Options{K: 2, Eps: eps, Delta: 1e-6, Clip: clip, Noise: noise.NewSeeded(s)})
			if err != nil {
				t.Fatal(err)
			}
			errs = append(errs, SinThetaSq(u, res.Components))
		}
		meds = append(meds, median(errs))
	}
	t.Logf("gauss median ‖sinΘ‖² at ε=0.1,0.5,2: %.4g", meds)
	if !(meds[0] > meds[1] && meds[1] > meds[2]) {
		t.Errorf("gauss errors %v should fall in ε", meds)
	}
}

// TestGaussFrobeniusNoise: Analyze Gauss releases C through v(C) =
// (C_ii, √2·C_ij), so without noise the release is C itself (a wrong scale
// of the off-diagonal coordinates, which changes their sensitivity, fails
// here), and with noise the diagonal entries carry N(0, σ²) and the
// off-diagonal ones N(0, σ²/2), σ = the plan's NoiseStd. Over 200 seeds at
// d = 5 there are 1000 diagonal and 2000 off-diagonal draws; the median of
// |z|/σ is 0.674 (diagonal) and 0.674/√2 = 0.477 (off-diagonal), with
// standard errors about 0.025 and 0.013; the tolerance is 4 of them, so the
// old upper-triangle noise (0.674 off the diagonal) and half the noise fail.
func TestGaussFrobeniusNoise(t *testing.T) {
	const d, n = 5, 50
	rng := rand.New(rand.NewPCG(21, 22))
	data := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			data.Set(i, j, rng.NormFloat64()/3)
		}
	}
	gram := prepareRows(data, 1, 1).gram(context.Background())
	opt := Options{K: 1, Eps: 1, Delta: 1e-6, Clip: 1, Workers: 1}
	pl, err := PlanAnalyzeGauss(opt, d)
	if err != nil {
		t.Fatal(err)
	}
	release := func(seed uint64, scale float64) []float64 {
		tr := &trace{}
		o := withKnob(opt, testKnob{noiseScale: scale, trace: tr})
		o.Noise = noise.NewSeeded(seed)
		if _, err := AnalyzeGauss(context.Background(), data, o); err != nil {
			t.Fatal(err)
		}
		return tr.first
	}
	k := 0
	free := release(1, 0)
	for i := range d {
		for j := i; j < d; j++ {
			if got, want := free[k], gram.At(i, j); math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("noise-free release C[%d][%d] = %v, want %v", i, j, got, want)
			}
			k++
		}
	}
	var diag, off []float64
	for seed := uint64(1); seed <= 200; seed++ {
		k := 0
		rel := release(seed, 1)
		for i := range d {
			for j := i; j < d; j++ {
				z := math.Abs(rel[k]-gram.At(i, j)) / pl.NoiseStd
				if i == j {
					diag = append(diag, z)
				} else {
					off = append(off, z)
				}
				k++
			}
		}
	}
	md, mo := median(diag), median(off)
	t.Logf("median |z|/σ: diagonal %.4f (want 0.674), off-diagonal %.4f (want 0.477)", md, mo)
	if math.Abs(md-0.6745) > 0.1 {
		t.Errorf("diagonal noise: median |z|/σ = %.4f, want 0.674 ± 0.1", md)
	}
	if math.Abs(mo-0.6745/math.Sqrt2) > 0.05 {
		t.Errorf("off-diagonal noise: median |z|/σ = %.4f, want 0.477 ± 0.05", mo)
	}
}
