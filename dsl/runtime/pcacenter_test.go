package runtime

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// offsetTable is n rows μ + g·e2 + 0.2·z with μ = 3·e1 (seeded): the
// uncentred second moment's top direction is the mean's (x1), the
// covariance's is x2.
func offsetTable(n, d int, seed uint64) *dataset.Table {
	r := rand.New(rand.NewPCG(seed, 28))
	t := &dataset.Table{Rows: n}
	for j := range d {
		t.Columns = append(t.Columns, fmt.Sprintf("x%d", j+1))
	}
	for range n {
		g := r.NormFloat64()
		for j := range d {
			v := 0.2 * r.NormFloat64()
			switch j {
			case 0:
				v += 3
			case 1:
				v += g
			}
			t.X = append(t.X, v)
		}
	}
	return t
}

// private_pca(center=true) from a cell: the centred estimate finds x2
// where the uncentred one finds the mean's x1; the result shows the
// private mean and (gauss) the explained-variance ratios; the receipt
// states the mean's share; the call charges one event, the uncentred
// call's, which the pre-check prices alike; a named call replays and a
// dry run charges nothing; every unsupported combination is refused
// before the charge.
func TestPCACenter(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "off", offsetTable(10000, 4, 5), accounting.Budget{Eps: 40, Delta: 1e-4}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("off")`)
	out := s.ok(`c := private_pca(ds, k=1, eps=2, delta=1e-6, method="gauss", clip=6, center=true, name="centred")
u := private_pca(ds, k=1, eps=2, delta=1e-6, method="gauss", clip=6)
fmt.Println(c.Component(1), u.Component(1))
fmt.Println(c.Center, c.ExplainedVarianceRatio, c.TotalVariance)
fmt.Println(c.Receipt.NoiseScale)
fmt.Println(c)`)
	t.Log(out)
	var c1, c2, u1, u2 float64
	var m1 float64
	var rest string
	if _, err := fmt.Sscanf(out, "[%g %g", &c1, &c2); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	i := strings.Index(out, "] [")
	if _, err := fmt.Sscanf(out[i+2:], "[%g %g", &u1, &u2); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if j := strings.Index(out, "\n["); j < 0 {
		t.Fatalf("no mean in %s", out)
	} else if _, err := fmt.Sscanf(out[j+1:], "[%g %s", &m1, &rest); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if math.Abs(c2) < 0.9 || math.Abs(u1) < 0.9 {
		t.Errorf("centred PC1 %v, %v…, uncentred %v, %v…: want x2 centred and the mean's x1 uncentred", c1, c2, u1, u2)
	}
	if math.Abs(m1-3) > 0.2 {
		t.Errorf("private mean's x1 %v, want ≈ 3", m1)
	}
	for _, want := range []string{"centred: a private mean first, 0.1 of the budget", "explained-variance ratio (of the private total variance estimate", "centred by the private mean: ["} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if st := status(t, dir, "off"); st.Charges != 2 {
		t.Errorf("two calls charged %d times", st.Charges)
	}
	// The named call replays, the dry run charges nothing; npm and
	// adaptive (and auto, which picks gauss here) run centred too.
	s.ok(`c2 := private_pca(ds, k=1, eps=2, delta=1e-6, method="gauss", clip=6, center=true, name="centred")
if fmt.Sprint(c2.Center) != fmt.Sprint(c.Center) || !c2.Receipt.Replayed { panic("no replay") }
d := private_pca(ds, k=1, eps=2, delta=1e-6, method="npm", iters=4, clip=6, center=true, center_share=0.2, dry_run=true)
if d.Receipt.Charged { panic("dry run charged") }`)
	if st := status(t, dir, "off"); st.Charges != 2 {
		t.Errorf("a replay and a dry run charged: %d charges, want 2", st.Charges)
	}
	out = s.ok(`n := private_pca(ds, k=1, eps=2, delta=1e-6, method="npm", iters=6, clip=6, center=true, center_share=0.2)
a := private_pca(ds, k=1, eps=2, delta=1e-6, method="adaptive", iters=6, clip=6, center=true)
o := private_pca(ds, k=1, eps=2, delta=1e-6, clip=6, center=true)
fmt.Println(n.Component(1)[1], a.Component(1)[1], o.Component(1)[1], n.ExplainedVarianceRatio == nil, o.ExplainedVarianceRatio != nil)`)
	var pn, pa, po float64
	var nilNPM, ratioAuto bool
	if _, err := fmt.Sscanf(out, "%g %g %g %t %t", &pn, &pa, &po, &nilNPM, &ratioAuto); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if math.Abs(pn) < 0.9 || math.Abs(pa) < 0.9 || math.Abs(po) < 0.9 || !nilNPM || !ratioAuto {
		t.Errorf("centred npm, adaptive, auto: x2 loadings %v %v %v (want ≥ 0.9), npm ratio nil %v, auto ratio %v", pn, pa, po, nilNPM, ratioAuto)
	}
	for _, c := range []struct{ call, want string }{
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="dppca", center=true, pad=true)`, `available for methods "gauss", "npm" and "adaptive"`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="federated", center=true)`, `available for methods "gauss", "npm" and "adaptive"`},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, center_share=0.2)`, "applies with center=true only"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, center=true, center_share=0.7)`, "center share"},
		{`private_pca(ds, k=1, eps=0.5, delta=1e-6, center=true, calibration="paper")`, "calibration zcdp"},
		{`private_pca(ds, k=1, eps=1, delta=1e-6, method="adaptive", iters=4, gap="auto", center=true)`, `gap="auto"`},
	} {
		res, o := s.run("r := " + c.call)
		if res.Error == nil {
			t.Errorf("%s: ran, want a refusal", c.call)
			continue
		}
		if msg := res.Error.Value + o.all(res); !strings.Contains(msg, c.want) {
			t.Errorf("%s: %s %s, want a message containing %q", c.call, res.Error.Name, res.Error.Value, c.want)
		}
	}
	if st := status(t, dir, "off"); st.Charges != 5 {
		t.Errorf("refused calls charged: %d charges, want 5", st.Charges)
	}
	verify(t, dir)
}

// A centred call's plan charges exactly the uncentred call's event
// (costFor), under the zcdp and the gdp accountant, for every method that
// centres: the mean's share comes out of the same ρ (μ*²/2).
func TestPCACenterCost(t *testing.T) {
	for _, mode := range []string{"zcdp", "gdp"} {
		sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c", "d"}, D: 4, Clip: 1, Unit: "row",
			Neighbour: "replace-one", Accountant: mode, Center: "none"}
		for _, method := range []string{"auto", "npm", "adaptive", "gauss"} {
			for _, share := range []float64{0, 0.3} {
				a, err := parseArgs("private_pca", []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", method), newKW("iters", 4),
					newKW("center", true), newKW("center_share", share)})
				if method == "gauss" || method == "auto" {
					a, err = parseArgs("private_pca", []KW{newKW("k", 1), newKW("eps", 0.5), newKW("delta", 1e-6), newKW("method", method),
						newKW("center", true), newKW("center_share", share)})
				}
				if err != nil {
					t.Fatal(err)
				}
				p := planPCA(&source{name: "x", schema: sc}, a)
				want, ok := costFor("private_pca", method, "zcdp", mode, 0.5, 1e-6)
				if !ok || !sameCost(p.Cost, want) {
					t.Errorf("%s center=true share %v on %s: plan costs %+v, costFor %+v", method, share, mode, p.Cost, want)
				}
			}
		}
	}
}
