package release

// Error bars: every tabular release carries the public description of
// the noise it was drawn with (Plan.Params["error"], an ErrorModel), from
// which a confidence interval at any level follows. Everything here is a
// function of the plan's public noise scales and of the released values:
// post-processing, never a read of private data.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// ErrorParam is the key of Plan.Params (and so of a receipt's Params)
// that holds a release's ErrorModel.
const ErrorParam = "error"

// CenterErrorParam is the key of a centred private_pca plan's Params
// that holds its mean's ErrorModel (centerModel); ErrorParam holds its
// eigenvalues'.
const CenterErrorParam = "center_error"

// DefaultLevel is the level of the intervals shown by default and stored
// with every release.
const DefaultLevel = 0.95

// Kinds of ErrorModel.
const (
	ErrLaplace     = "laplace"     // value + discrete Laplace noise of scale Scale
	ErrGaussian    = "gaussian"    // value + discrete Gaussian noise of std Scale
	ErrRatio       = "ratio"       // mean = noisy sum / max(noisy count, 1), both Noise-distributed
	ErrExponential = "exponential" // the exponential mechanism over a grid: a rank bound
	ErrBootstrap   = "bootstrap"   // a linear fit's coefficient intervals by the parametric bootstrap (Scale: Xᵀy's σ, CountScale: XᵀX's)
	ErrSpectral    = "spectral"    // Analyze Gauss: every eigenvalue at once (Weyl and a matrix Gaussian tail bound), and the trace; Scale per coordinate, Dim d
	ErrFitted      = "fitted"      // consistent=true: each value post-processed from a least-squares fit of Parts parts to their noisy total, all Noise-distributed of Scale
	ErrLastStep    = "last_step"   // npm, adaptive: every eigenvalue estimate at once against its last power step's noise-free value (Weyl, a bound on a Dim×Cols Gaussian's norm)
	ErrSelection   = "selection"   // private_classify_jl pool: the exponential mechanism's score gap over Candidates (Scale = 2/ε′, in users)
	ErrNone        = "none"        // the release has no sound interval from public parameters: Why says why
)

