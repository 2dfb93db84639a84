package tabular

import (
	"math"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The selector draws candidate j with probability ∝ e^(−ε·L_j/2) (to the
// weights' relative rounding, below 1e-15 at these ε), whatever its
// envelope and the order of the losses: over 40000 seeded draws each
// frequency is within five binomial standard errors (plus 2e-4) of the
// closed form.
func TestSelectMatchesClosedForm(t *testing.T) {
	for _, c := range []struct {
		eps     float64
		losses  []int64
		envBits int64
	}{
		{1, []int64{3, 0, 1, 0}, cutBits},
		{1, []int64{3, 0, 1, 0}, 1},
		{0.3, []int64{10, 12, 11, 15, 10}, 2},
		{4, []int64{1000, 1001, 1003}, 1},
		{2, []int64{7}, cutBits},
	} {
		sel, err := NewSelector(c.eps)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(c.losses))
		var z float64
		for j, l := range c.losses {
			want[j] = math.Exp(-c.eps * float64(l-c.losses[0]) / 2)
			z += want[j]
		}
		s := noise.NewSeeded(uint64(c.envBits) + 11)
		bit := func() bool { return s.Bernoulli(1, 2) }
		const draws = 40000
		got := make([]float64, len(want))
		for range draws {
			got[sel.selectEnv(c.losses, bit, c.envBits)]++
		}
		for j := range got {
			f, pj := got[j]/draws, want[j]/z
			if tol := 5*math.Sqrt(pj*(1-pj)/draws) + 2e-4; math.Abs(f-pj) > tol {
				t.Errorf("%+v: candidate %d: frequency %.4f, probability %.4f", c, j, f, pj)
			}
		}
	}
}

// With a loss gap far beyond 2/ε the best candidate always wins, and bad
// ε is refused.
func TestSelectConcentrates(t *testing.T) {
	sel, err := NewSelector(50)
	if err != nil {
		t.Fatal(err)
	}
	s := noise.NewSeeded(3)
	bit := func() bool { return s.Bernoulli(1, 2) }
	for range 200 {
		if j := sel.Select([]int64{400, 90, 2000, 91}, bit); j != 1 {
			t.Fatalf("selected %d, want 1", j)
		}
	}
	for _, eps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := NewSelector(eps); err == nil {
			t.Errorf("NewSelector(%v) accepted", eps)
		}
	}
}
