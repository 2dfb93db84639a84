package dppca

import (
	"context"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/planning"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Calibration says how a target (ε, δ) becomes noise.
type Calibration int

const (
	// CalibPaper (default) uses the paper's mechanisms and composition
	// theorems: the classical Gaussian mechanism (ε < 1) and advanced
	// composition of the coordinate histograms (Lemma B.4, ε ≤ 0.9).
	CalibPaper Calibration = iota
	// CalibAnalytic is beyond the paper: the same budget split, the
	// coordinate histograms composed in approximate zCDP and Gaussian noise
	// calibrated exactly with Gaussian DP. Valid for every ε.
	CalibAnalytic
)

// String returns "paper" or "analytic".
func (c Calibration) String() string {
	switch c {
	case CalibPaper:
		return "paper"
	case CalibAnalytic:
		return "analytic"
	}
	return fmt.Sprintf("Calibration(%d)", int(c))
}

// ParseCalibration reads "paper" or "analytic" (case-insensitive; "" is
// paper).
func ParseCalibration(s string) (Calibration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "paper", "":
		return CalibPaper, nil
	case "analytic", "zcdp":
		return CalibAnalytic, nil
	}
	return 0, fmt.Errorf("dppca: unknown calibration %q: use \"paper\" or \"analytic\"", s)
}

// Options configures DP-PCA, private Oja and Oja. Only Eps and Delta are
// required for the private runs; every other zero value is a default. All
// fields are public parameters: none may be computed from the private data
// without privacy (spec §10.2).
type Options struct {
	// Eps and Delta are the target privacy parameters of the whole run.
	Eps, Delta float64
	// Calibration: CalibPaper (default) or CalibAnalytic.
	Calibration Calibration
	// Neighbour must be accounting.ReplaceOne (the zero value); see the
	// package doc.
	Neighbour accounting.Neighbour

	// Steps is T, the number of disjoint minibatches (default 10, spec §4);
	// the batch size is B = ⌊records/T⌋ and leftover records are unused.
	Steps int
	// Progress, if set, is called after each minibatch step of DP-PCA and
	// private Oja with (t, T) for t = 1..T, in order and once each, whatever
	// the data (a step DP-PCA skips is reported too). It runs on the
	// goroutine of the run and should return quickly.
	Progress func(step, total int)
	// PublicN is a public row count (declared by the data owner, or a DP
	// count), never the private n. When set, planning checks that the run
	// is feasible and fails with the n needed otherwise. 0 skips the check.
	PublicN int

	// Centred declares that the rows have mean zero (public knowledge);
	// Mean gives a public mean to subtract. With neither, records are pair
	// differences (spec §0) and there are ⌊n/2⌋ of them.
	Centred bool
	Mean    []float64
	// KeepOrder skips the data-independent shuffle of the rows (use it
	// only when the row order is already random).
	KeepOrder bool

	// Gap is a public hint of λ1 − λ2 for the learning rate
	// η_t = H/(Gap·(Xi + t)). DP-PCA without a hint uses √Λ̂_t, its own DP
	// estimate of the gradient spread, in place of Gap; Oja and private Oja
	// need it.
	Gap float64
	// H and Xi shape the learning rate: defaults H = ln n, Xi = 1 for the
	// minibatch methods (spec §4) and H = 2, Xi = 10 for Oja with one
	// sample per step (spec §2).
	H, Xi float64

	// Zeta is the failure probability ζ (default 0.01).
	Zeta float64
	// TailK and TailA are the tail parameters K and a of Assumption A.4
	// (defaults 0.1 and 1; the theory value for Gaussian data is K = 4, which
	// swamps the signal with noise, spec §6). K is DP-PCA's main accuracy
	// lever once n is large enough: Algorithm 5's noise is proportional to
	// it, and a smaller K truncates more gradient coordinates (bias). At
	// d = 10, n = 1e6, ε = 0.8 on Gaussian data, K = 0.07 lowered the median
	// sin from 0.13 to 0.09 while truncating 5e-4 of the entries instead of
	// 7e-5; the default stays the spec's choice.
	TailK, TailA float64
	// Groups overrides k, the number of groups of Algorithm 4. The default
	// is k = ⌈2 + 4·ln(1/(δ₄ζ₄))/ε₄⌉ (spec §5); PaperGroups uses C1 = 32.
	Groups      int
	PaperGroups bool
	// QuarterBins uses the paper's bins [2^(i/4), 2^((i+1)/4)) in
	// Algorithm 4 instead of the default octaves [2^i, 2^(i+1)).
	QuarterBins bool
	// MinGroupSize is the smallest group size b the feasibility check
	// accepts (default 4d, spec §5).
	MinGroupSize int
	// LambdaFactor multiplies Λ̂_t before Algorithm 5 (default 1; the paper
	// writes 2, but its Λ̂ already estimates 2λ1²‖H_u‖, spec §5 erratum).
	LambdaFactor float64
	// LambdaMin floors Λ̂_t when Algorithm 4 returns the bin [0, 0]
	// (default 1e-12, spec §4).
	LambdaMin float64
	// PaperSplit gives Algorithms 4 and 5 (ε/2, δ/2) each, as the paper's
	// Algorithm 3 does. By default each gets the whole (ε, δ): they read
	// disjoint halves of each minibatch, so parallel composition covers
	// them (spec §4 "Optional"; docs/mechanisms.md has the argument).
	PaperSplit bool

	// Beta is private Oja's public bound on ‖A_i w‖ (the clip threshold of
	// Eq. 7); required by PrivateOja.
	Beta float64

	// Workers bounds the goroutines of each pass (0: GOMAXPROCS).
	Workers int
	// Noise is the noise source; nil means noise.New(). Seeded samplers are
	// for tests and benchmarks on public data only.
	Noise *noise.Sampler

	knob *testKnob
}

