package tabular

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The selector draws candidate j with probability ∝ e^(−ε·L_j/2) (to the
// weights' relative rounding, below 1e-15 at these ε), whatever its
// envelope and the order of the losses: over 40000 seeded draws each
// frequency is within five binomial standard errors (plus 2e-4) of the
// closed form.
func TestSelectMatchesClosedForm(t *testing.T) {
	testtier.Long(t)
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

// SelectWithin is Select with work fixed by the bound: from the same fair
// bits it returns the same candidate for every loss vector (so the same
// distribution, exactly), and it takes bound weight steps whether the
// best loss is 0 or the bound itself.
func TestSelectWithinIsSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const bound = 3000
	for trial := range 300 {
		eps := []float64{0.05, 0.5, 2, 20}[trial%4]
		sel, err := NewSelector(eps)
		if err != nil {
			t.Fatal(err)
		}
		losses := make([]int64, 1+trial%6)
		base := rng.Int64N(bound + 1) // the best loss, anywhere in [0, bound]
		for j := range losses {
			losses[j] = min(base+rng.Int64N(int64(1+trial%50)), bound)
		}
		a, b := noise.NewSeeded(uint64(trial)), noise.NewSeeded(uint64(trial))
		want := sel.Select(losses, func() bool { return a.Bernoulli(1, 2) })
		got, steps := sel.SelectWithin(losses, bound, func() bool { return b.Bernoulli(1, 2) })
		if got != want {
			t.Fatalf("eps %v losses %v: SelectWithin %d, Select %d", eps, losses, got, want)
		}
		if steps != bound {
			t.Fatalf("losses %v: %d weight steps, want the bound %d whatever the losses", losses, steps, bound)
		}
	}
}

// BenchmarkSelectWithin compares Select (a walk to the losses: here the
// best loss is 10^5) with SelectWithin at the bound 10^6 (a walk of 10^6
// weight steps whatever the losses), four candidates as gap="auto" has.
func BenchmarkSelectWithin(b *testing.B) {
	sel, err := NewSelector(0.5)
	if err != nil {
		b.Fatal(err)
	}
	losses := []int64{100000, 100003, 100010, 100400}
	s := noise.NewSeeded(1)
	bit := func() bool { return s.Bernoulli(1, 2) }
	b.Run("Select", func(b *testing.B) {
		for b.Loop() {
			sel.Select(losses, bit)
		}
	})
	b.Run("SelectWithin-1e6", func(b *testing.B) {
		for b.Loop() {
			sel.SelectWithin(losses, 1_000_000, bit)
		}
	})
}
