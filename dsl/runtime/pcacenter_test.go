package runtime

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
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

// A centred result's mean carries per-coordinate intervals from the noisy
// sums and count it was computed from: MeanInterval holds the data's mean
// (at a level where a miss is a one-in-a-million event, as the noise is
// unseeded), a named replay gives the same intervals (the parts are
// stored with the release), the text and HTML state the 95 % half-widths,
// a dry run states the parts' half-widths, and an uncentred result or a
// coordinate out of range is refused with an ArgumentError.
func TestPCACenterMeanInterval(t *testing.T) {
	dir := t.TempDir()
	tab := offsetTable(4000, 4, 11)
	register(t, dir, "off", tab, accounting.Budget{Eps: 40, Delta: 1e-4}, accounting.ModeZCDP)
	// The rows' norms are far below the clip 6, so the clipped rows'
	// mean is the data's.
	mean := make([]float64, 4)
	for i := range tab.Rows {
		for j := range 4 {
			mean[j] += tab.X[i*4+j] / float64(tab.Rows)
		}
	}
	s := newSession(t, dir)
	s.ok(`ds := dataset("off")`)
	out := s.ok(`c := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", iters=4, clip=6, center=true, name="c")
c2 := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", iters=4, clip=6, center=true, name="c")
for j := 1; j <= 4; j++ {
	lo, hi := c.MeanInterval(j, 0.999999)
	lo95, hi95 := c.MeanInterval(j, 0.95)
	rlo, rhi := c2.MeanInterval(j, 0.95)
	fmt.Println(lo, hi, lo95, c.Center[j-1], hi95, rlo == lo95 && rhi == hi95)
}
fmt.Println(c)
fmt.Println(c.HTML())
d := private_pca(ds, k=1, eps=1, delta=1e-6, method="gauss", clip=6, center=true, dry_run=true)
fmt.Println(d)`)
	lines := strings.Split(out, "\n")
	for j := range 4 {
		var lo, hi, lo95, v, hi95 float64
		var same bool
		if _, err := fmt.Sscan(lines[j], &lo, &hi, &lo95, &v, &hi95, &same); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if !(lo <= mean[j] && mean[j] <= hi) || !(lo <= lo95 && lo95 < hi95 && hi95 <= hi) || !same {
			t.Errorf("coordinate %d: mean %v, 99.9999 %% [%v, %v], 95 %% [%v, %v], replay equal %v", j+1, mean[j], lo, hi, lo95, hi95, same)
		}
		if !(lo95 <= v+1e-9 && v <= hi95+1e-9) || hi95-lo95 > 0.5 {
			t.Errorf("coordinate %d: released %v, 95 %% [%v, %v]: want a narrow interval around it", j+1, v, lo95, hi95)
		}
	}
	for _, want := range []string{"the mean's 95 % intervals, each within: ± ", "(MeanInterval)", "<th>the mean ± at 95 %</th>",
		"each coordinate of the centring mean has a 95 % interval from its noisy sum (± "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct{ cell, want string }{
		{`u := private_pca(ds, k=1, eps=1, delta=1e-6, method="npm", iters=4, clip=6)
u.MeanInterval(1, 0.95)`, "not centred"},
		{`c.MeanInterval(5, 0.95)`, "coordinates 1..4"},
		{`c.MeanInterval(1, 1)`, "level=1"},
	} {
		res, o := s.run(c.cell)
		if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: got %v, want an ArgumentError containing %q:\n%s", c.cell, res.Error, c.want, o.all(res))
		}
	}
}

