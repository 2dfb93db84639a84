package federated

// DPS-PCA: distributed differentially private sparse PCA.
// Paper: Ge, Wang, Wang, Liu, "Minimax-Optimal Privacy-Preserving Sparse PCA
// in Distributed Systems", AISTATS 2018 (seed 003, appendix only), the
// algorithm reconstructed in federated.md §1.3, calibrations §1.4 and §0.
//
// Round structure (coordinator side, this file; provider side, provider.go):
//
//	init   (no public start) noisy diagonal → top-ŝ coordinates I₀ →
//	       noisy ŝ×ŝ block on I₀ → top-k eigenvectors → Q⁽¹⁾   (§1.4 [P])
//	       (public start Q⁽⁰⁾) Q⁽¹⁾ = QR(Q⁽⁰⁾ truncated to ŝ rows) (§1.3 step 1)
//	t=1..T K = Σ_j n_j H_j / n;  V = QR(K);  keep the ŝ largest rows of V;
//	       Q⁽ᵗ⁺¹⁾ = QR(truncated V)                              (§1.3 steps 2–7)

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/planning"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Calibration says how a target (ε, δ) becomes noise.
type Calibration int

const (
	// CalibGDP (default) spends μ* = accounting.MuForTarget(ε, δ), exact for
	// Gaussian releases, split as μ_step = μ*·√((1−f)/T) and
	// μ_init = μ*·√(f/2) for each of the two initialisation releases
	// (federated.md §0, §1.4). Cost: accounting.GdpFor(ε, δ).
	CalibGDP Calibration = iota
	// CalibZCDP spends ρ* = accounting.RhoForTarget(ε, δ) split in the same
	// proportions. Cost: accounting.ZcdpFor(ε, δ).
	CalibZCDP
	// CalibPaper uses Lemma A.1 of the paper, σ = 2ε'⁻¹√(2 ln(2/δ')) per
	// query with basic composition over the queries (003:L23, L180). It
	// needs every per-query ε' < 1 and δ' < 1/2. Cost: accounting.Approx(ε, δ).
	CalibPaper
)

// String returns "gdp", "zcdp" or "paper".
func (c Calibration) String() string {
	switch c {
	case CalibGDP:
		return "gdp"
	case CalibZCDP:
		return "zcdp"
	case CalibPaper:
		return "paper"
	}
	return fmt.Sprintf("Calibration(%d)", int(c))
}

// ParseCalibration reads "gdp", "zcdp" or "paper" (case-insensitive; "" is
// the default, gdp).
func ParseCalibration(s string) (Calibration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "gdp", "":
		return CalibGDP, nil
	case "zcdp":
		return CalibZCDP, nil
	case "paper":
		return CalibPaper, nil
	}
	return 0, fmt.Errorf("federated: unknown calibration %q: use \"gdp\", \"zcdp\" or \"paper\"", s)
}

// Defaults of PCAOptions.
const (
	DefaultPCAIters = 10
	DefaultInitFrac = planning.DefaultInitFrac
)

// Bounds of the analyst's parameters, checked by PlanPCA before anything
// is charged (project issue 10). Inside them no provider data (1 to
// MaxRows finite or non-finite rows per provider) can make a run fail or
// release a NaN or an infinity; outside them the plan fails with a fixed
// message naming the parameter.
//
//   - Iters ∈ [0, MaxIters] = [0, 10000] (0: DefaultPCAIters): every
//     power step is a pass over every provider's rows, and the noise
//     multiplier grows like √T (federated.md §1.5 advises T ≈ 10–20).
//   - Eps ∈ [MinEps, MaxEps] = [1e-6, 1e6] (accounting refuses ε > 1e6),
//     Delta ∈ [MinDelta, 1) = [1e-100, 1): μ* and ρ* are then finite and
//     > 0, and every noise std is checked against the samplers' range.
//   - K ∈ [1, d], Sparsity ∈ [K, d]; the principal block of the private
//     initialisation is ŝ×ŝ, so ŝ ≤ MaxBlockDim = 4096 (128 MiB), and the
//     d×k products hold at most MaxProductEntries = 2^26 entries: larger
//     shapes would run out of memory after the charge.
//   - InitFrac ∈ [MinInitFrac, MaxInitFrac] = [0.001, 0.999] (0: 0.2):
//     outside it one release gets less than 0.1% of the budget.
const (
	MaxIters          = planning.MaxIters
	MinEps            = planning.MinEps
	MaxEps            = planning.MaxEps
	MinDelta          = planning.MinDelta
	MinInitFrac       = planning.MinInitFrac
	MaxInitFrac       = planning.MaxInitFrac
	MaxBlockDim       = 4096
	MaxProductEntries = 1 << 26
)

