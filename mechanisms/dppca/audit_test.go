package dppca

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/audit"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// auditSeed gives every (case, side, trial) its own noise stream.
func auditSeed(base uint64, neighbour bool, trial int) uint64 {
	s := base<<40 ^ uint64(trial)<<1
	if neighbour {
		s |= 1
	}
	return s
}

// auditCase is one audited mechanism: stat runs it once on D or D′ with
// the given noise scale (1 honest, 0.5 the broken variant).
type auditCase struct {
	name    string
	eps     float64 // the claim audited for this statistic
	delta   float64
	stat    func(neighbour bool, seed uint64, noiseScale float64) float64
	trials  int
	brokenB float64
}

// TestAudits runs the statistical privacy audit (mechanisms/audit) on
// worst-case neighbouring pairs under replace-one, for Algorithm 4,
// Algorithm 5 and a one-step DP-PCA run, as shipped and with the noise
// halved through the test knob. The honest mechanisms must not be refuted
// at their claims; the broken ones must be.
//
//   - Algorithm 4 at (2, 0.02): 40 groups of one pair (d = 1, λ^(j) = g̃²),
//     20 in bin [1, 2) and 20 in [4, 8); the neighbour moves one group
//     across. Statistic: Λ̂ (0 for ⊥).
//   - Algorithm 5 at (2, 0.02), CalibAnalytic: 2000 equal records and one
//     outlier at −∞ versus +∞, truncated to the two ends of centre ± r, so
//     the mean moves by exactly its sensitivity 2r/m. The centre's
//     histogram sees 1999 records in one bin on both sides, so the
//     statistic's loss is the Gaussian's: it is audited against the
//     Gaussian's share, (1, 0.01).
//   - DP-PCA, d = 1, T = 1, whole-budget halves (the default), CalibAnalytic (2, 0.02): the
//     same outlier pair in the second half-batch; Algorithm 4 sees equal
//     halves (Λ̂ = 0, the floor Λ_min). Statistic: |ĝ|, audited against the
//     Gaussian's share (1, 0.01).
func TestAudits(t *testing.T) {
	testtier.Long(t)
	trials := 10000
	if long() {
		trials = 50000
	}
	eigenData := func(neighbour bool) *mat.Dense {
		g := mat.NewDense(80, 1, nil)
		for j := range 40 {
			v := 1.0
			if j >= 20 || (neighbour && j == 0) {
				v = 2
			}
			g.Set(2*j+1, 0, v) // pair (0, v): g̃ = v, λ = v²
		}
		return g
	}
	meanData := func(neighbour bool) *mat.Dense {
		g := mat.NewDense(2000, 1, nil)
		for i := range 2000 {
			g.Set(i, 0, 1)
		}
		if neighbour {
			g.Set(777, 0, 1e9)
		} else {
			g.Set(777, 0, -1e9)
		}
		return g
	}
	const n = 4000
	pcaData := func(neighbour bool) *mat.Dense {
		x := mat.NewDense(n, 1, nil)
		for i := range n {
			x.Set(i, 0, 1)
		}
		if neighbour {
			x.Set(n-5, 0, 1e4) // g = x²w0 far beyond the range
		} else {
			x.Set(n-5, 0, 0) // g = 0, below centre − r
		}
		return x
	}
	// Planning inverts the privacy conversions numerically, which would
	// dominate these tiny runs: plan once, then vary only the noise.
	hp, mult, err := alg5Budget(CalibAnalytic, 2, 0.02, 1)
	if err != nil {
		t.Fatal(err)
	}
	meanP := meanParams{hist: hp, mult: mult, tailK: defaultTailK, tailA: defaultTailA, zeta: defaultZeta, excess: meanExcess(1)}
	pcaPlan, err := PlanDPPCA(Options{Eps: 2, Delta: 0.02, Calibration: CalibAnalytic, Steps: 1,
		Centred: true, KeepOrder: true, Gap: 1, Workers: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	eD, eDp := eigenData(false), eigenData(true)
	mD, mDp := meanData(false), meanData(true)
	pD, pDp := pcaData(false), pcaData(true)
	cases := []auditCase{
		{"Algorithm 4", 2, 0.02, func(nb bool, seed uint64, scale float64) float64 {
			g := eD
			if nb {
				g = eDp
			}
			res, err := TopEigenvalue(g, Options{Eps: 2, Delta: 0.02, Groups: 40, Workers: 1,
				Noise: noise.NewSeeded(seed), knob: &testKnob{noiseScale: scale}})
			if err != nil {
				t.Error(err)
				return 0
			}
			if !res.Found {
				return 0
			}
			return res.Value
		}, trials, 0.5},
		{"Algorithm 5", 1, 0.01, func(nb bool, seed uint64, scale float64) float64 {
			g := mD
			if nb {
				g = mDp
			}
			src := newSource(noise.NewSeeded(seed), &testKnob{noiseScale: scale})
			mu, _, _, _ := privMean(g.RawMatrix().Data, 2000, 1, 1, meanP, src, rowpass.Options{Workers: 1})
			return mu[0]
		}, trials, 0.5},
		{"DP-PCA", 1, 0.01, func(nb bool, seed uint64, scale float64) float64 {
			x := pD
			if nb {
				x = pDp
			}
			tr := &trace{}
			pl := *pcaPlan
			pl.opt.Noise, pl.opt.knob = noise.NewSeeded(seed), &testKnob{noiseScale: scale, trace: tr}
			_, err := pl.Run(context.Background(), x)
			if err != nil || len(tr.released) != 1 {
				t.Errorf("DP-PCA audit run: %v (%d releases)", err, len(tr.released))
				return 0
			}
			return math.Abs(tr.released[0][0])
		}, trials, 0.5},
	}
	for ci, tc := range cases {
		for _, broken := range []bool{false, true} {
			scale := 1.0
			if broken {
				scale = tc.brokenB
			}
			mech := func(neighbour bool, trial int) float64 {
				return tc.stat(neighbour, auditSeed(uint64(ci+1), neighbour, trial), scale)
			}
			res, err := audit.Run(audit.Config{Trials: tc.trials, Alpha: 0.05, Delta: tc.delta}, mech)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s broken=%v: %v", tc.name, broken, res)
			if err := res.Check(tc.eps); (err != nil) != broken {
				if broken {
					t.Errorf("%s with halved noise: the audit did not refute ε=%v (lower bound %.3g)", tc.name, tc.eps, res.EpsLower)
				} else {
					t.Errorf("%s: %v", tc.name, err)
				}
			}
		}
	}
}
