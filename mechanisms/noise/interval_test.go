package noise

import (
	"errors"
	"math"
	"testing"
)

// laplaceTailByPMF is P(|Z| > k) for the discrete Laplace of integer scale
// t, summed from its probability mass function (independently of the
// closed form LaplaceTailSteps solves).
func laplaceTailByPMF(t uint64, k int) float64 {
	q := math.Exp(-1 / float64(t))
	norm, tail := 1.0, 0.0
	for z := 1; z < 800*int(t); z++ {
		w := math.Pow(q, float64(z))
		norm += 2 * w
		if z > k {
			tail += 2 * w
		}
	}
	return tail / norm
}

func gaussianTailByPMF(s uint64, k int) float64 {
	norm, tail := 1.0, 0.0
	for z := 1; z < 50*int(s); z++ {
		f := float64(z) / float64(s)
		w := math.Exp(-f * f / 2)
		norm += 2 * w
		if z > k {
			tail += 2 * w
		}
	}
	return tail / norm
}

func TestTailStepsAgainstPMF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps func(uint64, float64) uint64
		tail  func(uint64, int) float64
	}{
		{"laplace", LaplaceTailSteps, laplaceTailByPMF},
		{"gaussian", GaussianTailSteps, gaussianTailByPMF},
	} {
		for _, scale := range []uint64{1, 2, 3, 7, 10, 33, 100} {
			for _, alpha := range []float64{0.5, 0.2, 0.1, 0.05, 0.01, 0.001} {
				k := int(tc.steps(scale, alpha))
				if got := tc.tail(scale, k); got > alpha {
					t.Errorf("%s(%d, α=%v) = %d: P(|Z| > k) = %.6g > α", tc.name, scale, alpha, k, got)
				}
				if k > 0 {
					if got := tc.tail(scale, k-1); got <= alpha*(1+1e-9) {
						t.Errorf("%s(%d, α=%v) = %d is not the smallest: P(|Z| > k−1) = %.6g ≤ α", tc.name, scale, alpha, k, got)
					}
				}
			}
		}
	}
}

// Values worked by hand from the closed forms.
func TestTailStepsTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		got   uint64
		want  uint64
		check string
	}{
		// t = 1: P(|Z| > 3) = 2e^-4/(1+e^-1) = 0.0268, P(|Z| > 2) = 0.0728.
		{"laplace t=1 α=0.05", LaplaceTailSteps(1, 0.05), 3, ""},
		// t = 10: k + 1 ≥ 10·(ln(2/(1+e^-0.1)) + ln 20) = 30.45.
		{"laplace t=10 α=0.05", LaplaceTailSteps(10, 0.05), 30, ""},
		// t = 1, α = 0.9: P(|Z| > 0) = 2e^-1/(1+e^-1) = 0.538 ≤ 0.9.
		{"laplace t=1 α=0.9", LaplaceTailSteps(1, 0.9), 0, ""},
		// s = 1: P(|Z| > 1) = 2(e^-2 + e^-4.5 + …)/2.5066 = 0.117, P(|Z| > 2) = 0.0091.
		{"gaussian s=1 α=0.05", GaussianTailSteps(1, 0.05), 2, ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// Above 2^12 the Gaussian uses the erfc bound: never below the exact
// smallest k, and at most a step above it.
func TestGaussianBoundNearExact(t *testing.T) {
	t.Parallel()
	for _, s := range []uint64{1<<12 + 1, 10000} {
		for _, alpha := range []float64{0.1, 0.05, 0.01} {
			exact := gaussianTailStepsExact(s, alpha)
			got := GaussianTailSteps(s, alpha)
			if got < exact || got > exact+1 {
				t.Errorf("GaussianTailSteps(%d, %v) = %d, exact %d", s, alpha, got, exact)
			}
		}
	}
}

func TestHalfWidthOnLattice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		f     func(float64, float64) (float64, error)
		scale float64
		level float64
		want  float64 // the continuous distribution's half-width
	}{
		{"laplace", LaplaceHalfWidth, 1, 0.95, math.Log(20)},
		{"laplace", LaplaceHalfWidth, 37.5, 0.9, 37.5 * math.Log(10)},
		{"laplace", LaplaceHalfWidth, 1e-3, 0.99, 1e-3 * math.Log(100)},
		{"gaussian", GaussianHalfWidth, 1, 0.95, 1.959963984540054},
		{"gaussian", GaussianHalfWidth, 250, 0.9, 250 * 1.6448536269514722},
		{"gaussian", GaussianHalfWidth, 1e6, 0.99, 1e6 * 2.5758293035489004},
	} {
		h, err := tc.f(tc.scale, tc.level)
		if err != nil {
			t.Fatal(err)
		}
		step := LatticeStep(tc.scale)
		if r := h / step; r != math.Trunc(r) {
			t.Errorf("%s(%v, %v) = %v is not a multiple of the step %v", tc.name, tc.scale, tc.level, h, step)
		}
		// The lattice moves the half-width by a relative 2^-40 at most
		// (the scale rounded up to it, and one step).
		if math.Abs(h-tc.want) > 1e-9*tc.want {
			t.Errorf("%s(%v, %v) = %.15g, want %.15g", tc.name, tc.scale, tc.level, h, tc.want)
		}
	}
	if h, err := LaplaceHalfWidth(0, 0.95); h != 0 || err != nil {
		t.Errorf("LaplaceHalfWidth(0) = %v, %v", h, err)
	}
	for _, level := range []float64{0, 1, -0.5, 1.5, math.NaN()} {
		if _, err := GaussianHalfWidth(1, level); !errors.Is(err, ErrLevel) {
			t.Errorf("level %v: err = %v, want ErrLevel", level, err)
		}
	}
	if _, err := LaplaceHalfWidth(-1, 0.95); !errors.Is(err, ErrScaleRange) {
		t.Errorf("negative scale: err = %v", err)
	}
}

