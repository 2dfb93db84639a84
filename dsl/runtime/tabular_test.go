package runtime

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// peopleTable has 200 rows: age i mod 100, income 10·i (beyond its bound
// of 1000 for i ≥ 100), and an unbounded score; with users, row i belongs
// to user i mod 50.
func peopleTable(users bool) *dataset.Table {
	t := &dataset.Table{Columns: []string{"age", "income", "score"}, Rows: 200}
	for i := range 200 {
		t.X = append(t.X, float64(i%100), 10*float64(i), float64(i)/7)
		if users {
			t.Users = append(t.Users, int32(i%50))
		}
	}
	if users {
		t.UserColumn, t.NumUsers = "uid", 50
	}
	return t
}

var peopleBounds = map[string][2]float64{"age": {0, 120}, "income": {0, 1000}}

func registerPeople(t *testing.T, dir, name string, users bool, nb accounting.Neighbour) {
	t.Helper()
	registerWith(t, dir, ledger.Registration{Name: name, Table: peopleTable(users), Budget: accounting.Budget{Eps: 1e5, Delta: 1e-3},
		Accountant: accounting.ModeBasic, Neighbour: nb, Clip: 1, Source: "test", Bounds: peopleBounds})
}

// Sums, histograms and quantiles from cells: values clamped to the
// public bounds, calibrated to the call, charged once each. ε is large so
// that the seeded releases are close to the exact values: the age sum's
// Laplace scale is about 0.12, the income sum's Gaussian std about 25 (ρ
// ≈ 800 for (1000, 10⁻⁶), sensitivity 1000; the tolerance is four of
// them), the histogram's std about 0.025, and the quantile's weights fall
// by e^25 per rank.
func TestTabularEndToEnd(t *testing.T) {
	seedNoise(t, 1)
	dir := t.TempDir()
	registerPeople(t, dir, "people", false, accounting.AddRemove)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
a := private_sum(ds, col="age", eps=1000)
in := private_sum(ds, col="income", eps=1000, delta=1e-6)
h := private_histogram(ds, col="age", bins=4, eps=1000, delta=1e-6)
m := private_quantile(ds, col="age", q=0.25, eps=50)
fmt.Println(a.Column, a.Value, in.Value)
fmt.Println(h.Keys, h.Counts, h.Get("[90, 120]"))
fmt.Println(m.Q, m.Value)
fmt.Println(a.Receipt.Mechanism, in.Receipt.Mechanism, h.Receipt.Mechanism, m.Receipt.Mechanism)`)
	var col string
	var age, income, q, med float64
	lines := strings.Split(out, "\n")
	if _, err := fmt.Sscan(lines[0], &col, &age, &income); err != nil || col != "age" || math.Abs(age-9900) > 2 || math.Abs(income-149500) > 100 {
		t.Errorf("sums: %q (want age ≈ 9900, income clamped ≈ 149500)", lines[0])
	}
	if lines[1] != "[[0, 30) [30, 60) [60, 90) [90, 120]] [60 60 60 20] 20" {
		t.Errorf("histogram: %q", lines[1])
	}
	// q·n = 50: the grid points with 50 ages ≤ them are [24, 25)
	if _, err := fmt.Sscan(lines[2], &q, &med); err != nil || q != 0.25 || med < 22 || med >= 27 {
		t.Errorf("quantile: %q, want a value near [24, 25)", lines[2])
	}
	if lines[3] != "sum/laplace sum/gaussian histogram/gaussian quantile/exponential" {
		t.Errorf("mechanisms: %q", lines[3])
	}
	st := status(t, dir, "people")
	if st.Charges != 4 {
		t.Errorf("%d charges, want 4", st.Charges)
	}
	verify(t, dir)
}

// On user-level data each user is one unit: a sum adds each user's mean,
// a histogram counts each user once (in the bin of their first row), a
// quantile ranks the users' means.
func TestTabularUserLevel(t *testing.T) {
	seedNoise(t, 2)
	dir := t.TempDir()
	registerPeople(t, dir, "users", true, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("users")
a := private_sum(ds, col="age", eps=1000)
h := private_histogram(ds, col="age", bins=2, eps=1000)
m := private_quantile(ds, col="age", eps=50)
fmt.Println(a.Value, h.Counts, m.Value)`)
	// user u has rows u, u+50, u+100, u+150: ages u, u+50, u, u+50, mean
	// u+25; the users' means sum to Σ(u+25) = 2475; first rows: ages
	// 0..49, all in [0, 60); the median of 25..74 lies in [49, 50).
	var sum, med float64
	var c0, c1 float64
	if _, err := fmt.Sscanf(out, "%g [%g %g] %g", &sum, &c0, &c1, &med); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if math.Abs(sum-2475) > 3 || c0 != 50 || c1 != 0 || med < 47 || med > 52 {
		t.Errorf("user-level: %q; want sum ≈ 2475, counts [50 0], median near 49.5", out)
	}
}

