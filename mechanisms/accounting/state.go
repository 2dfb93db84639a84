package accounting

// Exact, serialisable snapshots of an accountant's running totals, so that a
// durable ledger can keep them next to its records and compose the next
// charge in constant time instead of replaying every earlier one.

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// State is an exact snapshot of an Accountant's running totals: the number
// of events composed and the unrounded sums Σρ_i, Σδ of approximate events,
// Σε_i and Σδ_i of the (ε, δ) targets. The cost in every mode is a function
// of these alone, so Resume(mode, budget, a.State()) composes exactly as a
// would, and two accountants that composed the same events in any order, in
// any mode, have equal States (State is comparable with ==). The zero State
// is that of an empty accountant.
//
// Its text form, from MarshalText, is canonical (equal States give equal
// text) and round-trips exactly through UnmarshalText: each sum is written
// as a hexadecimal binary fraction; after one pure ε = 0.5 event
// (ρ = 0.125 = 0x.8p-2):
//
//	accounting-state/1 events=1 rho=0x.8p-2 apdelta=0 eps=0x.8p+0 delta=0
//
// The GDP mode also sums μ_i² (the other modes leave that sum at 0, so their
// States are those of earlier versions); a State with a non-zero Σμ² is
// written in version 2, which appends musq=…:
//
//	accounting-state/2 events=1 rho=… apdelta=0 eps=… delta=… musq=…
//
// The RDP mode also records its Rényi order α₀ (as a hexadecimal float),
// the sum of the Rényi divergences at α₀, the sum of the pure events' ε and
// the number of events that are not pure, in version 3:
//
//	accounting-state/3 events=2 rho=… apdelta=0 eps=… delta=… order=0x1.2p+02 rdp=… pureeps=… impure=1
type State struct {
	events int64
	// Canonical exact text of each sum (big.Float 'p' format); "" is 0.
	rho, apDelta, eps, delta, muSq string
	// RDP mode only ("" and 0 otherwise, and for an empty accountant).
	order, rdp, pureEps string
	impure              int64
}

// stateMagic starts the text form and versions it; stateMagicGDP is the
// version with Σμ².
const (
	stateMagic    = "accounting-state/1"
	stateMagicGDP = "accounting-state/2"
	stateMagicRDP = "accounting-state/3"
)

// Events returns the number of events the snapshot composes.
func (s State) Events() int64 { return s.events }

// State returns an exact snapshot of the accountant's totals.
func (a *Accountant) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := State{events: a.tot.n, rho: sumText(&a.tot.rho), apDelta: sumText(&a.tot.apDelta),
		eps: sumText(&a.tot.eps), delta: sumText(&a.tot.delta), muSq: sumText(&a.tot.muSq)}
	if a.mode == ModeRDP && a.tot.n > 0 {
		s.order, s.rdp, s.pureEps, s.impure = orderText(a.tot.order), sumText(&a.tot.rdp), sumText(&a.tot.pureEps), a.tot.impure
	}
	return s
}

