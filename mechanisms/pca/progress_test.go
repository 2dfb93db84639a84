package pca

import (
	"context"
	"slices"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// Progress sees exactly 1..T in order, T the planned iterations, for
// data sets of different sizes and spectra: the sequence of reports is a
// function of the plan alone. Gauss, a single release, reports nothing.
func TestProgressIsDataIndependent(t *testing.T) {
	const T = 7
	for _, method := range []string{MethodNPM, MethodAdaptive, MethodGauss} {
		var first []int
		for i, data := range []struct {
			seed uint64
			n    int
			ev   []float64
		}{{1, 40, []float64{1, 0.5}}, {2, 900, []float64{4, 2, 1}}} {
			x, err := synth.Gaussian(data.seed, data.n, 4, data.ev)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			opt := Options{Eps: 1, Delta: 1e-6, Iters: T, Noise: noise.NewSeeded(data.seed),
				Progress: func(step, total int) {
					if total != T {
						t.Errorf("%s: total %d, want %d", method, total, T)
					}
					got = append(got, step)
				}}
			if method == MethodGauss {
				opt.Iters = 0
			}
			pl, err := PlanMethod(method, opt, 4)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pl.Run(context.Background(), x.X); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			want := []int{1, 2, 3, 4, 5, 6, 7}
			if method == MethodGauss {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s on n=%d: steps %v, want %v", method, data.n, got, want)
			}
			if i == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Errorf("%s: steps %v on one data set, %v on another", method, first, got)
			}
		}
	}
}