// Method names.
const (
	MethodDPPCA      = "dppca"
	MethodPrivateOja = "oja"
	MethodOja        = "oja-nonprivate"
)

// Result is a PCA release. Every field is a DP output or a public parameter.
type Result struct {
	// Components is the estimate of the top eigenvector (d×1, unit norm,
	// largest-magnitude entry positive).
	Components *mat.Dense
	Method     string
	// Cost is what the run spent (zero for the non-private Oja).
	Cost accounting.Event
	// Steps and Batch are T and B; Records is the number of records
	// (rows, or pairs of rows when centring by pair differences).
	Steps, Batch, Records int
	// Eigenvalues are Algorithm 4's Λ̂_t per step, NaN where it returned ⊥
	// (DP-PCA only).
	Eigenvalues []float64
	// Skipped counts the steps skipped because Algorithm 4 returned ⊥.
	Skipped int
	// NoiseStd is the Gaussian std added to the mean gradient at each step
	// (0 for a skipped step).
	NoiseStd []float64
	// Calibration and Note explain the accounting.
	Calibration string
	Note        string
}

const (
	defaultSteps  = 10
	defaultZeta   = 0.01
	defaultTailK  = 0.1
	defaultTailA  = 1
	defaultLamMin = 1e-12
)

// Bounds of the analyst's parameters, checked by every plan before anything
// is charged (project issue 10). Inside them no data set of 1 to MaxRows
// rows, whatever its values, can make a run fail, panic or release a NaN
// or an infinity; outside them the plan fails with a fixed message naming
// the parameter.
//
//   - Steps ∈ [0, MaxSteps] = [0, 10000] (0: 10): the minibatches are
//     disjoint, so the run is one pass whatever T, but the padding a small
//     data set gets grows with T (Plan.MinRows).
//   - Eps ∈ [MinEps, MaxEps] = [1e-6, 1e6] (accounting refuses ε > 1e6),
//     Delta ∈ [MinDelta, 1) = [1e-100, 1): every multiplier is then finite;
//     the lattice and group-count checks refuse the budgets too small for
//     the shape.
//   - TailK ∈ [MinTailK, 1e6] = [1e-6, 1e6], TailA ∈ (0, 8], LambdaMin ∈
//     [MinLambda, MaxLambda] = [1e-300, 1e300], LambdaFactor ∈
//     [1e-100, 1e100]: Algorithm 5's truncation radius r = 3K√Λ̂·ln^a(m·d/ζ)
//     then stays in a range whose noise std the plan checks against the
//     samplers' range for every minibatch size m ≤ MaxRows (Λ̂ is clamped
//     to [LambdaMin, MaxLambda], a public rule on a DP value), and the
//     truncated sums stay finite.
//   - Zeta ∈ [MinZeta, 1) = [1e-100, 1); Groups ∈ [0, MaxGroups] = [0, 1e9];
//     MinGroupSize ∈ [0, MaxRows]; PublicN ∈ [0, MaxRows].
//   - Beta ∈ [0, MaxBeta] with Beta ≥ MinBeta when given: [1e-100, 1e100]
//     (private Oja's clipped sum of ≤ 2^30 terms stays finite, and its noise
//     std inside the samplers' range); Gap, H, Xi finite and ≥ 0 (a step
//     whose learning rate is not finite is skipped, never fails).
const (
	MaxSteps     = 10000
	MinEps       = planning.MinEps
	MaxEps       = planning.MaxEps
	MinDelta     = planning.MinDelta
	MinTailK     = 1e-6
	MinLambda    = 1e-300
	MaxLambda    = 1e300
	MinZeta      = 1e-100
	MaxGroups    = 1_000_000_000
	MinBeta      = 1e-100
	MaxBeta      = 1e100
	maxSteps     = MaxSteps
	maxLamFactor = 1e100
)