// Resume returns an accountant with the given mode and budget whose totals
// are s, as if it had composed the events s summarises (which it does not
// hold: Events starts empty). Like Replay, it does not enforce the budget on
// what s already holds. The budget is checked as by NewAccountant.
func Resume(mode Mode, budget Budget, s State) (*Accountant, error) {
	a, err := NewAccountant(mode, budget)
	if err != nil {
		return nil, err
	}
	if s.events < 0 {
		return nil, fmt.Errorf("accounting: resume: negative event count %d", s.events)
	}
	// Every event the GDP mode composes has μ > 0, and no other mode sums
	// μ²: a State that breaks either rule was composed in another mode, and
	// continuing it in this one would misprice what it holds.
	if mode == ModeGDP && s.events > 0 && s.muSq == "" {
		return nil, errors.New("accounting: resume: the gdp accountant cannot continue totals composed by another accountant (they hold no Σμ²)")
	}
	if mode != ModeGDP && s.muSq != "" {
		return nil, fmt.Errorf("accounting: resume: the %s accountant cannot continue totals composed by the gdp accountant", mode)
	}
	// Likewise the Rényi sums: they hold at the order recorded with them,
	// which the resumed accountant keeps (a budget changed since does not
	// move the order its sums were taken at).
	if mode == ModeRDP && s.events > 0 && s.order == "" {
		return nil, errors.New("accounting: resume: the rdp accountant cannot continue totals composed by another accountant (they hold no Rényi sums)")
	}
	if mode != ModeRDP && (s.order != "" || s.rdp != "" || s.pureEps != "" || s.impure != 0) {
		return nil, fmt.Errorf("accounting: resume: the %s accountant cannot continue totals composed by the rdp accountant", mode)
	}
	if s.order != "" {
		alpha, err := parseOrder(s.order)
		if err != nil {
			return nil, fmt.Errorf("accounting: resume: %w", err)
		}
		if s.impure < 0 || s.impure > s.events {
			return nil, fmt.Errorf("accounting: resume: %d events that are not pure of %d", s.impure, s.events)
		}
		a.tot.order, a.tot.impure = alpha, s.impure
	}
	fields := []struct {
		name string
		text string
		dst  *exactSum
	}{{"rho", s.rho, &a.tot.rho}, {"apdelta", s.apDelta, &a.tot.apDelta}, {"eps", s.eps, &a.tot.eps}, {"delta", s.delta, &a.tot.delta},
		{"musq", s.muSq, &a.tot.muSq}, {"rdp", s.rdp, &a.tot.rdp}, {"pureeps", s.pureEps, &a.tot.pureEps}}
	for _, f := range fields {
		v, err := parseSum(f.text)
		if err != nil {
			return nil, fmt.Errorf("accounting: resume: %s: %w", f.name, err)
		}
		if s.events == 0 && v.Sign() != 0 {
			return nil, fmt.Errorf("accounting: resume: %s is %s with no events", f.name, f.text)
		}
		f.dst.v.SetPrec(exactPrec)
		f.dst.v.Set(v)
	}
	a.tot.n = s.events
	return a, nil
}

// sumText is the canonical exact text of a sum: "" for zero, else big.Float's
// 'p' format (hexadecimal mantissa, binary exponent), which is exact.
func sumText(s *exactSum) string {
	if s.v.Sign() == 0 {
		return ""
	}
	return s.v.Text('p', 0)
}

// parseSum reads sumText's output back, refusing anything that is not an
// exact, finite, non-negative sum: a running total of validated costs is
// never negative, and a value that needs more than exactPrec bits (or is
// Inf or NaN) was not written by sumText.
func parseSum(text string) (*big.Float, error) {
	v := new(big.Float).SetPrec(exactPrec)
	if text == "" {
		return v, nil
	}
	if strings.ContainsAny(text, "iInN") { // Inf, NaN: ParseFloat accepts "Inf"
		return nil, fmt.Errorf("%q is not a finite sum", text)
	}
	if _, _, err := v.Parse(text, 0); err != nil {
		return nil, fmt.Errorf("%q: %w", text, err)
	}
	if v.Acc() != big.Exact {
		return nil, fmt.Errorf("%q is not exact in %d bits", text, exactPrec)
	}
	if v.Sign() < 0 {
		return nil, fmt.Errorf("%q is negative", text)
	}
	if v.Sign() == 0 {
		return new(big.Float).SetPrec(exactPrec), nil // canonical: no -0
	}
	// A non-zero sum of float64s lies in [2^-1074, 2^63·2^1024).
	if e := v.MantExp(nil); e < -1073 || e > 1024+63 {
		return nil, fmt.Errorf("%q is outside the range of a sum of float64 costs", text)
	}
	if canon := v.Text('p', 0); canon != text {
		return nil, fmt.Errorf("%q is not in canonical form (%s)", text, canon)
	}
	return v, nil
}

func textOrZero(t string) string {
	if t == "" {
		return "0"
	}
	return t
}

// String returns the text form (see State).
func (s State) String() string {
	base := fmt.Sprintf("events=%d rho=%s apdelta=%s eps=%s delta=%s", s.events,
		textOrZero(s.rho), textOrZero(s.apDelta), textOrZero(s.eps), textOrZero(s.delta))
	if s.muSq != "" {
		return stateMagicGDP + " " + base + " musq=" + s.muSq
	}
	if s.order != "" {
		return fmt.Sprintf("%s %s order=%s rdp=%s pureeps=%s impure=%d", stateMagicRDP, base, s.order,
			textOrZero(s.rdp), textOrZero(s.pureEps), s.impure)
	}
	return stateMagic + " " + base
}

