package accounting

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the privacy measure an Event is stated in.
type Kind int

const (
	PureDP   Kind = iota // pure ε-DP
	ApproxDP             // approximate (ε, δ)-DP
	ZCDP                 // ρ-zCDP
	GDP                  // μ-GDP
)

var kindNames = [...]string{PureDP: "pure", ApproxDP: "approx", ZCDP: "zcdp", GDP: "gdp"}

// String returns "pure", "approx", "zcdp" or "gdp" (the spelling ParseKind
// and UnmarshalText accept).
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind reads the spelling produced by Kind.String (case-insensitive).
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("accounting: unknown privacy measure %q: use one of %s", s, strings.Join(kindNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler so that stored events name
// their measure instead of a bare number.
func (k Kind) MarshalText() ([]byte, error) {
	if k < 0 || int(k) >= len(kindNames) {
		return nil, fmt.Errorf("accounting: invalid privacy measure %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it also accepts the
// decimal number of the kind.
func (k *Kind) UnmarshalText(b []byte) error {
	if n, err := strconv.Atoi(string(b)); err == nil {
		if n < 0 || n >= len(kindNames) {
			return fmt.Errorf("accounting: invalid privacy measure %d", n)
		}
		*k = Kind(n)
		return nil
	}
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Event is the privacy cost of one mechanism run, in its native measure.
//
// For ZCDP and GDP events, Eps and Delta optionally record the (ε, δ) target
// the mechanism was calibrated to. The target must be implied by the native
// cost (Validate checks it); the Basic and Advanced modes of an Accountant
// compose these targets and refuse zCDP/GDP events without one.
type Event struct {
	Mechanism  string  // e.g. "pca/npm"
	Kind       Kind    // the measure; encoded as text ("zcdp") by encoding/json
	Eps, Delta float64 // PureDP: Eps; ApproxDP: Eps, Delta; ZCDP/GDP: the calibration target, or zero
	Rho        float64 // ZCDP
	Mu         float64 // GDP
	// Gaussian marks a ZCDP event whose mechanism is a composition of
	// Gaussian releases drawn with the project's samplers (mechanisms/noise),
	// each calibrated with noise.GaussianScale: such a release of zCDP cost
	// ρ_i is also μ_i-GDP with μ_i² = 2ρ_i, so the event is √(2ρ)-GDP and
	// the GDP accountant can compose it. The zcdp and basic accountants
	// ignore it. Only ZCDP events may set it.
	Gaussian bool `json:",omitempty"`
	// BoundedRange marks a pure ε-DP event whose mechanism is also ε-bounded
	// range (Durfee and Rogers 2019): for every pair of neighbouring data
	// sets the log-ratio of output probabilities spans an interval of width
	// at most ε. The exponential mechanism with a utility of sensitivity Δ
	// sampled ∝ exp(−ε·loss/(2Δ)) is, and ε-BR implies ε²/8-zCDP (Cesar and
	// Rogers 2021, Lemma 3.2), a quarter of the ε²/2 a general pure ε-DP
	// event costs in zCDP. The zcdp accountant charges ε²/8 for it; the
	// basic accountant ε, and the gdp accountant prices it as pure ε. Only
	// PureDP events may set it.
	BoundedRange bool `json:",omitempty"`
}

// Pure returns a pure ε-DP event.
func Pure(eps float64) Event { return Event{Kind: PureDP, Eps: eps} }

// BoundedRange returns the event of an ε-bounded-range mechanism (the
// exponential mechanism): pure ε-DP, priced ε²/8 in zCDP (see
// Event.BoundedRange).
func BoundedRange(eps float64) Event { return Event{Kind: PureDP, Eps: eps, BoundedRange: true} }

// Approx returns an approximate (ε, δ)-DP event.
func Approx(eps, delta float64) Event { return Event{Kind: ApproxDP, Eps: eps, Delta: delta} }

// Zcdp returns a ρ-zCDP event without a calibration target.
func Zcdp(rho float64) Event { return Event{Kind: ZCDP, Rho: rho} }

// GaussianZcdp returns the ρ-zCDP event of a composition of Gaussian
// releases on the project's samplers (see Event.Gaussian), without a
// calibration target.
func GaussianZcdp(rho float64) Event { return Event{Kind: ZCDP, Rho: rho, Gaussian: true} }

// Gdp returns a μ-GDP event without a calibration target.
func Gdp(mu float64) Event { return Event{Kind: GDP, Mu: mu} }

// ZcdpFor returns the zCDP event of a mechanism calibrated to (ε, δ) under
// the tight conversion: ρ = RhoForTarget(ε, δ), with the target recorded.
func ZcdpFor(eps, delta float64) Event {
	return Event{Kind: ZCDP, Rho: RhoForTarget(eps, delta), Eps: eps, Delta: delta}
}

// GaussianZcdpFor is ZcdpFor for a composition of Gaussian releases on the
// project's samplers: the same ρ and target, marked Gaussian.
func GaussianZcdpFor(eps, delta float64) Event {
	e := ZcdpFor(eps, delta)
	e.Gaussian = true
	return e
}

// GdpFor returns the GDP event of a Gaussian mechanism calibrated exactly to
// (ε, δ): μ = MuForTarget(ε, δ), with the target recorded.
func GdpFor(eps, delta float64) Event {
	return Event{Kind: GDP, Mu: MuForTarget(eps, delta), Eps: eps, Delta: delta}
}

// WithTarget returns e with its calibration target set to (ε, δ). It does
// not check the target; Validate does.
func (e Event) WithTarget(eps, delta float64) Event {
	e.Eps, e.Delta = eps, delta
	return e
}

// HasTarget reports whether a ZCDP or GDP event records a calibration target.
// Pure and approximate events are their own target.
func (e Event) HasTarget() bool {
	if e.Kind == PureDP || e.Kind == ApproxDP {
		return true
	}
	return e.Eps != 0 || e.Delta != 0
}

// MaxEps is the largest ε accepted in a cost or a calibration target (a
// pure or approximate event, the target of a zCDP or GDP event, the target
// the inverses calibrate to). ε bounds a
// log-likelihood ratio, so anything beyond a few dozen already promises
// nothing; 10⁶ is far past any meaningful setting and keeps every quantity
// the conversions form (ε², ρ = ε²/2, e^(−ε), their sums over 2^100 events)
// far inside float64's range, where every numerical search terminates with a
// meaningful answer. Larger values are refused with an error, not clamped.
const MaxEps = 1e6

// MaxRho is the largest ρ of a zCDP cost: that of a pure MaxEps-DP step
// (ρ = ε²/2, Bun–Steinke Prop. 1.4).
const MaxRho = MaxEps * MaxEps / 2

// MaxMu is the largest μ of a GDP cost; it enters zCDP as μ²/2 = MaxRho.
const MaxMu = MaxEps

// targetSlack is the relative tolerance when checking that a declared target
// is implied by the native cost: calibration by a numerical inverse may land
// a hair over.
const targetSlack = 1e-9

func checkEps(eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return fmt.Errorf("ε must be a positive finite number, got %v", eps)
	}
	if eps > MaxEps {
		return fmt.Errorf("ε=%g is above the largest accepted value %g (an ε beyond a few dozen already protects nothing)", eps, float64(MaxEps))
	}
	return nil
}

// checkMeasure checks a ρ or μ: positive, finite and at most max.
func checkMeasure(name string, v, max float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%s must be a positive finite number, got %v", name, v)
	}
	if v > max {
		return fmt.Errorf("%s=%g is above the largest accepted value %g (that of a pure ε=%g step)", name, v, max, float64(MaxEps))
	}
	return nil
}

func checkDelta(delta float64) error {
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("δ must be in (0, 1), got %v", delta)
	}
	return nil
}

// Validate reports whether the event is well formed: a known kind, positive
// finite costs no larger than MaxEps, MaxRho or MaxMu, δ in (0, 1), no
// fields of another measure, and, for ZCDP/GDP events with a target, a
// target in the same ranges that the native cost actually implies.
func (e Event) Validate() error {
	err := e.validate()
	if err != nil {
		name := e.Mechanism
		if name == "" {
			name = "event"
		}
		return fmt.Errorf("accounting: invalid %s cost (%s): %w", name, e.Kind, err)
	}
	return nil
}

func (e Event) validate() error {
	if e.Gaussian && e.Kind != ZCDP {
		return errors.New("only a zCDP event can be marked Gaussian (a GDP event already is)")
	}
	if e.BoundedRange && e.Kind != PureDP {
		return errors.New("only a pure ε-DP event can be marked bounded range")
	}
	switch e.Kind {
	case PureDP:
		if e.Delta != 0 || e.Rho != 0 || e.Mu != 0 {
			return errors.New("a pure ε-DP event sets only Eps; use Approx for (ε, δ)")
		}
		return checkEps(e.Eps)
	case ApproxDP:
		if e.Rho != 0 || e.Mu != 0 {
			return errors.New("an (ε, δ) event sets only Eps and Delta")
		}
		if err := checkEps(e.Eps); err != nil {
			return err
		}
		return checkDelta(e.Delta)
	case ZCDP:
		if e.Mu != 0 {
			return errors.New("a zCDP event sets Rho, not Mu")
		}
		// The target is checked first: an absurd target (ε = 1e300) leaves a
		// NaN ρ from the calibration, and the target is what to report.
		if err := e.checkTarget(); err != nil {
			return err
		}
		if err := checkMeasure("ρ", e.Rho, MaxRho); err != nil {
			return err
		}
		// Most events pass: ask only whether the conversion is within the
		// target (zcdpEpsAtMost stops at the first bound that says so),
		// and convert in full for the refusal's message.
		if e.HasTarget() && zcdpEpsAtMost(e.Rho, e.Delta, e.Eps*(1+targetSlack)) {
			return nil
		}
		return e.impliesTarget(func() float64 { return ZCDPToEps(e.Rho, e.Delta) })
	case GDP:
		if e.Rho != 0 {
			return errors.New("a GDP event sets Mu, not Rho")
		}
		if err := e.checkTarget(); err != nil {
			return err
		}
		if err := checkMeasure("μ", e.Mu, MaxMu); err != nil {
			return err
		}
		return e.impliesTarget(func() float64 { return GDPEps(e.Mu, e.Delta) })
	}
	return fmt.Errorf("unknown privacy measure %d", int(e.Kind))
}

// checkTarget checks the range of the optional (Eps, Delta) target of a
// ZCDP/GDP event.
func (e Event) checkTarget() error {
	if !e.HasTarget() {
		return nil
	}
	if err := checkEps(e.Eps); err != nil {
		return fmt.Errorf("calibration target: %w", err)
	}
	if err := checkDelta(e.Delta); err != nil {
		return fmt.Errorf("calibration target: %w", err)
	}
	return nil
}

// impliesTarget checks that the native cost implies the event's target, if
// any; implied computes the ε the native cost gives at e.Delta.
func (e Event) impliesTarget(impliedAt func() float64) error {
	if !e.HasTarget() {
		return nil
	}
	if implied := impliedAt(); !(implied <= e.Eps*(1+targetSlack)) {
		return fmt.Errorf("calibration target ε=%g, δ=%g is not implied by the cost: at δ=%g it gives ε=%.6g; calibrate with RhoForTarget/MuForTarget",
			e.Eps, e.Delta, e.Delta, implied)
	}
	return nil
}

// EpsAt returns the tightest ε such that this single event is (ε, δ)-DP, for
// display. Pure events give Eps at any δ; approximate events give Eps when
// δ ≥ Delta and +Inf otherwise (no guarantee at a smaller δ); zCDP uses the
// tight CKS conversion and GDP the exact curve. NaN for an invalid δ or an
// unknown kind. It does not validate the event: an invalid one gives
// whatever the conversion gives for its fields (NaN for a negative ρ).
func (e Event) EpsAt(delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 {
		return math.NaN()
	}
	switch e.Kind {
	case PureDP:
		return e.Eps
	case ApproxDP:
		if delta >= e.Delta {
			return e.Eps
		}
		return math.Inf(1)
	case ZCDP:
		return ZCDPToEps(e.Rho, delta)
	case GDP:
		return GDPEps(e.Mu, delta)
	}
	return math.NaN()
}

// String describes the cost, e.g. "zCDP ρ=0.01042 (calibrated to ε=0.7, δ=1e-06)",
// prefixed by "mechanism: " when the mechanism is named.
func (e Event) String() string {
	var s string
	switch e.Kind {
	case PureDP:
		s = fmt.Sprintf("pure ε=%.4g", e.Eps)
		if e.BoundedRange {
			s = fmt.Sprintf("bounded-range ε=%.4g", e.Eps)
		}
	case ApproxDP:
		s = fmt.Sprintf("approx ε=%.4g, δ=%.4g", e.Eps, e.Delta)
	case ZCDP:
		s = fmt.Sprintf("zCDP ρ=%.4g", e.Rho)
		if e.Gaussian {
			s = fmt.Sprintf("Gaussian zCDP ρ=%.4g", e.Rho)
		}
	case GDP:
		s = fmt.Sprintf("GDP μ=%.4g", e.Mu)
	default:
		s = fmt.Sprintf("%s ε=%.4g, δ=%.4g, ρ=%.4g, μ=%.4g", e.Kind, e.Eps, e.Delta, e.Rho, e.Mu)
	}
	if (e.Kind == ZCDP || e.Kind == GDP) && e.HasTarget() {
		s += fmt.Sprintf(" (calibrated to ε=%.4g, δ=%.4g)", e.Eps, e.Delta)
	}
	if e.Mechanism != "" {
		s = e.Mechanism + ": " + s
	}
	return s
}

// rho returns the zCDP cost used by the ZCDP mode (for ApproxDP events: the
// ρ of the δ-approximate zCDP guarantee ε²/2; Bun–Steinke 2016, §8; for
// bounded-range events ε²/8).
func (e Event) rho() float64 {
	switch e.Kind {
	case PureDP:
		if e.BoundedRange {
			return BoundedRangeToRho(e.Eps)
		}
		return PureToRho(e.Eps)
	case ApproxDP:
		return PureToRho(e.Eps)
	case ZCDP:
		return e.Rho
	case GDP:
		return e.Mu * e.Mu / 2
	}
	return math.NaN()
}

// approxDelta returns the δ an event adds outside zCDP in the ZCDP mode.
func (e Event) approxDelta() float64 {
	if e.Kind == ApproxDP {
		return e.Delta
	}
	return 0
}
