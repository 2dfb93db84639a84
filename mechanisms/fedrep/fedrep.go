package fedrep

// Private FedRep, coordinator side.
// Paper: Snedeker, Zhou, Bassily, "Private Model Personalization Revisited"
// (seed 004): Algorithm 2 (private initialisation, 004:L206-217) and
// Algorithm 1 (004:L122-143), as specified in federated.md §2.2 (clip
// corrected to M·min{1, τ/‖M‖_F}), calibrated by §2.3 (budget split, user-
// level sensitivities 2ψ/n under replacement) and §0.
//
//	init   Ẑ = (Σ_i clip(Z_i, ψ_init) + n·ξ_init)/n (symmetric);  U₀ = top-k eigenvectors of Ẑ
//	t<T    Û = U_t − η·(Σ_i clip(∇_i,t, ψ) + n·ξ_t+1)/n;           U_t+1 = QR(Û), diag(R) > 0
//
// The noise is added to the SUM of the clipped messages, whose sensitivity
// (2ψ replace-one, ψ add/remove) does not depend on n, and the noisy sum is
// divided by n afterwards (post-processing). This is the spec's release
// (1/n)Σ clip + ξ with ξ of std σ/n, but its noise scale, and so every
// check of it, is the same for every number of users: nothing a plan
// accepts can fail later because of n (project issue 10; see plan).

import (
	"context"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/planning"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Calibration says how the target (ε, δ) becomes noise.
type Calibration int

const (
	// CalibGDP (default): μ* = accounting.MuForTarget(ε, δ), exact for the
	// all-Gaussian pipeline; μ_init = √f·μ*, μ_step = √((1−f)/T)·μ*.
	// Cost: accounting.GdpFor(ε, δ).
	CalibGDP Calibration = iota
	// CalibZCDP: ρ* = accounting.RhoForTarget(ε, δ) split in the same
	// proportions. Cost: accounting.ZcdpFor(ε, δ).
	CalibZCDP
)

// String returns "gdp" or "zcdp".
func (c Calibration) String() string {
	switch c {
	case CalibGDP:
		return "gdp"
	case CalibZCDP:
		return "zcdp"
	}
	return fmt.Sprintf("Calibration(%d)", int(c))
}

// ParseCalibration reads "gdp" or "zcdp" ("" is gdp).
func ParseCalibration(s string) (Calibration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "gdp", "":
		return CalibGDP, nil
	case "zcdp":
		return CalibZCDP, nil
	}
	return 0, fmt.Errorf("fedrep: unknown calibration %q: use \"gdp\" or \"zcdp\"", s)
}

// DefaultInitFrac is the default share of the budget for Algorithm 2.
const DefaultInitFrac = planning.DefaultInitFrac

// Bounds of the analyst's parameters, checked by PlanRun before anything
// is charged. They are chosen so that, for every number of users n in
// [1, MaxUsers] and every finite value the users send, no step after the
// charge can fail or produce a NaN or an infinity (project issue 10):
//
//   - ψ, ψ_init ∈ [MinClip, MaxClip] = [1e-100, 1e100]. A clipped sum has
//     norm ≤ MaxUsers·ψ ≤ 2^30·1e100, far from overflow, and the noise std
//     on it, z·(2ψ + excess) (z·(ψ + excess) under add/remove), stays
//     inside the samplers' range [2^-900, 2^900] ≈ [1e-271, 1e271] for
//     every multiplier z the other bounds allow (z ∈ [6e-4, 2^37], so the
//     std lies in [6e-104, 3e111]), with a margin of 1e160 at either end.
//     A gradient clipped to below 1e-100 would release only noise, so the
//     lower bound refuses nothing useful. (The old per-average calibration,
//     std ∝ ψ/n, failed below about 1e-271·n, which let a bisection on ψ
//     find n.)
//   - η ∈ [MinEta, MaxEta] = [1e-100, 1e100]: the update U − η·avg stays
//     finite because the released average is clamped to ±avgClamp = 1e150
//     (post-processing; see avgClamp), so |η·avg| ≤ 1e250. The lower bound
//     is not needed for finiteness; a smaller step cannot move U and can
//     only be a typo.
//   - T ∈ [1, MaxIters] = [1, 10000]: every round asks every user, so the
//     running time is about n·T user answers, and the noise multiplier
//     grows like √T (the paper uses T = 5); the bound keeps a typo such as
//     2^31 rounds from running for ever, as in mechanisms/pca.
//   - eps ∈ [MinEps, MaxEps] = [1e-6, 1e6] (accounting refuses ε > 1e6) and
//     delta ∈ [MinDelta, 1) = [1e-100, 1): inside these the accountant's
//     μ* lies in [4.9e-8, 1.5e3], so every multiplier is finite and > 0;
//     at ε = 1e-6 most shapes are then refused by the lattice check below
//     (multiplier·√m ≤ 2^37), with the same message for every n.
//   - init fraction f ∈ [MinInitFrac, MaxInitFrac] = [0.001, 0.999] (0 for
//     the default 0.2): outside it one of the two releases gets less than
//     0.1% of μ*² and its multiplier more than 30 times the other's.
//   - K ∈ [1, d]; Batch ∈ [0, MaxBatch] with MaxBatch = 2^30 (no user holds
//     more records than a data set has rows; a larger batch is clamped by
//     each user to half its first-half records, see User.batches).
const (
	MinClip     = planning.MinClip
	MaxClip     = planning.MaxClip
	MinEta      = 1e-100
	MaxEta      = 1e100
	MaxIters    = planning.MaxIters
	MinEps      = planning.MinEps
	MaxEps      = planning.MaxEps
	MinDelta    = planning.MinDelta
	MinInitFrac = planning.MinInitFrac
	MaxInitFrac = planning.MaxInitFrac
	MaxBatch    = 1 << 30
)

