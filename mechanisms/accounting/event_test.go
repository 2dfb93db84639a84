package accounting

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestEventValidate(t *testing.T) {
	good := []Event{
		Pure(0.5), BoundedRange(0.5), Approx(0.5, 1e-6), Zcdp(0.01), Gdp(0.3),
		ZcdpFor(0.7, 1e-6), GdpFor(0.7, 1e-6),
		Zcdp(RhoForTargetClassic(0.7, 1e-6)).WithTarget(0.7, 1e-6), // classic calibration is also sound
		{Mechanism: "pca/npm", Kind: ZCDP, Rho: 0.01},
	}
	for _, e := range good {
		if err := e.Validate(); err != nil {
			t.Errorf("Validate(%v): %v", e, err)
		}
	}
	nan := math.NaN()
	bad := []struct {
		e    Event
		frag string // part of the message that says what is wrong
	}{
		{Pure(0), "ε must be a positive"},
		{Pure(-1), "ε must be a positive"},
		{Pure(nan), "ε must be a positive"},
		{Pure(math.Inf(1)), "ε must be a positive"},
		{Event{Kind: PureDP, Eps: 1, Delta: 1e-6}, "use Approx"},
		{BoundedRange(0), "ε must be a positive"},
		{Event{Kind: ZCDP, Rho: 0.1, BoundedRange: true}, "only a pure ε-DP event can be marked bounded range"},
		{Event{Kind: ApproxDP, Eps: 1, Delta: 1e-6, BoundedRange: true}, "only a pure ε-DP event can be marked bounded range"},
		{Approx(1, 0), "δ must be in (0, 1)"},
		{Approx(1, 1), "δ must be in (0, 1)"},
		{Approx(1, nan), "δ must be in (0, 1)"},
		{Approx(0, 1e-6), "ε must be a positive"},
		{Zcdp(0), "ρ must be a positive"},
		{Zcdp(-1e-3), "ρ must be a positive"},
		{Zcdp(nan), "ρ must be a positive"},
		{Gdp(0), "μ must be a positive"},
		{Gdp(math.Inf(1)), "μ must be a positive"},
		{Event{Kind: ZCDP, Rho: 0.1, Mu: 0.1}, "sets Rho, not Mu"},
		{Event{Kind: Kind(9), Eps: 1}, "unknown privacy measure"},
		{Zcdp(0.01).WithTarget(0.1, 1e-6), "not implied"}, // ρ=0.01 is ε≈0.9 at 1e-6
		{Gdp(MuForTarget(1, 1e-6)).WithTarget(0.99, 1e-6), "not implied"},
		{Zcdp(MuForTarget(1, 1e-6)*MuForTarget(1, 1e-6)/2).WithTarget(1, 1e-6), "not implied"}, // GDP calibration reported as zCDP
		{Zcdp(0.01).WithTarget(1, 0), "δ must be in (0, 1)"},
	}
	for _, c := range bad {
		err := c.e.Validate()
		if err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.e, err, c.frag)
		}
	}
}

