package rowpass

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// pairwiseSum sums xs with Pairwise, each block summed left to right.
func pairwiseSum(xs []float64, opt Options) float64 {
	return SumVec(len(xs), 1, opt, func(dst []float64, lo, hi int) {
		for _, x := range xs[lo:hi] {
			dst[0] += x
		}
	})[0]
}

// referenceTree is an independent statement of the reduction order: block
// sums left to right, aligned dyadic nodes as left + right, the remaining
// nodes (the binary digits of nb, largest first) added smallest first.
func referenceTree(xs []float64) float64 {
	nb := (len(xs) + BlockRows - 1) / BlockRows
	var nodeSum func(start, level int) float64
	nodeSum = func(start, level int) float64 {
		if level == 0 {
			s := 0.0
			for _, x := range xs[start*BlockRows : min((start+1)*BlockRows, len(xs))] {
				s += x
			}
			return s
		}
		half := 1 << (level - 1)
		return nodeSum(start, level-1) + nodeSum(start+half, level-1)
	}
	var parts []float64
	start := 0
	for level := 62; level >= 0; level-- {
		if nb&(1<<level) != 0 {
			parts = append(parts, nodeSum(start, level))
			start += 1 << level
		}
	}
	if len(parts) == 0 {
		return 0
	}
	top := parts[len(parts)-1]
	for i := len(parts) - 2; i >= 0; i-- {
		top = parts[i] + top
	}
	return top
}

// exactSum returns Σ xs exactly (rounded once to float64) and Σ|xs|.
func exactSum(xs []float64) (sum, abs *big.Float) {
	sum = new(big.Float).SetPrec(4096)
	abs = new(big.Float).SetPrec(4096)
	var t big.Float
	for _, x := range xs {
		t.SetPrec(4096).SetFloat64(x)
		sum.Add(sum, &t)
		t.Abs(&t)
		abs.Add(abs, &t)
	}
	return sum, abs
}

// naiveSum is the running sum the mechanisms used before Pairwise.
func naiveSum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// errorWithin reports whether |got − exact| ≤ gamma·abs, evaluated exactly.
func errorWithin(got float64, exact, abs *big.Float, gamma float64) (bool, float64) {
	var e, b big.Float
	e.SetPrec(4096).SetFloat64(got)
	e.Sub(&e, exact)
	e.Abs(&e)
	b.SetPrec(4096).SetFloat64(gamma)
	b.Mul(&b, abs)
	ef, _ := e.Float64()
	return e.Cmp(&b) <= 0, ef
}

// adversarial returns inputs that defeat a running sum: one large term
// followed by many terms of 3/4 of its ulp, each of which a running sum
// rounds up (a quarter ulp gained per row), then the same with signs
// alternating in pairs, and a sequence of cancelling large terms.
func adversarial(n int) map[string][]float64 {
	up := make([]float64, n)
	up[0] = 1
	for i := 1; i < n; i++ {
		up[i] = 0.75 * 0x1p-52
	}
	cancel := make([]float64, n)
	for i := range cancel {
		switch i % 4 {
		case 0:
			cancel[i] = 1
		case 1:
			cancel[i] = 0.75 * 0x1p-52
		case 2:
			cancel[i] = -1
		case 3:
			cancel[i] = 0x1p-60
		}
	}
	grow := make([]float64, n)
	for i := range grow {
		grow[i] = 1 + float64(i%7)*0x1p-30
	}
	return map[string][]float64{"round-up": up, "cancel": cancel, "grow": grow}
}

func TestPairwiseMatchesReferenceAndIsIdenticalAcrossWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 255, 256, 257, 1000, 3 * BlockRows, 5*BlockRows + 3, 100003} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.NormFloat64() * math.Exp(8*rng.NormFloat64())
		}
		want := referenceTree(xs)
		for _, opt := range []Options{{Workers: 1}, {Workers: 2, MinRows: 1}, {Workers: 3, MinRows: 1}, {Workers: 7, MinRows: 300}, {}} {
			if got := pairwiseSum(xs, opt); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("n=%d %+v: Pairwise = %v, reference tree = %v (must be bit identical)", n, opt, got, want)
			}
		}
	}
}

func TestPairwiseErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 200000
	inputs := adversarial(n)
	random := make([]float64, n)
	for i := range random {
		random[i] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
	}
	inputs["random"] = random
	// The charged bound (any n ≤ MaxRows) and the bound for this n.
	charged := Gamma(BlockRows - 1 + TreeDepth)
	tight := Gamma(BlockRows - 1 + Depth(n))
	for name, xs := range inputs {
		exact, abs := exactSum(xs)
		got := pairwiseSum(xs, Options{Workers: 2, MinRows: 1})
		if ok, e := errorWithin(got, exact, abs, tight); !ok {
			t.Errorf("%s: Pairwise error %g exceeds γ_%d·Σ|x|", name, e, BlockRows-1+Depth(n))
		}
		if ok, _ := errorWithin(got, exact, abs, charged); !ok {
			t.Errorf("%s: Pairwise error exceeds the charged bound", name)
		}
	}
	// The bound must be able to fail: a running sum breaks it on the
	// round-up input (error n/4 ulps, bound (BlockRows+TreeDepth) ulps/2).
	exact, abs := exactSum(inputs["round-up"])
	if ok, e := errorWithin(naiveSum(inputs["round-up"]), exact, abs, charged); ok {
		t.Errorf("running sum error %g within the pairwise bound: the adversarial input is not adversarial", e)
	}
}

// TestPairwiseDepth checks the number of additions on every path against
// Depth and TreeDepth, up to n = MaxRows, with a counting accumulator.
func TestPairwiseDepth(t *testing.T) {
	type acc struct{ depth int }
	for _, n := range []int{1, BlockRows, BlockRows + 1, 3*BlockRows + 1, 1000 * BlockRows, MaxRows - 1, MaxRows} {
		got := Pairwise(n, Options{Workers: 2, MinRows: 1 << 20},
			func() *acc { return &acc{} },
			func(*acc, int, int) {},
			func(into, from *acc) { into.depth = max(into.depth, from.depth) + 1 },
			func(a *acc) { a.depth = 0 })
		if got.depth != Depth(n) || got.depth > TreeDepth {
			t.Errorf("n=%d: deepest path has %d additions, Depth = %d, TreeDepth = %d", n, got.depth, Depth(n), TreeDepth)
		}
	}
	if Depth(MaxRows) != TreeDepth {
		t.Errorf("Depth(MaxRows) = %d, want TreeDepth = %d", Depth(MaxRows), TreeDepth)
	}
}

func TestPairwiseRefusesMoreThanMaxRows(t *testing.T) {
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "MaxRows") {
			t.Errorf("Pairwise(MaxRows+1) panic = %v, want a message naming MaxRows", r)
		}
	}()
	SumVec(MaxRows+1, 1, Options{}, func([]float64, int, int) { t.Error("block called for n > MaxRows") })
}

func TestGamma(t *testing.T) {
	for _, h := range []int{0, 1, 280, 1 << 20} {
		exact := new(big.Float).SetPrec(200).Quo(
			new(big.Float).SetPrec(200).SetFloat64(float64(h)*0x1p-53),
			new(big.Float).SetPrec(200).Sub(big.NewFloat(1).SetPrec(200), new(big.Float).SetPrec(200).SetFloat64(float64(h)*0x1p-53)))
		g := new(big.Float).SetPrec(200).SetFloat64(Gamma(h))
		if g.Cmp(exact) < 0 {
			t.Errorf("Gamma(%d) = %v below the exact %v", h, Gamma(h), exact)
		}
		if ex, _ := exact.Float64(); Gamma(h) > ex*(1+1e-14) {
			t.Errorf("Gamma(%d) = %v too far above %v", h, Gamma(h), ex)
		}
	}
}