// Wider levels give wider intervals, and the level is used as a level
// (not as 1 − level).
func TestHalfWidthMonotoneInLevel(t *testing.T) {
	t.Parallel()
	prev := 0.0
	for _, level := range []float64{0.5, 0.8, 0.9, 0.95, 0.99, 0.999} {
		h, err := GaussianHalfWidth(3, level)
		if err != nil {
			t.Fatal(err)
		}
		if h <= prev {
			t.Errorf("level %v: half-width %v not above %v", level, h, prev)
		}
		prev = h
	}
}

func TestDiffTail(t *testing.T) {
	t.Parallel()
	// One part: the Laplace and Gaussian tails themselves.
	if got, want := DiffTail(false, 2, 0, 3), math.Exp(-1.5); math.Abs(got-want) > 1e-15 {
		t.Errorf("Laplace alone: %v, want %v", got, want)
	}
	if got, want := DiffTail(true, 0, 2, 3.92), 0.05; math.Abs(got-want) > 1e-4 {
		t.Errorf("Gaussian alone: %v, want %v", got, want)
	}
	// Equal scales: the closed form's limit, continuous across it.
	for _, tt := range []float64{0.5, 3, 10} {
		near := DiffTail(false, 1, 0.9999, tt)
		at := DiffTail(false, 1, 1, tt)
		if math.Abs(near-at) > 1e-3*at {
			t.Errorf("t=%v: a≈b %v, a=b %v", tt, near, at)
		}
	}
	// Against the samplers' own lattice noise.
	s := NewSeeded(7)
	const n = 20000
	for _, g := range []bool{false, true} {
		draw := s.Laplace
		if g {
			draw = s.Gaussian
		}
		out := 0
		for range n {
			if math.Abs(3*draw(1)-draw(1.5)) > 6 {
				out++
			}
		}
		want := DiffTail(g, 3, 1.5, 6)
		// binomial std √(p(1−p)/n) ≤ 0.0035; 4.5 of them.
		if f := float64(out) / n; math.Abs(f-want) > 0.016 {
			t.Errorf("gaussian=%v: %.4f of the draws beyond 6, DiffTail %.4f", g, f, want)
		}
	}
}

