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

// Check 5 for Analyze Gauss: the upper triangle (with diagonal) of C moves
// by at most gaussSensitivity, attained at a = e1 (add) and a = e1, b = e2
// (replace).
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
			for j := i; j < d; j++ {
				out = append(out, c.At(i, j))
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
		if trial == 0 {
			a, b = []float64{1, 0, 0, 0}, []float64{0, 1, 0, 0}
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
