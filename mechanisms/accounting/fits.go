package accounting

import (
	"math"
	"sync"
)

// Fits says, in an analyst's terms, what one more call may still spend:
// the largest ε of a pure call and of a Gaussian call that the accountant
// admits now (issue 28, item 4). A receipt's "remaining (ε, δ)" is a
// composed total, which under zcdp, gdp or rdp a call of that ε does not
// fit; these are what Check admits.
type Fits struct {
	// Pure is the largest ε of a pure ε-DP call (a Laplace count, sum or
	// histogram) that fits; BoundedRange that of an exponential-mechanism
	// call (a quantile), which costs less under zcdp and rdp. 0 when none.
	Pure, BoundedRange float64
	// Gaussian is the largest ε of a Gaussian call calibrated to
	// (ε, GaussianDelta), the dataset's own calibration (exact GDP on a gdp
	// dataset, zCDP otherwise); 0 when none, or when GaussianDelta is 0.
	Gaussian, GaussianDelta float64
}

// fitsTol is the relative width at which the searches stop: the value
// reported fits, and one fitsTol larger may not.
const fitsTol = 1e-7

// Fits returns the largest calls that fit now; delta is the calibration
// target of the Gaussian call (a dataset's δ, or under basic composition
// what is left of it).
func (a *Accountant) Fits(delta float64) Fits {
	// The three searches are independent and each asks its own copy of
	// the totals (a Check holds the accountant's lock), so they run side
	// by side: a receipt waits for the slowest, the Gaussian one.
	var f Fits
	var wg sync.WaitGroup
	search := func(dst *float64, event func(eps float64) Event) {
		c := a.frozen()
		wg.Add(1)
		go func() {
			defer wg.Done()
			*dst = c.largest(event)
		}()
	}
	search(&f.Pure, Pure)
	search(&f.BoundedRange, BoundedRange)
	if delta > 0 && delta < 1 {
		gaussian := GaussianZcdpFor
		if a.mode == ModeGDP {
			gaussian = GdpFor
		}
		search(&f.Gaussian, func(eps float64) Event { return gaussian(eps, delta) })
		f.GaussianDelta = delta
	}
	wg.Wait()
	return f
}

// frozen returns a copy of a's mode, budget and totals, for a search that
// must not wait for a's lock.
func (a *Accountant) frozen() *Accountant {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &Accountant{mode: a.mode, budget: a.budget, tot: a.tot.clone()}
}

// FitsNow is Fits at the δ a Gaussian call on the dataset is calibrated
// to: the budget's, or under basic composition what is left of it. A
// receipt states it after its charge; it is a function of the budget and
// the charges alone, so `notebook verify` derives it again from the
// ledger.
func (a *Accountant) FitsNow() Fits {
	delta := a.budget.Delta
	if a.mode == ModeBasic || a.mode == ModeAdvanced {
		delta = a.Remaining().Delta
	}
	return a.Fits(delta)
}

// largest bisects for the largest ε in (0, MaxEps] whose event fits; the
// admission of a larger ε is never easier (costs grow with ε). 0 when not
// even the smallest positive ε fits.
func (a *Accountant) largest(event func(eps float64) Event) float64 {
	// admits validates e as Check does (Event.Validate first), so an
	// invalid event does not fit.
	fits := func(eps float64) bool { return a.admits(event(eps)) }
	// Bracket: a call of the budget's ε fits only under basic composition
	// (and, for small ε, under the rdp accountant's pure branch), so start
	// there and double while it fits.
	lo, hi := 0.0, a.budget.Eps
	if !(hi > 0 && hi <= MaxEps) {
		hi = MaxEps
	}
	for fits(hi) {
		if hi == MaxEps {
			return MaxEps
		}
		lo, hi = hi, math.Min(2*hi, MaxEps)
	}
	for hi-lo > fitsTol*hi {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The bisection stops just below a round limit (a basic-composition
	// remainder of 0.1 comes out as 0.09999999): when the value rounded
	// up to 6 significant digits fits too, that is the answer, so that a
	// display rounding down shows 0.1 and not 0.0999.
	if lo > 0 {
		p := math.Pow(10, math.Floor(math.Log10(lo))-5)
		if up := math.Ceil(lo/p) * p; up > lo && up < hi && fits(up) {
			lo = up
		}
	}
	return lo
}
