package pca

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Check 4 (spec §5): with the noise removed (test-only knob) the private
// power method is exact subspace iteration, so the error falls
// geometrically, at rate (λ_{k+1}/λ_k)^L, to rounding level.
func TestNPMZeroNoiseIsSubspaceIteration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	data, _ := spikedRows(rng, 3000, 15, []float64{30, 20, 10})
	truth := exactTop(t, data, 4, 3)
	prev := math.Inf(1)
	for _, L := range []int{2, 8, 32, 128} {
		opt := withKnob(Options{K: 3, Eps: 1, Delta: 1e-6, Iters: L, Clip: 4, Noise: noise.NewSeeded(5)}, testKnob{noiseScale: 0})
		res, err := NoisyPower(context.Background(), data, opt)
		if err != nil {
			t.Fatal(err)
		}
		e := SinThetaSq(truth, res.Components)
		if L > 2 && !(e < prev/4 || e < 1e-14) {
			t.Errorf("L=%d: error %g did not fall geometrically from %g", L, e, prev)
		}
		prev = e
	}
	// sin² = 1 − cos² cannot resolve below ~1e-16.
	if prev > 1e-14 {
		t.Errorf("after 128 exact iterations the error is %g, want rounding level", prev)
	}
}

// The Gram path (C formed once) and the single-pass path (C·X from the
// rows) compute the same product, and results are bit-identical for a
// fixed seed and worker count.
func TestNPMGramAndPassAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	data, _ := spikedRows(rng, 5000, 12, []float64{20, 5})
	r := prepareRows(data, 3, 2)
	x := randomOrtho(rng, 12, 3)
	var viaGram mat.Dense
	viaGram.Mul(r.gram(context.Background()), x)
	viaPass := r.covTimes(x)
	if !mat.EqualApprox(&viaGram, viaPass, 1e-9*mat.Norm(viaPass, 2)) {
		t.Errorf("Gram and single-pass products differ by %g", func() float64 {
			var d mat.Dense
			d.Sub(&viaGram, viaPass)
			return mat.Norm(&d, 2)
		}())
	}
	run := func() *mat.Dense {
		res, err := NoisyPower(context.Background(), data, Options{K: 2, Eps: 1, Delta: 1e-6, Iters: 5, Clip: 3, Workers: 2, Noise: noise.NewSeeded(9)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Components
	}
	a, b := run(), run()
	if !mat.Equal(a, b) {
		t.Error("two runs with the same seed and worker count differ")
	}
}

// Public row rules: a non-finite row acts as a zero row, long rows are
// scaled to the bound, and the caller's matrix is left untouched.
func TestRowRules(t *testing.T) {
	data := mat.NewDense(4, 3, []float64{
		3, 4, 0, // norm 5 → scaled by 1/5 (clip 2 → min(1/2, 1/5))
		0.5, 0, 0, // short → scaled by 1/clip
		math.NaN(), 1, 1, // dropped
		0, math.Inf(-1), 0, // dropped
	})
	orig := mat.DenseCopyOf(data)
	r := prepareRows(data, 2, 1)
	want := []float64{0.2, 0.5, 0, 0}
	for i, w := range want {
		if math.Abs(r.scale[i]-w) > 1e-15 {
			t.Errorf("row %d scale %v, want %v", i, r.scale[i], w)
		}
	}
	if math.Abs(r.norm[0]-1) > 1e-15 || math.Abs(r.norm[1]-0.25) > 1e-15 {
		t.Errorf("scaled norms %v", r.norm)
	}
	// Rows near overflow and underflow keep their direction.
	if s, n := rowScale([]float64{1e300, 1e300}, 1); n != 1 || math.Abs(s*1e300-1/math.Sqrt2) > 1e-15 {
		t.Errorf("huge row: scale %v norm %v", s, n)
	}
	if s, n := rowScale([]float64{5e-324, 0}, 1); s != 1 || n != 5e-324 {
		t.Errorf("subnormal row: scale %v norm %v", s, n)
	}
	c := r.gram(context.Background())
	zeroed := mat.NewDense(2, 3, []float64{3, 4, 0, 0.5, 0, 0})
	c2 := prepareRows(zeroed, 2, 1).gram(context.Background())
	if !mat.EqualApprox(c, c2, 1e-15) {
		t.Error("non-finite rows changed C")
	}
	if !mat.Equal(orig, data) && !hasNaNEqual(orig, data) {
		t.Error("prepareRows modified the input")
	}
	res, err := NoisyPower(context.Background(), data, Options{K: 2, Eps: 1, Delta: 1e-6, Iters: 3, Noise: noise.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	if !finite(res.Components) {
		t.Error("non-finite output from data with non-finite rows")
	}
}

func hasNaNEqual(a, b *mat.Dense) bool {
	ra, rb := a.RawMatrix().Data, b.RawMatrix().Data
	for i := range ra {
		if ra[i] != rb[i] && !(math.IsNaN(ra[i]) && math.IsNaN(rb[i])) {
			return false
		}
	}
	return true
}

func finite(m *mat.Dense) bool {
	for _, v := range m.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// Check 5 for npm: on neighbouring data (rows of norm ≤ 1) and any X with
// orthonormal columns, ‖(C−C')X‖_F ≤ npmSensitivity, and the bound is
// attained by adversarial rows inside span(X).
func TestNPMSensitivity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const d = 6
	unit := func() []float64 {
		v := make([]float64, d)
		s := 0.0
		for i := range v {
			v[i] = rng.NormFloat64()
			s += v[i] * v[i]
		}
		r := math.Pow(rng.Float64(), 0.3) / math.Sqrt(s) // norm ≤ 1, often near 1
		for i := range v {
			v[i] *= r
		}
		return v
	}
	cOf := func(rows [][]float64) *mat.SymDense {
		m := mat.NewDense(len(rows), d, nil)
		for i, r := range rows {
			m.SetRow(i, r)
		}
		return prepareRows(m, 1, 1).gram(context.Background())
	}
	diffNorm := func(a, b *mat.SymDense, x *mat.Dense) float64 {
		var ya, yb mat.Dense
		ya.Mul(a, x)
		yb.Mul(b, x)
		ya.Sub(&ya, &yb)
		return mat.Norm(&ya, 2)
	}
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		for _, p := range []int{1, 2, 4} {
			bound := npmSensitivity(nb, p)
			worst := 0.0
			for trial := 0; trial < 300; trial++ {
				x := randomOrtho(rng, d, p)
				base := [][]float64{unit(), unit(), unit()}
				a, b := unit(), unit()
				if trial%3 == 0 { // adversarial: unit rows along X's columns
					a = mat.Col(nil, 0, x)
					b = mat.Col(nil, p-1, x)
					if p == 1 { // b ⟂ x: (aaᵀ − bbᵀ)x = x
						b = orthogonalTo(x)
					}
				}
				var other [][]float64
				if nb == accounting.AddRemove {
					other = append(append([][]float64{}, base...), a)
				} else {
					base = append(base, b)
					other = append(append([][]float64{}, base[:3]...), a)
				}
				got := diffNorm(cOf(base), cOf(other), x)
				worst = math.Max(worst, got)
				if got > bound*(1+1e-12) {
					t.Fatalf("%v p=%d: ‖ΔC·X‖_F = %v exceeds %v", nb, p, got, bound)
				}
			}
			if worst < bound*(1-1e-9) {
				t.Errorf("%v p=%d: worst case %v never reached the bound %v (bound not tight)", nb, p, worst, bound)
			}
		}
	}
}

// orthogonalTo returns a unit vector orthogonal to the columns of x.
func orthogonalTo(x *mat.Dense) []float64 {
	d, _ := x.Dims()
	for i := 0; i < d; i++ {
		v := make([]float64, d)
		v[i] = 1
		ev := mat.NewVecDense(d, v)
		var proj, c mat.VecDense
		c.MulVec(x.T(), ev)
		proj.MulVec(x, &c)
		ev.SubVec(ev, &proj)
		if n := mat.Norm(ev, 2); n > 0.1 {
			ev.ScaleVec(1/n, ev)
			return ev.RawVector().Data
		}
	}
	panic("no orthogonal direction")
}

// Check 6: a randomized property test of Lemma 2.3 (Hardt–Price): for
// symmetric A, orthonormal X and G with 4‖UᵀG‖ ≤ (σ_k−σ_{k+1})·cos θ_k(U,X)
// and 4‖G‖ ≤ (σ_k−σ_{k+1})·α, α < 1,
// tan θ_k(U, AX+G) ≤ max(α, max(α, (σ_{k+1}/σ_k)^{1/4})·tan θ_k(U, X)).
func TestLemma23(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	trials := 400
	if long() {
		trials = 5000
	}
	for trial := 0; trial < trials; trial++ {
		d := 4 + rng.IntN(10)
		k := 1 + rng.IntN(min(3, d-1))
		p := k + rng.IntN(d-k+1)
		q := randomOrtho(rng, d, d)
		sig := make([]float64, d)
		for i := range sig {
			sig[i] = math.Exp(3 * rng.NormFloat64())
		}
		// Sort descending.
		for i := range sig {
			for j := i + 1; j < len(sig); j++ {
				if sig[j] > sig[i] {
					sig[i], sig[j] = sig[j], sig[i]
				}
			}
		}
		if sig[k-1] == sig[k] {
			continue
		}
		a := mat.NewDense(d, d, nil)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				v := 0.0
				for l := 0; l < d; l++ {
					v += q.At(i, l) * sig[l] * q.At(j, l)
				}
				a.Set(i, j, v)
			}
		}
		u := mat.DenseCopyOf(q.Slice(0, d, 0, k))
		x := randomOrtho(rng, d, p)
		c, err := PrincipalCosines(u, x)
		if err != nil {
			t.Fatal(err)
		}
		cosK := c[k-1]
		tanX := math.Sqrt(math.Max(1-cosK*cosK, 0)) / cosK
		alpha := rng.Float64() * 0.999
		gap := sig[k-1] - sig[k]
		g := mat.NewDense(d, p, nil)
		for i := 0; i < d; i++ {
			for j := 0; j < p; j++ {
				g.Set(i, j, rng.NormFloat64())
			}
		}
		var utg mat.Dense
		utg.Mul(u.T(), g)
		scale := math.Min(gap*cosK/(4*mat.Norm(&utg, 2)), gap*alpha/(4*mat.Norm(g, 2)))
		g.Scale(scale*rng.Float64(), g)
		var y mat.Dense
		y.Mul(a, x)
		y.Add(&y, g)
		tanY, err := TanTheta(u, &y)
		if err != nil {
			t.Fatal(err)
		}
		bound := math.Max(alpha, math.Max(alpha, math.Pow(sig[k]/sig[k-1], 0.25))*tanX)
		if tanY > bound*(1+1e-8)+1e-12 {
			t.Fatalf("trial %d (d=%d k=%d p=%d α=%.3g): tan θ(U,AX+G) = %g > bound %g", trial, d, k, p, alpha, tanY, bound)
		}
	}
}