// A PCA result's CSV keeps its loadings where they were (a column of
// names, then component_1..k) and adds the intervals: the centred mean
// with its 95 % interval as three columns on the data columns' rows, and
// rows named eigenvalue and explained_variance_ratio with their _lo95 and
// _hi95 rows under the components; every row is as wide as the header. A
// release without an interval model leaves those cells empty; a result
// without eigenvalues or column names has the loadings only.
func TestPCACSV(t *testing.T) {
	comps := mat.NewDense(3, 2, []float64{0.6, 0, 0.8, 0, 0, 1})
	models := map[string]any{
		release.ErrorParam:       release.ErrorModel{Kind: release.ErrSpectral, Scale: 0.5, Dim: 3},
		release.CenterErrorParam: release.ErrorModel{Kind: release.ErrRatio, Noise: release.ErrGaussian, Scale: 2, CountScale: 2, Lo: -1, Hi: 1, Unit: 3},
	}
	result := func(params map[string]any, center bool, values bool, names []string) *PCAResult {
		r := &PCAResult{Components: comps, Columns: names, releaseBase: releaseBase{&Receipt{Params: params}}}
		if values {
			r.Values, r.TotalVariance = []float64{9, 4}, 15
			r.ExplainedVarianceRatio = []float64{0.6, 4.0 / 15}
		}
		if center {
			// Sums of 100 rows in units of the clip 3: means 0.5, −0.25, 0.
			r.Center, r.centerSums, r.centerCount = []float64{1.5, -0.75, 0}, []float64{50, -25, 0}, 100
		}
		return r
	}
	names := []string{"a", "b", "c"}
	read := func(r *PCAResult) [][]string {
		t.Helper()
		rows, ok := csvRows(r)
		if !ok {
			t.Fatal("no CSV")
		}
		back, err := csv.NewReader(strings.NewReader(csvText(rows))).ReadAll()
		if err != nil {
			t.Fatalf("%v:\n%s", err, csvText(rows))
		}
		return back
	}
	num := func(s string) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("cell %q: %v", s, err)
		}
		return v
	}
	const head = "column,component_1,component_2"
	for _, tc := range []struct {
		name                 string
		r                    *PCAResult
		header               string
		named                []string // the first cells of the rows under the loadings
		intervals, meanCells bool
	}{
		{"centred gauss", result(models, true, true, names), head + ",mean,mean_lo95,mean_hi95",
			[]string{"eigenvalue", "eigenvalue_lo95", "eigenvalue_hi95", "explained_variance_ratio", "explained_variance_ratio_lo95", "explained_variance_ratio_hi95"}, true, true},
		{"uncentred gauss", result(models, false, true, names), head,
			[]string{"eigenvalue", "eigenvalue_lo95", "eigenvalue_hi95", "explained_variance_ratio", "explained_variance_ratio_lo95", "explained_variance_ratio_hi95"}, true, false},
		{"stored before intervals", result(nil, true, true, names), head + ",mean,mean_lo95,mean_hi95",
			[]string{"eigenvalue", "eigenvalue_lo95", "eigenvalue_hi95", "explained_variance_ratio", "explained_variance_ratio_lo95", "explained_variance_ratio_hi95"}, false, true},
		{"directions only", result(models, false, false, names), head, nil, false, false},
		{"a matrix dataset", result(models, false, true, nil), "component_1,component_2", nil, false, false},
	} {
		rows := read(tc.r)
		if got := strings.Join(rows[0], ","); got != tc.header {
			t.Errorf("%s: header %s, want %s", tc.name, got, tc.header)
			continue
		}
		if len(rows) != 4+len(tc.named) {
			t.Errorf("%s: %d rows, want %d: %v", tc.name, len(rows), 4+len(tc.named), rows)
			continue
		}
		off := 0
		if tc.r.Columns != nil {
			off = 1
		}
		for i := range 3 {
			if off == 1 && rows[i+1][0] != names[i] || num(rows[i+1][off]) != comps.At(i, 0) || num(rows[i+1][off+1]) != comps.At(i, 1) {
				t.Errorf("%s: loadings row %d: %v", tc.name, i, rows[i+1])
			}
			if !tc.meanCells {
				continue
			}
			m, lo, hi := rows[i+1][3], rows[i+1][4], rows[i+1][5]
			if num(m) != tc.r.Center[i] {
				t.Errorf("%s: mean cell %s, want %v", tc.name, m, tc.r.Center[i])
			}
			if !tc.intervals {
				if lo != "" || hi != "" {
					t.Errorf("%s: mean interval %q, %q without a model", tc.name, lo, hi)
				}
				continue
			}
			if wlo, whi := tc.r.MeanInterval(i+1, 0.95); num(lo) != wlo || num(hi) != whi || !(wlo < tc.r.Center[i] && tc.r.Center[i] < whi) {
				t.Errorf("%s: mean %s in [%s, %s], MeanInterval [%v, %v]", tc.name, m, lo, hi, wlo, whi)
			}
		}
		for k, name := range tc.named {
			row := rows[4+k]
			if row[0] != name || len(row) != len(rows[0]) {
				t.Errorf("%s: row %v, want %s as wide as the header", tc.name, row, name)
				continue
			}
			for j, cell := range row[3:] {
				if cell != "" {
					t.Errorf("%s: %s has %q in mean column %d", tc.name, name, cell, j)
				}
			}
		}
		for k := 0; k < len(tc.named); k += 3 {
			for j := range 2 {
				v, lo, hi := rows[4+k][1+j], rows[5+k][1+j], rows[6+k][1+j]
				if !tc.intervals {
					if lo != "" || hi != "" {
						t.Errorf("%s: %s %d has [%q, %q] without a model", tc.name, tc.named[k], j+1, lo, hi)
					}
					continue
				}
				wlo, whi := tc.r.ValueInterval(j+1, 0.95)
				if k == 3 {
					wlo, whi = tc.r.RatioInterval(j+1, 0.95)
				}
				if num(lo) != wlo || num(hi) != whi || !(num(lo) <= num(v) && num(v) <= num(hi)) {
					t.Errorf("%s: %s %d: %s in [%s, %s], want [%v, %v]", tc.name, tc.named[k], j+1, v, lo, hi, wlo, whi)
				}
			}
		}
	}
}
