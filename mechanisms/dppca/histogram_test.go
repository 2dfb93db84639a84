package dppca

import (
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// TestHistogramThreshold checks the noise scale and threshold of Lemma
// B.1's mechanism (spec §8 item 6): b = 2/ε up to the lattice slack and
// threshold 1 + (2/ε)·ln(2/δ).
func TestHistogramThreshold(t *testing.T) {
	for _, tc := range []struct{ eps, delta float64 }{{0.4, 1e-7}, {1, 1e-6}, {0.005, 1e-9}} {
		b, thr := histParams{tc.eps, tc.delta}.scale()
		if rel := b/(2/tc.eps) - 1; rel < 0 || rel > 1e-9 {
			t.Errorf("ε=%v: Laplace scale %v, want 2/ε = %v (rounded up by < 1e-9)", tc.eps, b, 2/tc.eps)
		}
		want := 1 + 2/tc.eps*math.Log(2/tc.delta)
		if rel := thr/want - 1; rel < 0 || rel > 1e-6 {
			t.Errorf("ε=%v δ=%v: threshold %v, want %v", tc.eps, tc.delta, thr, want)
		}
	}
}

// TestHistogramSparse checks that only occupied bins can appear, that
// large bins survive and singletons do not, and that the release is a
// fixed function of the seed despite map iteration order.
func TestHistogramSparse(t *testing.T) {
	counts := map[int64]int{-5: 1000, 3: 1, 7: 0, 1 << 60: 2000, -1 << 61: -4}
	for seed := uint64(0); seed < 50; seed++ {
		out, err := StableHistogram(counts, 1, 1e-6, noise.NewSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		for id := range out {
			if counts[id] <= 0 {
				t.Fatalf("seed %d: empty bin %d was released", seed, id)
			}
		}
		if _, ok := out[3]; ok {
			t.Fatalf("seed %d: a singleton bin survived a threshold of %.1f", seed, 1+2*math.Log(2e6))
		}
		if len(out) != 2 {
			t.Fatalf("seed %d: want the two large bins, got %v", seed, out)
		}
		again, _ := StableHistogram(counts, 1, 1e-6, noise.NewSeeded(seed))
		for id, v := range out {
			if again[id] != v {
				t.Fatalf("seed %d: bin %d released %v then %v", seed, id, v, again[id])
			}
		}
		if id, ok := StableMode(out); !ok || id != 1<<60 {
			t.Fatalf("seed %d: mode %d, %v; want bin 2^60", seed, id, ok)
		}
	}
}

// TestStableModeTies checks the deterministic tie-break and ⊥.
func TestStableModeTies(t *testing.T) {
	if _, ok := StableMode(map[int64]float64{}); ok {
		t.Error("an empty release must give ⊥")
	}
	for range 20 { // map order varies between iterations
		id, ok := StableMode(map[int64]float64{9: 5, -3: 5, 4: 5, 100: 4})
		if !ok || id != -3 {
			t.Fatalf("tie: got %d, want the smallest id -3", id)
		}
	}
}

func TestHistogramBadInput(t *testing.T) {
	for _, tc := range []struct{ eps, delta float64 }{{0, 1e-6}, {math.Inf(1), 1e-6}, {1, 0}, {1, 1}, {math.NaN(), 0.1}} {
		if _, err := StableHistogram(map[int64]int{1: 1}, tc.eps, tc.delta, nil); err == nil {
			t.Errorf("ε=%v δ=%v accepted", tc.eps, tc.delta)
		}
	}
}
