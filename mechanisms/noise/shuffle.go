// Secret uniform permutations, for mechanisms whose privacy rests on the
// order of the records staying hidden (amplification by shuffling).

package noise

import "fmt"

// Shuffle permutes n elements uniformly at random (Fisher–Yates, calling
// swap(i, j) for i = n−1 down to 1 with j uniform on [0, i]), each j drawn
// exactly by Lemire's rejection method from the Sampler's bits: crypto/rand
// for New, the seeded stream for NewSeeded (tests only). Unlike the public
// randomness of Uniform or FillStdNormal, the permutation is a privacy
// primitive: shuffling amplification (Feldman, McMillan and Talwar 2021)
// needs it uniform and unknown to the analyst. It panics for n < 0 or
// n ≥ 2^47.
func (s *Sampler) Shuffle(n int, swap func(i, j int)) {
	if n < 0 || n >= 1<<(uniformBits-1) {
		panic(fmt.Sprintf("noise: Shuffle(%d) needs 0 <= n < 2^47", n))
	}
	if n < 2 {
		return
	}
	b := s.acquire()
	defer s.release(b)
	for i := n - 1; i > 0; i-- {
		swap(i, int(b.uniform(uint64(i+1))))
	}
}
