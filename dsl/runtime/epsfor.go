package runtime

// eps_for(ds, fn, within=…, level=…, delta=…, …): the ε a tabular call
// needs for its release to lie within ±within of the true value at a
// confidence level. It plans the call at candidate ε (plans read no data
// and charge nothing) and reads the half-width of each plan's noise
// (release.ErrorModel): a function of public parameters only.

import (
	"math"
	"strconv"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/release"
)

// epsForRange bounds the ε eps_for searches.
const epsForMin, epsForMax = 1e-6, 1e6

func (rt *Runtime) epsFor(ds any, fn string, kws ...KW) float64 {
	const name = "eps_for"
	a := mustArgs(name, kws)
	rt.current(name)
	src := rt.resolve(name, ds)
	within, level, delta := a.float("within"), a.float("level"), a.float("delta")
	if !(within > 0) || math.IsInf(within, 0) {
		panic(errorf(NameArgumentError, "%s: within=%v must be a finite half-width > 0", name, within))
	}
	mustLevel(name, level)
	target, ok := catalog.Lookup(fn)
	if !ok || target != catalog.PrivateCount && target != catalog.PrivateSum && target != catalog.PrivateHistogram {
		panic(errorf(NameArgumentError, "%s: %q has no interval of values to invert: give %q, %q or %q (a mean's interval depends on its count, which is private; a quantile's error is a rank bound)",
			name, fn, catalog.PrivateCount.Name, catalog.PrivateSum.Name, catalog.PrivateHistogram.Name))
	}
	// The call's public keywords, as given (those fn has).
	var base []KW
	for _, k := range []string{"col", "by", "bins", "max_groups"} {
		if _, has := target.Keyword(k); !has {
			if given(kws, k) {
				panic(errorf(NameArgumentError, "%s: %s has no keyword %s", name, fn, k))
			}
			continue
		}
		if given(kws, k) {
			base = append(base, newKW(k, a.Vals[k]))
		}
	}
	halfWidth := func(eps float64) float64 {
		ta, err := parseArgs(fn, append(append([]KW(nil), base...), newKW("eps", eps), newKW("delta", delta)))
		if err != nil {
			panic(err)
		}
		p := rt.planCall(fn, src, ta)
		m, ok := release.ErrorOf(p.Params)
		if !ok || m.Kind != release.ErrLaplace && m.Kind != release.ErrGaussian && m.Kind != release.ErrFitted {
			panic(errorf(NameArgumentError, "%s: %s with these keywords releases no interval of values to invert (a mean has none of its own)", name, fn))
		}
		h, err := m.HalfWidth(level)
		if err != nil {
			panic(errorf(NameArgumentError, "%s: %v", name, err))
		}
		return h
	}
	// The half-width falls as ε grows: bisect on log ε.
	lo, hi := epsForMin, epsForMax
	if halfWidth(hi) > within {
		panic(errorf(NameArgumentError, "%s: no ε up to %g gives %s a half-width of %v at level %v (the counts' rounding to integers, or the bounds, set a floor)", name, epsForMax, fn, within, level))
	}
	if halfWidth(lo) <= within {
		return lo
	}
	for range 100 {
		mid := math.Sqrt(lo * hi)
		if mid <= lo || mid >= hi || hi/lo < 1+1e-12 {
			break
		}
		if halfWidth(mid) <= within {
			hi = mid
		} else {
			lo = mid
		}
	}
	// Rounded up to 4 significant digits, a value an analyst can type,
	// still within (the half-width only falls as ε grows).
	e := roundUp4(hi)
	if halfWidth(e) > within {
		e = hi
	}
	return e
}

// given reports whether kws names keyword k.
func given(kws []KW, k string) bool {
	for _, kw := range kws {
		if kw.name == k {
			return true
		}
	}
	return false
}

// roundUp4 is x rounded up to 4 significant digits.
func roundUp4(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x))-3)
	r, err := strconv.ParseFloat(strconv.FormatFloat(math.Ceil(x/p)*p, 'g', 4, 64), 64)
	if err != nil || r < x {
		return x
	}
	return r
}