// ErrorModel is the public description of a release's noise, stored in
// its receipt's Params under ErrorParam. Its 95 % figures are stored too,
// so a receipt states them in its JSON.
type ErrorModel struct {
	// Kind is ErrLaplace, ErrGaussian, ErrRatio or ErrExponential.
	Kind string `json:"kind"`
	// Noise is the distribution of a ratio's parts (ErrLaplace or
	// ErrGaussian).
	Noise string `json:"noise,omitempty"`
	// Scale is the Laplace b or the Gaussian σ of each value (of each sum
	// for a ratio); CountScale that of each count of a ratio.
	Scale      float64 `json:"scale,omitempty"`
	CountScale float64 `json:"count_scale,omitempty"`
	// Rounded: the values are counts rounded to integers.
	Rounded bool `json:"rounded,omitempty"`
	// Excess bounds how far a computed sum lies from the exact sum of its
	// terms (floating-point rounding, tabular.SumExcess): the interval is
	// for the exact sum, so it is widened by it.
	Excess float64 `json:"excess,omitempty"`
	// Lo and Hi bound a ratio's true value (the column's public bounds).
	Lo float64 `json:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty"`
	// Candidates and WeightRatio describe the exponential mechanism: the
	// grid's points and the ratio R ≤ e^(ε/2) of neighbouring weights.
	Candidates  int     `json:"candidates,omitempty"`
	WeightRatio float64 `json:"weight_ratio,omitempty"`
	// HalfWidth95 is the 95 % half-width of each value (ErrLaplace,
	// ErrGaussian); for a ratio, SumHalfWidth and CountHalfWidth are its
	// parts' (a mean's interval depends on them and on the mean itself:
	// noise.MeanInterval).
	HalfWidth95    float64 `json:"half_width_95,omitempty"`
	SumHalfWidth   float64 `json:"sum_half_width_95,omitempty"`
	CountHalfWidth float64 `json:"count_half_width_95,omitempty"`
	// RankError95 is the exponential mechanism's rank bound at 95 %.
	RankError95 int `json:"rank_error_95,omitempty"`
	// Depth > 1: a joint release of quantiles (private_sql), whose value
	// is off by at most the sum of the errors of Depth draws (those on
	// its path of the recursion), each of these Candidates and
	// WeightRatio: the bound at level is Depth times one draw's at
	// 1 − (1 − level)/Depth (a union bound over the draws).
	Depth int `json:"depth,omitempty"`
	// Replicates is the number of bootstrap replicates (ErrBootstrap).
	Replicates int `json:"replicates,omitempty"`
	// Dim is the side of an ErrSpectral release's matrix; its
	// HalfWidth95 holds every eigenvalue at once and TraceHalfWidth95 the
	// trace (pca.SpectralHalfWidth, pca.TraceHalfWidth).
	Dim              int     `json:"dim,omitempty"`
	TraceHalfWidth95 float64 `json:"trace_half_width_95,omitempty"`
	// Centre is what a private_sql AVG or VARIANCE re-centres its sums
	// on (the bounds' midpoint): its sums are of x − Centre, so the ratio
	// is the mean less Centre. GridStep is its fixed-point grid's step,
	// each value rounded to it by at most half a step.
	Centre   float64 `json:"centre,omitempty"`
	GridStep float64 `json:"grid_step,omitempty"`
	// SquareScale and SquareExcess are a VARIANCE's centred sum of
	// squares' noise scale and floating-point excess; SquareHalfWidth its
	// 95 % half-width. Root: the column is the STDDEV, √ of the variance.
	SquareScale     float64 `json:"square_scale,omitempty"`
	SquareExcess    float64 `json:"square_excess,omitempty"`
	SquareHalfWidth float64 `json:"square_half_width_95,omitempty"`
	Root            bool    `json:"root,omitempty"`
	// Parts is an ErrFitted release's number of groups G: each value is
	// post-processed from its part's least-squares fit to the G noisy
	// parts and their noisy total (fitTerms). Nonnegative: the true
	// values are ≥ 0 (counts; sums over bounds ≥ 0), so an interval
	// below 0 is cut there.
	Parts       int  `json:"parts,omitempty"`
	Nonnegative bool `json:"nonnegative,omitempty"`
	// Cols is the number of columns of an ErrLastStep release's noisy
	// product (Dim×Cols: d×p for npm, d×1 for adaptive).
	Cols int `json:"cols,omitempty"`
	// ScoreGap95 is an ErrSelection release's 95 % score gap.
	ScoreGap95 float64 `json:"score_gap_95,omitempty"`
	// Why says what an ErrNone release is and why no interval of it
	// follows from public parameters alone.
	Why string `json:"why,omitempty"`
	// Unit > 0: an ErrRatio release's parts are in units of Unit (Scale,
	// CountScale, Excess, Lo, Hi and the half-widths, as the sums were
	// drawn: centred PCA's mean, of rows scaled by 1/clip), and its
	// interval, of the mean in the data's units, is theirs times Unit.
	Unit float64 `json:"unit,omitempty"`
}

// errNoInterval: a value without a confidence interval.
var errNoInterval = errors.New("this release carries no confidence interval (it was stored before releases carried their error)")

// noiseHalfWidth is the level half-width of a value released as x + noise
// on the lattice of scale: the noise's half-width plus one lattice step
// for the rounding of x onto the lattice (at most half a step). For
// rounded counts (an integer count plus noise, rounded to an integer) it
// is the integer ⌈h + step/2⌉: |round(y) − n| ≤ ⌈|y − n|⌉.
func noiseHalfWidth(kind string, scale float64, rounded bool, level float64) (float64, error) {
	var h float64
	var err error
	switch kind {
	case ErrLaplace:
		h, err = noise.LaplaceHalfWidth(scale, level)
	case ErrGaussian:
		h, err = noise.GaussianHalfWidth(scale, level)
	default:
		return 0, errNoInterval
	}
	if err != nil {
		return 0, err
	}
	if scale == 0 {
		return 0, nil
	}
	step := noise.LatticeStep(scale)
	if rounded {
		if step <= 1 {
			// An integer count is on the lattice already (a power of two
			// ≤ 1 divides it): no rounding onto it.
			return math.Ceil(h), nil
		}
		return math.Ceil(h + step/2), nil
	}
	return h + step, nil
}

