package pca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/planning"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Method names, as accepted by Plan and Run.
const (
	MethodNPM      = "npm"
	MethodAdaptive = "adaptive"
	MethodGauss    = "gauss"
)

// Methods lists the method names in documentation order.
var Methods = []string{MethodNPM, MethodAdaptive, MethodGauss}

// Calibration says how a target (Eps, Delta) becomes noise.
type Calibration int

const (
	// CalibZCDP spends ρ* = accounting.RhoForTarget(Eps, Delta), the zCDP
	// budget whose tight conversion is exactly (Eps, Delta), and splits it
	// over the iterations. The cost event is accounting.Zcdp(ρ*).
	CalibZCDP Calibration = iota
	// CalibPaper uses the papers' own noise formulas (typos resolved as the
	// spec says). The cost event is accounting.Approx(Eps, Delta).
	CalibPaper
	// CalibGDP, for datasets under the gdp accountant, spends μ* =
	// accounting.MuForTarget(Eps, Delta), the exact Gaussian-DP μ whose
	// (ε, δ(ε)) curve is the target, through the same helper as the tabular
	// calls (accounting.GaussianTarget): the releases share the
	// ρ-equivalent μ*²/2 (rounded down) as CalibZCDP shares ρ*, and the
	// cost event is accounting.GdpFor(Eps, Delta). gauss and npm only; the
	// adaptive method prices its sparse-vector step too (PlanAdaptive).
	CalibGDP
)

// String returns "zcdp", "paper" or "gdp".
func (c Calibration) String() string {
	switch c {
	case CalibZCDP:
		return "zcdp"
	case CalibPaper:
		return "paper"
	case CalibGDP:
		return "gdp"
	}
	return fmt.Sprintf("Calibration(%d)", int(c))
}

// ParseCalibration reads "zcdp", "paper" or "gdp" (case-insensitive). The
// DSL's calibration keyword offers zcdp and paper only: a cell gets CalibGDP
// from its dataset's accountant, never by asking (a GDP event on a zcdp
// dataset would cost more than its target there).
func ParseCalibration(s string) (Calibration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "zcdp", "":
		return CalibZCDP, nil
	case "paper":
		return CalibPaper, nil
	case "gdp":
		return CalibGDP, nil
	}
	return 0, fmt.Errorf("pca: unknown calibration %q: use \"zcdp\", \"paper\" or \"gdp\"", s)
}

// Options configures a private PCA run. The zero value of every field but
// Eps and Delta is a usable default.
type Options struct {
	// K is the number of components (default 1; adaptive supports only 1).
	K int
	// Iters is the number of power iterations (L for npm, T for adaptive);
	// 0 picks the spec default (see PlanNoisyPower, PlanAdaptive). It must
	// not depend on the private data.
	Iters int
	// Oversample adds columns to the npm iterate: p = K + Oversample ≤ d.
	Oversample int
	// Eps and Delta are the target privacy parameters of the whole run.
	Eps, Delta float64
	// Calibration selects the accounting (default CalibZCDP).
	Calibration Calibration
	// Neighbour is the neighbouring relation of the guarantee (default
	// accounting.ReplaceOne).
	Neighbour accounting.Neighbour
	// Clip is the public row-norm bound (default 1); see the package doc.
	Clip float64
	// PublicN is a public (or separately DP) estimate of the row count, used
	// only for the adaptive method's default iteration count.
	PublicN int
	// Gap is an assumed relative eigengap used only for default iteration
	// counts: γ₀ = 1 − λ₂/λ₁ for npm (default 0.1), κ₀ for adaptive
	// (default 0.5).
	Gap float64
	// AutoGap (adaptive only, with Gap 0): the gap is unknown; run the
	// adaptive method once per κ guess of a public grid and select one
	// run with the exponential mechanism (PlanAdaptiveAuto).
	AutoGap bool
	// Center (npm, adaptive, gauss; CalibZCDP and CalibGDP): estimate the
	// mean of the clipped rows privately and run the method on the rows
	// centred by it, each centred row clipped again to Clip (center.go).
	// The run costs the same event as the uncentred one: the mean takes
	// CenterShare of its ρ.
	Center bool
	// CenterShare is the mean's share of the run's ρ, in (0, 1/2]; 0 means
	// DefaultCenterShare. It must be 0 without Center.
	CenterShare float64
	// Beta is the adaptive method's failure probability in the
	// sparse-vector threshold (default 0.05).
	Beta float64
	// Workers bounds the goroutines of each data pass (0: GOMAXPROCS).
	Workers int
	// Noise is the noise source; nil means noise.New(), the cryptographic
	// sampler. Seeded samplers are for tests and public benchmarks only.
	Noise *noise.Sampler
	// Progress, if set, is called after each iteration of npm and adaptive
	// with (t, Iters) for t = 1..Iters, in order and once each, whatever
	// the data (gauss has a single step and does not call it). It runs on
	// the goroutine of the run, between passes, and should return quickly.
	Progress func(step, total int)

	knob *testKnob
	// runRho, when > 0, is the zCDP budget (CalibGDP: the ρ-equivalent
	// μ²/2) of one adaptive run in place of the target's: the share of a
	// candidate of gap="auto".
	runRho float64
}

