package dppca

import (
	"slices"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The secret order of private Oja with shuffling is the noise sampler's own
// exact Fisher–Yates (noise.Sampler.Shuffle): every swap index is drawn
// from the sampler's bits, which for noise.New are fresh crypto/rand bytes
// (about log2(n!) bits in all), not the expansion of a seed; in
// particular not of the 64-bit public seed that DP-PCA's and Oja's
// data-independent shuffles use (records.go), whose privacy does not rest
// on them. Issue 25.5 asked for a 256-bit key: the permutation is keyed by
// more than that. With a seeded sampler (tests only) the order is exactly
// Shuffle's on the same stream, and two crypto/rand orders differ.
func TestOjaShuffleOrderFromSampler(t *testing.T) {
	for _, n := range []int{2, 3, 17, 1000} {
		for _, N := range []int{n, 2 * n} {
			got := secretOrder(newSource(noise.NewSeeded(42), nil), n, N, false)
			want := make([]int32, max(n, N))
			for i := range want {
				want[i] = -1
				if i < n {
					want[i] = int32(i)
				}
			}
			noise.NewSeeded(42).Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
			if !slices.Equal(got, want[:N]) {
				t.Fatalf("n=%d, N=%d: the secret order is not the sampler's Fisher–Yates", n, N)
			}
		}
	}
	// crypto/rand: two orders of 64 records agree with probability 1/64!.
	a := secretOrder(newSource(noise.New(), nil), 64, 64, false)
	b := secretOrder(newSource(noise.New(), nil), 64, 64, false)
	if slices.Equal(a, b) {
		t.Error("two crypto/rand orders of 64 records are equal")
	}
}
