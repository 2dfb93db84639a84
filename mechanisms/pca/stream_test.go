package pca

import (
	"context"
	"errors"
	"github.com/privnotes/privnotes/mechanisms/internal/rowstest"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// streamData returns rows that exercise every row rule: spiked rows of
// norms around the clip bound, non-finite rows, zero rows, and rows near
// overflow and underflow.
func streamData(n, d int) *mat.Dense {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	x, _ := spikedRows(rng, n, d, []float64{8, 3})
	for i := 0; i < n; i += 97 {
		switch i % 5 {
		case 0:
			x.Set(i, rng.IntN(d), math.NaN())
		case 1:
			x.Set(i, rng.IntN(d), math.Inf(-1))
		case 2:
			for j := range d {
				x.Set(i, j, 0)
			}
		case 3:
			for j := range d {
				x.Set(i, j, 1e300*rng.NormFloat64())
			}
		case 4:
			for j := range d {
				x.Set(i, j, 1e-310*rng.NormFloat64())
			}
		}
	}
	return x
}

// sameBits fails t unless a and b hold the same float64 bit patterns.
func sameBits(t *testing.T, name string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values against %d", name, len(a), len(b))
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("%s: entry %d is %v on one source and %v on the other (must be bit identical)", name, i, a[i], b[i])
		}
	}
}

// TestRunSourceBitIdentical runs every method's plan on rows.FromDense(x)
// (in place) and on a source that delivers the same rows in random
// batches (streamed through rowpass.PairwiseScan), with the same seed, and
// on the matrix through Run: the releases must agree bit for bit, so the
// batching of a source cannot change a result, and Run is RunSource. The
// noise rounds a release onto its lattice, which can hide a change in the
// last bits of a sum, so every case also runs without noise (the test
// knob), where the releases are the sums themselves.
func TestRunSourceBitIdentical(t *testing.T) {
	x := streamData(3000, 12) // 12 blocks: several chunks per worker
	for _, noiseScale := range []float64{1, 0} {
		testRunSourceBitIdentical(t, x, noiseScale)
	}
}

func testRunSourceBitIdentical(t *testing.T, x *mat.Dense, noiseScale float64) {
	for _, tc := range []struct {
		name   string
		method string
		opt    Options
	}{
		{"npm/pass", MethodNPM, Options{K: 2, Iters: 3, Clip: 3}}, // d ≥ 2pL: no Gram
		{"npm/gram", MethodNPM, Options{K: 2, Iters: 40, Clip: 3}},
		{"adaptive", MethodAdaptive, Options{Iters: 6, Clip: 2}},
		{"gauss", MethodGauss, Options{K: 3, Clip: 3}},
	} {
		for _, workers := range []int{1, 2, 3} {
			run := func(src rows.Source, matrix bool) (*Result, *trace) {
				t.Helper()
				opt := tc.opt
				opt.Eps, opt.Delta, opt.Workers, opt.Noise = 1, 1e-6, workers, noise.NewSeeded(7)
				tr := &trace{}
				opt = withKnob(opt, testKnob{noiseScale: noiseScale, trace: tr})
				pl, err := PlanMethod(tc.method, opt, 12)
				if err != nil {
					t.Fatal(err)
				}
				var res *Result
				if matrix {
					res, err = pl.Run(context.Background(), x)
				} else {
					res, err = pl.RunSource(context.Background(), src)
				}
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				return res, tr
			}
			want, wtr := run(rows.FromDense(x), false)
			if tc.name == "npm/gram" && !wtr.gram || tc.name == "npm/pass" && wtr.gram {
				t.Fatalf("%s took the other path", tc.name)
			}
			for _, alt := range []struct {
				name   string
				src    rows.Source
				matrix bool
			}{
				{"jitter", &rowstest.Jitter{D: rows.FromDense(x), Seed: uint64(workers)}, false},
				// Stored norms: the scales come from them (linalg.Rows.FromNorm).
				{"jitter+norms", &rowstest.Jitter{D: rows.FromDense(x), Seed: uint64(workers), Norms: true}, false},
				{"Run(matrix)", nil, true},
			} {
				got, gtr := run(alt.src, alt.matrix)
				name := tc.name + "/" + alt.name
				sameBits(t, name+"/components", got.Components.RawMatrix().Data, want.Components.RawMatrix().Data)
				sameBits(t, name+"/values", got.Values, want.Values)
				sameBits(t, name+"/thresholds", got.Thresholds, want.Thresholds)
				sameBits(t, name+"/first release", gtr.first, wtr.first)
				sameBits(t, name+"/max scores", gtr.maxScores, wtr.maxScores)
			}
		}
	}
}

// TestRunSourceErrors: a source's error and a cancellation mid-pass stop
// the run with an error that names no data; a source of the wrong width is
// refused before any pass.
func TestRunSourceErrors(t *testing.T) {
	x := streamData(3000, 6)
	for _, method := range Methods {
		opt := Options{Eps: 1, Delta: 1e-6, Iters: 3, Noise: noise.NewSeeded(1)}
		if method == MethodGauss {
			opt.Iters = 0
		}
		pl, err := PlanMethod(method, opt, 6)
		if err != nil {
			t.Fatal(err)
		}
		_, err = pl.RunSource(context.Background(), &rowstest.Jitter{D: rows.FromDense(x), Fail: 1000})
		if !errors.Is(err, rowstest.ErrDisk) || !strings.HasPrefix(err.Error(), "pca "+method+": reading the data in iteration 1: ") {
			t.Errorf("%s: source error gave %v", method, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := pl.RunSource(ctx, &rowstest.Jitter{D: rows.FromDense(x)}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled run gave %v", method, err)
		}
		if _, err := pl.RunSource(context.Background(), nil); err == nil || err.Error() != "pca "+method+": no data" {
			t.Errorf("%s: nil source gave %v", method, err)
		}
		if _, err := pl.RunSource(context.Background(), rows.FromDense(mat.NewDense(3, 5, nil))); err == nil || !strings.Contains(err.Error(), "5 columns") {
			t.Errorf("%s: 5 columns gave %v", method, err)
		}
	}
}

// TestStreamingPowerSourceBitIdentical: SPM over a source without a row
// count (counted in a first pass) reads the same samples as over the
// matrix.
func TestStreamingPowerSourceBitIdentical(t *testing.T) {
	x := streamData(1000, 5)
	for i := 0; i < 1000; i += 97 { // SPM has no row rule: finite rows only
		for j := range 5 {
			x.Set(i, j, float64(j))
		}
	}
	opt := func() StreamOptions { return StreamOptions{P: 2, Iters: 7, Start: noise.NewSeeded(3)} }
	want, err := StreamingPowerRows(context.Background(), x, opt())
	if err != nil {
		t.Fatal(err)
	}
	got, err := StreamingPowerSource(context.Background(), &rowstest.Jitter{D: rows.FromDense(x)}, opt())
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "spm basis", got.Basis.RawMatrix().Data, want.Basis.RawMatrix().Data)
	if got.BlockSize != want.BlockSize || got.Used != want.Used {
		t.Errorf("blocks %d/%d, want %d/%d", got.BlockSize, got.Used, want.BlockSize, want.Used)
	}
	if _, err := StreamingPowerSource(context.Background(), &rowstest.Jitter{D: rows.FromDense(x), Fail: 500}, opt()); !errors.Is(err, rowstest.ErrDisk) {
		t.Errorf("source error gave %v", err)
	}
}