// testKnob alters a run for tests only; it cannot be set outside this
// package, so no caller can weaken a release with it.
type testKnob struct {
	noiseScale float64 // multiplies every noise scale; 0 removes noise
	keepAll    bool    // adaptive: skip the threshold search, keep all rows
	// lossShift, when > 0, replaces scoreBits as the gap selection's loss
	// unit 2^shift (a smaller one underestimates the loss's sensitivity:
	// the audit's broken twin).
	lossShift int
	trace     *trace // receives non-private diagnostics
}

// trace holds diagnostics that are NOT differentially private. Only tests
// in this package can ask for them.
type trace struct {
	thetas     []float64 // θ̂_t per adaptive iteration
	maxScores  []float64 // max_i score_i per adaptive iteration
	filtered   []int     // rows above θ̂_t per adaptive iteration
	gram       bool      // npm formed C explicitly
	iterations int
	// first is the first noisy release (npm: Y_1 column-major d·p; adaptive:
	// the noisy filtered product; gauss: the noisy upper triangle). It is
	// itself DP; privacy audits use it as the strongest statistic.
	first []float64
	start []float64 // the public random start X_0 (column-major)
	// center is the released (Σ s·a, n) of a centred run's private mean,
	// after its noise (itself DP).
	center []float64
	// laplace records every Laplace draw of the run, in order: the scale
	// the sampler was asked for (after the test-only noise scale) and the
	// value drawn (the adaptive method's sparse-vector noise).
	laplace []laplaceDraw
	// losses and selected are gap="auto"'s candidate losses and the index
	// the exponential mechanism drew.
	losses   []int64
	selected int
}

// laplaceDraw is one Laplace draw seen by a trace.
type laplaceDraw struct {
	scale, value float64
}