func TestMeanInterval(t *testing.T) {
	t.Parallel()
	// Gaussian parts without slack: Fieller's quadratic
	// μ²(c² − z²σc²) − 2scμ + s² − z²σs² ≤ 0.
	const sigS, sigC, s, c = 30.0, 4.0, 4150.0, 100.0
	z := math.Sqrt2 * math.Erfcinv(0.05)
	A, B, C := c*c-z*z*sigC*sigC, -2*s*c, s*s-z*z*sigS*sigS
	d := math.Sqrt(B*B - 4*A*C)
	wantLo, wantHi := (-B-d)/(2*A), (-B+d)/(2*A)
	lo, hi, err := MeanInterval(true, sigS, sigC, s, c, 0, 0, 0, 120, 0.95)
	if err != nil || math.Abs(lo-wantLo) > 1e-6 || math.Abs(hi-wantHi) > 1e-6 {
		t.Errorf("Gaussian: [%v, %v], %v; want [%v, %v]", lo, hi, err, wantLo, wantHi)
	}
	// Wider at a higher level, clipped to the bounds, and the bounds when
	// the count says nothing.
	lo99, hi99, _ := MeanInterval(true, sigS, sigC, s, c, 0, 0, 0, 120, 0.99)
	if !(lo99 < lo && hi99 > hi) {
		t.Errorf("99 %% [%v, %v] not wider than 95 %% [%v, %v]", lo99, hi99, lo, hi)
	}
	if lo, hi, _ := MeanInterval(false, 50, 5, 100, 2, 0, 0, 0, 10, 0.95); lo != 0 || hi != 10 {
		t.Errorf("a count of 2 ± 15: [%v, %v], want the bounds", lo, hi)
	}
	// The estimate lies in its interval; the slack widens it.
	lo, hi, _ = MeanInterval(false, 10, 2, 500, 50, 0, 0, 0, 100, 0.9)
	lo2, hi2, _ := MeanInterval(false, 10, 2, 500, 50, 5, 0, 0, 100, 0.9)
	if !(lo < 10 && 10 < hi) || !(lo2 < lo && hi2 > hi) {
		t.Errorf("Laplace: [%v, %v], with slack [%v, %v]", lo, hi, lo2, hi2)
	}
	if _, _, err := MeanInterval(true, 1, 1, 1, 1, 0, 0, 0, 1, 1); !errors.Is(err, ErrLevel) {
		t.Errorf("level 1: %v", err)
	}
}

func TestRankErrorBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n            int
		ratio, level float64
		want         int
	}{
		// ln(1000/0.05)/ln(e^0.5) = 2·9.903 = 19.81: k + 1 = 20.
		{1000, math.Exp(0.5), 0.95, 19},
		// ln(2/0.5)/ln 2 = 2: k + 1 ≥ 2 (the margin pushes it past 2).
		{2, 2, 0.5, 2},
		{1, 1e6, 0.5, 0},
	} {
		got, err := RankErrorBound(tc.n, tc.ratio, tc.level)
		if err != nil || got != tc.want {
			t.Errorf("RankErrorBound(%d, %v, %v) = %d, %v; want %d", tc.n, tc.ratio, tc.level, got, err, tc.want)
		}
	}
	if _, err := RankErrorBound(10, 1, 0.95); err == nil {
		t.Error("ratio 1: no error")
	}
	if _, err := RankErrorBound(10, 2, 1); !errors.Is(err, ErrLevel) {
		t.Errorf("level 1: err = %v", err)
	}
}

// The samplers' own draws fall outside the 90 % interval about 10 % of
// the time (a quick check of the scale the half-width assumes; the
// coverage of whole releases is tested in mechanisms/tabular).
func TestHalfWidthCoversSamples(t *testing.T) {
	t.Parallel()
	s := NewSeeded(28)
	const n = 4000
	for _, tc := range []struct {
		name string
		draw func(float64) float64
		hw   func(float64, float64) (float64, error)
	}{
		{"laplace", s.Laplace, LaplaceHalfWidth},
		{"gaussian", s.Gaussian, GaussianHalfWidth},
	} {
		h, err := tc.hw(2.5, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		out := 0
		for range n {
			if math.Abs(tc.draw(2.5)) > h {
				out++
			}
		}
		// 10 % ± 4.5 standard deviations of a binomial(4000, 0.1).
		if f := float64(out) / n; f < 0.079 || f > 0.121 {
			t.Errorf("%s: %.4f of the draws outside the 90 %% interval", tc.name, f)
		}
	}
}