// maxMultiplierRoot bounds multiplier·√m for a release of m coordinates:
// the samplers accept up to 2^38 (beyond it the lattice's rounding slack
// would dominate the sensitivity); a factor 2 is kept in reserve.
const maxMultiplierRoot = 0x1p37

// maxStatistic bounds every entry of an aggregated statistic K (post-
// processing of the noisy replies): an exact entry is at most 1 (rows of
// norm ≤ 1, averaged), so the clamp binds only for noise far in the
// sampler's tail, where N replies near ±MaxFloat64 would sum to ±Inf.
const maxStatistic = 1e300

// PCAOptions configures DPS-PCA. Eps, Delta and Sparsity have no default.
type PCAOptions struct {
	// K is the number of components (default 1).
	K int
	// Sparsity is ŝ, the number of rows the estimate may use, k ≤ ŝ ≤ d
	// (the paper's s_hat, about 2·s* for a true support of size s*).
	// ŝ = d disables truncation: the non-sparse noisy power method.
	Sparsity int
	// Iters is the number of power iterations T (default 10; the noise grows
	// with T, keep it about 10–20, federated.md §1.5).
	Iters int
	// Eps and Delta are the target sample-level privacy parameters of the
	// whole run (initialisation included).
	Eps, Delta float64
	// Calibration selects the accounting (default CalibGDP).
	Calibration Calibration
	// InitFrac is the fraction f of the budget spent on the private
	// initialisation (default 0.2); ignored with a public Start.
	InitFrac float64
	// Start is an optional PUBLIC d×k starting basis Q⁽⁰⁾ (it must not
	// depend on the private data). nil runs the private initialisation of
	// federated.md §1.4, charged to the budget.
	Start *mat.Dense

	knob *testKnob
}

// testKnob alters a run for tests only; it cannot be set outside this
// package, so no caller can weaken a release with it.
type testKnob struct {
	noiseScale float64 // multiplies every noise std
}

// PCAPlan is the data-free part of a DPS-PCA run: validated parameters, the
// noise of every release and the exact privacy cost.
type PCAPlan struct {
	D, K, Sparsity, Iters int
	Calibration           Calibration
	// Private is false only for the non-private baseline (RunPCANonPrivate).
	Private bool
	// InitFromData is true when the start comes from the data (the noisy
	// diagonal thresholding of §1.4, noise-free in the baseline) rather
	// than from a public Start.
	InitFromData bool
	// Cost is what the run spends (sample-level, replace-one neighbours);
	// charge it before calling Run. Zero for the non-private baseline.
	Cost accounting.Event
	// Sensitivities (ℓ2, in units of the unnormalised sums over rows of norm
	// ≤ 1) and noise stds of the three kinds of release. DiagStd and
	// BlockStd are 0 with a public start.
	DiagSensitivity, BlockSensitivity, StepSensitivity float64
	DiagStd, BlockStd, StepStd                         float64
	// DiagRoundingExcess, BlockRoundingExcess and StepRoundingExcess are the
	// ℓ2 sensitivities added for the rounding of each provider's float64
	// sums over its rows (see roundingExcesses); the noise is calibrated to
	// (sensitivity + excess)·(1 + 1e-9). Zero in the non-private baseline.
	DiagRoundingExcess, BlockRoundingExcess, StepRoundingExcess float64
	// StepMultiplier is StepStd/StepSensitivity before lattice slack.
	StepMultiplier float64
	// Note explains the calibration in one line.
	Note string

	opt PCAOptions
}

// PCAResult is a DPS-PCA release. Every field is a DP output or public.
type PCAResult struct {
	// Q is the released d×k basis with orthonormal columns, non-zero only on
	// the rows of Support.
	Q *mat.Dense
	// Support lists the (at most ŝ) rows Q may use, increasing.
	Support []int
	// History holds Q⁽¹⁾, …, Q⁽ᵀ⁺¹⁾ (all broadcast, hence public); the last
	// one is Q.
	History []*mat.Dense
	// Padded counts the columns that rank-deficient QR steps had to fill
	// with unit vectors (a function of the DP releases).
	Padded int
	Plan   *PCAPlan
	Cost   accounting.Event
	Note   string
}