// maxMultiplierRoot bounds multiplier·√m, m the coordinates of a release:
// the samplers accept up to 2^38 (beyond it the lattice's rounding slack
// would dominate the sensitivity); a factor 2 is kept in reserve, as in
// mechanisms/pca.
const maxMultiplierRoot = 0x1p37

// avgClamp bounds every entry of a released noisy average (post-
// processing). A clipped average has entries ≤ MaxClip and the noise std
// on it is at most 2^37·2·MaxClip ≈ 3e111, so the clamp binds only for
// noise beyond 3e38 stds, but it keeps η·avg and the eigensolver's input
// finite whatever the sampler returns.
const avgClamp = 1e150

// roundingSlack inflates every sensitivity before calibration so that the
// rounding of each user's own clip (its norm and clip factor, relative
// errors far below 1e-9) can never exceed the bound the noise covers. The
// rounding of the sum over users is charged separately (sumExcess).
const roundingSlack = 1 + 1e-9

// MaxUsers is the most users a run accepts, 2^30: every user holds at
// least one record and the data registry refuses data sets of more than
// 2^30 rows, and the rounding of the sums over users is charged for every
// n ≤ MaxUsers.
const MaxUsers = linalg.MaxRows

// sumRoundings is the most roundings a term of a noised sum passes
// through: the clip c·m (1) and the pairwise sum over users
// (linalg.SumRoundings, linalg.Stream). The division by n comes after the
// noise and is post-processing.
const sumRoundings = 1 + linalg.SumRoundings

// sumExcess returns the ℓ2 sensitivity added for the rounding of
// Σ_i clip(M_i, ψ): the term of user i is c_i·M_i, its majorant |c_i·M_i|
// has norm ≤ ψ, so by linalg.Excess the computed sums of two neighbouring
// user sets differ by at most Δ + 2·γ_h·MaxUsers·ψ, for every n ≤ MaxUsers
// (for the initialisation the noised coordinates are the upper triangle,
// whose ℓ2 norm is at most the Frobenius norm ψ_init).
func sumExcess(psi float64) float64 {
	return linalg.Excess(sumRoundings, psi)
}

