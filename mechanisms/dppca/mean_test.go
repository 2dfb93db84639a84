package dppca

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// TestMeanOracle is spec §8 item 5: with the correct Λ̂ and the theory tail
// constant K = 4, no coordinate is truncated, the noise std is Algorithm
// 5's line 10, and the released noise is N(0, σ²): Σ z² over 20 seeds × d
// coordinates is χ² with 200 degrees of freedom (asserted within 4 sd).
func TestMeanOracle(t *testing.T) {
	const d, m, eps, delta = 10, 20000, 0.8, 1e-6
	shift := []float64{3, -2, 0.5, 100, 0, 0, 0, 0, 0, -7}
	chi2 := 0.0
	for seed := uint64(1); seed <= 20; seed++ {
		data, err := synth.Gaussian(seed, m, d, []float64{1, 0.5})
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			floats.Add(data.X.RawRowView(i), shift)
		}
		tr := &trace{}
		opt := Options{Eps: eps, Delta: delta, TailK: 4, Noise: noise.NewSeeded(seed), knob: &testKnob{noiseScale: 1, trace: tr}}
		res, err := Mean(data.X, 1, opt)
		if err != nil {
			t.Fatal(err)
		}
		if tr.truncated[0] != 0 {
			t.Errorf("seed %d: %d coordinates truncated with the correct Λ̂ and K = 4", seed, tr.truncated[0])
		}
		zeta := defaultZeta
		want := 12 * 4 * math.Log(m*d/zeta) * math.Sqrt(2*d*math.Log(2.5/delta)) / (eps * m)
		if rel := res.NoiseStd/want - 1; rel < 0 || rel > 1e-6 {
			t.Fatalf("noise std %v, want Algorithm 5 line 10: %v", res.NoiseStd, want)
		}
		for j := range d {
			z := (res.Mean[j] - tr.means[0][j]) / res.NoiseStd
			chi2 += z * z
		}
		if dist := floats.Distance(res.Mean, shift, 2); dist > 6*res.NoiseStd*math.Sqrt(d)+0.1 {
			t.Errorf("seed %d: ‖μ̂ − μ‖ = %v, noise std %v", seed, dist, res.NoiseStd)
		}
	}
	if df := 200.0; math.Abs(chi2-df) > 4*math.Sqrt(2*df) {
		t.Errorf("Σz² = %.1f, want χ²(%v) within 4 sd", chi2, df)
	}
}

// TestMeanTruncates checks that a wrong (too small) Λ̂ costs accuracy, not
// privacy: the sensitivity, hence the noise, follows Λ̂ and the outlier is
// truncated to centre ± r.
func TestMeanTruncates(t *testing.T) {
	const m, d = 5000, 2
	data, _ := synth.Gaussian(3, m, d, []float64{1, 0.5})
	data.X.Set(0, 0, 1e9)
	tr := &trace{}
	res, err := Mean(data.X, 1e-4, Options{Eps: 1, Delta: 1e-6, Calibration: CalibAnalytic, Noise: noise.NewSeeded(1), knob: &testKnob{noiseScale: 1, trace: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.truncated[0] == 0 {
		t.Fatal("no truncation at a Λ̂ 10⁴ times too small")
	}
	if math.Abs(tr.means[0][0]) > res.Radius+math.Abs(res.Centres[0]) {
		t.Errorf("truncated mean %v outside centre %v ± r %v", tr.means[0][0], res.Centres[0], res.Radius)
	}
	if _, err := Mean(data.X, 0, Options{Eps: 1, Delta: 1e-6}); err == nil {
		t.Error("lambda 0 accepted")
	}
	if _, err := Mean(data.X, 1, Options{Eps: 2, Delta: 1e-6}); err == nil {
		t.Error("paper calibration accepted ε/2 = 1 > 0.9")
	}
}
