package rowpass

import (
	"context"
	"errors"
	"github.com/privnotes/privnotes/mechanisms/internal/rowstest"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

func TestPairwiseScanMatchesPairwise(t *testing.T) {
	// Lent chunks of a few blocks, so that a pass lends many.
	defer func(n int) { viewRows = n }(viewRows)
	viewRows = 3 * BlockRows
	const d = 3
	for _, n := range []int{0, 1, 255, 256, 257, 1000, 4096 * 3, 70001} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		x := mat.NewDense(max(n, 1), d, nil)
		for i := range n {
			for j := range d {
				// Magnitudes spread over many binades, so that any change
				// of the summation order changes the bits.
				x.Set(i, j, rng.NormFloat64()*math.Pow(2, float64(rng.IntN(40)-20)))
			}
		}
		want := SumVec(n, d, Options{Workers: 1}, func(dst []float64, lo, hi int) {
			for i := lo; i < hi; i++ {
				for j := range d {
					dst[j] += x.At(i, j)
				}
			}
		})
		var src rows.Source = rows.FromDense(x)
		if n == 0 {
			src = rows.FromDense(nil)
		}
		for _, workers := range []int{1, 3, 8} {
			for _, s := range []rows.Source{src, &rowstest.Jitter{D: rows.FromDense(x), Seed: uint64(workers)},
				&rowstest.Jitter{D: rows.FromDense(x), Seed: uint64(workers), Lend: true}} {
				if n == 0 {
					s = src
				}
				got, err := SumVecScan(context.Background(), s, d, Options{Workers: workers, MinRows: 1}, false, false, func(dst []float64, b *rows.Batch) {
					if b.N > BlockRows {
						t.Fatalf("a block of %d rows", b.N)
					}
					for i := range b.N {
						for j, v := range b.Row(i, d) {
							dst[j] += v
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				for j := range want {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
						t.Errorf("n=%d workers=%d %T: entry %d = %v, Pairwise gives %v", n, workers, s, j, got[j], want[j])
					}
				}
			}
		}
	}
}

func TestPairwiseScanReportsSourceErrors(t *testing.T) {
	x := mat.NewDense(50000, 2, nil)
	for _, lend := range []bool{false, true} {
		for _, fail := range []int{3000, 40000} {
			_, err := SumVecScan(context.Background(), &rowstest.Jitter{D: rows.FromDense(x), Fail: fail, Lend: lend}, 2, Options{}, false, false, func([]float64, *rows.Batch) {})
			if err == nil || err.Error() != "disk on fire" {
				t.Fatalf("lend %v, fail after %d: err = %v, want the source's error", lend, fail, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SumVecScan(ctx, rows.FromDense(x), 2, Options{}, false, false, func([]float64, *rows.Batch) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scan: err = %v", err)
	}
}

func TestPairwiseScanPassesLabelsAndUnits(t *testing.T) {
	n := 600
	x := mat.NewDense(n, 1, nil)
	y := make([]float64, n)
	u := make([]int32, n)
	for i := range n {
		x.Set(i, 0, float64(i))
		y[i] = float64(2 * i)
		u[i] = int32(i % 7)
	}
	src, err := rows.FromDense(x).WithLabels(y)
	if err != nil {
		t.Fatal(err)
	}
	src, err = src.WithUnits(u, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []rows.Source{src, &rowstest.Jitter{D: src, Lend: true}} {
		testLabelsAndUnits(t, s, n)
	}
}

func testLabelsAndUnits(t *testing.T, src rows.Source, n int) {
	t.Helper()
	got, err := SumVecScan(context.Background(), src, 1, Options{}, true, true, func(dst []float64, b *rows.Batch) {
		if b.First != int(b.X[0]) {
			t.Fatalf("a block starting at row %v says First = %d", b.X[0], b.First)
		}
		for i := range b.N {
			if b.Label[i] != 2*b.X[i] || b.Unit[i] != int32(int(b.X[i])%7) {
				t.Fatalf("row %v: label %v unit %v", b.X[i], b.Label[i], b.Unit[i])
			}
			dst[0]++
		}
	})
	if err != nil || got[0] != float64(n) {
		t.Fatalf("got %v, %v; want %d rows", got, err, n)
	}
}
