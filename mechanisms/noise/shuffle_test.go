package noise

import "testing"

// TestShuffleUniform: every one of the 24 permutations of 4 elements comes
// up with frequency 1/24 (chi-square over 240000 seeded shuffles, 23
// degrees of freedom: the 0.999 quantile is 49.7), and Shuffle of 0 or 1
// element calls nothing.
func TestShuffleUniform(t *testing.T) {
	s := NewSeeded(7)
	const trials = 240000
	counts := map[[4]int]int{}
	for range trials {
		p := [4]int{0, 1, 2, 3}
		s.Shuffle(4, func(i, j int) { p[i], p[j] = p[j], p[i] })
		counts[p]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d distinct permutations, want 24", len(counts))
	}
	chi := 0.0
	for _, c := range counts {
		e := trials / 24.0
		chi += (float64(c) - e) * (float64(c) - e) / e
	}
	if chi > 49.7 {
		t.Errorf("chi-square %.1f over 23 degrees of freedom: not uniform", chi)
	}
	for _, n := range []int{0, 1} {
		s.Shuffle(n, func(i, j int) { t.Errorf("Shuffle(%d) swapped %d, %d", n, i, j) })
	}
}

// TestShuffleCryptoDiffers: two crypto shuffles of 64 elements differ
// (they coincide with probability 1/64!).
func TestShuffleCryptoDiffers(t *testing.T) {
	perm := func() []int {
		p := make([]int, 64)
		for i := range p {
			p[i] = i
		}
		New().Shuffle(64, func(i, j int) { p[i], p[j] = p[j], p[i] })
		return p
	}
	a, b := perm(), perm()
	same := true
	for i := range a {
		same = same && a[i] == b[i]
	}
	if same {
		t.Error("two crypto/rand shuffles of 64 elements are equal")
	}
}
