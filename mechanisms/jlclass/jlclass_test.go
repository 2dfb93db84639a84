package jlclass

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// toyUsers are users with k′ = 2 projected records whose labels follow a
// few different directions, so that the cover's candidates get distinct
// totals.
func toyUsers(t testing.TB, n int, seed uint64) []*User {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	users := make([]*User, n)
	for i := range users {
		phi := float64(i%3) * math.Pi / 3
		z := mat.NewDense(6, 2, nil)
		y := make([]float64, 6)
		for j := range 6 {
			a, b := r.NormFloat64(), r.NormFloat64()
			z.Set(j, 0, a)
			z.Set(j, 1, b)
			y[j] = math.Copysign(1, a*math.Cos(phi)+b*math.Sin(phi))
		}
		u, err := NewUser(z, y)
		if err != nil {
			t.Fatal(err)
		}
		users[i] = u
	}
	return users
}

// The toy exact mode (federated.md §3.5): the paper's own γ-cover for
// k′·k ≤ 4 and the exact sampler. Over the cover's candidates and real
// users' scores, the selection frequencies match the closed-form
// exponential mechanism (tolerances in checkFrequencies).
func TestToyExactMode(t *testing.T) {
	opt := Options{K: 1, Rho: 0.75, Gamma: 0.5, Candidates: 0, Clip: 10, Eps: 1, Noise: noise.NewSeeded(1)}
	pl, err := PlanRun(opt, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !pl.Grid || pl.KPrime != 2 || pl.Candidates < 10 {
		t.Fatalf("plan %+v: want the γ-cover in R^(2×1)", pl)
	}
	pub := pl.Draw()
	if len(pub.Candidates) != pl.Candidates {
		t.Fatalf("%d candidates drawn, plan says %d", len(pub.Candidates), pl.Candidates)
	}
	users := toyUsers(t, 9, 2)
	tot, err := Totals(context.Background(), pub, users, 0)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int64]bool{}
	for _, v := range tot {
		distinct[v] = true
	}
	if len(distinct) < 3 {
		t.Fatalf("totals %v: the toy data should separate the candidates", tot)
	}
	checkFrequencies(t, tot, opt.Eps, 11, 200000)
	// Select (scores and draw) agrees with the totals' distribution too:
	// the best total is the mode.
	count := make([]int, len(tot))
	for range 3000 {
		c, err := pl.Select(context.Background(), pub, users)
		if err != nil {
			t.Fatal(err)
		}
		count[c]++
	}
	p := closedForm(tot, pl.EffectiveEps)
	for c := range tot {
		f := float64(count[c]) / 3000
		if sd := math.Sqrt(p[c] * (1 - p[c]) / 3000); math.Abs(f-p[c]) > 5*sd+1e-3 {
			t.Errorf("Select: candidate %d frequency %.4f, closed form %.4f", c, f, p[c])
		}
	}
}

// The grid is a γ-cover of the Frobenius ball of radius √(2k).
func TestGridCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		kp, k int
		gamma float64
	}{{2, 1, 0.5}, {2, 2, 0.6}, {3, 1, 0.3}, {4, 1, 0.7}} {
		g, err := newGrid(c.kp, c.k, c.gamma)
		if err != nil {
			t.Fatal(err)
		}
		cands := g.candidates()
		if len(cands) != g.size() {
			t.Fatalf("size %d, %d candidates", g.size(), len(cands))
		}
		dim := c.kp * c.k
		rad := math.Sqrt(2 * float64(c.k))
		for range 500 {
			p := make([]float64, dim)
			var ss float64
			for i := range p {
				p[i] = r.NormFloat64()
				ss += p[i] * p[i]
			}
			s := rad * math.Pow(r.Float64(), 1/float64(dim)) / math.Sqrt(ss)
			for i := range p {
				p[i] *= s
			}
			best := math.Inf(1)
			for _, m := range cands {
				var d2 float64
				for i, v := range m.RawMatrix().Data {
					d2 += (v - p[i]) * (v - p[i])
				}
				best = math.Min(best, math.Sqrt(d2))
			}
			if best > c.gamma*(1+1e-12) {
				t.Fatalf("k′=%d k=%d γ=%v: a point of the ball is %v from the cover", c.kp, c.k, c.gamma, best)
			}
		}
	}
	if _, err := GridSize(5, 1, 0.5); err == nil {
		t.Error("k′·k = 5 must be refused by the toy exact mode")
	}
}