// Plan is the data-free part of a run: validated parameters, the noise
// scales and the exact privacy cost. Build it with PlanNoisyPower,
// PlanAdaptive, PlanAnalyzeGauss or Plan.
type Plan struct {
	Method string
	// D is the data dimension, K the number of components, P the number of
	// columns iterated (npm: K + Oversample; otherwise K).
	D, K, P int
	// Iters is the number of iterations (1 for gauss).
	Iters int
	// Cost is what the run spends; charge it before calling Run.
	Cost        accounting.Event
	Calibration Calibration
	Neighbour   accounting.Neighbour
	// Rho is the zCDP budget of the run under CalibZCDP, and its
	// ρ-equivalent μ*²/2 (rounded down) under CalibGDP, through which the
	// releases are scaled (0 under CalibPaper).
	Rho float64
	// Sensitivity is the ℓ2 sensitivity of each Gaussian release after
	// scaling rows to norm ≤ 1; for adaptive it is per unit of the threshold.
	Sensitivity float64
	// NoiseMultiplier is z = std/sensitivity of each Gaussian release.
	NoiseMultiplier float64
	// NoiseStd is the per-coordinate std of each Gaussian release, in units
	// of the scaled data; for adaptive it is per unit of the threshold θ̂_t.
	NoiseStd float64
	// SVTEps is the ε of each adaptive sparse-vector step.
	SVTEps float64
	// StepEps, StepDelta are the per-iteration (ε, δ) under CalibPaper for
	// adaptive; 0 otherwise.
	StepEps, StepDelta float64
	// RoundingExcess is the ℓ2 sensitivity added to Sensitivity for the
	// rounding of the float64 sums over rows (see sumExcess); for adaptive
	// it is per unit of the threshold. The noise is calibrated to
	// (Sensitivity + RoundingExcess)·(1 + 1e-9).
	RoundingExcess float64
	// Note explains the calibration in one line.
	Note string
	// CenterShare, CenterRho and CenterStd describe a centred run's
	// private mean (all 0 when uncentred): its share of the budget, its ρ
	// (Rho is the whole run's, the mean's included) and the std of each of
	// its d+1 Gaussian coordinates, in units of the scaled rows.
	CenterShare, CenterRho, CenterStd float64

	opt    Options // validated, defaults filled in
	sealed *Plan   // the plan as made; Run refuses a plan whose fields changed since

	// adaptive only: the Laplace scales of the sparse-vector step and the
	// Gaussian std at every grid threshold θ̂_k, all checked when planning.
	svtThresholdScale, svtQueryScale float64
	gridStds                         [gridTop + 1]float64

	// Candidates and SelectEps are set for gap="auto" only: one planned
	// run per κ guess and the ε of the exponential mechanism that selects
	// one (PlanAdaptiveAuto); Rho and Iters are then the totals.
	Candidates []Candidate
	SelectEps  float64
	cands      []*Plan
}

// seal records the plan as made, so that Run can refuse one whose exported
// fields were changed afterwards: the run must be exactly the one whose
// Cost was charged.
func (pl *Plan) seal() {
	c := *pl
	pl.sealed = &c
}

// edited reports whether an exported field of pl changed since planning.
// DeepEqual, not ==: Options holds a func (Progress), so a Plan is not
// comparable; public zeroes it, and DeepEqual compares the rest as ==
// would.
func (pl *Plan) edited() bool {
	return !reflect.DeepEqual(pl.public(), pl.sealed.public())
}

// public returns the exported fields of pl (the rest zeroed) for comparison.
func (pl *Plan) public() Plan {
	c := *pl
	c.opt, c.sealed = Options{}, nil
	return c
}

// Result is a private PCA release. Every field is a differentially private
// output or a public parameter.
type Result struct {
	// Components holds K orthonormal columns (d×K), the leading direction
	// first, each with its largest-magnitude entry positive.
	Components *mat.Dense
	// Values are DP estimates of the top-K eigenvalues of Σ aaᵀ over the
	// clipped rows, in the data's units (post-processing of the releases).
	Values []float64
	// Thresholds are the adaptive method's thresholds θ̂_t, one per
	// iteration, in units of the scaled data (outputs of the sparse-vector
	// steps); nil for other methods.
	Thresholds []float64
	Method     string
	Cost       accounting.Event
	// NoiseStd, NoiseMultiplier: see Plan.
	NoiseStd        float64
	NoiseMultiplier float64
	Iters           int
	P               int
	Calibration     string
	Neighbour       string
	Note            string
	// Gap is the κ guess of the run the exponential mechanism selected
	// under gap="auto" (a DP output); 0 otherwise.
	Gap float64
	// Center is the private mean the rows were centred by, in the data's
	// units (a DP output); nil for an uncentred run.
	Center []float64
	// CenterSums and CenterCount are the noisy (Σ s·a, n) that Center
	// was computed from, in units of the clip (rows scaled to norm ≤ 1),
	// released with it: the mean's interval needs both (CenterExcess).
	CenterSums  []float64
	CenterCount float64
	// TotalVariance is a DP estimate of the trace of the estimand (Σ aaᵀ
	// over the clipped, and if centred centred, rows), in the data's units:
	// the trace of the released noisy matrix (gauss). 0 when the method
	// releases no such estimate (npm, adaptive).
	TotalVariance float64
	// ExplainedVarianceRatio is Values[j]/TotalVariance, each component's
	// share of the private total variance estimate (post-processing of
	// the same release); nil when TotalVariance is not released or not
	// positive.
	ExplainedVarianceRatio []float64
}

