// Package planning holds the checks and budget arithmetic that the
// data-free plans of the private mechanisms (mechanisms/pca,
// mechanisms/federated, mechanisms/fedrep, mechanisms/dppca) share: the
// privacy target, the number of components, a public starting basis, the
// share of the budget spent on an initialisation, and the Gaussian budget
// μ* of a target under GDP or zCDP.
// Errors carry no package prefix; the caller adds its own.
package planning

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Target checks a run's privacy target: eps finite and > 0, 0 < delta < 1.
// The advice on delta never mentions the number of rows: that number is
// private, and the message reaches the analyst.
func Target(eps, delta float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("eps=%v: the privacy parameter eps must be a finite number > 0", eps)
	}
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("delta=%v: delta must satisfy 0 < delta < 1 (e.g. 1e-6; choose δ without looking at the data)", delta)
	}
	return nil
}

// Components checks the shape of a run on d columns asking for k
// components and returns k with its default: d ≥ 1, k = 0 means 1, and
// 1 ≤ k ≤ d.
func Components(k, d int) (int, error) {
	if d < 1 {
		return k, fmt.Errorf("the data need at least one column, got d=%d", d)
	}
	if k == 0 {
		k = 1
	}
	if k < 0 || k > d {
		return k, fmt.Errorf("k=%d components requested but d=%d columns: use 1 ≤ k ≤ d", k, d)
	}
	return k, nil
}

// PublicStart checks an optional public d×k starting basis: nil passes;
// otherwise it must have the shape d×k and finite entries.
func PublicStart(start *mat.Dense, d, k int) error {
	if start == nil {
		return nil
	}
	if r, c := start.Dims(); r != d || c != k {
		return fmt.Errorf("public start is %d×%d; need d×k = %d×%d", r, c, d, k)
	}
	for i := range d {
		for _, v := range start.RawRowView(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return errors.New("public start holds a non-finite value")
			}
		}
	}
	return nil
}

// DefaultInitFrac is the default share of the budget for a private
// initialisation.
const DefaultInitFrac = 0.2

// InitFrac returns the share f of the budget for a private initialisation:
// DefaultInitFrac for 0, f itself if 0 < f < 1, an error otherwise. what
// names the initialisation in the message ("private initialisation").
func InitFrac(f float64, what string) (float64, error) {
	if f == 0 {
		return DefaultInitFrac, nil
	}
	if !(f > 0 && f < 1) {
		return f, fmt.Errorf("init fraction %v: the share of the budget for the %s must be in (0, 1) (default 0.2)", f, what)
	}
	return f, nil
}

// GaussianBudget returns the Gaussian-DP parameter μ* that a run of
// Gaussian releases may spend to meet the target (eps, delta), and the
// cost event of the whole run: under GDP (zcdp false) μ* =
// accounting.MuForTarget(eps, delta), exact for Gaussian releases, at cost
// accounting.GdpFor(eps, delta); under zCDP μ* = √(2ρ*) with ρ* =
// accounting.RhoForTarget(eps, delta), at cost accounting.ZcdpFor(eps,
// delta). Splitting μ*² over releases (Σ μ_i² = μ*²) spends exactly the
// target under either accounting. Call it after Target.
func GaussianBudget(eps, delta float64, zcdp bool) (mu float64, cost accounting.Event, err error) {
	if zcdp {
		mu = math.Sqrt(2 * accounting.RhoForTarget(eps, delta))
		cost = accounting.ZcdpFor(eps, delta)
	} else {
		mu = accounting.MuForTarget(eps, delta)
		cost = accounting.GdpFor(eps, delta)
	}
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, cost, fmt.Errorf("could not calibrate to eps=%v, delta=%v", eps, delta)
	}
	return mu, cost, nil
}

// The bounds every mechanism's plan puts on the analyst's parameters
// (project issue 10: everything that can fail fails before the charge).
// Each mechanism exports them under its own name and documents why they
// hold for it; they live here so that the mechanisms cannot drift apart.
const (
	// MinEps and MaxEps bound a target ε: below 1e-6 the noise scales leave
	// the samplers' range for some parameters; above accounting.MaxEps the
	// accountant refuses the cost.
	MinEps = 1e-6
	MaxEps = accounting.MaxEps
	// MinDelta bounds a target δ from below: the calibrations take
	// ln(1/δ), which stays far from overflow.
	MinDelta = 1e-100
	// MaxIters bounds iteration counts: a run of more iterations would
	// take hours rather than fail.
	MaxIters = 10000
	// MinClip and MaxClip bound clip norms: within them no noise scale
	// under- or overflows for any row count up to the row limit.
	MinClip = 1e-100
	MaxClip = 1e100
	// MinInitFrac and MaxInitFrac bound the share of the budget spent on
	// an initialisation: outside it one release gets less than 0.1%.
	MinInitFrac = 0.001
	MaxInitFrac = 0.999
)