// Sensitivities of the releases under replace-one (one sample x → x′, both
// of norm ≤ 1). D = x xᵀ − x′x′ᵀ has ‖D‖_F² = ‖x‖⁴ + ‖x′‖⁴ − 2⟨x,x′⟩² ≤ 2 and
// ‖D‖₂ ≤ 1, so: ‖D Q‖_F ≤ min(‖D‖_F, ‖D‖₂‖Q‖_F) = min(√2, √k) for
// orthonormal Q; the principal sub-block (its upper triangle, which is what
// gets noised) has ℓ2 norm ≤ ‖D‖_F ≤ √2; the diagonal (x²−x′², entrywise)
// has ℓ2 norm ≤ √(‖x‖⁴+‖x′‖⁴) ≤ √2 since both squares are non-negative.
// The paper uses 2 throughout (003:L43); CalibPaper keeps its formula.
func stepSensitivity(k int) float64 { return math.Min(math.Sqrt2, math.Sqrt(float64(k))) }

const initSensitivity = math.Sqrt2

// roundingSlack inflates every sensitivity before calibration so that the
// per-row rounding (the row scale, a term's own products, the broadcast Q's
// deviation from orthonormality: relative errors far below 1e-9) can never
// push a neighbour's change above the bound the noise covers. The rounding
// of the sums over rows is charged separately (roundingExcesses).
const roundingSlack = 1 + 1e-9

// MaxRows is the most records a provider may hold, 2^30: the rounding of
// the sums over rows is charged for every n ≤ MaxRows, and
// NewPCAProvider refuses more (as does the data registry).
const MaxRows = linalg.MaxRows

// roundingExcesses returns the ℓ2 sensitivity each release adds for the
// rounding of a provider's sums over its rows (Casacuberta et al., arXiv
// 2207.10635: a running sum lets neighbours' computed sums differ by far
// more than Δ). Every such sum is accumulated in the fixed pairwise order
// of rowpass.Pairwise (linalg.Rows), so each term passes through at most h
// roundings, h public, and the excess is linalg.Excess(h, r) =
// 2·γ_h·MaxRows·r, r bounding the ℓ2 norm of one row's term majorant
// (rows of norm ≤ 1):
//
//	diag     t = s²·a_j²,              3 roundings (s², ·a_j, ·a_j),       r = ‖s·a‖² ≤ 1
//	block    t = (s·a_j)(s·a_k), j ≤ k, 3 roundings (two scalings, product), r ≤ ‖s·a‖² ≤ 1
//	product  t = s²(aᵀq_j)·a_k,         d + 3 (dot product, s², weight, update),
//	         M = s²|a_k|(|a|ᵀ|q_j|),    r ≤ ‖s·a‖²·‖Q‖_F = √k
//
// each plus linalg.SumRoundings for the block sums and their pairwise tree.
func roundingExcesses(d, k int) (diag, block, step float64) {
	g := linalg.Excess(linalg.GramRoundings, 1)
	return g, g, linalg.Excess(linalg.CovTimesRoundings(d), math.Sqrt(float64(k)))
}

// paperSigma is Lemma A.1's std for one (ε', δ') query of sensitivity 2.
func paperSigma(eps, delta float64) float64 {
	return 2 / eps * math.Sqrt(2*math.Log(2/delta))
}

// PlanPCA validates opt for d-dimensional data and returns the plan. It
// reads no data.
func PlanPCA(opt PCAOptions, d int) (*PCAPlan, error) {
	return planPCA(opt, d, true)
}

