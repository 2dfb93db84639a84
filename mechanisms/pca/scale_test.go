package pca

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScaleFastRule checks scaleOf's multiplication test (insideLimit)
// against the exact rule, the two divisions (lim = −1), bit for bit in
// both results: on random rows of every magnitude and on rows whose
// product fl(big·rel) lies within a few hundred ulps of fl(1/invClip),
// where the fast path ends, for the extreme and random clips. It also
// requires both paths to be taken often, so that the comparison means
// something, and the fast path to reach within 2⁻⁴⁶ of the clip.
func TestScaleFastRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	clips := []float64{MinClip, 1e100, 1, 10, 0.1, 3, math.Nextafter(1, 2), math.Nextafter(1, 0)}
	for range 40 {
		clips = append(clips, math.Pow(10, -100+200*rng.Float64()))
	}
	var fast, exact, nearFast int
	check := func(big, rel, inv float64) {
		t.Helper()
		lim := insideLimit(inv)
		s1, n1 := scaleOf(big, rel, true, inv, lim)
		s2, n2 := scaleOf(big, rel, true, inv, -1)
		if math.Float64bits(s1) != math.Float64bits(s2) || math.Float64bits(n1) != math.Float64bits(n2) {
			t.Fatalf("big=%g rel=%g invClip=%g: fast rule (%g, %g), exact (%g, %g)", big, rel, inv, s1, n1, s2, n2)
		}
		if p := big * rel; p <= lim {
			fast++
			if p >= (1/inv)*(1-0x1p-46) {
				nearFast++
			}
		} else {
			exact++
		}
	}
	randRel := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 1
		case 1:
			return math.Sqrt(float64(1 + rng.IntN(1<<20)))
		default:
			return 1 + rng.Float64()*float64(rng.IntN(40))
		}
	}
	for _, clip := range clips {
		inv := 1 / clip
		c := 1 / inv
		for range 4000 {
			rel := randRel()
			// Near the boundary: a target product within ±256 ulps of c.
			target := c * (1 + float64(rng.IntN(513)-256)*0x1p-53)
			big := target / rel
			for range rng.IntN(3) {
				big = math.Nextafter(big, math.Inf(2*rng.IntN(2)-1))
			}
			check(big, rel, inv)
			// Any magnitude: normal, subnormal and near overflow.
			big = math.Ldexp(1+rng.Float64(), rng.IntN(2098)-1074)
			if !math.IsInf(big, 0) && big > 0 {
				check(big, rel, inv)
			}
		}
		for _, big := range []float64{math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, c, math.Nextafter(c, 0), math.Nextafter(c, 2*c)} {
			for _, rel := range []float64{1, math.Nextafter(1, 2), math.Sqrt2, 1e3, math.Inf(1), math.NaN()} {
				check(big, rel, inv)
			}
		}
	}
	if fast < 10000 || exact < 10000 || nearFast < 1000 {
		t.Fatalf("too few rows on each path: fast %d (%d within 2⁻⁴⁶ of the clip), exact %d", fast, nearFast, exact)
	}
}

// TestInsideLimitRange: outside the range of its proof the fast path is
// off, inside it the limit lies just below the clip.
func TestInsideLimitRange(t *testing.T) {
	for _, inv := range []float64{0x1p-1001, 0x1p501, math.Inf(1), math.NaN(), 0, -1} {
		if lim := insideLimit(inv); lim != -1 {
			t.Errorf("insideLimit(%g) = %g, want −1", inv, lim)
		}
	}
	for _, clip := range []float64{MinClip, 1, 1e100} {
		c := 1 / (1 / clip)
		if lim := insideLimit(1 / clip); !(lim < c && lim > c*(1-0x1p-47)) {
			t.Errorf("clip %g: insideLimit = %g, want just below %g", clip, lim, c)
		}
	}
}