// noiseModel is the ErrorModel of values with Laplace (gaussian unset) or
// Gaussian noise of the given scale.
func noiseModel(gaussian bool, scale float64, rounded bool, excess float64) ErrorModel {
	m := ErrorModel{Kind: ErrLaplace, Scale: scale, Rounded: rounded, Excess: excess}
	if gaussian {
		m.Kind = ErrGaussian
	}
	// A scale the plan accepted is valid, and the level is fixed.
	m.HalfWidth95, _ = m.HalfWidth(DefaultLevel)
	return m
}

// ratioModel is the ErrorModel of means: noisy sums over noisy counts of
// scales sumScale and countScale, the true mean in [lo, hi].
func ratioModel(gaussian bool, sumScale, countScale, excess, lo, hi float64) ErrorModel {
	kind := ErrLaplace
	if gaussian {
		kind = ErrGaussian
	}
	m := ErrorModel{Kind: ErrRatio, Noise: kind, Scale: sumScale, CountScale: countScale, Excess: excess, Lo: lo, Hi: hi}
	m.SumHalfWidth, _ = noiseHalfWidth(kind, sumScale, false, DefaultLevel)
	m.SumHalfWidth += excess
	m.CountHalfWidth, _ = noiseHalfWidth(kind, countScale, false, DefaultLevel)
	return m
}

// centerModel is the ErrorModel of a centred private_pca's mean: each
// coordinate a noisy sum over the one noisy count of the d+1 Gaussian
// release of (Σ s·a, n), every part of std std, the sums within excess of
// their exact values, all in units of the clip (the rows scaled to norm
// ≤ 1, so each coordinate of the true mean is in [−1, 1]). The interval
// is a ratio's (noise.MeanInterval) times the clip. The projection of the
// released mean onto the unit ball does not enter it: the interval is of
// the true mean, from the parts alone.
func centerModel(std, excess, clip float64) ErrorModel {
	m := ratioModel(true, std, std, excess, -1, 1)
	m.Unit = clip
	return m
}

// rankModel is the ErrorModel of the exponential mechanism over
// candidates grid points whose weights fall by ratio per rank.
func rankModel(candidates int, ratio float64) ErrorModel {
	m := ErrorModel{Kind: ErrExponential, Candidates: candidates, WeightRatio: ratio}
	m.RankError95, _ = noise.RankErrorBound(candidates, ratio, DefaultLevel)
	return m
}

// spectralModel is the ErrorModel of an Analyze Gauss release of a d×d
// matrix with per-coordinate noise std scale (in the data's units) and a
// floating-point excess of at most excess per coordinate.
func spectralModel(d int, scale, excess float64) ErrorModel {
	m := ErrorModel{Kind: ErrSpectral, Scale: scale, Dim: d,
		Excess: (float64(d) + math.Sqrt(float64(d*(d+1)/2))) * excess}
	m.HalfWidth95, m.TraceHalfWidth95, _ = m.SpectralHalfWidths(DefaultLevel)
	return m
}

// lastStepModel is the ErrorModel of npm's or adaptive's eigenvalue
// estimates: e in the scaled rows' units, so its std and excess are
// multiplied by clip² (the values are).
func lastStepModel(e pca.ValueError, clip float64) ErrorModel {
	c2 := clip * clip
	m := ErrorModel{Kind: ErrLastStep, Dim: e.Rows, Cols: e.Cols, Scale: e.Std * c2, Excess: e.Excess * c2}
	m.HalfWidth95, _ = m.ValueHalfWidth(DefaultLevel)
	return m
}