// Options configures Private FedRep. K, Iters, Eta, Psi, Eps and Delta have
// no default; PsiInit is needed unless Start is given.
type Options struct {
	// K is the dimension of the shared representation.
	K int
	// Iters is the number of rounds T of Algorithm 1.
	Iters int
	// Eta is the step size η (for the gradient with the factor 2).
	Eta float64
	// Psi is the clipping bound ψ on each user's gradient (Frobenius).
	Psi float64
	// PsiInit is the clipping bound ψ_init on each user's Z_i (Frobenius).
	PsiInit float64
	// Eps and Delta are the user-level target of the whole run.
	Eps, Delta float64
	// InitFrac is the share f of the budget for the initialisation
	// (0: the default 0.2); ignored with a public Start.
	InitFrac float64
	// Neighbour is the user-level neighbouring relation (default
	// accounting.ReplaceOne; AddRemove treats the number of users as public).
	Neighbour accounting.Neighbour
	// Calibration selects the accounting (default CalibGDP).
	Calibration Calibration
	// Batch is the size of each of the two per-round batches B, B′
	// (0: automatic; see User.batches for the rule, which also clamps a
	// batch larger than a user can fill). It does not affect privacy.
	Batch int
	// Start is an optional PUBLIC d×k starting representation (it must not
	// depend on the private data); nil runs the private Algorithm 2.
	Start *mat.Dense
	// Noise is the coordinator's noise source; nil means noise.New(), the
	// cryptographic sampler. Seeded samplers are for tests and public
	// benchmarks only.
	Noise *noise.Sampler
	// Progress, if set, is called after each round with (t, Iters) for
	// t = 1..Iters, in order and once each, whatever the users' data (the
	// initialisation is part of round 1's wait). It runs on the
	// coordinator's goroutine, between rounds, and should return quickly.
	Progress func(step, total int)

	knob *testKnob
}

// testKnob alters a run for tests only; it cannot be set outside this
// package, so no caller can weaken a release with it.
type testKnob struct {
	noiseScale float64                                    // multiplies every noise std
	observe    func(step string, round int, m *mat.Dense) // sees the noisy aggregates (DP releases)
}

// Plan is the data-free part of a run.
type Plan struct {
	D, K, Users, Iters int
	Eta                float64
	Calibration        Calibration
	Neighbour          accounting.Neighbour
	// Private is false only for RunNonPrivate.
	Private bool
	// InitFromData is true when Algorithm 2 runs (noise-free in the
	// baseline) rather than starting from a public Start.
	InitFromData bool
	// Cost is what the run spends, user-level; charge it before Run. Zero
	// for the non-private baseline.
	Cost accounting.Event
	// StepSensitivity (= 2ψ, or ψ under add/remove) and InitSensitivity
	// (2ψ_init or ψ_init) are the ℓ2 sensitivities of the SUMS of the
	// users' clipped messages, which get the noise; StepMultiplier,
	// InitMultiplier the noise multipliers z = std/sensitivity before
	// rounding and lattice slack; StepStd, InitStd the per-entry noise stds
	// on the sums. None depends on the number of users.
	StepSensitivity, InitSensitivity float64
	StepMultiplier, InitMultiplier   float64
	StepStd, InitStd                 float64
	// StepAverageStd and InitAverageStd are StepStd/n and InitStd/n: the
	// per-entry std of the noise in the released averages (the spec's σ̂
	// and σ_init, federated.md §2.3). Reported only; no sampler uses them.
	StepAverageStd, InitAverageStd float64
	// StepRoundingExcess and InitRoundingExcess are the ℓ2 sensitivities
	// added for the rounding of the sums of the users' clipped messages
	// (see sumExcess); the noise is calibrated to
	// (sensitivity + excess)·(1 + 1e-9). Zero in the non-private baseline.
	StepRoundingExcess, InitRoundingExcess float64
	Note                                   string

	opt Options
}

// Result is the release of a run: the shared representation and the
// history of broadcasts, all differentially private (or public). The users'
// heads are not part of it.
type Result struct {
	// U is U_T (d×k, orthonormal columns).
	U *mat.Dense
	// History holds U₀, U₁, …, U_T (U₀ from Algorithm 2 or the public start).
	History []*mat.Dense
	// Padded counts QR columns filled because an iterate lost rank.
	Padded int
	Plan   *Plan
	Cost   accounting.Event
	Note   string
}

// PlanRun validates opt for n users with d features and returns the plan;
// it reads no data. n is public (the number of enrolled users, declared by
// the data owner); it enters only the plan's Users, the reported average
// stds and the check 1 ≤ n ≤ MaxUsers. Every other check, and every noise
// scale, is the same for every n in [1, MaxUsers]: PlanRun(opt, d, n)
// fails for one such n exactly when it fails for all of them, with the
// same error, and a plan it returns runs on n users without failing
// whatever the users' records are.
func PlanRun(opt Options, d, n int) (*Plan, error) { return plan(opt, d, n, true) }