// validate checks the options shared by every method and fills defaults;
// private reports whether (ε, δ) are needed.
func (o Options) validate(method string, d int, private bool) (Options, error) {
	fail := func(format string, a ...any) (Options, error) {
		return o, fmt.Errorf("dppca %s: "+format, append([]any{method}, a...)...)
	}
	if d < 1 {
		return fail("the data need at least one column, got d=%d", d)
	}
	if private {
		if err := planning.Target(o.Eps, o.Delta); err != nil {
			return fail("%v", err)
		}
		if !(o.Eps >= MinEps && o.Eps <= MaxEps) {
			return fail("eps=%v: use %g ≤ eps ≤ %g", o.Eps, float64(MinEps), float64(MaxEps))
		}
		if !(o.Delta >= MinDelta) {
			return fail("delta=%v: use %g ≤ delta < 1", o.Delta, float64(MinDelta))
		}
		if o.Calibration != CalibPaper && o.Calibration != CalibAnalytic {
			return fail("invalid calibration %d: use CalibPaper or CalibAnalytic", int(o.Calibration))
		}
		if o.Neighbour != accounting.ReplaceOne {
			return fail("neighbour relation %s is not supported: DP-PCA partitions rows by position, which is private only under replace-one with n public (spec §1); use accounting.ReplaceOne", o.Neighbour)
		}
	}
	if o.Steps == 0 {
		o.Steps = defaultSteps
	}
	if o.Steps < 1 || o.Steps > maxSteps {
		return fail("steps=%d: use 0 for the default (%d) or 1..%d", o.Steps, defaultSteps, maxSteps)
	}
	if o.PublicN < 0 || o.PublicN > MaxRows {
		return fail("public row count %d must be in 0..2^30", o.PublicN)
	}
	if o.Mean != nil {
		if o.Centred {
			return fail("give either Centred or a public Mean, not both")
		}
		if len(o.Mean) != d {
			return fail("the public mean has %d entries but the data have d=%d columns", len(o.Mean), d)
		}
		if !finite(o.Mean) {
			return fail("the public mean has a non-finite entry")
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"gap", o.Gap}, {"h", o.H}, {"xi", o.Xi}, {"tail K", o.TailK}, {"tail a", o.TailA},
		{"lambda factor", o.LambdaFactor}, {"lambda min", o.LambdaMin}, {"beta", o.Beta}} {
		if !(p.v >= 0) || math.IsInf(p.v, 0) {
			return fail("%s=%v must be a finite number ≥ 0 (0 for the default)", p.name, p.v)
		}
	}
	if o.Zeta == 0 {
		o.Zeta = defaultZeta
	}
	if !(o.Zeta >= MinZeta && o.Zeta < 1) {
		return fail("zeta=%v: the failure probability must be in [%g, 1)", o.Zeta, float64(MinZeta))
	}
	if o.TailK == 0 {
		o.TailK = defaultTailK
	}
	if o.TailA == 0 {
		o.TailA = defaultTailA
	}
	if o.TailK < MinTailK || o.TailK > 1e6 || o.TailA > 8 {
		return fail("tail K=%v, a=%v: use 1e-06 ≤ K ≤ 1e6 and a ≤ 8 (K = 4, a = 1 is the theory value for Gaussian data)", o.TailK, o.TailA)
	}
	if o.LambdaFactor == 0 {
		o.LambdaFactor = 1
	}
	if !(o.LambdaFactor >= 1/maxLamFactor && o.LambdaFactor <= maxLamFactor) {
		return fail("lambda factor=%v: use 1e-100 ≤ factor ≤ 1e100 (0 for the default 1)", o.LambdaFactor)
	}
	if o.LambdaMin == 0 {
		o.LambdaMin = defaultLamMin
	}
	if !(o.LambdaMin >= MinLambda && o.LambdaMin <= MaxLambda) {
		return fail("lambda min=%v: use %g ≤ lambda min ≤ %g (0 for the default 1e-12)", o.LambdaMin, float64(MinLambda), float64(MaxLambda))
	}
	if o.Beta != 0 && !(o.Beta >= MinBeta && o.Beta <= MaxBeta) {
		return fail("beta=%v: the gradient bound must be in [%g, %g]", o.Beta, float64(MinBeta), float64(MaxBeta))
	}
	if o.Groups < 0 || o.MinGroupSize < 0 || o.Workers < 0 {
		return fail("groups, min group size and workers must be ≥ 0 (0 for the default)")
	}
	if o.Groups > MaxGroups || o.MinGroupSize > MaxRows {
		return fail("groups=%d, min group size=%d: use at most %d groups and groups of at most 2^30 records", o.Groups, o.MinGroupSize, MaxGroups)
	}
	if o.MinGroupSize == 0 {
		o.MinGroupSize = 4 * d
	}
	return o, nil
}