// selectionModel is the ErrorModel of an exponential-mechanism choice
// among candidates at ε′ with scores of sensitivity one user.
func selectionModel(candidates int, effEps float64) ErrorModel {
	m := ErrorModel{Kind: ErrSelection, Candidates: candidates, Scale: 2 / effEps}
	m.ScoreGap95, _ = m.ScoreGap(DefaultLevel)
	return m
}

// noIntervalModel is the ErrorModel of a release with no interval: why
// says what is released and why none follows from public parameters.
func noIntervalModel(why string) ErrorModel {
	return ErrorModel{Kind: ErrNone, Why: why}
}

// ValueHalfWidth is the level half-width that holds for every eigenvalue
// estimate of an ErrSpectral or ErrLastStep release at once. An
// ErrLastStep interval is against the value the same last power step
// would give without its noise (pca.ValueError), whose value is at most
// the true eigenvalue: its lower end bounds that too.
func (m ErrorModel) ValueHalfWidth(level float64) (float64, error) {
	switch m.Kind {
	case ErrSpectral:
		v, _, err := m.SpectralHalfWidths(level)
		return v, err
	case ErrLastStep:
		if m.Dim < 1 || m.Cols < 1 || !(level > 0 && level < 1) || noise.CheckScale(m.Scale) != nil {
			return math.NaN(), errNoInterval
		}
		return pca.NoiseNormHalfWidth(m.Dim, m.Cols, m.Scale, level) + m.Excess, nil
	}
	return math.NaN(), errNoInterval
}

// ScoreGap is an ErrSelection release's level bound on how far the chosen
// candidate's total score (in users: each user's score is in [0, 1]) lies
// below the best candidate's: P(gap > t) ≤ C·exp(−t/Scale), so
// t = Scale·(ln C + ln(1/(1 − level))) (McSherry and Talwar 2007).
func (m ErrorModel) ScoreGap(level float64) (float64, error) {
	if m.Kind != ErrSelection || m.Candidates < 1 || !(level > 0 && level < 1) || !(m.Scale > 0) {
		return math.NaN(), errNoInterval
	}
	return m.Scale * (math.Log(float64(m.Candidates)) - math.Log1p(-level)), nil
}

// SpectralHalfWidths are the level half-widths of an ErrSpectral
// release: one that holds every eigenvalue at once, and the trace's. The
// floating-point excess (the Gram's rounding, at most √(d(d+1)/2) per
// entry's bound in the spectral norm and d in the trace) is added to both.
func (m ErrorModel) SpectralHalfWidths(level float64) (value, trace float64, err error) {
	if m.Kind != ErrSpectral || m.Dim < 1 || !(level > 0 && level < 1) || noise.CheckScale(m.Scale) != nil {
		return math.NaN(), math.NaN(), errNoInterval
	}
	return pca.SpectralHalfWidth(m.Dim, m.Scale, level) + m.Excess, pca.TraceHalfWidth(m.Dim, m.Scale, level) + m.Excess, nil
}

// HalfWidth is the level half-width of each value of a Laplace or
// Gaussian release, or of each least-squares fit of an ErrFitted one
// (fittedHalfWidth).
func (m ErrorModel) HalfWidth(level float64) (float64, error) {
	if m.Kind == ErrFitted {
		return m.fittedHalfWidth(level)
	}
	h, err := noiseHalfWidth(m.Kind, m.Scale, m.Rounded, level)
	return h + m.Excess, err
}

// Interval is the level confidence interval of the true value behind the
// released value v of a Laplace or Gaussian release: [v − h, v + h]. An
// ErrFitted release has none from its value alone (FittedInterval).
func (m ErrorModel) Interval(v, level float64) (lo, hi float64, err error) {
	if m.Kind == ErrFitted {
		return math.NaN(), math.NaN(), errNoInterval
	}
	h, err := m.HalfWidth(level)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	// Widened by an ulp each way: the subtraction and addition round.
	return math.Nextafter(v-h, math.Inf(-1)), math.Nextafter(v+h, math.Inf(1)), nil
}