// Check 6: Lemma 2.5 with τ = 10: tan θ_k(U, X0) ≤ τ√d/(√p − √(k−1)) for a
// random start, except with probability τ^{−Ω(p+1−k)} + e^{−Ω(d)}. We
// assert a violation fraction of at most (3/τ)^{p+1−k} over 2000 draws (for
// p = k it is a small-ball event of probability ≈ 0.8/τ, |⟨u,x⟩| < 1/(τ√d);
// the constant 3 absorbs the Ω), and that oversampling (p = 2k) makes
// violations rarer than p = k at the same d and k.
func TestLemma25(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	src := source{s: noise.NewSeeded(5), scale: 1}
	fracs := map[[2]int]float64{}
	for _, tc := range []struct{ d, k, p int }{{20, 1, 1}, {50, 3, 3}, {50, 3, 6}, {100, 5, 5}} {
		u := randomOrtho(rng, tc.d, tc.k)
		bound := 10 * math.Sqrt(float64(tc.d)) / (math.Sqrt(float64(tc.p)) - math.Sqrt(float64(tc.k-1)))
		bad := 0
		const draws = 2000
		for i := 0; i < draws; i++ {
			x0 := randomOrthonormal(src, tc.d, tc.p)
			if tn, err := TanTheta(u, x0); err != nil || tn > bound {
				bad++
			}
		}
		frac := float64(bad) / draws
		fracs[[2]int{tc.k, tc.p}] = frac
		if frac > math.Pow(0.3, float64(tc.p+1-tc.k)) {
			t.Errorf("d=%d k=%d p=%d: %.2f%% of random starts violate tan θ ≤ %.3g", tc.d, tc.k, tc.p, 100*frac, bound)
		}
	}
	if !(fracs[[2]int{3, 6}] < fracs[[2]int{3, 3}]) {
		t.Errorf("oversampling did not reduce violations: %v", fracs)
	}
}

