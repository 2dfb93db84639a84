package regression

import (
	"errors"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// MaxFeatures is the most feature columns a model takes: the linear
// plan's sufficient statistics are (d+1)(d+2)/2 noisy numbers and an
// eigendecomposition of a (d+1)-square matrix, which stay small below it.
const MaxFeatures = 256

// MaxBound is the largest magnitude a public bound may have. Products of
// two bounds summed over MaxRows = 2^30 rows stay far below overflow.
const MaxBound = 0x1p200

// MaxRows is the most rows a run reads (rowpass.MaxRows = 2^30): the data
// registry refuses larger data sets, and the rounding excess of the sums is
// charged for this many terms.
const MaxRows = rowpass.MaxRows

// Errors of the plans and runs. Their texts are fixed: they name no value.
var (
	ErrBounds      = errors.New("every column's public bounds must be finite numbers lo < hi within ±2^200")
	ErrFeatures    = errors.New("give between 1 and 256 feature columns")
	ErrEps         = errors.New("eps must be a finite number > 0")
	ErrDelta       = errors.New("delta must satisfy 0 < δ < 1: the mechanism adds Gaussian noise")
	ErrCalibrate   = errors.New("no zCDP budget ρ > 0 meets this (eps, delta): raise eps or delta")
	ErrIters       = errors.New("iters must be between 1 and 10000")
	ErrL2          = errors.New("l2 must be a finite number ≥ 0")
	ErrCoarse      = errors.New("eps is too small to represent the noise: raise eps")
	ErrDim         = errors.New("regression: the source's width does not match the plan")
	ErrTooManyRows = rowpass.ErrTooManyRows
)

// Bounds are one column's public bounds [Lo, Hi].
type Bounds struct{ Lo, Hi float64 }

func (b Bounds) check() error {
	switch {
	case math.IsNaN(b.Lo) || math.IsNaN(b.Hi) || math.IsInf(b.Lo, 0) || math.IsInf(b.Hi, 0) || !(b.Lo < b.Hi):
		return ErrBounds
	case math.Abs(b.Lo) > MaxBound || math.Abs(b.Hi) > MaxBound:
		return ErrBounds
	}
	return nil
}

// centre is the midpoint of the bounds and half the half-width: the public
// affine map x̂ = (x − centre)/half takes [Lo, Hi] onto [−1, 1] (up to
// rounding, which the rule's final clamp removes, so neither needs to be
// rounded outwards). half is positive: where Hi/2 − Lo/2 underflows to 0
// (subnormal bounds) it is the smallest positive float64.
func (b Bounds) centre() float64 { return b.Lo/2 + b.Hi/2 }

func (b Bounds) half() float64 {
	if h := b.Hi/2 - b.Lo/2; h > 0 {
		return h
	}
	return math.SmallestNonzeroFloat64
}

// unit is the public rule applied to a value: clamped to [Lo, Hi] (a NaN
// counts as the centre), mapped to [−1, 1] by (v − centre)/half, and
// clamped to [−1, 1] so that the map's rounding cannot leave the unit
// bound the sensitivities use. Every column, whatever its bounds' width,
// thus enters the fits on the same scale: a wide column (a count in
// [0, 70]) cannot swamp the 0/1 columns' statistics and the adaptive
// ridge, as it did when the rows were only centred.
func (b Bounds) unit(v float64) float64 {
	if v != v {
		return 0
	}
	// half > 0 and the clamped numerator is finite: u is a number.
	u := (min(max(v, b.Lo), b.Hi) - b.centre()) / b.half()
	return min(max(u, -1), 1)
}

// up returns a float64 no smaller than x (one ulp above it).
func up(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// roundUp covers the relative rounding of a few correctly rounded
// operations in a bound computed from public numbers.
const roundUp = 1 + 0x1p-48

// sumRoundings is the most roundings a term of a released sum passes
// through: one to form it (a product), BlockRows − 1 inside its block and
// TreeDepth in the pairwise tree (rowpass).
const sumRoundings = 1 + rowpass.BlockRows - 1 + rowpass.TreeDepth

// sumExcess is how much further apart (in ℓ2) than their exact sums the
// computed sums of two neighbouring data sets can be, when the vector of
// the terms' magnitude bounds has ℓ2 norm m: 2·γ_h·MaxRows·m (Higham,
// Lemma 3.1, for each coordinate; the ℓ2 norm over the coordinates).
func sumExcess(m float64) float64 {
	return 2 * rowpass.Gamma(sumRoundings) * MaxRows * m * roundUp
}

// Gaussian is one Gaussian release of a plan: its ℓ2 sensitivity (the
// rounding excess included), its share ρ of the zCDP budget, the number of
// coordinates and the noise std on the lattice.
type Gaussian struct {
	Sens  float64
	Rho   float64
	Coord int
	Sigma float64
}

// calibrate fixes g.Sigma = Sens/√(2ρ) (Bun and Steinke 2016, Prop. 1.6)
// plus the lattice's rounding (noise.GaussianScaleChecked).
func (g *Gaussian) calibrate() error {
	z := 1 / math.Sqrt(2*g.Rho)
	s, err := noise.GaussianScaleChecked(g.Sens, z, g.Coord)
	if err != nil {
		return ErrCoarse
	}
	g.Sigma = s
	return nil
}

// target checks ε and δ and returns the zCDP budget ρ the call spends and
// its event: ρ*(ε, δ) under zCDP, μ*²/2 with the μ*-GDP event under the
// gdp accountant (accounting.GaussianTarget).
func target(eps, delta float64, gdp bool) (float64, accounting.Event, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, accounting.Event{}, ErrEps
	}
	if !(delta > 0 && delta < 1) {
		return 0, accounting.Event{}, ErrDelta
	}
	rho, ev, ok := accounting.GaussianTarget(eps, delta, gdp)
	if !ok {
		return 0, accounting.Event{}, ErrCalibrate
	}
	return rho, ev, nil
}

// checkFeatures validates the feature bounds and returns the squared norm
// bound of an augmented unit-scaled row (1, x̂_1, …, x̂_d): B² = 1 + d,
// rounded up, every coordinate of magnitude at most 1.
func checkFeatures(x []Bounds) (b2 float64, err error) {
	if len(x) < 1 || len(x) > MaxFeatures {
		return 0, ErrFeatures
	}
	for _, b := range x {
		if err := b.check(); err != nil {
			return 0, err
		}
	}
	return float64(1+len(x)) * roundUp, nil
}

// Model is a fitted model: one coefficient per feature column, in order,
// and the intercept, on the original (unscaled) scale.
type Model struct {
	Coef      []float64
	Intercept float64
	// Ridge is the ridge λ the linear fit added (AdaSSP's adaptive
	// choice, itself private); 0 for the logistic fit.
	Ridge float64
	// Fit is the linear fit's R², residual scale and what its intervals
	// need, when the plan released ỹᵀỹ (LinearPlan.R2); nil otherwise.
	Fit *LinearFit
}

// Predict returns the linear predictor Intercept + Σ Coef_j·row_j.
func (m *Model) Predict(row []float64) float64 {
	v := m.Intercept
	for j, c := range m.Coef {
		if j < len(row) {
			v += c * row[j]
		}
	}
	return v
}

// unscale maps coefficients θ over the augmented unit-scaled features
// (1, x̂), x̂_j = (x_j − c_j)/h_j, fitted to the target scaled by (cy, hy)
// (ŷ = (y − cy)/hy), back to the original scale: y = cy + hy·(θ_0 +
// Σ θ_j (x_j − c_j)/h_j), so Coef_j = hy·θ_j/h_j and Intercept =
// cy + hy·(θ_0 − Σ θ_j c_j/h_j). For a logistic fit (the label is not
// scaled) cy = 0 and hy = 1.
func unscale(theta []float64, x []Bounds, cy, hy float64) *Model {
	m := &Model{Coef: make([]float64, len(x))}
	ic := theta[0]
	for j, b := range x {
		s := theta[j+1] / b.half()
		m.Coef[j] = hy * s
		ic -= s * b.centre()
	}
	m.Intercept = cy + hy*ic
	return m
}