// records returns the number of records n rows give under the centring
// rule.
func (o *Options) records(n int) int {
	if o.Centred || o.Mean != nil {
		return n
	}
	return n / 2
}

// eta returns the learning rate of step t (1-based) given the data-free
// schedule and, for DP-PCA without a gap hint, the step's DP scale.
func (o *Options) eta(t int, scale float64) float64 {
	gap := o.Gap
	if gap == 0 {
		gap = scale
	}
	return o.H / (gap * (o.Xi + float64(t)))
}

// minibatchRate fills the learning-rate defaults of the minibatch methods
// (spec §4): H = ln(records), Xi = 1. The record count is public under
// replace-one.
func (o *Options) minibatchRate(records int) {
	if o.H == 0 {
		o.H = math.Log(float64(records))
	}
	if o.Xi == 0 {
		o.Xi = 1
	}
}

// fixSign flips w so that its largest-magnitude entry is positive.
func fixSign(w []float64) {
	best, bi := 0.0, 0
	for i, v := range w {
		if v*v > best {
			best, bi = v*v, i
		}
	}
	if w[bi] < 0 {
		for i := range w {
			w[i] = -w[i]
		}
	}
}

func fmtG(v float64) string { return fmt.Sprintf("%.3g", v) }

// dataRows checks src against the plan (d columns) and returns its rows by
// position: src itself when it implements rows.RandomAccess, else its rows
// collected into memory (the shuffle needs positions). Data with no rows
// become one zero row. Only public facts enter the messages: the column
// counts (the schema) and the public limit MaxRows; the row count, known
// only after NumRows, enters no message.
func dataRows(ctx context.Context, method string, src rows.Source, d int) (rows.RandomAccess, error) {
	if src == nil {
		return nil, fmt.Errorf("dppca %s: no data source", method)
	}
	// An empty matrix has no width (gonum has no 0×d matrix): it is the
	// zero-row data set of any width.
	if m, ok := src.(*rows.Dense); !ok || m.NumRows() > 0 {
		if c := src.Dim(); c != d {
			return nil, fmt.Errorf("dppca %s: the data have %d columns but the plan was made for d=%d", method, c, d)
		}
	}
	ra, ok := src.(rows.RandomAccess)
	if !ok {
		c, err := rows.Collect(ctx, src)
		if err != nil {
			return nil, fmt.Errorf("dppca %s: reading the data: %w", method, err)
		}
		ra = c
	}
	if ra.NumRows() > MaxRows {
		return nil, errTooManyRows(method)
	}
	if ra.NumRows() == 0 {
		// No rows at all: one zero row, padded like any small data set.
		ra = rows.FromDense(mat.NewDense(1, d, nil))
	}
	return ra, nil
}

// errTooManyRows refuses data beyond MaxRows. The registry refuses such
// data sets, so only a caller bypassing it gets here; the message names
// the public limit, not n.
func errTooManyRows(method string) error {
	return fmt.Errorf("dppca %s: the data have more than dppca.MaxRows = 2^30 rows, the most the privacy accounting covers: split the data set (the data registry refuses larger files)", method)
}

// recordsCopy validates the records g of a standalone Algorithm 4 or 5
// call (name labels errors) and returns the validated options and a
// row-major copy of g with non-finite rows replaced by zero.
//
// TopEigenvalue and Mean stay on matrices: their input is a minibatch of
// derived records (gradients), which a run computes into memory anyway,
// not a data set read from a rows.Source.
func recordsCopy(name string, g *mat.Dense, opt Options) (flat []float64, m, d int, o Options, err error) {
	if g == nil {
		return nil, 0, 0, o, fmt.Errorf("dppca %s: no data matrix", name)
	}
	m, d = g.Dims()
	if o, err = opt.validate(name, d, true); err != nil {
		return nil, 0, 0, o, err
	}
	if m > MaxRows {
		return nil, 0, 0, o, errTooManyRows(name)
	}
	flat = mat.DenseCopyOf(g).RawMatrix().Data
	for i := range m {
		if row := flat[i*d : (i+1)*d]; !finite(row) {
			clear(row)
		}
	}
	return flat, m, d, o, nil
}