// PlanMethod validates opt for the named method and dimension d and returns the
// plan of the run. It reads no data.
func PlanMethod(method string, opt Options, d int) (*Plan, error) {
	switch method {
	case MethodNPM:
		return PlanNoisyPower(opt, d)
	case MethodAdaptive:
		return PlanAdaptive(opt, d)
	case MethodGauss:
		return PlanAnalyzeGauss(opt, d)
	}
	return nil, fmt.Errorf("pca: unknown method %q: use one of %s", method, strings.Join(Methods, ", "))
}

// Run plans and runs the named method on data (one row per individual).
func Run(ctx context.Context, method string, data *mat.Dense, opt Options) (*Result, error) {
	switch method {
	case MethodNPM:
		return NoisyPower(ctx, data, opt)
	case MethodAdaptive:
		return Adaptive(ctx, data, opt)
	case MethodGauss:
		return AnalyzeGauss(ctx, data, opt)
	}
	return nil, fmt.Errorf("pca: unknown method %q: use one of %s", method, strings.Join(Methods, ", "))
}

// Bounds of the analyst's parameters, checked by every plan before
// anything is charged (project issue 10). Inside them no data set of 1 to
// MaxRows rows, whatever its finite or non-finite values, can make a run
// fail, panic or release a NaN or an infinity; outside them the plan fails
// with a fixed message naming the parameter and the bound.
//
//   - Iters ∈ [0, MaxIters] (0: the method's default, which must also fall
//     in 1..MaxIters). Every iteration is a pass over all rows, so the
//     bound caps the running time per row; the noise multiplier grows like
//     √iters, so far fewer are ever useful (the defaults are ⌈20·ln d⌉ for
//     npm and about 40 for adaptive).
//   - Eps ∈ [MinEps, MaxEps] = [1e-6, 1e6] (accounting refuses ε > 1e6)
//     and Delta ∈ [MinDelta, 1) = [1e-100, 1): inside them ρ* and μ* are
//     finite and > 0 (ρ* ≥ 3.6e-16), so every multiplier is finite; the
//     lattice check (multiplier·√m ≤ 2^37) then refuses the budgets too
//     small for the shape, from d, k and iters alone.
//   - Clip ∈ [MinClip, MaxClip] = [1e-100, 1e100] (0: 1): every finite row
//     scales to norm ≤ 1 without overflow (1/Clip ≤ 1e100), and the
//     eigenvalue estimates, λ̂·Clip² with λ̂ ≤ MaxRows plus noise (far below
//     1e100), stay finite.
//   - K ∈ [1, d], K + Oversample ≤ d, and the iterate d×p (npm) holds at
//     most MaxIterateEntries = 2^26 entries; gauss forms d×d matrices and
//     needs d ≤ MaxGaussDim = 4096 (128 MiB each): larger shapes would run
//     out of memory after the charge.
//   - PublicN ∈ [0, MaxRows]; Gap ∈ [0, 1]; Beta ∈ (0, 1); Workers ≥ 0.
const (
	MaxIters          = planning.MaxIters
	MinEps            = planning.MinEps
	MaxEps            = planning.MaxEps
	MinDelta          = planning.MinDelta
	MinClip           = planning.MinClip
	MaxClip           = planning.MaxClip
	MaxGaussDim       = 4096
	MaxIterateEntries = 1 << 26
)

// maxIters is MaxIters (the name the plans use).
const maxIters = MaxIters