func plan(opt Options, d, n int, private bool) (*Plan, error) {
	fail := func(format string, a ...any) (*Plan, error) {
		return nil, fmt.Errorf("fedrep: "+format, a...)
	}
	switch {
	case d < 1:
		return fail("the users need at least one feature, got d=%d", d)
	case n < 1:
		return fail("no users")
	case n > MaxUsers:
		return fail("more than fedrep.MaxUsers = 2^30 users, the most the privacy accounting covers: split the population")
	case opt.K < 1 || opt.K > d:
		return fail("k=%d: the representation dimension must satisfy 1 ≤ k ≤ d=%d", opt.K, d)
	case opt.Iters < 1 || opt.Iters > MaxIters:
		return fail("iters=%d: the number of rounds T must be in 1..%d", opt.Iters, MaxIters)
	case !(opt.Eta >= MinEta && opt.Eta <= MaxEta):
		return fail("eta=%v: the step size must be a number in [%g, %g]", opt.Eta, float64(MinEta), float64(MaxEta))
	case opt.Batch < 0 || opt.Batch > MaxBatch:
		return fail("batch=%d must be in 0..2^30 (0 for the automatic rule)", opt.Batch)
	case opt.Neighbour != accounting.ReplaceOne && opt.Neighbour != accounting.AddRemove:
		return fail("invalid neighbour relation %d", int(opt.Neighbour))
	case opt.Calibration != CalibGDP && opt.Calibration != CalibZCDP:
		return fail("invalid calibration %d: use CalibGDP or CalibZCDP", int(opt.Calibration))
	}
	if err := planning.PublicStart(opt.Start, d, opt.K); err != nil {
		return fail("%v", err)
	}
	privInit := opt.Start == nil
	pl := &Plan{
		D: d, K: opt.K, Users: n, Iters: opt.Iters, Eta: opt.Eta,
		Calibration: opt.Calibration, Neighbour: opt.Neighbour,
		Private: private, InitFromData: privInit,
	}
	if !private {
		// 0 means no clipping in the baseline.
		for _, c := range []float64{opt.Psi, opt.PsiInit} {
			if c != 0 && !(c >= MinClip && c <= MaxClip) {
				return fail("psi=%v, psi_init=%v: clipping bounds must be 0 (no clipping) or in [%g, %g]", opt.Psi, opt.PsiInit, float64(MinClip), float64(MaxClip))
			}
		}
		pl.Note = "NOT differentially private: FedRep without noise (baseline)"
		pl.opt = opt
		return pl, nil
	}
	if !(opt.Psi >= MinClip && opt.Psi <= MaxClip) {
		return fail("psi=%v: the gradient clipping bound must be a number in [%g, %g] (the experiment uses 10)", opt.Psi, float64(MinClip), float64(MaxClip))
	}
	f := 0.0
	if privInit {
		if !(opt.PsiInit >= MinClip && opt.PsiInit <= MaxClip) {
			return fail("psi_init=%v: the initialisation clipping bound must be a number in [%g, %g] (or give a public start)", opt.PsiInit, float64(MinClip), float64(MaxClip))
		}
		if opt.InitFrac == 0 {
			opt.InitFrac = DefaultInitFrac
		}
		if !(opt.InitFrac >= MinInitFrac && opt.InitFrac <= MaxInitFrac) {
			return fail("init fraction %v: the share of the budget for the initialisation must be in [%g, %g] (0 for the default 0.2)", opt.InitFrac, float64(MinInitFrac), float64(MaxInitFrac))
		}
		f = opt.InitFrac
	}
	if err := planning.Target(opt.Eps, opt.Delta); err != nil {
		return fail("%v", err)
	}
	if !(opt.Eps >= MinEps && opt.Eps <= MaxEps) {
		return fail("eps=%v: use %g ≤ eps ≤ %g", opt.Eps, float64(MinEps), float64(MaxEps))
	}
	if !(opt.Delta >= MinDelta) {
		return fail("delta=%v: use %g ≤ delta < 1", opt.Delta, float64(MinDelta))
	}
	mu, cost, err := planning.GaussianBudget(opt.Eps, opt.Delta, opt.Calibration == CalibZCDP)
	if err != nil {
		return fail("%v", err)
	}
	pl.Cost = cost
	pl.Cost.Mechanism = "fedrep"
	// One user moves a sum of clipped messages by ≤ 2ψ when replaced, ψ
	// when added or removed (federated.md §2.3, times n: the spec states it
	// for the average).
	factor := 2.0
	if opt.Neighbour == accounting.AddRemove {
		factor = 1
	}
	// calibrate returns the std for a sum of sensitivity sens over m
	// coordinates; its error is the same for every n (nothing here
	// depends on n).
	calibrate := func(what string, sens, excess, z float64, m int) (float64, error) {
		if !(z > 0) || z*math.Sqrt(float64(m)) > maxMultiplierRoot {
			return 0, fmt.Errorf("fedrep: the %s's noise multiplier %.3g over %d coordinates is too large to represent (eps=%v, delta=%v, iters=%d): raise eps or lower iters", what, z, m, opt.Eps, opt.Delta, opt.Iters)
		}
		std, err := noise.GaussianScaleChecked(roundingSlack*(sens+excess), z, m)
		if err != nil {
			return 0, fmt.Errorf("fedrep: the %s's noise cannot be represented: %w", what, err)
		}
		return std, nil
	}
	pl.StepSensitivity = factor * opt.Psi
	pl.StepMultiplier = 1 / (mu * math.Sqrt((1-f)/float64(opt.Iters)))
	pl.StepRoundingExcess = sumExcess(opt.Psi)
	if pl.StepStd, err = calibrate("gradient step", pl.StepSensitivity, pl.StepRoundingExcess, pl.StepMultiplier, d*opt.K); err != nil {
		return nil, err
	}
	pl.StepAverageStd = pl.StepStd / float64(n)
	pl.Note = fmt.Sprintf("calibrated to user-level ε=%.3g, δ=%.3g (%s neighbours) via %s (μ*=%.4g): %d rounds with noise multiplier %.4g",
		opt.Eps, opt.Delta, opt.Neighbour, opt.Calibration, mu, opt.Iters, pl.StepMultiplier)
	if privInit {
		pl.InitSensitivity = factor * opt.PsiInit
		pl.InitMultiplier = 1 / (mu * math.Sqrt(f))
		pl.InitRoundingExcess = sumExcess(opt.PsiInit)
		if pl.InitStd, err = calibrate("initialisation", pl.InitSensitivity, pl.InitRoundingExcess, pl.InitMultiplier, d*(d+1)/2); err != nil {
			return nil, err
		}
		pl.InitAverageStd = pl.InitStd / float64(n)
		pl.Note += fmt.Sprintf("; private initialisation with %.0f%% of the budget (noise multiplier %.4g)", 100*f, pl.InitMultiplier)
	} else {
		pl.Note += "; public start"
	}
	pl.opt = opt
	return pl, nil
}