// RatioInterval is the level confidence interval of the true mean behind
// a ratio release with noisy sum s and noisy count c: noise.MeanInterval,
// with a lattice step of each part's scale and the sum's floating-point
// excess as slack.
func (m ErrorModel) RatioInterval(s, c, level float64) (lo, hi float64, err error) {
	if m.Kind != ErrRatio || m.Noise != ErrLaplace && m.Noise != ErrGaussian {
		return math.NaN(), math.NaN(), errNoInterval
	}
	if noise.CheckScale(m.Scale) != nil || noise.CheckScale(m.CountScale) != nil {
		return math.NaN(), math.NaN(), errNoInterval
	}
	slackS := noise.LatticeStep(m.Scale) + m.Excess
	slackC := noise.LatticeStep(m.CountScale)
	if m.Unit != 0 {
		if !(m.Unit > 0) || math.IsInf(m.Unit, 1) || m.Centre != 0 || m.GridStep != 0 {
			return math.NaN(), math.NaN(), errNoInterval
		}
		lo, hi, err = noise.MeanInterval(m.Noise == ErrGaussian, m.Scale, m.CountScale, s, c, slackS, slackC, m.Lo, m.Hi, level)
		if err != nil {
			return lo, hi, err
		}
		// Scaled to the data's units; an ulp each way, as the products
		// round.
		return math.Nextafter(lo*m.Unit, math.Inf(-1)), math.Nextafter(hi*m.Unit, math.Inf(1)), nil
	}
	if m.Centre == 0 && m.GridStep == 0 {
		return noise.MeanInterval(m.Noise == ErrGaussian, m.Scale, m.CountScale, s, c, slackS, slackC, m.Lo, m.Hi, level)
	}
	// Sums of x − Centre: the set of the centred mean, shifted back, and
	// widened by half a grid step (each value's rounding onto the grid
	// moves the mean by at most that) and an ulp each way (the shift
	// rounds).
	lo, hi, err = noise.MeanInterval(m.Noise == ErrGaussian, m.Scale, m.CountScale, s, c, slackS, slackC, m.Lo-m.Centre, m.Hi-m.Centre, level)
	if err != nil {
		return lo, hi, err
	}
	lo = math.Nextafter(lo+m.Centre-m.GridStep/2, math.Inf(-1))
	hi = math.Nextafter(hi+m.Centre+m.GridStep/2, math.Inf(1))
	return max(lo, m.Lo), min(hi, m.Hi), nil
}

// RankError is the exponential mechanism's rank bound at level.
func (m ErrorModel) RankError(level float64) (int, error) {
	if m.Kind != ErrExponential {
		return 0, errNoInterval
	}
	if m.Depth > 1 {
		if _, err := noise.RankErrorBound(m.Candidates, m.WeightRatio, level); err != nil {
			return 0, err // the level's own check
		}
		k, err := noise.RankErrorBound(m.Candidates, m.WeightRatio, 1-(1-level)/float64(m.Depth))
		return m.Depth * k, err
	}
	return noise.RankErrorBound(m.Candidates, m.WeightRatio, level)
}

// ErrorOf reads the ErrorModel of a receipt's Params: the plan's own, or
// its JSON form read back from the ledger. ok is false without one.
func ErrorOf(params map[string]any) (m ErrorModel, ok bool) {
	switch v := params[ErrorParam].(type) {
	case nil:
		return m, false
	case ErrorModel:
		return v, true
	case *ErrorModel:
		return *v, v != nil
	default:
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &m) != nil || m.Kind == "" {
			return ErrorModel{}, false
		}
		return m, true
	}
}

// CenterErrorOf reads the ErrorModel of a centred private_pca's mean
// from a receipt's Params (CenterErrorParam), as ErrorOf reads a
// release's. ok is false without one (an uncentred call, or a centred
// release stored before its mean carried its error).
func CenterErrorOf(params map[string]any) (m ErrorModel, ok bool) {
	m, ok = ErrorOf(map[string]any{ErrorParam: params[CenterErrorParam]})
	if !ok || m.Kind != ErrRatio || !(m.Unit > 0) {
		return ErrorModel{}, false
	}
	return m, true
}