// checkTarget checks the privacy target: planning.Target (eps finite > 0,
// 0 < delta < 1) and the bounds above. The error carries no method prefix.
func checkTarget(eps, delta float64) error {
	if err := planning.Target(eps, delta); err != nil {
		return err
	}
	if !(eps >= MinEps && eps <= MaxEps) {
		return fmt.Errorf("eps=%v: use %g ≤ eps ≤ %g", eps, float64(MinEps), float64(MaxEps))
	}
	if !(delta >= MinDelta) {
		return fmt.Errorf("delta=%v: use %g ≤ delta < 1", delta, float64(MinDelta))
	}
	return nil
}

// planStd returns the Gaussian std for an ℓ2 sensitivity sens over m
// coordinates with multiplier mult, or an error with a fixed text instead
// of the sampler's panic: plans call it, never noise.GaussianScale, so that
// nothing panics before (or after) the charge.
func planStd(method string, sens, mult float64, m int) (float64, error) {
	std, err := noise.GaussianScaleChecked(sens, mult, m)
	if err != nil {
		return 0, fmt.Errorf("pca %s: the noise cannot be represented: %w", method, err)
	}
	return std, nil
}

// validateCommon checks the options every method shares and fills in
// defaults. It returns a copy.
func validateCommon(method string, opt Options, d int) (Options, error) {
	fail := func(format string, a ...any) (Options, error) {
		return opt, fmt.Errorf("pca %s: "+format, append([]any{method}, a...)...)
	}
	var err error
	if opt.K, err = planning.Components(opt.K, d); err != nil {
		return fail("%v", err)
	}
	if err := checkTarget(opt.Eps, opt.Delta); err != nil {
		return fail("%v", err)
	}
	if opt.Calibration != CalibZCDP && opt.Calibration != CalibPaper && opt.Calibration != CalibGDP {
		return fail("invalid calibration %d: use CalibZCDP, CalibPaper or CalibGDP", int(opt.Calibration))
	}
	if opt.Neighbour != accounting.ReplaceOne && opt.Neighbour != accounting.AddRemove {
		return fail("invalid neighbour relation %d: use accounting.ReplaceOne or accounting.AddRemove", int(opt.Neighbour))
	}
	if opt.Iters < 0 || opt.Iters > maxIters {
		return fail("iters=%d: use 0 for the default or 1..%d", opt.Iters, maxIters)
	}
	if opt.Oversample < 0 || opt.Oversample > d-opt.K {
		return fail("oversample=%d: use 0 ≤ oversample ≤ d − k = %d", opt.Oversample, d-opt.K)
	}
	if opt.Clip == 0 {
		opt.Clip = 1
	}
	if !(opt.Clip >= MinClip && opt.Clip <= MaxClip) {
		return fail("clip=%v: the row-norm bound must be a number in [%g, %g]", opt.Clip, float64(MinClip), float64(MaxClip))
	}
	if opt.PublicN < 0 || opt.PublicN > MaxRows {
		return fail("public row count %d must be in 0..2^30", opt.PublicN)
	}
	if opt.Gap < 0 || opt.Gap > 1 || math.IsNaN(opt.Gap) {
		return fail("gap=%v: the assumed relative eigengap must be in (0, 1] (0 for the default)", opt.Gap)
	}
	if opt.AutoGap && method != MethodAdaptive {
		return fail("gap=\"auto\" applies to the adaptive method only")
	}
	if opt.AutoGap && opt.Gap != 0 {
		return fail("gap=\"auto\" selects the gap privately: leave the numeric gap (%v) at 0", opt.Gap)
	}
	if opt.Beta == 0 {
		opt.Beta = 0.05
	}
	if !(opt.Beta > 0 && opt.Beta < 1) {
		return fail("beta=%v: the failure probability must be in (0, 1)", opt.Beta)
	}
	if opt.Workers < 0 {
		return fail("workers=%d must be ≥ 0 (0 uses every core)", opt.Workers)
	}
	return validateCenter(method, opt)
}