func TestEventString(t *testing.T) {
	cases := []struct {
		e    Event
		want string
	}{
		{Pure(0.3), "pure ε=0.3"},
		{BoundedRange(0.3), "bounded-range ε=0.3"},
		{Approx(0.5, 1e-6), "approx ε=0.5, δ=1e-06"},
		{Zcdp(0.0104), "zCDP ρ=0.0104"},
		{Zcdp(0.0104).WithTarget(0.7, 1e-6), "zCDP ρ=0.0104 (calibrated to ε=0.7, δ=1e-06)"},
		{Event{Mechanism: "pca/npm", Kind: GDP, Mu: 0.25}, "pca/npm: GDP μ=0.25"},
	}
	for _, c := range cases {
		if got := c.e.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestEventEpsAt(t *testing.T) {
	cases := []struct {
		e     Event
		delta float64
		want  float64
	}{
		{Pure(0.3), 1e-9, 0.3},
		{Approx(0.5, 1e-6), 1e-5, 0.5},
		{Approx(0.5, 1e-6), 1e-7, math.Inf(1)},
		{Zcdp(0.5), 1e-5, ZCDPToEps(0.5, 1e-5)},
		{Gdp(1), 1e-5, GDPEps(1, 1e-5)},
		{GdpFor(0.7, 1e-6), 1e-6, 0.7},
		{ZcdpFor(0.7, 1e-6), 1e-6, 0.7},
	}
	for _, c := range cases {
		got := c.e.EpsAt(c.delta)
		if !(got == c.want || relErr(got, c.want) < 1e-9) {
			t.Errorf("%v.EpsAt(%g) = %g, want %g", c.e, c.delta, got, c.want)
		}
	}
	if !math.IsNaN(Pure(1).EpsAt(-1)) {
		t.Error("EpsAt(−1) is not NaN")
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	in := []Event{Pure(0.1), BoundedRange(0.1), Approx(0.2, 1e-7), ZcdpFor(0.3, 1e-6), {Mechanism: "fedrep", Kind: GDP, Mu: 0.4}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"Kind":"zcdp"`) {
		t.Errorf("kind not spelled out: %s", b)
	}
	var out []Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if in[i] != out[i] {
			t.Errorf("round trip %d: %+v → %+v", i, in[i], out[i])
		}
	}
	var e Event
	if err := json.Unmarshal([]byte(`{"Kind":"2","Rho":0.5}`), &e); err != nil || e.Kind != ZCDP {
		t.Errorf("numeric kind: %+v, %v", e, err)
	}
	if err := json.Unmarshal([]byte(`{"Kind":"rdp"}`), &e); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range []Kind{PureDP, ApproxDP, ZCDP, GDP} {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
}

// TestBoundedRangePrice: an ε-bounded-range event costs ε²/8 under the
// zcdp accountant (a quarter of a general pure ε event's ε²/2), ε under
// basic composition and the pure price under gdp; a pure event's JSON
// is that of earlier versions, so stored ledgers replay unchanged.
func TestBoundedRangePrice(t *testing.T) {
	const eps = 0.3
	br, pure := BoundedRange(eps), Pure(eps)
	if got, want := br.rho(), eps*eps/8; got != want {
		t.Errorf("bounded-range ρ = %v, want ε²/8 = %v", got, want)
	}
	if got, want := pure.rho(), eps*eps/2; got != want {
		t.Errorf("pure ρ = %v, want ε²/2 = %v", got, want)
	}
	if got, want := ModeZCDP.Pricing(br), fmt.Sprintf("zCDP filter ρ=%.4g", eps*eps/8); got != want {
		t.Errorf("zcdp pricing %q, want %q", got, want)
	}
	if got, want := ModeGDP.Pricing(br), ModeGDP.Pricing(pure); got != want {
		t.Errorf("gdp pricing %q, want the pure event's %q", got, want)
	}
	if br.EpsAt(1e-9) != eps {
		t.Errorf("EpsAt = %v, want ε", br.EpsAt(1e-9))
	}
	b, err := json.Marshal(pure)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "BoundedRange") {
		t.Errorf("a pure event's JSON names BoundedRange: %s", b)
	}
	// Composed: 16 bounded-range events cost what 4 pure ones cost.
	for _, m := range []Mode{ModeZCDP, ModeBasic} {
		a16, a4 := &totals{}, &totals{}
		for i := 0; i < 16; i++ {
			a16.add(br, m)
		}
		for i := 0; i < 4; i++ {
			a4.add(pure, m)
		}
		c16, c4 := m.cost(a16, 1e-6), m.cost(a4, 1e-6)
		switch m {
		case ModeZCDP:
			if math.Abs(c16.Eps-c4.Eps) > 1e-12 {
				t.Errorf("zcdp: 16 bounded-range ε=%v cost %v, 4 pure ε=%v cost %v", eps, c16, eps, c4)
			}
		case ModeBasic:
			if math.Abs(c16.Eps-16*eps) > 1e-12 {
				t.Errorf("basic: 16 bounded-range ε=%v cost %v, want ε=%v", eps, c16, 16*eps)
			}
		}
	}
}