func planPCA(opt PCAOptions, d int, private bool) (*PCAPlan, error) {
	fail := func(format string, a ...any) (*PCAPlan, error) {
		return nil, fmt.Errorf("federated dpspca: "+format, a...)
	}
	var err error
	if opt.K, err = planning.Components(opt.K, d); err != nil {
		return fail("%v", err)
	}
	if opt.Sparsity < opt.K || opt.Sparsity > d {
		return fail("sparsity ŝ=%d: set it to the number of rows the estimate may use, k=%d ≤ ŝ ≤ d=%d (about twice the true support size; ŝ=d disables truncation)", opt.Sparsity, opt.K, d)
	}
	if d*opt.K > MaxProductEntries {
		return fail("the d×k = %d×%d products exceed %d entries: lower k", d, opt.K, MaxProductEntries)
	}
	if opt.Iters == 0 {
		opt.Iters = DefaultPCAIters
	}
	if opt.Iters < 0 || opt.Iters > MaxIters {
		return fail("iters=%d: use 0 for the default (%d) or 1..%d", opt.Iters, DefaultPCAIters, MaxIters)
	}
	if err := planning.PublicStart(opt.Start, d, opt.K); err != nil {
		return fail("%v", err)
	}
	privInit := opt.Start == nil
	f := 0.0
	if privInit {
		if opt.Sparsity > MaxBlockDim {
			return fail("sparsity ŝ=%d: the private initialisation releases an ŝ×ŝ block and accepts ŝ ≤ %d; lower sparsity or give a public start", opt.Sparsity, MaxBlockDim)
		}
		if opt.InitFrac == 0 {
			opt.InitFrac = DefaultInitFrac
		}
		if !(opt.InitFrac >= MinInitFrac && opt.InitFrac <= MaxInitFrac) {
			return fail("init fraction %v: the share of the budget for the private initialisation must be in [%g, %g] (0 for the default 0.2)", opt.InitFrac, float64(MinInitFrac), float64(MaxInitFrac))
		}
		f = opt.InitFrac
	}
	if opt.Calibration != CalibGDP && opt.Calibration != CalibZCDP && opt.Calibration != CalibPaper {
		return fail("invalid calibration %d: use CalibGDP, CalibZCDP or CalibPaper", int(opt.Calibration))
	}
	T := opt.Iters
	k := opt.K
	pl := &PCAPlan{
		D: d, K: k, Sparsity: opt.Sparsity, Iters: T, Calibration: opt.Calibration,
		Private: private, InitFromData: privInit,
		DiagSensitivity: initSensitivity, BlockSensitivity: initSensitivity, StepSensitivity: stepSensitivity(k),
	}
	pl.DiagRoundingExcess, pl.BlockRoundingExcess, pl.StepRoundingExcess = roundingExcesses(d, k)
	if !privInit {
		pl.DiagSensitivity, pl.BlockSensitivity = 0, 0
		pl.DiagRoundingExcess, pl.BlockRoundingExcess = 0, 0
	}
	if !private {
		pl.DiagRoundingExcess, pl.BlockRoundingExcess, pl.StepRoundingExcess = 0, 0, 0
		opt.Eps, opt.Delta = math.Inf(1), 0
		pl.opt = opt
		pl.Note = "NOT differentially private: baseline without noise (ε = ∞)"
		return pl, nil
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
	s := opt.Sparsity
	mDiag, mBlock, mStep := d, s*(s+1)/2, d*k
	var zDiag, zStep float64 // noise multipliers σ/Δ
	switch opt.Calibration {
	case CalibGDP, CalibZCDP:
		mu, cost, err := planning.GaussianBudget(opt.Eps, opt.Delta, opt.Calibration == CalibZCDP)
		if err != nil {
			return fail("%v", err)
		}
		pl.Cost = cost
		zStep = 1 / (mu * math.Sqrt((1-f)/float64(T)))
		if privInit {
			zDiag = 1 / (mu * math.Sqrt(f/2))
		}
		pl.Note = fmt.Sprintf("calibrated to ε=%.3g, δ=%.3g via %s (μ*=%.4g): %d power steps with noise multiplier %.4g",
			opt.Eps, opt.Delta, opt.Calibration, mu, T, zStep)
	case CalibPaper:
		epsStep, deltaStep := (1-f)*opt.Eps/float64(T), (1-f)*opt.Delta/float64(T)
		if !(epsStep < 1) || !(deltaStep < 0.5) {
			return fail("paper calibration needs a per-step ε' < 1 (Lemma A.1), got ε'=%.3g for eps=%v over T=%d steps: lower eps, raise iters or use the gdp calibration", epsStep, opt.Eps, T)
		}
		zStep = paperSigma(epsStep, deltaStep) / 2
		if privInit {
			epsInit, deltaInit := f*opt.Eps/2, f*opt.Delta/2
			if !(epsInit < 1) {
				return fail("paper calibration needs ε' < 1 for each initialisation query, got %.3g: lower eps or init fraction", epsInit)
			}
			zDiag = paperSigma(epsInit, deltaInit) / 2
		}
		pl.Cost = accounting.Approx(opt.Eps, opt.Delta)
		pl.Note = fmt.Sprintf("calibrated to ε=%.3g, δ=%.3g with the paper's Lemma A.1 and basic composition: %d power steps with σ=%.4g (sensitivity 2)",
			opt.Eps, opt.Delta, T, 2*zStep)
	}
	pl.Cost.Mechanism = "federated.dpspca"
	pl.StepMultiplier = zStep
	// The paper's σ is stated for sensitivity 2, which bounds the exact
	// sensitivities; keep its formula and add the rounding excess to it.
	stepSens, diagSens, blockSens := pl.StepSensitivity, pl.DiagSensitivity, pl.BlockSensitivity
	if opt.Calibration == CalibPaper {
		stepSens, diagSens, blockSens = 2, 2, 2
	}
	// calibrate returns a release's std, or the plan's error: never the
	// sampler's panic, before or after the charge.
	calibrate := func(what string, sens, z float64, m int) (float64, error) {
		if !(z > 0) || z*math.Sqrt(float64(m)) > maxMultiplierRoot {
			return 0, fmt.Errorf("federated dpspca: the %s's noise multiplier %.3g over %d coordinates is too large to represent (eps=%v, delta=%v, iters=%d): raise eps or lower iters", what, z, m, opt.Eps, opt.Delta, T)
		}
		std, err := noise.GaussianScaleChecked(sens, z, m)
		if err != nil {
			return 0, fmt.Errorf("federated dpspca: the %s's noise cannot be represented: %w", what, err)
		}
		return std, nil
	}
	if pl.StepStd, err = calibrate("power step", roundingSlack*(stepSens+pl.StepRoundingExcess), zStep, mStep); err != nil {
		return nil, err
	}
	if privInit {
		if pl.DiagStd, err = calibrate("initial diagonal", roundingSlack*(diagSens+pl.DiagRoundingExcess), zDiag, mDiag); err != nil {
			return nil, err
		}
		if pl.BlockStd, err = calibrate("initial block", roundingSlack*(blockSens+pl.BlockRoundingExcess), zDiag, mBlock); err != nil {
			return nil, err
		}
	}
	if privInit {
		pl.Note += fmt.Sprintf("; private initialisation with %.0f%% of the budget (noise multiplier %.4g per release)", 100*f, zDiag)
	} else {
		pl.Note += "; public start"
	}
	pl.opt = opt
	return pl, nil
}

// RunPCA plans DPS-PCA for the providers' dimension and runs it over the
// in-process transport. Charge PlanPCA's cost before calling it.
func RunPCA(ctx context.Context, providers []*PCAProvider, opt PCAOptions) (*PCAResult, error) {
	return runPCA(ctx, providers, opt, true)
}

// RunPCANonPrivate runs the same protocol without noise (ε = ∞): the
// truncated power method with diagonal-thresholding start. It is a baseline
// for experiments on public data; its output is NOT differentially private
// and must never be offered to notebooks.
func RunPCANonPrivate(ctx context.Context, providers []*PCAProvider, opt PCAOptions) (*PCAResult, error) {
	return runPCA(ctx, providers, opt, false)
}

func runPCA(ctx context.Context, providers []*PCAProvider, opt PCAOptions, private bool) (*PCAResult, error) {
	ps, d, err := Parties[PCAProvider, PCARequest, PCAReply](providers, "provider", "columns")
	if err != nil {
		return nil, fmt.Errorf("federated dpspca: %w", err)
	}
	pl, err := planPCA(opt, d, private)
	if err != nil {
		return nil, err
	}
	return pl.Coordinate(ctx, NewLocal(ps))
}

// Coordinate runs the coordinator's side of the protocol over tr. It sees
// only the providers' replies.
func (pl *PCAPlan) Coordinate(ctx context.Context, tr Transport[PCARequest, PCAReply]) (*PCAResult, error) {
	if tr.Providers() == 0 {
		return nil, errors.New("federated dpspca: no providers")
	}
	opt := pl.opt
	d, k, s := pl.D, pl.K, pl.Sparsity
	scale := 1.0
	if opt.knob != nil {
		scale = opt.knob.noiseScale
	}
	if !pl.Private {
		scale = 0
	}
	res := &PCAResult{Plan: pl, Cost: pl.Cost, Note: pl.Note}
	c := &pcaCoordinator{tr: tr, counts: make([]int, tr.Providers())}

	var q *mat.Dense
	var support []int
	round := 0
	if pl.InitFromData {
		diag, err := c.round(ctx, PCARequest{Round: round, Step: StepDiag, Sigma: scale * pl.DiagStd}, d, 1)
		if err != nil {
			return nil, err
		}
		round++
		support = TopIndices(diag.RawMatrix().Data, s)
		block, err := c.round(ctx, PCARequest{Round: round, Step: StepBlock, Support: support, Sigma: scale * pl.BlockStd}, s, s)
		if err != nil {
			return nil, err
		}
		round++
		vecs, _, err := linalg.TopEigen(mat.NewSymDense(s, block.RawMatrix().Data), k)
		if err != nil {
			return nil, fmt.Errorf("federated dpspca: initial basis: %w", err)
		}
		q = mat.NewDense(d, k, nil)
		for t, i := range support {
			q.SetRow(i, vecs.RawRowView(t))
		}
		var padded int
		q, padded = linalg.Orthonormalize(q, support)
		res.Padded += padded
	} else {
		start, _ := linalg.Orthonormalize(opt.Start, nil)
		support = TruncateRows(start, s)
		var padded int
		q, padded = linalg.Orthonormalize(start, support)
		res.Padded += padded
	}
	res.History = append(res.History, mat.DenseCopyOf(q))

	for t := 1; t <= pl.Iters; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("federated dpspca: stopped before power step %d of %d: %w", t, pl.Iters, err)
		}
		kMat, err := c.round(ctx, PCARequest{Round: round, Step: StepProduct, Q: q, Sigma: scale * pl.StepStd}, d, k)
		if err != nil {
			return nil, err
		}
		round++
		v, padded := linalg.Orthonormalize(kMat, nil)
		res.Padded += padded
		support = TruncateRows(v, s)
		q, padded = linalg.Orthonormalize(v, support)
		res.Padded += padded
		res.History = append(res.History, mat.DenseCopyOf(q))
	}
	res.Q = q
	if s < d {
		res.Support = support
	} else {
		res.Support = nil
		for i := range d {
			res.Support = append(res.Support, i)
		}
	}
	return res, nil
}