// checkSource validates a data source against the plan: its public column
// count, and the MaxRows limit if the source knows its row count
// (rows.RandomAccess); other sources are checked while streaming (the
// passes fail with tooManyRows). Only public facts enter the messages.
func checkSource(method string, src rows.Source, d int) error {
	if src == nil {
		return fmt.Errorf("pca %s: no data", method)
	}
	if c := src.Dim(); c != d {
		return fmt.Errorf("pca %s: the data have %d columns but the plan was made for d=%d", method, c, d)
	}
	if ra, ok := src.(rows.RandomAccess); ok && ra.NumRows() > MaxRows {
		return tooManyRows(method)
	}
	return nil
}

// tooManyRows is the error of a run on more than MaxRows rows. The
// registry refuses such data sets, so it is reached only by bypassing it;
// the message names the public limit, not n.
func tooManyRows(method string) error {
	return fmt.Errorf("pca %s: the data have more than pca.MaxRows = 2^30 rows, the most the privacy accounting covers: split the data set (the data registry refuses larger files)", method)
}

// passError is the run's error for a pass over the data that failed
// before iteration iter: cancellation as cancelled, the row limit as
// tooManyRows, otherwise the source's own error (the data layer's, which
// names no private value) with the method and iteration, both public.
func passError(method string, ctx context.Context, iter int, err error) error {
	switch {
	case ctx.Err() != nil:
		return cancelled(method, ctx, iter)
	case errors.Is(err, linalg.ErrTooManyRows):
		return tooManyRows(method)
	}
	return fmt.Errorf("pca %s: reading the data in iteration %d: %w", method, iter, err)
}

// event labels a cost event with the mechanism name.
func event(method string, e accounting.Event) accounting.Event {
	e.Mechanism = "pca/" + method
	return e
}

// source wraps the sampler with the test-only noise scale and trace.
type source struct {
	s     *noise.Sampler
	scale float64
	tr    *trace
}

func newSource(opt Options) source {
	s := opt.Noise
	if s == nil {
		s = noise.New()
	}
	src := source{s: s, scale: 1}
	if opt.knob != nil {
		src.scale, src.tr = opt.knob.noiseScale, opt.knob.trace
	}
	return src
}

func (s source) gaussianMatrix(m *mat.Dense, sigma float64) {
	if sigma*s.scale > 0 {
		s.s.AddGaussianMatrix(m, sigma*s.scale)
	}
}

// frobeniusGaussian releases the symmetric matrix m through its Frobenius
// coordinates v(M) = (M_ii, √2·M_ij for i < j), an isometry from
// (symmetric matrices, ‖·‖_F) to ℓ2: N(0, σ²) is added to each of the
// d(d+1)/2 entries of v, and the result is mapped back (post-processing),
// so the diagonal gets noise σ and each off-diagonal pair σ/√2. The
// Gaussian mechanism on v needs the ℓ2 sensitivity of v(C), which is
// ‖D‖_F (gaussSensitivity) plus the rounding of the extra product √2·C_ij
// (PlanAnalyzeGauss charges one more rounding). The map is applied with or
// without noise (a test-only zero scale), so tests see the released
// coordinates.
func (s source) frobeniusGaussian(m *mat.Dense, sigma float64) {
	d, _ := m.Dims()
	raw := m.RawMatrix()
	v := make([]float64, 0, d*(d+1)/2)
	for i := range d {
		v = append(v, raw.Data[i*raw.Stride+i])
		for j := i + 1; j < d; j++ {
			v = append(v, math.Sqrt2*raw.Data[i*raw.Stride+j])
		}
	}
	s.gaussianVec(v, sigma)
	k := 0
	for i := range d {
		raw.Data[i*raw.Stride+i] = v[k]
		k++
		for j := i + 1; j < d; j++ {
			x := v[k] / math.Sqrt2
			raw.Data[i*raw.Stride+j], raw.Data[j*raw.Stride+i] = x, x
			k++
		}
	}
}

