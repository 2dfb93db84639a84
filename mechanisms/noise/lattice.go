// Lattice rounding and calibration for the discrete samplers of Canonne,
// Kamath and Steinke 2020 applied to floats (as OpenDP does): round onto a
// 2^-k lattice, charge the rounding as extra sensitivity, and solve the
// noise scale as a fixed point.
// Spec: power_methods.md §6 "Samplers"; soundness in doc.go.

package noise

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// latticeBits is how many bits the lattice step lies below the noise scale:
// step = 2^(floor(log2 scale) - latticeBits), so scale/step ∈ [2^40, 2^41).
// At 40 bits the rounding slack is below 1e-12 of the scale per coordinate,
// every noise magnitude below 2^11·scale is an integer below 2^52 times the
// step (exactly representable), and every integer the exact samplers touch
// stays below 2^42.
const latticeBits = 40

// MinScale and MaxScale bound the noise scales (sigma or b) the samplers
// accept. Inside this range the lattice step is a normal float64, its
// inverse is finite, and no sample magnitude below 2^11·scale can overflow.
const (
	MinScale = 0x1p-900
	MaxScale = 0x1p900
)

// fastMagnitudeLimit bounds v in |Z| = u + units·v below which the
// magnitude fits in 52 bits and converts to float64 exactly.
const fastMagnitudeLimit = 1 << (52 - latticeBits - 1)

func checkScale(what string, scale float64) {
	if math.IsNaN(scale) || scale < 0 || scale > MaxScale || (scale > 0 && scale < MinScale) {
		panic(fmt.Sprintf("noise: %s = %g is not a valid noise scale: it must be 0 or in [%g, %g] (mechanisms validate parameters before calling)", what, scale, MinScale, MaxScale))
	}
}

// lattice describes the lattice used for noise of one scale.
type lattice struct {
	step  float64 // power of two
	inv   float64 // 1/step, exact
	units uint64  // ceil(scale/step) ∈ [2^40, 2^41]: the scale in steps, rounded up
}

func latticeFor(scale float64) lattice {
	// scale = mant·2^(e-1075) with mant ∈ [2^52, 2^53) (scale is normal), so
	// floor(log2 scale) = e-1023, step = 2^(e-1023-40) and
	// scale/step = mant/2^12.
	bits := math.Float64bits(scale)
	e := bits >> 52 & 0x7ff
	mant := bits&(1<<52-1) | 1<<52
	return lattice{
		step:  math.Float64frombits((e - latticeBits) << 52),
		inv:   math.Float64frombits((2*1023 + latticeBits - e) << 52),
		units: (mant + 1<<(52-latticeBits) - 1) >> (52 - latticeBits),
	}
}

// LatticeStep returns the lattice step used for noise of the given scale
// (sigma for Gaussian, b for Laplace): the power of two
// 2^(floor(log2 scale) - 40). It panics on a scale outside
// {0} ∪ [MinScale, MaxScale]; LatticeStep(0) is 0.
func LatticeStep(scale float64) float64 {
	checkScale("scale", scale)
	if scale == 0 {
		return 0
	}
	return latticeFor(scale).step
}

// sqrtUp returns a float64 >= sqrt(m).
func sqrtUp(m int) float64 {
	return math.Nextafter(math.Sqrt(float64(m)), math.Inf(1))
}