// private_histogram's max_groups=k on user-level data: each user counts in
// the first k distinct bins of their rows, the receipt names k and the
// noise grows with it; row-level data refuse k ≠ 1 before the charge.
func TestHistogramMaxGroups(t *testing.T) {
	seedNoise(t, 3)
	dir := t.TempDir()
	registerPeople(t, dir, "users", true, accounting.ReplaceOne)
	registerPeople(t, dir, "people", false, accounting.ReplaceOne)
	s := newSession(t, dir)
	// user u has ages u and u+50: both in [0, 60) for u < 10, one in each
	// bin for the other 40 users.
	out := s.ok(`ds := dataset("users")
h := private_histogram(ds, col="age", bins=2, max_groups=2, eps=1000)
fmt.Println(h.Counts, h.Receipt.Params["max_groups"], h.Receipt.NoiseScale)`)
	if !strings.HasPrefix(out, "[50 40] 2 ") || !strings.Contains(out, "ℓ1 sensitivity 4 under replace-one") {
		t.Errorf("max_groups=2: %q; want counts [50 40], max_groups 2, ℓ1 sensitivity 4", out)
	}
	before := status(t, dir, "people").Charges
	for _, c := range []struct{ cell, want string }{
		{`private_histogram(dataset("people"), col="age", bins=2, max_groups=2, eps=1)`, "max_groups=2 applies to user-level data"},
		{`private_histogram(dataset("users"), col="age", bins=2, max_groups=3, eps=1)`, `max_groups=3 must be an integer from 1 to 2, the number of keys of the histogram of "age"`},
	} {
		if res, _ := s.fails(c.cell, NameArgumentError); !strings.Contains(res.Error.Value, c.want) {
			t.Errorf("%s: %q, want %q", c.cell, res.Error.Value, c.want)
		}
	}
	if after := status(t, dir, "people").Charges; after != before {
		t.Errorf("refused calls charged: %d → %d", before, after)
	}
	if n := status(t, dir, "users").Charges; n != 1 {
		t.Errorf("users: %d charges, want the one histogram", n)
	}
	// completion and %help come from the function table
	if kw := s.rt.Keywords("private_histogram"); strings.Join(kw, ",") != "col,bins,max_groups,eps,delta,nonnegative,other,dry_run,name" {
		t.Errorf("Keywords: %v", kw)
	}
	if d, ok := s.rt.Doc("private_histogram"); !ok || !strings.Contains(d, "max_groups") {
		t.Errorf("Doc: %q", d)
	}
}

