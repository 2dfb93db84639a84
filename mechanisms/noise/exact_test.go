package noise

import (
	"math"
	"math/big"
	"math/bits"
	"testing"
	"time"
)

// scripted returns a bit source whose byte stream is prefix followed by
// rest repeated forever.
func scripted(prefix []byte, rest byte) *bitSource {
	first := true
	return newBitSource(func(p []byte) {
		for i := range p {
			p[i] = rest
		}
		if first {
			copy(p, prefix)
			first = false
		}
	})
}

// TestBernoulliFracDecisions checks every decision of bernoulliFrac
// against exact rational comparisons: with the first block W and all later
// bits 0, U = W/2^blockBits exactly and the answer must be
// W·den < 2^blockBits·num; with all later bits 1, U approaches
// (W+1)/2^blockBits from below (a tie with p has probability zero) and the
// answer must be (W+1)·den <= 2^blockBits·num.
func TestBernoulliFracDecisions(t *testing.T) {
	pairs := [][2]uint64{
		{0, 1}, {1, 1}, {1, 2}, {1, 3}, {2, 3}, {3, 8}, {5, 7}, {85, 256}, {86, 257},
		{1, 1 << 40}, {1<<40 - 1, 1 << 40}, {12345678901, 1<<41 - 3}, {1<<54 - 5, 1<<54 + 1},
	}
	const blocks = 1 << blockBits
	for _, pr := range pairs {
		num, den := pr[0], pr[1]
		for w := uint64(0); w < blocks; w++ {
			for _, tail := range []byte{0x00, 0xff} {
				b := scripted([]byte{byte(w) | tail&^(blocks-1)}, tail)
				got := b.bernoulliFrac(num, den)
				u := new(big.Int).SetUint64(w)
				if tail == 0xff {
					u.Add(u, big.NewInt(1))
				}
				lhs := new(big.Int).Mul(u, new(big.Int).SetUint64(den))
				rhs := new(big.Int).Lsh(new(big.Int).SetUint64(num), blockBits)
				c := lhs.Cmp(rhs)
				want := c < 0 || (tail == 0xff && c == 0) || num >= den
				if got != want {
					t.Fatalf("bernoulliFrac(%d/%d) with W=%d tail %#x = %v, want %v", num, den, w, tail, got, want)
				}
			}
		}
	}
}

// TestUniformRejects checks Lemire's rejection step: a draw x with
// x·n mod 2^48 below 2^48 mod n must be redrawn, not returned.
func TestUniformRejects(t *testing.T) {
	// x = 0 gives x·3 mod 2^48 = 0 < 2^48 mod 3 = 1: rejected. The next
	// draw is 48 bits of 0xaa bytes.
	b := scripted([]byte{0, 0, 0, 0, 0, 0}, 0xaa)
	got := b.uniform(3)
	x := uint64(0xaaaaaaaaaaaa)
	hi, lo := bits.Mul64(x, 3)
	want := hi<<16 | lo>>48
	if got != want || want == 0 {
		t.Fatalf("uniform(3) after a rejected draw = %d, want %d", got, want)
	}
	// Exhaustive over the top bits for a small n: the map x -> result over
	// accepted x is exactly balanced.
	const n = 5
	counts := make([]int, n)
	thresh := (1 << uniformBits) % n
	for top := uint64(0); top < 1<<12; top++ {
		x := top<<36 | 0x123456789 // spread across [0, 2^48)
		hi, lo := bits.Mul64(x, n)
		if lo&(1<<uniformBits-1) < uint64(thresh) {
			continue
		}
		counts[hi<<16|lo>>48]++
	}
	for v, c := range counts {
		if c < (1<<12)/n-2 || c > (1<<12)/n+2 {
			t.Errorf("value %d drawn %d times of %d", v, c, 1<<12)
		}
	}
}

// TestBitsStream checks that bits() hands out the stream without loss or
// reuse across word boundaries.
func TestBitsStream(t *testing.T) {
	prefix := make([]byte, 64)
	for i := range prefix {
		prefix[i] = byte(i*37 + 11)
	}
	b := scripted(prefix, 0)
	var got []byte
	var acc uint64
	var nacc uint
	for _, n := range []uint{3, 8, 48, 1, 64, 13, 7, 20, 60, 34, 2, 64, 50, 40, 48, 100} {
		if n > 64 {
			n = 64
		}
		v := b.bits(n)
		for i := uint(0); i < n; i++ {
			acc |= (v >> i & 1) << nacc
			nacc++
			if nacc == 8 {
				got = append(got, byte(acc))
				acc, nacc = 0, 0
			}
		}
	}
	for i, g := range got {
		if i < len(prefix) && g != prefix[i] {
			t.Fatalf("byte %d of the bit stream = %#x, want %#x", i, g, prefix[i])
		}
	}
	if len(got) < 60 {
		t.Fatalf("only %d bytes checked", len(got))
	}
}

// The integer samplers accept scales up to 2^50, but uniform once drew only
// 48 bits, so a scale above 2^48 made its rejection loop run forever.
// Every documented scale must return, and uniform must stay in range and
// unbiased for wide n.
func TestWideIntegerScales(t *testing.T) {
	done := make(chan struct{})
	s := NewSeeded(44)
	go func() {
		defer close(done)
		for _, scale := range []uint64{1<<47 + 1, 1<<48 + 1, 1 << 50} {
			for i := 0; i < 200; i++ {
				s.DiscreteLaplaceInt(scale)
				s.DiscreteGaussianInt(scale)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("integer samplers at scales above 2^47 did not return within 30 s")
	}

	b := NewSeeded(45).src
	const draws = 20000
	for _, n := range []uint64{1<<48 + 1, 1 << 50, 3 << 61, math.MaxUint64} {
		sum := 0.0
		for i := 0; i < draws; i++ {
			v := b.uniform(n)
			if v >= n {
				t.Fatalf("uniform(%d) = %d out of range", n, v)
			}
			sum += float64(v) / float64(n)
		}
		// The mean of U[0,1) over 20000 draws has std 0.002; allow 5 std.
		if m := sum / draws; math.Abs(m-0.5) > 0.01 {
			t.Errorf("uniform(%d): mean/n = %v, want 0.5 ± 0.01", n, m)
		}
	}
}