func (s source) gaussianVec(x []float64, sigma float64) {
	if sigma*s.scale > 0 {
		s.s.AddGaussian(x, sigma*s.scale)
	}
}

func (s source) laplace(b float64) float64 {
	z := 0.0
	if b*s.scale > 0 {
		z = s.s.Laplace(b * s.scale)
	}
	if s.tr != nil {
		s.tr.laplace = append(s.tr.laplace, laplaceDraw{scale: b * s.scale, value: z})
	}
	return z
}

// stdNormal is public randomness (starting points); never scaled.
func (s source) stdNormal() float64 { return s.s.StdNormal() }

// cancelled wraps a context error with the method and iteration.
func cancelled(method string, ctx context.Context, iter int) error {
	return fmt.Errorf("pca %s: stopped before iteration %d: %w", method, iter, ctx.Err())
}

// roundingSlack inflates sensitivities to absorb the rounding of each row's
// own contribution: row norms computed as ≤ 1 may exceed 1 by a few ulps,
// scores sit within a few ulps of the contribution norms (spec §6
// "Filtering and counting must use one predicate"), and the iterate X of
// npm, a computed Householder Q factor, has ‖X‖₂ within O(d·p·u) of 1. All
// of these are relative errors below 1e-12 for any realistic d and p.
//
// It does NOT cover the rounding of the float64 sums over rows
// (Casacuberta et al., arXiv 2207.10635): changing one row changes the
// rounding of every later partial sum, so for a running sum the computed
// sums of neighbours can differ by up to about Δ + 2n²·2^-53. That part is
// bounded by blocked pairwise accumulation (rowpass.Pairwise) and charged
// additively by sumExcess; see the package doc.
const roundingSlack = 1 + 1e-9

// MaxRows is the largest number of rows a run accepts, 2^30. The rounding
// error of the sums over rows is charged for every n ≤ MaxRows (sumExcess),
// so a larger data set would void the privacy guarantee. The data
// registry refuses larger files when they are added, which keeps the check
// independent of any private data; a run on more rows is a programming
// error and fails: before reading any value when the data know their row
// count (a matrix, a rows.RandomAccess source), otherwise as soon as a pass
// has streamed more than MaxRows rows.
const MaxRows = rowpass.MaxRows

// Rounding budgets: the most roundings any term of a released sum passes
// through, relative to its reference value (see sumExcess).
const (
	// sumRoundings is the block sum (BlockRows−1 additions) and the
	// pairwise combination of blocks (TreeDepth additions).
	sumRoundings = linalg.SumRoundings
	// gaussRoundings: s·a_j and s·a_k, their product, then sumRoundings.
	gaussRoundings = linalg.GramRoundings
	// apmRoundings: the product c·sa_k in the row update, sumRoundings, and
	// the pairwise sum over at most gridTop+1 buckets.
	apmRoundings = 1 + sumRoundings + bucketDepth
)

// npmRoundings is the rounding budget of one npm product C·X on d columns
// (linalg.CovTimesRoundings): on the single-pass path, the dot product
// aᵀx_j, s², the weight and its product with a_k, then sumRoundings; on
// the Gram path, the Gram entries then the d-term products Ĉ·X. Both come
// to d + 3 + sumRoundings.
func npmRoundings(d int) int { return linalg.CovTimesRoundings(d) }

// sumExcess returns linalg.Excess(h, r) = 2·γ_h·MaxRows·r, rounded up: the
// ℓ2 distance, beyond Δ, between the computed releases of two neighbouring
// data sets, when every term of every entry passes through at most h
// roundings and each row's entrywise majorant has ℓ2 norm ≤ r (the
// argument is at linalg.Excess).
//
// Majorants (rows scaled to ‖s·a‖ ≤ 1): gauss, t = (s·a)(s·a)ᵀ on the
// upper triangle, M = |s·a||s·a|ᵀ, r = 1; npm, t = s²·a(aᵀX),
// M = s²|a|(|a|ᵀ|X|) with ‖M‖_F ≤ ‖X‖_F = √p; adaptive, t = c·sa with
// sa = fl(s·a) and c = ⟨sa, x⟩ the computed weight (the term that the
// filter bounds: ‖c·sa‖ ≤ θ for a row kept at threshold θ), M = |t|, r = θ
// (so per unit of θ, r = 1).
func sumExcess(h int, r float64) float64 { return linalg.Excess(h, r) }