// CenterText is what a centred private_pca's display and dry run say of
// its mean's error: the parts' 95 % half-widths, in units of the clip, or
// "" without a model.
func CenterText(params map[string]any) string {
	m, ok := CenterErrorOf(params)
	if !ok {
		return ""
	}
	return fmt.Sprintf("each coordinate of the centring mean has a 95 %% interval from its noisy sum (± %s) and the noisy count (± %s), in units of the clip %s, within ± the clip",
		FormatHalfWidth(m.SumHalfWidth), FormatHalfWidth(m.CountHalfWidth), strconv.FormatFloat(m.Unit, 'g', -1, 64))
}

// FormatHalfWidth writes a half-width with 3 significant digits, rounded
// up so that the interval shown holds the computed one; whole numbers
// from 1000 to 1e15 in full.
func FormatHalfWidth(h float64) string {
	switch {
	case math.IsNaN(h) || math.IsInf(h, 0):
		return fmt.Sprint(h)
	case h == 0:
		return "0"
	case h >= 1000 && h < 1e15:
		return strconv.FormatFloat(math.Ceil(h), 'f', 0, 64)
	}
	p := math.Pow(10, math.Floor(math.Log10(h))-2)
	return strconv.FormatFloat(math.Ceil(h/p)*p, 'g', 3, 64)
}

// errorText is what a dry run's receipt says of the error its call would
// get: the 95 % figures of its ErrorModel, or "" without one.
func (r *Receipt) errorText() string {
	e := r.valuesErrorText()
	if c := CenterText(r.Params); c != "" {
		if e != "" {
			return e + "; " + c
		}
		return c
	}
	return e
}

// valuesErrorText is errorText of the release's values (ErrorParam),
// without a centred PCA's mean.
func (r *Receipt) valuesErrorText() string {
	m, ok := ErrorOf(r.Params)
	if !ok {
		return sqlErrorText(ErrorsOf(r.Params))
	}
	switch m.Kind {
	case ErrLaplace, ErrGaussian:
		return fmt.Sprintf("95 %% interval: ± %s for each value", FormatHalfWidth(m.HalfWidth95))
	case ErrFitted:
		return fmt.Sprintf("95 %% interval: ± %s around each part's least-squares fit to the noisy total (the values shown are post-processed from the fits)", FormatHalfWidth(m.HalfWidth95))
	case ErrRatio:
		return fmt.Sprintf("each mean's 95 %% interval follows from its noisy sum (noise ± %s at 95 %%) and noisy count (± %s), within the bounds",
			FormatHalfWidth(m.SumHalfWidth), FormatHalfWidth(m.CountHalfWidth))
	case ErrExponential:
		return fmt.Sprintf("with probability ≥ 95 %% the value's rank is within ±%d rows of the target rank, beyond the closest any grid point comes", m.RankError95)
	case ErrSpectral:
		return fmt.Sprintf("95 %% interval: every eigenvalue ± %s at once, the total variance ± %s", FormatHalfWidth(m.HalfWidth95), FormatHalfWidth(m.TraceHalfWidth95))
	case ErrLastStep, ErrSelection, ErrNone:
		return ErrorText(m)
	case ErrBootstrap:
		return fmt.Sprintf("coefficient intervals by the parametric bootstrap for DP (Ferrando, Wang & Sheldon 2022): %d replicates re-drawn at the public noise scales (std %s on Xᵀy, %s on XᵀX) and the released residual std",
			m.Replicates, FormatHalfWidth(m.Scale), FormatHalfWidth(m.CountScale))
	}
	return ""
}

// lastStepText states an ErrLastStep release's 95 % half-width and what
// it covers (the display's and a dry run's words).
func lastStepText(m ErrorModel) string {
	return fmt.Sprintf("95 %% interval: every eigenvalue estimate ± %s at once, around the value its last power step would give without that step's noise (not the true eigenvalue: the iterate's own error depends on the data's eigengap; that value is at most the true eigenvalue, so each lower end bounds the true eigenvalue too); the components have no interval", FormatHalfWidth(m.HalfWidth95))
}

