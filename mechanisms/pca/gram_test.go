package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The noisy power method on a Gram matrix summed elsewhere (RunGram, as a
// database engine sums it) is the row path's run: with the same seeded
// noise, the same public start and the rows' own Gram matrix (in units of
// the rows scaled by 1/clip), the release is bit for bit the row path's
// when that forms C too (gramPays), and within rounding of it when it
// multiplies by the rows at every iteration. A Gram matrix in the data's
// units (not scaled by 1/clip) fails the first case.
func TestRunGramNPMSameAsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	data, _ := spikedRows(rng, 2000, 12, []float64{6, 3})
	const clip = 4.0
	gram := prepareRows(data, clip, 1).gram(context.Background())
	for _, c := range []struct {
		name      string
		k, iters  int
		formsGram bool
	}{
		{"gram path", 2, 0, true},      // L = 50: forming C pays
		{"row passes", 1, 3, false},    // d = 12 ≥ 2·p·L = 6
		{"one component", 1, 20, true}, // p = 1, L = 20
	} {
		opt := Options{K: c.k, Iters: c.iters, Eps: 2, Delta: 1e-6, Clip: clip, Workers: 1}
		opt.Noise = noise.NewSeeded(5)
		tr := &trace{}
		want, err := NoisyPower(context.Background(), data, withKnob(opt, testKnob{noiseScale: 1, trace: tr}))
		if err != nil {
			t.Fatal(err)
		}
		if tr.gram != c.formsGram {
			t.Fatalf("%s: the row path formed C: %v", c.name, tr.gram)
		}
		opt.Noise = noise.NewSeeded(5)
		pl, err := PlanNoisyPower(opt, 12)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pl.RunGram(context.Background(), gram, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := 0.0
		if !c.formsGram {
			// Ĉ·X against the passes' Σ s²a(aᵀX): both within the
			// charged rounding of the exact product, in the data's units.
			tol = 2 * pl.RoundingExcess * clip * clip
		}
		for j := range want.Values {
			if d := math.Abs(got.Values[j] - want.Values[j]); d > tol {
				t.Errorf("%s: value %d is %v from the Gram matrix, %v from the rows", c.name, j, got.Values[j], want.Values[j])
			}
		}
		if c.formsGram && !mat.Equal(got.Components, want.Components) {
			t.Errorf("%s: the components differ from the row path's", c.name)
		}
		var dot mat.Dense
		dot.Mul(got.Components.T(), want.Components)
		for j := range c.k {
			if cos := math.Abs(dot.At(j, j)); cos < 1-1e-9 {
				t.Errorf("%s: component %d differs: |cos| = %v", c.name, j, cos)
			}
		}
		if got.Cost != want.Cost || got.NoiseStd != want.NoiseStd || got.Iters != want.Iters {
			t.Errorf("%s: the Gram run's cost, noise or iterations differ from the row path's", c.name)
		}
	}
}

// RunGram refuses what it cannot run from C: the adaptive method (its
// passes filter rows by their own scores), a centred plan (its rows are
// shifted by a private mean first), and a matrix of the wrong size.
func TestRunGramRefuses(t *testing.T) {
	ctx := context.Background()
	g := mat.NewSymDense(4, nil)
	npm, err := PlanNoisyPower(Options{K: 1, Eps: 1, Delta: 1e-6}, 4)
	if err != nil {
		t.Fatal(err)
	}
	centred, err := PlanNoisyPower(Options{K: 1, Eps: 1, Delta: 1e-6, Center: true}, 4)
	if err != nil {
		t.Fatal(err)
	}
	adaptive, err := PlanAdaptive(Options{K: 1, Eps: 1, Delta: 1e-6, Iters: 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pl   *Plan
		g    *mat.SymDense
		want string
	}{
		{"adaptive", adaptive, g, "uncentred"},
		{"centred npm", centred, g, "uncentred"},
		{"wrong size", npm, mat.NewSymDense(3, nil), "4×4"},
		{"no matrix", npm, nil, "4×4"},
	} {
		if _, err := c.pl.RunGram(ctx, c.g, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	if _, err := npm.RunGram(ctx, g, nil); err != nil {
		t.Errorf("uncentred npm on a zero matrix: %v", err)
	}
}

// The excess an npm plan charges (the row path's, for d + 3 +
// sumRoundings roundings per term) covers a Gram matrix summed elsewhere
// (npmGramExcess: each row's term off by up to GramTermError, then d + 1
// roundings), at every shape an engine's Gram takes, under both
// relations (the charge does not depend on them).
func TestNPMGramExcessCharged(t *testing.T) {
	for _, d := range []int{1, 2, 3, 10, 100, 1000, MaxGaussDim} {
		for _, p := range []int{1, 2, 16, d} {
			if p > d || d*p > MaxIterateEntries {
				continue
			}
			for _, nb := range []accounting.Neighbour{accounting.ReplaceOne, accounting.AddRemove} {
				pl, err := PlanNoisyPower(Options{K: p, Eps: 1, Delta: 1e-6, Iters: 1, Neighbour: nb}, d)
				if err != nil {
					t.Fatal(err)
				}
				if e := npmGramExcess(d, p); !(e <= pl.RoundingExcess) {
					t.Errorf("d=%d, p=%d: the Gram path's excess %g is above the charged %g", d, p, e, pl.RoundingExcess)
				}
			}
		}
	}
}