// intUp returns a float64 >= m.
func intUp(m int) float64 {
	f := float64(m)
	if int(f) < m {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

func checkCount(m int) {
	if m < 0 {
		panic(fmt.Sprintf("noise: coordinate count m = %d is negative", m))
	}
}

// gaussianSlackSteps is the ℓ2 slack per coordinate, in lattice steps, that
// GaussianScale adds to the sensitivity: 1 for the rounding onto the
// lattice (each coordinate moves by at most step/2, so a neighbouring pair
// by at most one step more) and 2 for the discreteness of the noise, which
// covers the bound μ ≤ (|v|+1+10⁻⁷)/S of the discrete Gaussian N_Z(0, S²)
// against its shift by v lattice steps (doc.go, "Gaussian DP"). With it a
// release is μ-GDP with μ = 1/multiplier, exactly what the continuous
// Gaussian mechanism would be, as well as ρ-zCDP with ρ = μ²/2.
const gaussianSlackSteps = 3

// GaussianSlack returns the extra ℓ2 sensitivity that GaussianScale
// charges for m coordinates on the lattice of sigma: gaussianSlackSteps ·
// step · √m (rounding, and the discrete Gaussian's distance from the
// continuous one in the GDP sense). The result is rounded up.
func GaussianSlack(sigma float64, m int) float64 {
	checkCount(m)
	return LatticeStep(sigma) * slackRoot(m) // a power of two times slackRoot: exact
}

// slackRoot returns a float64 >= gaussianSlackSteps·√m.
func slackRoot(m int) float64 {
	return math.Nextafter(gaussianSlackSteps*sqrtUp(m), math.Inf(1))
}

// LaplaceSlack returns the extra ℓ1 sensitivity caused by rounding m
// coordinates onto the lattice of b: at most step·m, rounded up.
func LaplaceSlack(b float64, m int) float64 {
	checkCount(m)
	return LatticeStep(b) * intUp(m)
}

// upward scales a float64 result of at most three correctly rounded
// operations so that it is no smaller than the exact value
// (relative excess about 1e-15).
func upward(x float64) float64 { return x * (1 + 0x1p-50) }

// Errors of the checked calibrations (GaussianScaleChecked,
// LaplaceScaleChecked) and of CheckScale. Their texts are fixed: they name
// no value, so a mechanism can pass them on whatever its inputs are.
var (
	// ErrSensitivity: a sensitivity is negative, NaN or infinite.
	ErrSensitivity = errors.New("noise: the sensitivity must be finite and >= 0")
	// ErrMultiplier: a noise multiplier or an ε is not finite and > 0.
	ErrMultiplier = errors.New("noise: the noise multiplier (or eps) must be finite and > 0")
	// ErrCount: a negative number of coordinates.
	ErrCount = errors.New("noise: the number of coordinates must be >= 0")
	// ErrCoarse: multiplier·√m (Gaussian) or m/ε (Laplace) above 2^38,
	// where the lattice's rounding slack would dominate the sensitivity.
	ErrCoarse = errors.New("noise: the noise is too large relative to the sensitivity for a 2^-40 lattice (multiplier·√m or m/eps above 2^38); spend more budget per release or split it")
	// ErrScaleRange: the noise scale lies outside {0} ∪ [MinScale, MaxScale].
	ErrScaleRange = errors.New("noise: the noise scale is outside the samplers' range [2^-900, 2^900] (sensitivity too small or too large for this multiplier)")
)

// CheckScale returns nil if scale is a valid noise scale for the samplers
// (Gaussian, Laplace, AddGaussian, …): 0 or in [MinScale, MaxScale]; it
// returns ErrScaleRange otherwise. Mechanisms call it when planning, so
// that no sampler panics after a release has been charged.
func CheckScale(scale float64) error {
	if math.IsNaN(scale) || scale < 0 || scale > MaxScale || (scale > 0 && scale < MinScale) {
		return ErrScaleRange
	}
	return nil
}

// solveScale returns the least fixed point (rounded up) of the
// non-decreasing step function s -> f(s), starting below it at s0. The
// iteration s ← f(s) rises monotonically and stops at the first s with
// f(s) <= s; it cannot pass the least fixed point because f is monotone.
// It returns ErrScaleRange when the fixed point lies outside [MinScale,
// MaxScale].
func solveScale(s0 float64, f func(step float64) float64) (float64, error) {
	s := s0
	for i := 0; i < 64; i++ {
		if s > MaxScale {
			break
		}
		step := 0.0
		if s >= MinScale {
			step = latticeFor(s).step
		} else {
			step = latticeFor(MinScale).step
		}
		next := f(step)
		if next <= s {
			if err := CheckScale(s); err != nil {
				return 0, err
			}
			return s, nil
		}
		s = next
	}
	return 0, ErrScaleRange
}

// GaussianScale returns the smallest sigma (to within a relative 1e-12,
// rounded up) with sigma >= multiplier·(delta2 + GaussianSlack(sigma, m)):
// the std a mechanism must use for an ℓ2 sensitivity delta2 over m
// coordinates with noise multiplier z. Mechanisms call this, never
// delta2*z directly. delta2 == 0 gives 0 (no noise is needed, and
// AddGaussian with sigma 0 does not round). It panics on a negative or
// non-finite delta2, a non-positive or non-finite multiplier, a negative m,
// or a result outside [MinScale, MaxScale]; GaussianScaleChecked returns
// those as errors instead, for plans.
func GaussianScale(delta2, multiplier float64, m int) float64 {
	sigma, err := GaussianScaleChecked(delta2, multiplier, m)
	if err != nil {
		panic(fmt.Sprintf("%v (delta2 = %g, multiplier = %g, m = %d)", err, delta2, multiplier, m))
	}
	return sigma
}

// GaussianScaleChecked is GaussianScale returning an error with a fixed
// text (ErrSensitivity, ErrMultiplier, ErrCount, ErrCoarse or
// ErrScaleRange) instead of panicking. A mechanism's plan calls it (or
// checks its inputs) before the release is charged; a sigma it returned
// is accepted by every sampler.
func GaussianScaleChecked(delta2, multiplier float64, m int) (float64, error) {
	switch {
	case math.IsNaN(delta2) || math.IsInf(delta2, 0) || delta2 < 0:
		return 0, ErrSensitivity
	case math.IsNaN(multiplier) || math.IsInf(multiplier, 0) || multiplier <= 0:
		return 0, ErrMultiplier
	case m < 0:
		return 0, ErrCount
	case delta2 == 0:
		return 0, nil
	}
	root := sqrtUp(m)
	if multiplier*root > 0x1p38 {
		return 0, ErrCoarse
	}
	root = slackRoot(m)
	return solveScale(upward(multiplier*delta2), func(step float64) float64 {
		return upward(multiplier * (delta2 + step*root))
	})
}

// LaplaceScale returns the smallest b (to within a relative 1e-12, rounded
// up) with b >= (delta1 + LaplaceSlack(b, m))/eps: the scale giving eps-DP
// for an ℓ1 sensitivity delta1 over m coordinates. delta1 == 0 gives 0.
// It panics on invalid arguments like GaussianScale; LaplaceScaleChecked
// returns an error instead.
func LaplaceScale(delta1, eps float64, m int) float64 {
	b, err := LaplaceScaleChecked(delta1, eps, m)
	if err != nil {
		panic(fmt.Sprintf("%v (delta1 = %g, eps = %g, m = %d)", err, delta1, eps, m))
	}
	return b
}

// LaplaceScaleChecked is LaplaceScale returning an error with a fixed text
// instead of panicking (see GaussianScaleChecked).
func LaplaceScaleChecked(delta1, eps float64, m int) (float64, error) {
	switch {
	case math.IsNaN(delta1) || math.IsInf(delta1, 0) || delta1 < 0:
		return 0, ErrSensitivity
	case math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0:
		return 0, ErrMultiplier
	case m < 0:
		return 0, ErrCount
	case delta1 == 0:
		return 0, nil
	}
	mf := intUp(m)
	if mf/eps > 0x1p38 {
		return 0, ErrCoarse
	}
	return solveScale(upward(delta1/eps), func(step float64) float64 {
		return upward((delta1 + step*mf) / eps)
	})
}

// round returns x rounded to the nearest lattice point (ties to even). A
// float64 whose ulp is at least the step is already on the lattice.
func (l lattice) round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		panic(errNonFinite) // unreachable after checkFinite; kept as a guard
	}
	if math.Abs(x) >= 0x1p52*l.step {
		return x
	}
	return math.RoundToEven(x*l.inv) * l.step
}