// selectionText states an ErrSelection release's 95 % score gap.
func selectionText(m ErrorModel) string {
	return fmt.Sprintf("no interval on U (a direction, not a number); with probability ≥ 95 %% the chosen candidate's total score is within %s users of the best of the %d candidates' (the exponential mechanism's guarantee)", FormatHalfWidth(m.ScoreGap95), m.Candidates)
}

// ErrorText is the line a result's display shows for its ErrLastStep,
// ErrSelection or ErrNone error model, or "" for the other kinds.
func ErrorText(m ErrorModel) string {
	switch m.Kind {
	case ErrLastStep:
		return lastStepText(m)
	case ErrSelection:
		return selectionText(m)
	case ErrNone:
		return "no interval: " + m.Why
	}
	return ""
}

// ErrorsParam is the key of a private_sql plan's Params that maps each
// value column to its ErrorModel: COUNT, COUNT(DISTINCT) and SUM a noise
// model; AVG a ratio (Fieller's set from the re-centred noisy sum and the
// noisy count); VARIANCE and STDDEV ErrVariance; QUANTILE the rank bound.
const ErrorsParam = "errors"

// sqlErrors are the ErrorModels of a private_sql plan's value columns,
// by name.
func sqlErrors(outputs []sqlplan.Output, rels []sqlRelease, cols []string) map[string]ErrorModel {
	out := map[string]ErrorModel{}
	for c, o := range outputs {
		if o.Key >= 0 || o.Agg < 0 || o.Agg >= len(rels) || c >= len(cols) {
			continue
		}
		if m, ok := sqlColumnModel(rels[o.Agg]); ok {
			out[cols[c]] = m
		}
	}
	return out
}

// ErrorsOf reads a private_sql receipt's per-column ErrorModels (the
// plan's own, or their JSON form read back from the ledger).
func ErrorsOf(params map[string]any) map[string]ErrorModel {
	switch v := params[ErrorsParam].(type) {
	case nil:
		return nil
	case map[string]ErrorModel:
		return v
	default:
		var m map[string]ErrorModel
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
		return m
	}
}

// sqlErrorText is a private_sql dry run's statement of its COUNT and SUM
// columns' 95 % half-widths, in column order, or "".
func sqlErrorText(errs map[string]ErrorModel) string {
	if len(errs) == 0 {
		return ""
	}
	cols := make([]string, 0, len(errs))
	for c := range errs {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = sqlColumnText(c, errs[c])
	}
	return "95 % interval of each group's value: " + strings.Join(parts, ", ")
}

// sqlColumnText is a dry run's words for one column's 95 % error: the
// half-width where it does not depend on the data (COUNT, SUM), else the
// parts' half-widths (AVG, VARIANCE, STDDEV) or the rank bound (QUANTILE).
func sqlColumnText(c string, m ErrorModel) string {
	switch m.Kind {
	case ErrRatio:
		return fmt.Sprintf("%s from its noisy centred sum (± %s) and count (± %s)", c, FormatHalfWidth(m.SumHalfWidth), FormatHalfWidth(m.CountHalfWidth))
	case ErrVariance:
		return fmt.Sprintf("%s from its noisy count (± %s), centred sum (± %s) and sum of squares (± %s)", c,
			FormatHalfWidth(m.CountHalfWidth), FormatHalfWidth(m.SumHalfWidth), FormatHalfWidth(m.SquareHalfWidth))
	case ErrExponential:
		return fmt.Sprintf("%s rank within ±%d rows", c, m.RankError95)
	case ErrFitted:
		return fmt.Sprintf("%s ± %s around each group's least-squares fit to the total", c, FormatHalfWidth(m.HalfWidth95))
	}
	return fmt.Sprintf("%s ± %s", c, FormatHalfWidth(m.HalfWidth95))
}