// Run plans Private FedRep for the users and runs it over the in-process
// transport (users answer concurrently). Charge PlanRun's cost first.
func Run(ctx context.Context, users []*User, opt Options) (*Result, error) {
	return run(ctx, users, opt, true)
}

// RunNonPrivate runs FedRep without noise: with Psi and PsiInit set it is
// the ε = ∞ limit of the private algorithm (same clipping, no noise); with
// them zero, plain FedRep without clipping (whose 3-record head fits make
// the gradients heavy-tailed enough to derail a step now and then). A
// baseline for experiments on public data: its output is NOT
// differentially private and must never be offered to notebooks. Eps,
// Delta, InitFrac, Neighbour and Calibration are ignored.
func RunNonPrivate(ctx context.Context, users []*User, opt Options) (*Result, error) {
	return run(ctx, users, opt, false)
}

func run(ctx context.Context, users []*User, opt Options, private bool) (*Result, error) {
	ps, d, err := federated.Parties[User, Request, Reply](users, "user", "features")
	if err != nil {
		return nil, fmt.Errorf("fedrep: %w", err)
	}
	pl, err := plan(opt, d, len(users), private)
	if err != nil {
		return nil, err
	}
	return pl.Coordinate(ctx, federated.NewLocal(ps))
}

// Coordinate runs the coordinator's side over tr; it sees only the users'
// replies, clips each, and adds the noise. It is the cross-silo loop
// (coordinate) over one in-process silo whose users are tr's providers,
// so the central run and a one-silo federation are the same code.
func (pl *Plan) Coordinate(ctx context.Context, tr federated.Transport[Request, Reply]) (*Result, error) {
	if tr.Providers() != pl.Users {
		return nil, fmt.Errorf("fedrep: the plan is for %d users, the transport has %d", pl.Users, tr.Providers())
	}
	src := pl.opt.Noise
	if src == nil {
		src = noise.New()
	}
	return pl.coordinate(ctx, func(ctx context.Context, req Request) (*mat.Dense, error) {
		return pl.release(ctx, tr, req, src)
	})
}