// MarshalText implements encoding.TextMarshaler with the canonical text form.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It accepts exactly the
// canonical form MarshalText writes (fields in order, single spaces), so
// that equal States always have equal text and a stored State cannot hide
// a second spelling of the same totals.
func (s *State) UnmarshalText(b []byte) error {
	f := strings.Split(string(b), " ")
	keys := []string{"events", "rho", "apdelta", "eps", "delta"}
	magic := stateMagic
	if len(f) > 0 && f[0] == stateMagicGDP {
		magic = stateMagicGDP
		keys = append(keys, "musq")
	}
	if len(f) > 0 && f[0] == stateMagicRDP {
		return s.unmarshalRDP(b, f)
	}
	if len(f) != 1+len(keys) || f[0] != magic {
		return fmt.Errorf("accounting: state %q: want %q followed by %s", b, magic, strings.Join(keys, "=…, ")+"=…")
	}
	vals := make([]string, len(keys))
	for i, k := range keys {
		v, ok := strings.CutPrefix(f[i+1], k+"=")
		if !ok {
			return fmt.Errorf("accounting: state %q: field %d is not %s=…", b, i+1, k)
		}
		vals[i] = v
	}
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != vals[0] {
		return fmt.Errorf("accounting: state %q: bad event count %q", b, vals[0])
	}
	var out State
	out.events = n
	dst := []*string{&out.rho, &out.apDelta, &out.eps, &out.delta, &out.muSq}
	for i, v := range vals[1:] {
		switch v {
		case "":
			return fmt.Errorf("accounting: state: %s is empty (zero is written 0)", keys[i+1])
		case "0":
			if keys[i+1] == "musq" { // version 2 exists only for Σμ² > 0: one spelling per State
				return fmt.Errorf("accounting: state %q: musq=0 is written in version 1", b)
			}
			v = ""
		}
		if _, err := parseSum(v); err != nil {
			return fmt.Errorf("accounting: state: %s: %w", keys[i+1], err)
		}
		*dst[i] = v
	}
	if n == 0 && out != (State{}) {
		return errors.New("accounting: state: non-zero sums with no events")
	}
	*s = out
	return nil
}

// unmarshalRDP decodes a version-3 (rdp accountant) State: the version-1
// fields, then order, rdp, pureeps and impure, canonical as MarshalText
// writes them.
func (s *State) unmarshalRDP(b []byte, f []string) error {
	keys := []string{"events", "rho", "apdelta", "eps", "delta", "order", "rdp", "pureeps", "impure"}
	if len(f) != 1+len(keys) {
		return fmt.Errorf("accounting: state %q: want %q followed by %s", b, stateMagicRDP, strings.Join(keys, "=…, ")+"=…")
	}
	vals := make([]string, len(keys))
	for i, k := range keys {
		v, ok := strings.CutPrefix(f[i+1], k+"=")
		if !ok {
			return fmt.Errorf("accounting: state %q: field %d is not %s=…", b, i+1, k)
		}
		vals[i] = v
	}
	// The version-1 part decodes as a version-1 State.
	var out State
	if err := out.UnmarshalText([]byte(stateMagic + " " + strings.Join(f[1:6], " "))); err != nil {
		return err
	}
	if out.events == 0 {
		return fmt.Errorf("accounting: state %q: version 3 is written only for an rdp accountant that composed events", b)
	}
	if _, err := parseOrder(vals[5]); err != nil {
		return fmt.Errorf("accounting: state: %w", err)
	}
	out.order = vals[5]
	for i, dst := range []*string{&out.rdp, &out.pureEps} {
		v := vals[6+i]
		switch v {
		case "":
			return fmt.Errorf("accounting: state: %s is empty (zero is written 0)", keys[6+i])
		case "0":
			v = ""
		}
		if _, err := parseSum(v); err != nil {
			return fmt.Errorf("accounting: state: %s: %w", keys[6+i], err)
		}
		*dst = v
	}
	n, err := strconv.ParseInt(vals[8], 10, 64)
	if err != nil || n < 0 || n > out.events || strconv.FormatInt(n, 10) != vals[8] {
		return fmt.Errorf("accounting: state %q: bad count of events that are not pure %q", b, vals[8])
	}
	out.impure = n
	*s = out
	return nil
}