// Calls that cannot be planned are refused before the charge: a literal
// one before the cell runs (nothing of the cell runs), a computed one
// when it is reached; the message says what to do.
func TestTabularRefusals(t *testing.T) {
	dir := t.TempDir()
	registerPeople(t, dir, "people", false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")`)
	before := status(t, dir, "people").Charges
	for _, c := range []struct{ cell, want string }{
		{`fmt.Println("ran")
private_sum(ds, col="score", eps=1)`, "--bounds score=lo:hi"},
		{`fmt.Println("ran")
private_histogram(ds, col="age", eps=1)`, "give bins=N"},
		{`fmt.Println("ran")
private_quantile(ds, col="age", eps=1, delta=1e-6)`, "leave delta out"},
		{`fmt.Println("ran")
private_quantile(ds, col="age", q=1.5, eps=1)`, "strictly between 0 and 1"},
		{`fmt.Println("ran")
private_histogram(ds, col="zip", bins=3, eps=1)`, `no column "zip"; numeric columns: age, income, score`},
	} {
		res, out := s.fails(c.cell, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) || !strings.Contains(res.Error.Value, "cell refused before running") || out.stdout() != "" {
			t.Errorf("%s: %s (output %q)", c.cell, res.Error.Value, out.stdout())
		}
	}
	res, out := s.fails(`c := "score"
fmt.Println("ran")
private_sum(ds, col=c, eps=1)`, NameArgumentError)
	if !strings.Contains(res.Error.Value, "--bounds score=lo:hi") || out.stdout() != "ran\n" {
		t.Errorf("computed column: %s (output %q)", res.Error.Value, out.stdout())
	}
	res, _ = s.fails(`h := private_histogram(ds, col="age", bins=2, eps=1)
h.Get("[0, 50)")`, NameArgumentError)
	if !strings.Contains(res.Error.Value, `no key "[0, 50)" in this histogram of age; its keys are "[0, 60)", "[60, 120]"`) {
		t.Errorf("Get of an unknown key: %s", res.Error.Value)
	}
	if got := status(t, dir, "people").Charges; got != before+1 {
		t.Errorf("%d charges after the refusals and one histogram, want %d", got, before+1)
	}
}

// The pre-check's cost table is what the plans charge.
func TestTabularCostForMatchesPlans(t *testing.T) {
	for _, acct := range []string{"zcdp", "gdp"} {
		sc := ledger.Schema{Name: "x", Columns: []string{"age"}, D: 1, Clip: 1, Unit: "row", Neighbour: "replace-one",
			Accountant: acct, Center: "none", Bounds: map[string][2]float64{"age": {0, 100}}}
		for _, c := range []struct {
			fn  string
			kws []KW
		}{
			{"private_sum", []KW{newKW("col", "age")}},
			{"private_histogram", []KW{newKW("col", "age"), newKW("bins", 3)}},
			{"private_quantile", []KW{newKW("col", "age")}},
			{"private_count", nil},
			{"private_mean", []KW{newKW("columns", []string{"age"})}},
		} {
			for _, delta := range []float64{0, 1e-6} {
				if c.fn == "private_mean" && delta == 0 {
					continue // the row-vector mean refuses δ = 0, as does costFor
				}
				want, ok := costFor(c.fn, "", "", acct, 0.7, delta)
				a, err := parseArgs(c.fn, append(c.kws, newKW("eps", 0.7), newKW("delta", delta)))
				if err != nil {
					t.Fatal(err)
				}
				p, err := planRT.exec.Plan(planRT.call(nil, c.fn, &source{name: "x", schema: sc}, a))
				if c.fn == "private_quantile" && delta > 0 {
					if ok || err == nil {
						t.Errorf("%s with delta: costFor %v, plan %v; both must refuse", c.fn, ok, err)
					}
					continue
				}
				if err != nil || !ok || !sameCost(p.Cost, want) {
					t.Errorf("%s delta=%v (%s): plan %+v (%v), costFor %+v (%v)", c.fn, delta, acct, p, err, want, ok)
				}
			}
		}
	}
}

// Results show their values and receipt as text and HTML (names escaped),
// carry the receipt into the output metadata and marshal every released
// field to JSON.
func TestTabularDisplay(t *testing.T) {
	rc := &Receipt{Dataset: "people", Mechanism: "histogram/laplace", Eps: 1, Charged: true, Charge: release.Charge{LedgerID: 7}}
	keys := []string{"<b>north</b>", "south", "other"}
	h := &HistogramResult{Column: "re<gion>", Keys: keys, Counts: []float64{12, -1, 3}, releaseBase: releaseBase{rc}}
	if s := h.String(); !strings.Contains(s, "private histogram of re<gion> (3 keys)") || !strings.Contains(s, "south") || !strings.Contains(s, "ledger record 7") {
		t.Errorf("text: %s", s)
	}
	if s := h.HTML(); strings.Contains(s, "<b>north") || !strings.Contains(s, "&lt;b&gt;north") || !strings.Contains(s, "re&lt;gion&gt;") || !strings.Contains(s, "privnotes-receipt") {
		t.Errorf("HTML: %s", s)
	}
	sum := &SumResult{Value: 1234.5678, Column: "income", releaseBase: releaseBase{rc}}
	q := &QuantileResult{Column: "age", Q: 0.5, Value: 41.25, releaseBase: releaseBase{rc}}
	if s := sum.String(); !strings.HasPrefix(s, "private sum of income ≈ 1234.57\n") {
		t.Errorf("sum text: %s", s)
	}
	if s := q.String(); !strings.HasPrefix(s, "private median of age ≈ 41.25\n") || !strings.Contains(q.HTML(), "<b>41.25</b>") {
		t.Errorf("quantile text: %s", s)
	}
	if s := (&QuantileResult{Q: 0.9, Column: "age", releaseBase: releaseBase{rc}}).String(); !strings.HasPrefix(s, "private 0.9-quantile of age") {
		t.Errorf("quantile text: %s", s)
	}
	for _, r := range []interface{ Metadata() map[string]any }{h, sum, q} {
		if m, ok := r.Metadata()["privnotes"].(map[string]any); !ok || m["ledger_id"] != int64(7) {
			t.Errorf("%T metadata: %v", r, r.Metadata())
		}
	}
	for _, c := range []struct {
		v    any
		want []string
	}{
		{h, []string{`"Column":"re\u003cgion\u003e"`, `"Keys":["\u003cb\u003enorth\u003c/b\u003e","south","other"]`, `"Counts":[12,-1,3]`, `"Receipt":{`}},
		{sum, []string{`"Value":1234.5678`, `"Column":"income"`, `"Receipt":{`}},
		{q, []string{`"Q":0.5`, `"Value":41.25`, `"Column":"age"`, `"Receipt":{`}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%T JSON %s lacks %s", c.v, b, w)
			}
		}
	}
	// a long histogram is elided in the middle
	long := &HistogramResult{Column: "x", releaseBase: releaseBase{rc}}
	for i := range 200 {
		long.Keys = append(long.Keys, fmt.Sprint(i))
		long.Counts = append(long.Counts, float64(i))
	}
	if s := long.String(); !strings.Contains(s, "… (160 more keys)") || strings.Contains(s, "\n  100 ") {
		t.Errorf("long histogram text:\n%s", s)
	}
}