// release is one round's differentially private release of the users of
// tr: the sum of their clipped messages plus the noise of pl, divided by
// pl.Users (post-processing). For StepInit it is the d×d symmetric matrix
// Ẑ, for StepGradient the d×k average gradient at req.U.
func (pl *Plan) release(ctx context.Context, tr federated.Transport[Request, Reply], req Request, src *noise.Sampler) (*mat.Dense, error) {
	opt := pl.opt
	d, k, n := pl.D, pl.K, pl.Users
	scale := 1.0
	if opt.knob != nil {
		scale = opt.knob.noiseScale
	}
	observe := func(string, int, *mat.Dense) {}
	if opt.knob != nil && opt.knob.observe != nil {
		observe = opt.knob.observe
	}
	req.Iters, req.Batch = pl.Iters, opt.Batch
	if req.Step == StepInit {
		acc := linalg.NewStream(d * d)
		err := tr.Round(ctx, req, func(i int, rep Reply) error {
			if rep.Z == nil || rep.Z.SymmetricDim() != d {
				return fmt.Errorf("user %d sent no %d×%d initialisation matrix", i, d, d)
			}
			acc.Add(func(upper []float64) { addClippedSym(upper, rep.Z, opt.PsiInit) })
			return nil
		})
		if err != nil {
			return nil, err
		}
		sum := mat.NewDense(d, d, acc.Sum())
		if pl.Private && scale*pl.InitStd > 0 {
			src.AddSymmetricGaussian(sum, scale*pl.InitStd)
		} else {
			symmetrize(sum)
		}
		average(sum, n)
		observe("init", 0, sum)
		return sum, nil
	}
	acc := linalg.NewStream(d * k)
	err := tr.Round(ctx, req, func(i int, rep Reply) error {
		if rep.Grad == nil {
			return fmt.Errorf("user %d sent no gradient", i)
		}
		if r, c := rep.Grad.Dims(); r != d || c != k {
			return fmt.Errorf("user %d sent a %d×%d gradient, expected %d×%d", i, r, c, d, k)
		}
		acc.Add(func(g []float64) { addClipped(g, rep.Grad, opt.Psi) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	sum := mat.NewDense(d, k, acc.Sum())
	if pl.Private && scale*pl.StepStd > 0 {
		src.AddGaussianMatrix(sum, scale*pl.StepStd)
	}
	average(sum, n)
	observe("step", req.Round, sum)
	return sum, nil
}

// coordinate is the coordinator's loop of Algorithms 2 and 1 given ask,
// which returns a round's released average (one silo's, or the mean of
// several silos' averages): the top-k eigenvectors of the initialisation
// release (or the public start), then T steps U ← QR(U − η·avg). It reads
// nothing but the releases and pl's public parameters.
func (pl *Plan) coordinate(ctx context.Context, ask func(context.Context, Request) (*mat.Dense, error)) (*Result, error) {
	opt := pl.opt
	d, k := pl.D, pl.K
	res := &Result{Plan: pl, Cost: pl.Cost, Note: pl.Note}

	var u *mat.Dense
	if pl.InitFromData {
		z, err := ask(ctx, Request{Round: 0, Step: StepInit})
		if err != nil {
			return nil, fmt.Errorf("fedrep: initialisation: %w", err)
		}
		vecs, _, err := linalg.TopEigen(mat.NewSymDense(d, z.RawMatrix().Data), k)
		if err != nil {
			return nil, fmt.Errorf("fedrep: initialisation: %w", err)
		}
		u = vecs
	} else {
		u = mat.DenseCopyOf(opt.Start)
	}
	var padded int
	u, padded = linalg.Orthonormalize(u, nil)
	res.Padded += padded
	res.History = append(res.History, mat.DenseCopyOf(u))

	for t := 0; t < pl.Iters; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fedrep: stopped before round %d of %d: %w", t+1, pl.Iters, err)
		}
		avg, err := ask(ctx, Request{Round: t, Step: StepGradient, U: u})
		if err != nil {
			return nil, fmt.Errorf("fedrep: round %d: %w", t+1, err)
		}
		var uhat mat.Dense
		uhat.Scale(-pl.Eta, avg)
		uhat.Add(u, &uhat)
		u, padded = linalg.Orthonormalize(&uhat, nil)
		res.Padded += padded
		res.History = append(res.History, mat.DenseCopyOf(u))
		if opt.Progress != nil {
			opt.Progress(t+1, pl.Iters)
		}
	}
	res.U = u
	return res, nil
}

// addClipped adds clip(m, bound) to acc, m's entries in row-major order
// (bound 0, allowed only in the non-private baseline, means no clipping).
// A message with a non-finite entry counts as zero: dropping it is a
// public rule that keeps every user's contribution within the bound.
func addClipped(acc []float64, m *mat.Dense, bound float64) {
	g := m.RawMatrix()
	for i := range g.Rows {
		for _, v := range g.Data[i*g.Stride : i*g.Stride+g.Cols] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
		}
	}
	c := 1.0
	if bound > 0 {
		c = clipFactor(mat.Norm(m, 2), bound)
	}
	for i := range g.Rows {
		dst := acc[i*g.Cols : (i+1)*g.Cols]
		src := g.Data[i*g.Stride : i*g.Stride+g.Cols]
		if c == 1 {
			floats.Add(dst, src)
		} else {
			floats.AddScaled(dst, c, src)
		}
	}
}

// addClippedSym adds clip(z, bound) to the upper triangle of acc, an n×n
// row-major matrix (bound 0: no clipping, non-private baseline only),
// reading only z's upper triangle (‖z‖_F² = Σ diagonal² + 2·Σ
// off-diagonal²).
func addClippedSym(acc []float64, z *mat.SymDense, bound float64) {
	raw := z.RawSymmetric()
	if raw.Uplo != blas.Upper {
		z = mat.NewSymDense(raw.N, mat.DenseCopyOf(z).RawMatrix().Data)
		raw = z.RawSymmetric()
	}
	n := raw.N
	var ss float64
	for i := range n {
		row := raw.Data[i*raw.Stride+i : i*raw.Stride+n]
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
			if j == 0 {
				ss += v * v
			} else {
				ss += 2 * v * v
			}
		}
	}
	c := 1.0
	if bound > 0 {
		c = clipFactor(math.Sqrt(ss), bound)
	}
	for i := range n {
		dst := acc[i*n+i : (i+1)*n]
		src := raw.Data[i*raw.Stride+i : i*raw.Stride+n]
		if c == 1 {
			floats.Add(dst, src)
		} else {
			floats.AddScaled(dst, c, src)
		}
	}
}