// place returns xl + z·step rounded to the nearest float64 (ties to even),
// where xl is on the lattice and z = ±(u + units·v). The rounding is a
// fixed function of the exact lattice value xl + z·step, so it is
// post-processing; a result beyond ±MaxFloat64 is clamped to it (again
// post-processing). Both results are multiples of step.
func (l lattice) place(xl float64, neg bool, u, v uint64) float64 {
	var y float64
	if v < fastMagnitudeLimit {
		z := float64(u+l.units*v) * l.step // integer < 2^52: exact
		if neg {
			z = -z
		}
		y = xl + z // IEEE addition: the exact sum, correctly rounded
	} else {
		y = l.placeExact(xl, neg, u, v)
	}
	if y > math.MaxFloat64 {
		return math.MaxFloat64
	}
	if y < -math.MaxFloat64 {
		return -math.MaxFloat64
	}
	return y
}

// placeExact is place for magnitudes of 2^52 steps or more (probability
// below exp(-2^11) per sample): the sum is formed exactly in big.Float and
// rounded once, giving the same function of the exact value as the fast path.
func (l lattice) placeExact(xl float64, neg bool, u, v uint64) float64 {
	mag := new(big.Int).SetUint64(v)
	mag.Mul(mag, new(big.Int).SetUint64(l.units))
	mag.Add(mag, new(big.Int).SetUint64(u))
	if neg {
		mag.Neg(mag)
	}
	const prec = 4096 // wider than any sum of a float64 and a lattice value here
	_, stepExp := math.Frexp(l.step)
	z := new(big.Float).SetPrec(prec).SetInt(mag)
	z.SetMantExp(z, stepExp-1) // z·step, step = 2^(stepExp-1)
	sum := new(big.Float).SetPrec(prec).SetFloat64(xl)
	sum.Add(sum, z)
	y, _ := sum.Float64() // nearest float64, ties to even; ±Inf on overflow
	return y
}
