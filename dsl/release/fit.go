package release

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// GateChecker is implemented by gates that can say, without recording
// anything, whether a cost would pass them: the executor uses it to tell
// an analyst what would have fitted.
type GateChecker interface {
	Check(ev accounting.Event, ds Ref) error
}

// FitNote is fitNote for a call the caller refused itself (the DSL's
// pre-check of a cell): fits reports whether a cost would be accepted.
func (env *Local) FitNote(call Call, fits func(accounting.Event) bool) string {
	p, err := env.Plan(call)
	if err != nil {
		return ""
	}
	return env.fitNote(call, p, fits, true)
}

// fitNote says what the refused call could have asked for instead: the
// largest ε, at the call's δ, whose cost every budget involved accepts
// (found by re-planning the call, which reads no data, from p's engine
// facts: a live table is not connected to again), or that no ε fits.
// check reports whether a cost fits; retry allows trying a smaller δ.
func (env *Local) fitNote(call Call, p *Plan, check func(accounting.Event) bool, retry bool) string {
	costAt := func(eps float64) (accounting.Event, bool) {
		q, err := env.plan(Call{Func: call.Func, Dataset: call.Dataset, Args: call.Args.With("eps", eps), Cell: call.Cell}, p)
		if err != nil {
			return accounting.Event{}, false
		}
		ev := q.Cost
		if !ev.HasTarget() {
			ev = ev.WithTarget(q.Eps, q.Delta)
		}
		return ev, ev.Validate() == nil
	}
	fits := func(eps float64) bool {
		ev, ok := costAt(eps)
		return ok && check(ev)
	}
	// Walk down from the call's ε by halves to one that fits (plans may
	// refuse a tiny ε), then bisect between it and the last that did not.
	lo, hi := 0.0, p.Eps
	for e := p.Eps / 2; e >= pca.MinEps; e /= 2 {
		if fits(e) {
			lo = e
			break
		}
		hi = e
	}
	if lo == 0 {
		// The call's δ alone may not fit (δ = the budget's δ, an
		// approximate-DP event under zcdp): a smaller δ may.
		if p.Delta > 0 && retry {
			for _, smaller := range []float64{p.Delta / 10, p.Delta / 100} {
				alt := call
				alt.Args = call.Args.With("delta", smaller)
				q, err := env.plan(alt, p)
				if err == nil {
					if note := env.fitNote(alt, q, check, false); !strings.HasPrefix(note, "No eps") {
						return fmt.Sprintf("No eps fits at delta=%g (the call's δ takes what the budget's δ allows); with delta=%g: %s", p.Delta, smaller, note)
					}
				}
			}
		}
		return fmt.Sprintf("No eps fits at delta=%g: the remaining budget is too small for this call", p.Delta)
	}
	for range 60 {
		mid := math.Sqrt(lo * hi)
		if !(mid > lo && mid < hi) {
			break
		}
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Round down to three significant digits, and check what is shown.
	scale := math.Pow(10, math.Floor(math.Log10(lo))-2)
	printed := func(x float64) float64 {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
		return v
	}
	shown := printed(math.Floor(lo/scale) * scale)
	for shown > 0 && !fits(shown) {
		shown = printed(shown - scale)
	}
	if !(shown > 0) {
		shown = lo
	}
	return fmt.Sprintf("The largest eps that fits at delta=%g is %s (same call, eps=%s)", p.Delta, strconv.FormatFloat(shown, 'g', 3, 64), strconv.FormatFloat(shown, 'g', 3, 64))
}

// FitsText says what one more call may spend: the largest ε of a pure
// call, of a quantile and of a Gaussian call at the dataset's δ, each
// rounded down so that the value shown fits too.
func FitsText(f accounting.Fits) string {
	s := fmt.Sprintf("pure ε≤%s, quantile ε≤%s", fitEps(f.Pure), fitEps(f.BoundedRange))
	if f.GaussianDelta > 0 {
		s += fmt.Sprintf(", Gaussian ε≤%s at δ=%.3g", fitEps(f.Gaussian), f.GaussianDelta)
	}
	return s
}

// fitEps shows a largest ε rounded down to 3 significant digits, so that
// the value shown fits too.
func fitEps(eps float64) string {
	if eps <= 0 {
		return "0 (none fits)"
	}
	// Truncate the exact decimal expansion to 3 significant digits:
	// flooring eps/p in float64 misreads 0.1 as 0.099 (0.1/0.001 is
	// 99.99999999999999), and log10 of 0.09999999999999999 rounds to −1.
	e := strconv.FormatFloat(eps, 'e', 16, 64) // d.dddd…e±XX, 17 digits identify eps
	mant, exp, _ := strings.Cut(e, "e")
	v, err := strconv.ParseFloat(mant[:4]+"e"+exp, 64)
	if err != nil {
		return e
	}
	s := strconv.FormatFloat(v, 'g', 3, 64)
	return s
}
