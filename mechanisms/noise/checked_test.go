package noise

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// The checked calibrations return an error with a fixed text, naming no
// value, on every input GaussianScale and LaplaceScale panic on, and the
// scale they return on every other input is one the samplers accept: a
// mechanism's plan can call them before the charge and know that nothing
// panics afterwards.
func TestCheckedScales(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name  string
		delta float64
		z     float64
		m     int
		want  error // nil: a valid scale
	}{
		{"ordinary", 1, 5, 100, nil},
		{"zero sensitivity", 0, 5, 100, nil},
		{"negative sensitivity", -1, 1, 1, ErrSensitivity},
		{"NaN sensitivity", nan, 1, 1, ErrSensitivity},
		{"infinite sensitivity", inf, 1, 1, ErrSensitivity},
		{"zero multiplier", 1, 0, 1, ErrMultiplier},
		{"negative multiplier", 1, -2, 1, ErrMultiplier},
		{"NaN multiplier", 1, nan, 1, ErrMultiplier},
		{"infinite multiplier", 1, inf, 1, ErrMultiplier},
		{"negative count", 1, 1, -1, ErrCount},
		// 2^38 is the limit of multiplier·√m (Gaussian) and m/ε (Laplace).
		{"coarse", 1, 0x1p38, 4, ErrCoarse},
		{"at the coarse limit", 1, 0x1p37, 1, nil},
		// The scale is ≈ multiplier·Δ: below 2^-900 or above 2^900 it is
		// refused, at the ends accepted.
		{"scale below the range", 1e-300, 1, 1, ErrScaleRange},
		{"scale above the range", 1e300, 1e10, 1, ErrScaleRange},
		{"scale at the top", 0x1p899, 1, 1, nil},
		{"scale at the bottom", 0x1p-899, 1, 1, nil},
		{"the 1.39e-271 of the FedRep break", 1.39e-271 / 1000, 10, 100, ErrScaleRange},
	} {
		for _, kind := range []string{"gaussian", "laplace"} {
			var s float64
			var err error
			if kind == "gaussian" {
				s, err = GaussianScaleChecked(tc.delta, tc.z, tc.m)
			} else {
				eps := 1 / tc.z
				if tc.z == 0 || math.IsNaN(tc.z) || math.IsInf(tc.z, 0) || tc.z < 0 {
					eps = tc.z // an invalid ε for the same reason
				}
				s, err = LaplaceScaleChecked(tc.delta, eps, tc.m)
			}
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("%s %s: error %v, want %v", kind, tc.name, err, tc.want)
				continue
			}
			if err != nil {
				if s != 0 {
					t.Errorf("%s %s: scale %v returned with an error", kind, tc.name, s)
				}
				continue
			}
			if CheckScale(s) != nil {
				t.Errorf("%s %s: returned scale %v is refused by the samplers", kind, tc.name, s)
			}
			// And the sampler accepts it without panicking.
			NewSeeded(1).AddGaussian([]float64{1}, s)
		}
	}
	// The texts are fixed: they name no input value.
	for _, e := range []error{ErrSensitivity, ErrMultiplier, ErrCount, ErrCoarse, ErrScaleRange} {
		for _, digit := range []string{"1e", "0.", "NaN", "Inf"} {
			if strings.Contains(e.Error(), digit) {
				t.Errorf("%q names a value (%q)", e, digit)
			}
		}
	}
	// CheckScale is the samplers' own range.
	for _, c := range []struct {
		s  float64
		ok bool
	}{{0, true}, {MinScale, true}, {MaxScale, true}, {1, true}, {math.Nextafter(MinScale, 0), false}, {math.Nextafter(MaxScale, inf), false}, {-1, false}, {nan, false}, {inf, false}} {
		if (CheckScale(c.s) == nil) != c.ok {
			t.Errorf("CheckScale(%v) = %v, want ok=%v", c.s, CheckScale(c.s), c.ok)
		}
	}
}

// ExampleGaussianScale prints sigma = 5.0000000005457 and a lattice step of
// 2^-38 for Δ = 1, z = 5, m = 100. Derived: 5 ∈ [4, 8), so the step is
// 2^(2−40) = 2^-38, and the smallest sigma with sigma ≥ z·(Δ + 3·step·√m)
// is 5·(1 + 30·2^-38) = 5 + 5.4570e-10 (the step does not change on the
// way).
func TestExampleGaussianScaleValue(t *testing.T) {
	sigma := GaussianScale(1, 5, 100)
	want := 5 * (1 + 30*0x1p-38)
	if math.Abs(sigma-want) > 1e-14*want {
		t.Errorf("sigma = %.16g, want 5·(1 + 30·2^-38) = %.16g", sigma, want)
	}
	if LatticeStep(sigma) != 0x1p-38 {
		t.Errorf("lattice step %g, want 2^-38", LatticeStep(sigma))
	}
}