// randomOrthonormal must return orthonormal columns with a Haar law; we
// check orthonormality and that the mean of X0X0ᵀ is (p/d)·I.
func TestRandomOrthonormal(t *testing.T) {
	src := source{s: noise.NewSeeded(6), scale: 1}
	const d, p, draws = 6, 2, 3000
	sum := mat.NewDense(d, d, nil)
	for i := 0; i < draws; i++ {
		x := randomOrthonormal(src, d, p)
		var g mat.Dense
		g.Mul(x.T(), x)
		if !mat.EqualApprox(&g, eye(p), 1e-12) {
			t.Fatal("columns not orthonormal")
		}
		var pp mat.Dense
		pp.Mul(x, x.T())
		sum.Add(sum, &pp)
	}
	sum.Scale(1.0/draws, sum)
	want := eye(d)
	want.Scale(float64(p)/d, want)
	if !mat.EqualApprox(sum, want, 0.03) {
		t.Errorf("E[XXᵀ] = %v, want (p/d)·I", mat.Formatted(sum))
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// Check 6: Lemma C.6 of Nguyen–Ene–Nguyen, sin²(u,w) ≤ 2(sin²(u,v) +
// sin²(v,w)), on random and near-adversarial unit vectors; also checks
// SinThetaSq against the closed form 1 − ⟨u,x⟩² for k = 1.
func TestLemmaC6AndSinTheta(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	vec := func(d int) *mat.Dense {
		v := mat.NewDense(d, 1, nil)
		for i := 0; i < d; i++ {
			v.Set(i, 0, rng.NormFloat64())
		}
		v.Scale(1/mat.Norm(v, 2), v)
		return v
	}
	for trial := 0; trial < 2000; trial++ {
		d := 2 + rng.IntN(6)
		u, w := vec(d), vec(d)
		v := vec(d)
		if trial%2 == 0 { // v between u and w
			v.Add(u, w)
			if n := mat.Norm(v, 2); n > 0 {
				v.Scale(1/n, v)
			} else {
				continue
			}
		}
		uw, uv, vw := SinThetaSq(u, w), SinThetaSq(u, v), SinThetaSq(v, w)
		if uw > 2*(uv+vw)+1e-12 {
			t.Fatalf("Lemma C.6 violated: %g > 2(%g + %g)", uw, uv, vw)
		}
		dot := mat.Dot(u.ColView(0), w.ColView(0))
		if math.Abs(uw-(1-dot*dot)) > 1e-12 {
			t.Fatalf("SinThetaSq %g, closed form %g", uw, 1-dot*dot)
		}
	}
	// Subspaces: identical spans give 0, orthogonal spans give k.
	x := randomOrtho(rng, 8, 3)
	var rot mat.Dense
	rot.Mul(x, randomOrtho(rng, 3, 3))
	if e := SinThetaSq(x, &rot); e > 1e-14 {
		t.Errorf("same span: %g", e)
	}
	if e := SinThetaSq(eye(8).Slice(0, 8, 0, 3), eye(8).Slice(0, 8, 3, 6)); math.Abs(e-3) > 1e-12 {
		t.Errorf("orthogonal spans: %g, want 3", e)
	}
}

// NPM accuracy on a spiked model: error falls as ε grows (medians over 9
// seeds) and is small at large ε.
func TestNPMAccuracyTrend(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	n := 20000
	if long() {
		n = 100000
	}
	data, u := spikedRows(rng, n, 20, []float64{8, 6})
	clip := 1.5 * math.Sqrt(20+14) // keeps most rows unclipped
	var meds []float64
	for _, eps := range []float64{0.25, 1, 4} {
		var errs []float64
		for seed := uint64(0); seed < 9; seed++ {
			res, err := NoisyPower(context.Background(), data, Options{K: 2, Eps: eps, Delta: 1e-6, Clip: clip, Gap: 0.3, Noise: noise.NewSeeded(seed)})
			if err != nil {
				t.Fatal(err)
			}
			errs = append(errs, SinThetaSq(u, res.Components))
		}
		meds = append(meds, median(errs))
	}
	t.Logf("npm median ‖sinΘ‖² at ε=0.25,1,4: %.4g", meds)
	if !(meds[0] > meds[1] && meds[1] > meds[2]) || meds[2] > 0.05 {
		t.Errorf("npm errors %v should fall in ε and end below 0.05", meds)
	}
}
