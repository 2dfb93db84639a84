package dppca

import (
	"context"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// Progress sees exactly 1..T in order, T the planned minibatch steps, for
// data sets of different sizes, including data on which DP-PCA skips steps
// (all zero rows): the sequence of reports is a function of the plan alone.
func TestProgressIsDataIndependent(t *testing.T) {
	const T, d = 4, 3
	small, err := synth.Gaussian(1, 50, d, []float64{1, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	large, err := synth.Gaussian(2, 3000, d, []float64{4, 1})
	if err != nil {
		t.Fatal(err)
	}
	datasets := []*mat.Dense{small.X, large.X, mat.NewDense(20, d, nil)}
	want := []int{1, 2, 3, 4}
	for _, tc := range []struct {
		method string
		run    func(context.Context, *mat.Dense, Options) (*Result, error)
	}{{MethodDPPCA, Run}, {MethodPrivateOja, PrivateOja}} {
		skipped := 0
		for i, x := range datasets {
			var got []int
			opt := Options{Eps: 0.8, Delta: 1e-7, Calibration: CalibAnalytic, Steps: T, Centred: true, Gap: 1, Beta: 1,
				Noise: noise.NewSeeded(uint64(i + 1)),
				Progress: func(step, total int) {
					if total != T {
						t.Errorf("%s: total %d, want %d", tc.method, total, T)
					}
					got = append(got, step)
				}}
			res, err := tc.run(context.Background(), x, opt)
			if err != nil {
				t.Fatalf("%s on data set %d: %v", tc.method, i, err)
			}
			skipped += res.Skipped
			if !slices.Equal(got, want) {
				t.Errorf("%s on data set %d (%d rows): steps %v, want %v", tc.method, i, x.RawMatrix().Rows, got, want)
			}
		}
		// The zero rows make DP-PCA skip steps, so the test covers the
		// skipped branch too.
		if tc.method == MethodDPPCA && skipped == 0 {
			t.Errorf("%s skipped no step on any data set: the skip branch is untested", tc.method)
		}
	}
}
