package dppca

import (
	"context"
	"fmt"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/synth"
)

// BenchmarkRun times one DP-PCA run (n = 1e6, d = 10, T = 10) on one and
// two workers, with private Oja (Eq. 7) on the same data as the baseline
// of a single pass with no private estimation; and DP-PCA on a stream that
// must be collected into memory first.
func BenchmarkRun(b *testing.B) {
	const n, d = 1000000, 10
	data, _ := synth.Gaussian(1, n, d, []float64{1, 0.5})
	for _, workers := range []int{1, 2} {
		opt := Options{Eps: 0.8, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 0.5, Beta: 5.5, Workers: workers}
		b.Run(fmt.Sprintf("dppca/workers=%d", workers), func(b *testing.B) {
			for i := range b.N {
				opt.Noise = noise.NewSeeded(uint64(i))
				if _, err := Run(context.Background(), data.X, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("oja/workers=%d", workers), func(b *testing.B) {
			for i := range b.N {
				opt.Noise = noise.NewSeeded(uint64(i))
				if _, err := PrivateOja(context.Background(), data.X, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("dppca/shuffle+pairs/workers=2", func(b *testing.B) {
		opt := Options{Eps: 0.8, Delta: 1e-7, Gap: 0.5, Workers: 2}
		for i := range b.N {
			opt.Noise = noise.NewSeeded(uint64(i))
			if _, err := Run(context.Background(), data.X, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A stream without RandomAccess: the rows are collected first.
	b.Run("dppca/stream/workers=2", func(b *testing.B) {
		opt := Options{Eps: 0.8, Delta: 1e-7, Centred: true, KeepOrder: true, Gap: 0.5, Workers: 2}
		pl, err := PlanDPPCA(opt, d)
		if err != nil {
			b.Fatal(err)
		}
		for i := range b.N {
			pl.opt.Noise = noise.NewSeeded(uint64(i))
			if _, err := pl.RunSource(context.Background(), &jitterSource{x: data.X, d: d, seed: uint64(i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