// plot_histogram renders a PNG of a histogram result and refuses others.
func TestPlotHistogram(t *testing.T) {
	seedNoise(t, 3)
	dir := t.TempDir()
	registerPeople(t, dir, "people", false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`h := private_histogram(dataset("people"), col="income", bins=12, eps=1)
p := plot_histogram(h, title="income")
fmt.Println(len(p.PNG()) > 1000, p)`)
	if !strings.HasPrefix(out, `true <plot "income"`) {
		t.Errorf("plot: %q", out)
	}
	res, _ := s.fails(`plot_histogram(3)`, NameArgumentError)
	if !strings.Contains(res.Error.Value, "want a result of private_histogram") {
		t.Errorf("plot of a non-histogram: %s", res.Error.Value)
	}
	// A release without by= has no keys to draw.
	res, _ = s.fails(`plot_histogram(private_sum(dataset("people"), col="age", eps=1))`, NameArgumentError)
	if !strings.Contains(res.Error.Value, "with by=") {
		t.Errorf("plot of an ungrouped sum: %s", res.Error.Value)
	}
}

// plot_histogram also draws grouped releases: one bar per public key,
// titled by the statistic, its column and the grouping column.
func TestPlotGroups(t *testing.T) {
	seedNoise(t, 4)
	dir := t.TempDir()
	registerRegions(t, dir, "regions", 60, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("regions")
c := private_count(ds, by="region", eps=1)
m := private_mean(ds, col="age", by="region", eps=1, delta=1e-6)
pc, pm := plot_histogram(c), plot_histogram(m.GroupResult, title="means")
fmt.Println(len(pc.PNG()) > 1000, pc)
fmt.Println(len(pm.PNG()) > 1000, pm)`)
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], `true <plot "private count by region"`) || !strings.HasPrefix(lines[1], `true <plot "means"`) {
		t.Errorf("grouped plots: %q", out)
	}
}