// For k = 2 the angular sweep finds the exact maximum: no direction of a
// fine grid does better, and the returned head achieves the count.
func TestArcSweepExact(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for trial := range 200 {
		m := 1 + r.IntN(12)
		b := make([]float64, 2*m)
		for i := range b {
			b[i] = r.NormFloat64()
		}
		theta := 0.0
		if trial%2 == 1 {
			theta = 0.5 * r.Float64()
		}
		count := func(v []float64) int {
			c := 0
			for j := 0; j < m; j++ {
				if b[2*j]*v[0]+b[2*j+1]*v[1] > theta {
					c++
				}
			}
			return c
		}
		var w workspace
		best, v := w.arcSweep(b, theta)
		if got := count(v); got != best {
			t.Fatalf("trial %d: the returned head classifies %d, the sweep says %d", trial, got, best)
		}
		for i := range 20000 {
			phi := 2 * math.Pi * float64(i) / 20000
			if c := count([]float64{math.Cos(phi), math.Sin(phi)}); c > best {
				t.Fatalf("trial %d: direction %.4f classifies %d > sweep's %d", trial, phi, c, best)
			}
		}
	}
}

// Every parameter outside its bounds is refused by the plan, with a
// message naming the parameter.
func TestPlanRefuses(t *testing.T) {
	base := Options{K: 2, Rho: 0.5, Gamma: 0.5, Candidates: 100, Clip: 1, Eps: 1}
	for _, c := range []struct {
		name string
		mod  func(o *Options)
		d, n int
		want string
	}{
		{"k zero", func(o *Options) { o.K = 0 }, 5, 0, "k=0"},
		{"k above d", func(o *Options) { o.K = 6 }, 5, 0, "k=6"},
		{"rho", func(o *Options) { o.Rho = 0 }, 5, 0, "rho"},
		{"rho above 1", func(o *Options) { o.Rho = 1.5 }, 5, 0, "rho"},
		{"clip", func(o *Options) { o.Clip = -1 }, 5, 0, "clip"},
		{"eps", func(o *Options) { o.Eps = 0 }, 5, 0, "eps"},
		{"eps NaN", func(o *Options) { o.Eps = math.NaN() }, 5, 0, "eps"},
		{"pool delta", func(o *Options) { o.Delta = 1e-6 }, 5, 0, "pure"},
		{"candidates", func(o *Options) { o.Candidates = MaxCandidates + 1 }, 5, 0, "candidates"},
		{"negative candidates", func(o *Options) { o.Candidates = -1 }, 5, 0, "candidates"},
		{"margin", func(o *Options) { o.ScoreMargin = 2 }, 5, 0, "score_margin"},
		{"grid too big", func(o *Options) { o.Candidates = 0 }, 5, 0, "toy exact mode"},
		{"gamma", func(o *Options) { o.Candidates, o.K, o.Rho, o.Gamma = 0, 1, 1, 0 }, 5, 0, "gamma"},
		{"grid too fine", func(o *Options) { o.Candidates, o.K, o.Rho, o.Gamma = 0, 1, 0.5, 1e-3 }, 5, 0, "gamma"},
		{"candidate memory", func(o *Options) { o.Candidates, o.Rho = MaxCandidates, 0.01 }, 1000, 0, "2^24"},
		{"fedrep no users", func(o *Options) { o.Variant, o.Delta = FedRepJL, 1e-6 }, 5, 0, "no users"},
		{"fedrep no delta", func(o *Options) { o.Variant = FedRepJL }, 5, 10, "delta"},
		{"no features", func(o *Options) {}, 0, 0, "feature"},
	} {
		o := base
		c.mod(&o)
		_, err := PlanRun(o, c.d, c.n)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	for _, v := range []Variant{Pool, FedRepJL} {
		o := base
		o.Variant = v
		if v == FedRepJL {
			o.Delta = 1e-6
		}
		if _, err := PlanRun(o, 5, 10); err != nil {
			t.Errorf("%v: base point refused: %v", v, err)
		}
	}
}

// denseUsers is a tiny user-level source: users of 4 rows, ±1 labels from
// a shared direction, one user with extreme values.
func denseUsers(t *testing.T, n, d int, extreme bool) rows.Source {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	x := mat.NewDense(4*n, d, nil)
	y := make([]float64, 4*n)
	u := make([]int32, 4*n)
	for i := range 4 * n {
		for j := range d {
			x.Set(i, j, r.NormFloat64())
		}
		y[i] = math.Copysign(1, x.At(i, 0))
		u[i] = int32(i / 4)
		if extreme && i < 4 {
			for j := range d {
				x.Set(i, j, math.MaxFloat64)
			}
			x.Set(i, 0, math.NaN())
			y[i] = math.Inf(-1)
		}
	}
	src, err := rows.FromDense(x).WithLabels(y)
	if err != nil {
		t.Fatal(err)
	}
	us, err := src.WithUnits(u, n)
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// Both variants release a finite d×k U = MᵀŨ, also with a user of
// extreme values, and the heads stay with the users.
func TestRunBothVariants(t *testing.T) {
	const n, d, k = 12, 6, 2
	for _, v := range []Variant{Pool, FedRepJL} {
		for _, extreme := range []bool{false, true} {
			opt := Options{Variant: v, K: k, Rho: 0.5, Candidates: 50, Clip: 1, Eps: 2, Noise: noise.NewSeeded(2)}
			if v == FedRepJL {
				opt.Delta = 1e-6
			}
			pl, err := PlanRun(opt, d, n)
			if err != nil {
				t.Fatal(err)
			}
			src := denseUsers(t, n, d, extreme)
			res, err := pl.Run(context.Background(), src)
			if err != nil {
				t.Fatalf("%v: %v", v, err)
			}
			if r, c := res.U.Dims(); r != d || c != k {
				t.Fatalf("%v: U is %d×%d", v, r, c)
			}
			for _, x := range res.U.RawMatrix().Data {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%v (extreme %v): non-finite U", v, extreme)
				}
			}
			var want mat.Dense
			want.Mul(res.M.T(), res.Util)
			if !mat.EqualApprox(&want, res.U, 1e-12) {
				t.Errorf("%v: U ≠ MᵀŨ", v)
			}
			if v == Pool && (res.Index < 0 || res.Index >= pl.Candidates) {
				t.Errorf("pool: index %d", res.Index)
			}
			if pl.Cost.Validate() != nil {
				t.Errorf("%v: cost %v invalid", v, pl.Cost)
			}
			if v == Pool && pl.Cost.Kind != accounting.PureDP {
				t.Errorf("pool must cost pure ε, got %v", pl.Cost)
			}
		}
	}
}

// The projection clips rows to r, reads labels by sign and zeroes rows
// with NaN or infinite values.
func TestProjectRules(t *testing.T) {
	src := denseUsers(t, 3, 4, true)
	m := NewJL(2, 4, noise.NewSeeded(1))
	p, err := Project(src, m, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	err = rows.ForEach(context.Background(), p, 5, true, true, func(b *rows.Batch) error {
		for i := range b.N {
			z := b.Row(i, 2)
			// ‖Mx‖ ≤ ‖M‖₂·r ≤ √(4/2)·… : M's entries are ±1/√2, so
			// ‖M‖₂ ≤ ‖M‖_F = 2.
			if n := math.Hypot(z[0], z[1]); !(n <= 2*0.5*(1+1e-12)) {
				t.Errorf("row %d: projected norm %v above ‖M‖_F·r", i, n)
			}
			if b.Label[i] != 1 && b.Label[i] != -1 {
				t.Errorf("label %v not ±1", b.Label[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A source without labels and unit indices holds no user.
	bare, err := Project(rows.FromDense(mat.NewDense(2, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8})), m, 1)
	if err != nil {
		t.Fatal(err)
	}
	if us, err := UsersFromSource(context.Background(), bare); err != nil || len(us) != 0 {
		t.Errorf("a source without unit indices: %d users, %v", len(us), err)
	}
}

// A user's score of every candidate is an integer in [0, G] whatever its
// number of records (the sensitivity the exponential mechanism is
// calibrated to), G exactly when a head classifies all of S⁰.
func TestScoresBounded(t *testing.T) {
	src := noise.NewSeeded(6)
	cands := PoolCandidates(30, 3, 2, src)
	for _, m := range []int{1, 2, 7, 40} {
		z := mat.NewDense(m, 3, nil)
		y := make([]float64, m)
		for j := range m {
			z.Set(j, 0, float64(j+1))
			y[j] = 1
		}
		u, err := NewUser(z, y)
		if err != nil {
			t.Fatal(err)
		}
		for c, s := range u.Score(cands, 0, nil) {
			if s < 0 || s > ScoreScale {
				t.Fatalf("m=%d: score %d of candidate %d outside [0, %d]", m, s, c, ScoreScale)
			}
			// every record lies on one ray, so a head classifies all of them
			// unless the candidate maps the ray to zero
			if s != ScoreScale {
				t.Errorf("m=%d: candidate %d scores %d, want %d (all records separable)", m, c, s, ScoreScale)
			}
		}
	}
}
