package jlclass

// Algorithm 3 of seed 004 (Snedeker, Zhou, Bassily, "Private Model
// Personalization Revisited", 004:L281-289) in the practical variants of
// federated.md §3.5: the data-free plan and the run of both.
//
//	1  M ∈ {±1/√k′}^(k′×d)                                   public (NewJL)
//	2  (S_i)_M = {(M·clip(x, r), y)}                          Project
//	3  candidates: a random pool in B_F, or the γ-cover       public
//	4  pool: exponential mechanism, scores Σ_i q_i(U′)        exact (em.go)
//	   fedrep-jl: Private FedRep with a logistic loss on (S_i)_M
//	5  U_priv = Mᵀ·Ũ                                          release
//	6  user i: v_i = argmin L̂_0(U_priv, v; S_i¹)              User.Head, local

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/mechanisms/internal/planning"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Variant selects the practical variant of Algorithm 3.
type Variant int

const (
	// Pool is Variant A: the exponential mechanism over a data-independent
	// candidate pool (or the γ-cover), pure ε user-level DP.
	Pool Variant = iota
	// FedRepJL is Variant B: Private FedRep on JL features with a logistic
	// loss, (ε, δ) user-level DP.
	FedRepJL
)

// String returns "pool" or "fedrep-jl".
func (v Variant) String() string {
	switch v {
	case Pool:
		return "pool"
	case FedRepJL:
		return "fedrep-jl"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// ParseVariant reads "pool" ("" too) or "fedrep-jl".
func ParseVariant(s string) (Variant, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pool", "":
		return Pool, nil
	case "fedrep-jl":
		return FedRepJL, nil
	}
	return 0, fmt.Errorf("jlclass: unknown variant %q: use \"pool\" or \"fedrep-jl\"", s)
}

// Bounds of the parameters (checked by PlanRun, before any charge).
const (
	MinEps = planning.MinEps
	MaxEps = planning.MaxEps
	// maxCandidateFloats bounds K·k′·k, the floats the candidates take.
	maxCandidateFloats = 1 << 24
)

// Options configures a run. K, Rho, Clip and Eps have no default.
type Options struct {
	Variant Variant
	// K is the dimension k of the representation.
	K int
	// Rho ∈ (0, 1] is the margin ρ relative to r·Γ; it sets k′
	// (ProjectDim).
	Rho float64
	// Gamma ∈ (0, 1] is the radius γ of the cover (Candidates = 0 only).
	Gamma float64
	// Candidates is the pool size K (1..MaxCandidates), or 0 for the
	// paper's γ-cover (toy exact mode, k′·k ≤ MaxGridDim). Pool only.
	Candidates int
	// ScoreMargin ∈ [0, 1] is the margin of the score's loss relative to
	// r (0: the 0-1 loss, default; ρ: the margin loss of 004:L279). Pool
	// only.
	ScoreMargin float64
	// Clip is the feature bound r: rows are scaled to ‖x‖ ≤ r.
	Clip float64
	// Eps is the user-level ε; Delta the δ (FedRepJL only; 0 for Pool).
	Eps, Delta float64
	// Neighbour is the user-level relation (FedRepJL: see fedrep).
	Neighbour accounting.Neighbour
	// FedRep's loop (FedRepJL only): rounds T, step size η, the share of
	// the budget for the private initialisation, the calibration. Zero
	// values take DefaultIters, DefaultEta and fedrep's defaults.
	Iters       int
	Eta         float64
	InitFrac    float64
	Calibration fedrep.Calibration
	// Noise is the source of the public randomness (M, candidates,
	// directions) and of the mechanism's noise; nil is noise.New()
	// (crypto/rand). Seeded samplers are for tests and benchmarks only.
	Noise *noise.Sampler
	// BatchSeed, if non-zero, makes the FedRepJL users' batch draws
	// reproducible (user j: fedrep.NewUserSeeded with BatchSeed+j), for
	// experiments; zero draws them from crypto/rand. Batches do not affect
	// privacy (the coordinator clips a user's whole contribution).
	BatchSeed uint64
	// Progress, if set, gets (t, T) after each FedRep round (FedRepJL).
	Progress func(step, total int)

	knob *testKnob
}

// testKnob alters a run for tests only (unreachable from other packages).
type testKnob struct {
	epsScale uint64 // multiplies the sampler's ε′ (the broken twin: 2)
}

// Defaults of Variant B's loop, tuned on the public classify-jl recipe
// (mechanisms/bench): T = 5 rounds as in seed 004's experiment, and a step
// that moves a unit-scale representation in a few rounds under the mean
// logistic gradient.
const (
	DefaultIters = 5
	DefaultEta   = 2.0
)

// Plan is the data-free part of a run; every field is public.
type Plan struct {
	Variant Variant
	D, K    int
	// KPrime is the JL dimension k′.
	KPrime int
	// Candidates is the number of candidates scored (Pool): the pool size
	// or the cover's size; Grid marks the cover.
	Candidates int
	Grid       bool
	// EffectiveEps is the ε′ ≤ ε the exact sampler runs at (Pool).
	EffectiveEps float64
	// Theta is the absolute margin of the score's loss (ScoreMargin·r).
	Theta float64
	Cost  accounting.Event
	Note  string
	// FedRep is the plan of Variant B's loop on k′ features.
	FedRep *fedrep.Plan
	// MaxRecords (FedRepJL) is the most records a user keeps, its first
	// in row order (fedrep.UsersFromSourceMax); 0 keeps all. A caller sets
	// it from public facts to bound the run's memory; a rule on one user's
	// records, it leaves the user-level privacy analysis unchanged.
	MaxRecords int

	grid gridSpec
	opt  Options
}

// Result is a release: U = Mᵀ·Ũ (d×k) and the public pieces it is made
// of. The users' heads are not part of it.
type Result struct {
	// U is U_priv = Mᵀ·Ũ.
	U *mat.Dense
	// Util is Ũ (k′×k): the selected candidate (Pool) or FedRep's U_T.
	Util *mat.Dense
	// M is the public JL matrix (k′×d) and Dirs the public direction net
	// of the heads (k ≥ 3; nil otherwise).
	M    *mat.Dense
	Dirs [][]float64
	// Index is the selected candidate (Pool).
	Index int
	Plan  *Plan
}

// PlanRun validates opt for d features and n users and returns the plan;
// it reads no data. n is the public number of users, used by FedRepJL only
// (FedRep averages over the users); the pool needs none (pass 0).
func PlanRun(opt Options, d, n int) (*Plan, error) {
	fail := func(format string, a ...any) (*Plan, error) {
		return nil, fmt.Errorf("jlclass: "+format, a...)
	}
	switch {
	case d < 1:
		return fail("the users need at least one feature, got d=%d", d)
	case opt.K < 1 || opt.K > d:
		return fail("k=%d: the representation dimension must satisfy 1 ≤ k ≤ d=%d", opt.K, d)
	case !(opt.Rho > 0 && opt.Rho <= 1):
		return fail("rho=%v: the relative margin must be in (0, 1]", opt.Rho)
	case !(opt.Clip >= planning.MinClip && opt.Clip <= planning.MaxClip):
		return fail("clip=%v: the feature bound r must be a number in [%g, %g]", opt.Clip, float64(planning.MinClip), float64(planning.MaxClip))
	case !(opt.Eps >= MinEps && opt.Eps <= MaxEps):
		return fail("eps=%v: use %g ≤ eps ≤ %g", opt.Eps, float64(MinEps), float64(MaxEps))
	case opt.Variant != Pool && opt.Variant != FedRepJL:
		return fail("invalid variant %d", int(opt.Variant))
	}
	kp := ProjectDim(opt.Rho, d, opt.K)
	pl := &Plan{Variant: opt.Variant, D: d, K: opt.K, KPrime: kp}
	if opt.Variant == FedRepJL {
		iters, eta := opt.Iters, opt.Eta
		if iters == 0 {
			iters = DefaultIters
		}
		if eta == 0 {
			eta = DefaultEta
		}
		// A user's logistic gradient is a mean of σ·y·z·vᵀ with ‖z‖ ≤ r;
		// ψ = r clips it at a unit head, and ψ_init = r² bounds Z_i's
		// scale (‖x_j‖·‖x_j′‖ ≤ r²).
		fo := fedrep.Options{K: opt.K, Iters: iters, Eta: eta, Psi: opt.Clip, PsiInit: opt.Clip * opt.Clip,
			Eps: opt.Eps, Delta: opt.Delta, InitFrac: opt.InitFrac, Neighbour: opt.Neighbour,
			Calibration: opt.Calibration, Noise: opt.Noise, Progress: opt.Progress}
		if !(fo.PsiInit >= planning.MinClip && fo.PsiInit <= planning.MaxClip) {
			return fail("clip=%v: variant fedrep-jl clips the initialisation at r² = %v, outside [%g, %g]: rescale the features", opt.Clip, fo.PsiInit, float64(planning.MinClip), float64(planning.MaxClip))
		}
		fp, err := fedrep.PlanRun(fo, kp, n)
		if err != nil {
			return fail("variant fedrep-jl: %v", strings.TrimPrefix(err.Error(), "fedrep: "))
		}
		pl.FedRep = fp
		pl.Cost = fp.Cost
		pl.Cost.Mechanism = "jlclass/fedrep-jl"
		pl.Note = fmt.Sprintf("Private FedRep on JL features (k′=%d) with a logistic loss; %s", kp, fp.Note)
		pl.opt = opt
		return pl, nil
	}
	switch {
	case opt.Delta != 0:
		return fail("delta=%v: variant pool is pure ε-DP (the exponential mechanism); leave delta out", opt.Delta)
	case opt.Candidates < 0 || opt.Candidates > MaxCandidates:
		return fail("candidates=%d must be in 0..%d (0: the paper's γ-cover, for k′·k ≤ %d)", opt.Candidates, MaxCandidates, MaxGridDim)
	case !(opt.ScoreMargin >= 0 && opt.ScoreMargin <= 1):
		return fail("score_margin=%v must be in [0, 1] (0: the 0-1 loss; rho: the margin loss)", opt.ScoreMargin)
	case opt.Neighbour != accounting.ReplaceOne && opt.Neighbour != accounting.AddRemove:
		return fail("invalid neighbour relation %d", int(opt.Neighbour))
	}
	pl.Candidates = opt.Candidates
	if opt.Candidates == 0 {
		if !(opt.Gamma > 0 && opt.Gamma <= 1) {
			return fail("gamma=%v: the cover radius must be in (0, 1]", opt.Gamma)
		}
		g, err := newGrid(kp, opt.K, opt.Gamma)
		if err != nil {
			return fail("%v", err)
		}
		size := g.size()
		if size > MaxCandidates {
			return fail("the γ-cover with gamma=%v has %d points, more than %d: raise gamma", opt.Gamma, size, MaxCandidates)
		}
		pl.Grid, pl.grid, pl.Candidates = true, g, size
	}
	if pl.Candidates*kp*opt.K > maxCandidateFloats {
		return fail("%d candidates of %d×%d take more than 2^24 numbers: lower candidates or raise rho (k′=%d)", pl.Candidates, kp, opt.K, kp)
	}
	pl.EffectiveEps = EffectiveEps(opt.Eps)
	pl.Theta = opt.ScoreMargin * opt.Clip
	// The exponential mechanism is ε-bounded range (Durfee–Rogers 2019),
	// which the zcdp accountant prices ε²/8 (accounting.BoundedRange).
	pl.Cost = accounting.BoundedRange(opt.Eps)
	pl.Cost.Mechanism = "jlclass/pool"
	what := fmt.Sprintf("%d random candidates", pl.Candidates)
	if pl.Grid {
		what = fmt.Sprintf("the γ-cover (γ=%v, %d points)", opt.Gamma, pl.Candidates)
	}
	pl.Note = fmt.Sprintf("exponential mechanism over %s in R^(%d×%d), user-level pure ε=%.4g (sampled exactly at ε′=%.6g), %s neighbours; score: %s",
		what, kp, opt.K, opt.Eps, pl.EffectiveEps, opt.Neighbour, lossName(opt.ScoreMargin))
	pl.opt = opt
	return pl, nil
}

func lossName(margin float64) string {
	if margin == 0 {
		return "0-1 loss"
	}
	return fmt.Sprintf("margin loss at %.3g·r", margin)
}

// Public is the public randomness of a run.
type Public struct {
	M          *mat.Dense
	Candidates []*mat.Dense // Pool only
	Dirs       [][]float64
}

func (pl *Plan) sampler() *noise.Sampler {
	if pl.opt.Noise != nil {
		return pl.opt.Noise
	}
	return noise.New()
}

// Draw returns the run's public randomness: M, the candidates (Pool) and
// the direction net (k ≥ 3). It reads no data.
func (pl *Plan) Draw() *Public {
	src := pl.sampler()
	pub := &Public{M: NewJL(pl.KPrime, pl.D, src), Dirs: Directions(pl.K, src)}
	if pl.Variant == Pool {
		if pl.Grid {
			pub.Candidates = pl.grid.candidates()
		} else {
			pub.Candidates = PoolCandidates(pl.Candidates, pl.KPrime, pl.K, src)
		}
	}
	return pub
}

// Run runs the plan on src, whose rows carry a label (read by sign) and a
// user index. Charge the plan's cost first.
func (pl *Plan) Run(ctx context.Context, src rows.Source) (*Result, error) {
	pub := pl.Draw()
	psrc, err := Project(src, pub.M, pl.opt.Clip)
	if err != nil {
		return nil, err
	}
	var util *mat.Dense
	idx := -1
	if pl.Variant == FedRepJL {
		users, err := fedrep.UsersFromSourceMax(ctx, psrc, pl.FedRep.Users, pl.MaxRecords, func(j int, x *mat.Dense, y []float64) (*fedrep.User, error) {
			newUser := fedrep.NewUser
			if pl.opt.BatchSeed != 0 {
				newUser = func(x *mat.Dense, y []float64) (*fedrep.User, error) {
					return fedrep.NewUserSeeded(x, y, pl.opt.BatchSeed+uint64(j))
				}
			}
			u, err := newUser(x, y)
			if err != nil {
				return nil, err
			}
			return u.WithLoss(fedrep.Logistic), nil
		})
		if err != nil {
			return nil, err
		}
		ps := make([]federated.Provider[fedrep.Request, fedrep.Reply], len(users))
		for i, u := range users {
			ps[i] = u
		}
		r, err := pl.FedRep.Coordinate(ctx, federated.NewLocal(ps))
		if err != nil {
			return nil, err
		}
		util = r.U
	} else {
		users, err := UsersFromSource(ctx, psrc)
		if err != nil {
			return nil, err
		}
		if idx, err = pl.Select(ctx, pub, users); err != nil {
			return nil, err
		}
		util = pub.Candidates[idx]
	}
	var u mat.Dense
	u.Mul(pub.M.T(), util)
	return &Result{U: &u, Util: util, M: pub.M, Dirs: pub.Dirs, Index: idx, Plan: pl}, nil
}

// Totals returns Q_c = Σ_i q_i(c), the users' summed integer scores of
// every candidate (Algorithm 3 line 4's score, times n·G and shifted:
// Q_c = n·G·(1 + f(U′_c)) up to each user's rounding). Users score
// concurrently; integer sums do not depend on the order.
func Totals(ctx context.Context, pub *Public, users []*User, theta float64) ([]int64, error) {
	k := len(pub.Candidates)
	workers := min(runtime.GOMAXPROCS(0), max(1, len(users)))
	parts := make([][]int64, workers)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range workers {
		parts[w] = make([]int64, k)
		wg.Add(1)
		go func(acc []int64) {
			defer wg.Done()
			for i := range next {
				for c, s := range users[i].Score(pub.Candidates, theta, pub.Dirs) {
					acc[c] += s
				}
			}
		}(parts[w])
	}
	var err error
	for i := range users {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("jlclass: scoring stopped: %w", err)
	}
	tot := make([]int64, k)
	for _, p := range parts {
		for c, v := range p {
			tot[c] += v
		}
	}
	return tot, nil
}

// Select runs the exponential mechanism (Pool): it returns the index of
// the selected candidate, drawn exactly with P[c] ∝ exp(ε′·Q_c/(2G)).
func (pl *Plan) Select(ctx context.Context, pub *Public, users []*User) (int, error) {
	if pl.Variant != Pool {
		return 0, fmt.Errorf("jlclass: Select is the pool's step, the plan is %v", pl.Variant)
	}
	tot, err := Totals(ctx, pub, users, pl.Theta)
	if err != nil {
		return 0, err
	}
	return pl.SelectFromTotals(tot), nil
}

// SelectFromTotals is Select on totals already computed by Totals (with
// the plan's Theta): an experiment comparing several ε on one data set
// scores the users once. len(tot) must be the number of candidates.
func (pl *Plan) SelectFromTotals(tot []int64) int {
	scale := uint64(1)
	if pl.opt.knob != nil && pl.opt.knob.epsScale > 0 {
		scale = pl.opt.knob.epsScale
	}
	return sampleEM(tot, pl.opt.Eps, scale, pl.sampler())
}

// BestCandidate returns the candidate with the highest total (Totals), ties
// to the lowest index: the nonprivate-pool baseline. NOT differentially
// private; for experiments on public data only.
func BestCandidate(tot []int64) int {
	best := 0
	for c, v := range tot {
		if v > tot[best] {
			best = c
		}
	}
	return best
}