// clipFactor returns min{1, τ/‖M‖_F} given ‖M‖_F (federated.md §2.2, the
// corrected clip: clip(M, τ) = M·min{1, τ/‖M‖_F}, clip(0) = 0). The factor is
// shrunk by one part in 10¹⁵ when it bites, so that rounding can never
// leave ‖clip(M)‖_F above τ.
func clipFactor(norm, tau float64) float64 {
	if norm <= tau {
		return 1
	}
	return tau / norm * (1 - 1e-15)
}

// Clip returns clip(M, τ) = M·min{1, τ/‖M‖_F} as a new matrix.
func Clip(m *mat.Dense, tau float64) *mat.Dense {
	var out mat.Dense
	out.Scale(clipFactor(mat.Norm(m, 2), tau), m)
	return &out
}

// average turns a (noisy) sum over n users into the released average,
// in place: each entry is multiplied by fl(1/n) and clamped to ±avgClamp.
// Both are post-processing of the noisy sum. In the private run the clamp
// binds only for noise far in the tail (see avgClamp); in the non-private
// baseline without clipping it keeps an overflowing sum finite.
func average(m *mat.Dense, n int) {
	inv := 1 / float64(n)
	raw := m.RawMatrix()
	for i := range raw.Rows {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for j, v := range row {
			v *= inv
			switch {
			case math.IsNaN(v):
				v = 0
			case v > avgClamp:
				v = avgClamp
			case v < -avgClamp:
				v = -avgClamp
			}
			row[j] = v
		}
	}
}

// symmetrize copies the upper triangle of the square matrix m onto its
// lower triangle, matching what AddSymmetricGaussian does with noise.
func symmetrize(m *mat.Dense) {
	r, _ := m.Dims()
	for i := range r {
		for j := range i {
			m.Set(i, j, m.At(j, i))
		}
	}
}