// pcaCoordinator aggregates replies: K = Σ_j (n_j H_j) / n, summed in
// provider order.
type pcaCoordinator struct {
	tr     Transport[PCARequest, PCAReply]
	counts []int // n_j from the first round; they must not change
	n      int
	seen   bool
}

func (c *pcaCoordinator) round(ctx context.Context, req PCARequest, r, cols int) (*mat.Dense, error) {
	sum := mat.NewDense(r, cols, nil)
	total := 0
	err := c.tr.Round(ctx, req, func(j int, rep PCAReply) error {
		if rep.Value == nil {
			return fmt.Errorf("provider %d sent no %v statistic", j, req.Step)
		}
		if rr, cc := rep.Value.Dims(); rr != r || cc != cols {
			return fmt.Errorf("provider %d sent a %d×%d %v statistic, expected %d×%d", j, rr, cc, req.Step, r, cols)
		}
		if rep.Count < 0 || (c.seen && rep.Count != c.counts[j]) {
			return fmt.Errorf("provider %d changed its record count between rounds", j)
		}
		c.counts[j] = rep.Count
		total += rep.Count
		sum.Add(sum, rep.Value)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("federated dpspca: round %d (%v): %w", req.Round, req.Step, err)
	}
	if !c.seen {
		c.seen, c.n = true, total
	}
	// n = 0 only when every provider withheld its count (a Session): the
	// unnormalised sum then stands for K. Every use of K (top indices,
	// QR, eigenvectors) is invariant under a positive scale, so the
	// released estimate does not depend on n.
	if c.n > 0 {
		sum.Scale(1/float64(c.n), sum)
	}
	clampStatistic(sum)
	return sum, nil
}

// clampStatistic clamps every entry of an aggregated statistic to
// ±maxStatistic (a NaN, possible only from Inf − Inf in that tail, to 0):
// post-processing that keeps the factorizations that follow finite.
func clampStatistic(m *mat.Dense) {
	raw := m.RawMatrix()
	for i := range raw.Rows {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for j, v := range row {
			switch {
			case math.IsNaN(v):
				row[j] = 0
			case v > maxStatistic:
				row[j] = maxStatistic
			case v < -maxStatistic:
				row[j] = -maxStatistic
			}
		}
	}
}