// errNoConvergence is returned when a dense factorization fails, which
// happens only for non-finite inputs; rows are sanitized first, so it
// signals a bug rather than bad data.
var errNoConvergence = linalg.ErrNoConvergence

// fmtG formats a float compactly for notes.
func fmtG(v float64) string { return fmt.Sprintf("%.3g", v) }

// checkScales refuses budgets so small that the noise lattice cannot
// represent the noise (noise.GaussianScale and noise.LaplaceScale accept
// multiplier·√m and 1/ε up to 2^38); the caller should spend more budget
// per release or run fewer iterations. svtEps 0 means no Laplace step.
func checkScales(method string, multiplier float64, m int, svtEps float64) error {
	const limit = 0x1p37 // keep a factor 2 from the samplers' hard limit
	if math.IsNaN(multiplier) || multiplier <= 0 || math.IsInf(multiplier, 0) {
		return fmt.Errorf("pca %s: invalid noise multiplier %v for eps and delta", method, multiplier)
	}
	if multiplier*math.Sqrt(float64(m)) > limit || (svtEps > 0 && 4/svtEps > limit) || math.IsNaN(svtEps) {
		return fmt.Errorf("pca %s: the privacy budget per iteration is too small to represent the noise (noise multiplier %.3g): raise eps or lower iters", method, multiplier)
	}
	return nil
}

// Run executes the plan on data (one row per individual, D columns): it
// is RunSource over rows.FromDense(data).
func (pl *Plan) Run(ctx context.Context, data *mat.Dense) (*Result, error) {
	if data == nil {
		if err := pl.check(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("pca %s: no data matrix", pl.Method)
	}
	return pl.RunSource(ctx, rows.FromDense(data))
}

// RunSource executes the plan on the rows of src (one row per individual,
// D columns), one Scan per pass over the data, with memory bounded by a
// chunk of rows whatever their number. Use it after charging pl.Cost: the
// run is exactly the planned one. A Plan's fields are read-only: RunSource
// refuses a plan whose fields were changed. The number of rows is private:
// it enters no message, and more than MaxRows rows fail the run.
func (pl *Plan) RunSource(ctx context.Context, src rows.Source) (*Result, error) {
	if err := pl.check(); err != nil {
		return nil, err
	}
	if err := checkSource(pl.Method, src, pl.D); err != nil {
		return nil, err
	}
	src, c, err := pl.centred(ctx, src)
	if err != nil {
		return nil, err
	}
	var res *Result
	switch pl.Method {
	case MethodNPM:
		res, err = pl.runNPM(ctx, src)
	case MethodAdaptive:
		if pl.cands != nil {
			res, err = pl.runAdaptiveAuto(ctx, src)
		} else {
			res, err = pl.runAdaptive(ctx, src)
		}
	case MethodGauss:
		res, err = pl.runGauss(ctx, src)
	default:
		return nil, fmt.Errorf("pca: unknown method %q", pl.Method)
	}
	if err != nil {
		return nil, err
	}
	c.set(res)
	return res, nil
}

// check refuses a plan that PlanMethod did not make, or whose fields were
// changed since.
func (pl *Plan) check() error {
	if pl == nil || pl.D == 0 || pl.sealed == nil {
		return errors.New("pca: Run needs a plan from PlanNoisyPower, PlanAdaptive, PlanAnalyzeGauss or PlanMethod")
	}
	if pl.edited() {
		return fmt.Errorf("pca %s: the plan's fields were changed after planning, so the run would not be the one its Cost describes: make a new plan with PlanMethod instead of editing one", pl.Method)
	}
	return nil
}
