package runtime

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// regionCSV has rows = 3·m rows: age 20 + i mod 60, income 10·i, region
// north, south or mars (outside the domain {north, south}: "other") in
// turn and, with users, uid i mod 50 (each user has rows in all three
// regions when rows ≥ 150).
func regionCSV(rows int, users bool) string {
	var b strings.Builder
	b.WriteString("age,income,region")
	if users {
		b.WriteString(",uid")
	}
	b.WriteString("\n")
	for i := range rows {
		fmt.Fprintf(&b, "%d,%d,%s", 20+i%60, 10*i, []string{"north", "south", "mars"}[i%3])
		if users {
			fmt.Fprintf(&b, ",u%d", i%50)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func registerRegions(t *testing.T, dir, name string, rows int, users bool, nb accounting.Neighbour) {
	t.Helper()
	spec := snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}, "income": {0, 1000}}, Categories: map[string][]string{"region": {"north", "south"}}}
	if users {
		spec.UserColumn = "uid"
	}
	registerSnapshot(t, dir, name, regionCSV(rows, users), spec,
		ledger.Registration{Budget: accounting.Budget{Eps: 1e6, Delta: 1e-3}, Accountant: accounting.ModeBasic, Neighbour: nb, Clip: 1})
}

// Grouped counts, sums and means, and the mean of one column, from cells
// on row-level data: one value per key of the public domain (north,
// south, other), values clamped to the bounds, charged once each. ε is
// large so that seeded releases are near the exact values: the counts'
// Laplace scale is 0.002 (exact after rounding), the age sums' 0.24, the
// income sums' Gaussian std about 10 (ρ ≈ 1600 for (2000, 10⁻⁶)); the
// tolerances are four of them.
func TestGroupEndToEnd(t *testing.T) {
	seedNoise(t, 1)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	// exact values
	var ages, incomes, counts [3]float64
	var ageAll float64
	for i := range 300 {
		g := i % 3
		counts[g]++
		ages[g] += float64(20 + i%60)
		incomes[g] += math.Min(10*float64(i), 1000)
		ageAll += float64(20 + i%60)
	}
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
c := private_count(ds, by="region", eps=1000)
a := private_sum(ds, col="age", by="region", eps=1000)
in := private_sum(ds, col="income", by="region", eps=2000, delta=1e-6)
m := private_mean(ds, col="age", by="region", eps=1000, delta=1e-6)
one := private_mean(ds, col="age", eps=1000, delta=1e-6)
fmt.Println(c.By, c.Keys, c.Values, c.Get("other"), c.Value)
fmt.Println(a.Values, a.Value, a.Column, a.Get("south"))
fmt.Println(in.Values)
fmt.Println(m.Keys, m.Values, m.Get("north"), m.Columns)
fmt.Println(one.Columns, one.Values, one.Get("age"))
fmt.Println(c.Receipt.Mechanism, a.Receipt.Mechanism, in.Receipt.Mechanism, m.Receipt.Mechanism, one.Receipt.Mechanism)`)
	lines := strings.Split(out, "\n")
	if want := "region [north south other] [100 100 100] 100 300"; lines[0] != want {
		t.Errorf("counts: %q, want %q", lines[0], want)
	}
	var a [3]float64
	var total, south float64
	var col string
	if _, err := fmt.Sscanf(lines[1], "[%g %g %g] %g %s %g", &a[0], &a[1], &a[2], &total, &col, &south); err != nil || col != "age" {
		t.Fatalf("sums %q: %v", lines[1], err)
	}
	for g := range 3 {
		if math.Abs(a[g]-ages[g]) > 1 {
			t.Errorf("sum of age in group %d: %v, want about %v", g, a[g], ages[g])
		}
	}
	if south != a[1] || math.Abs(total-(a[0]+a[1]+a[2])) > 1e-9 {
		t.Errorf("Get or Value: %q", lines[1])
	}
	var in [3]float64
	if _, err := fmt.Sscanf(lines[2], "[%g %g %g]", &in[0], &in[1], &in[2]); err != nil {
		t.Fatal(err)
	}
	for g := range 3 {
		if math.Abs(in[g]-incomes[g]) > 40 {
			t.Errorf("sum of income (clamped) in group %d: %v, want about %v", g, in[g], incomes[g])
		}
	}
	var m [3]float64
	var north float64
	if _, err := fmt.Sscanf(lines[3], "[north south other] [%g %g %g] %g [age]", &m[0], &m[1], &m[2], &north); err != nil {
		t.Fatalf("means %q: %v", lines[3], err)
	}
	for g := range 3 {
		if want := ages[g] / counts[g]; math.Abs(m[g]-want) > 0.1 {
			t.Errorf("mean of age in group %d: %v, want about %v", g, m[g], want)
		}
	}
	var one, oneGet float64
	if _, err := fmt.Sscanf(lines[4], "[age] [%g] %g", &one, &oneGet); err != nil || math.Abs(one-ageAll/300) > 0.05 || one != oneGet {
		t.Errorf("one column's mean %q (%v), want about %v", lines[4], err, ageAll/300)
	}
	if want := "count-by/laplace sum-by/laplace sum-by/gaussian mean-by/gaussian bounded-mean/gaussian"; lines[5] != want {
		t.Errorf("mechanisms %q, want %q", lines[5], want)
	}
	if st := status(t, dir, "people"); st.Charges != 5 {
		t.Errorf("%d charges, want 5", st.Charges)
	}
	verify(t, dir)
}

// On user-level data each user counts once in each of their first
// max_groups groups in row order, adding the mean of their clamped values
// there. Users u0..u49 have rows i ≡ u (mod 50), i < 300: regions i mod 3
// run through all three, the first being u mod 3.
func TestGroupUserLevel(t *testing.T) {
	seedNoise(t, 2)
	dir := t.TempDir()
	registerRegions(t, dir, "users", 300, true, accounting.AddRemove)
	type term struct{ sum, n float64 }
	exact := func(k int) (counts, sums [3]float64) {
		per := map[int]map[int]*term{}
		order := map[int][]int{}
		for i := range 300 {
			u, g := i%50, i%3
			if per[u] == nil {
				per[u] = map[int]*term{}
			}
			tm, ok := per[u][g]
			if !ok {
				if len(order[u]) >= k {
					continue
				}
				tm = &term{}
				per[u][g] = tm
				order[u] = append(order[u], g)
			}
			tm.sum += float64(20 + i%60)
			tm.n++
		}
		for _, gs := range per {
			for g, tm := range gs {
				counts[g]++
				sums[g] += tm.sum / tm.n
			}
		}
		return counts, sums
	}
	s := newSession(t, dir)
	for _, k := range []int{1, 2, 3} {
		out := s.ok(fmt.Sprintf(`ds := dataset("users")
c := private_count(ds, by="region", max_groups=%d, eps=1000)
a := private_sum(ds, col="age", by="region", max_groups=%d, eps=1000)
fmt.Println(c.Values, a.Values)`, k, k))
		var c, a [3]float64
		if _, err := fmt.Sscanf(out, "[%g %g %g] [%g %g %g]", &c[0], &c[1], &c[2], &a[0], &a[1], &a[2]); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		wc, ws := exact(k)
		for g := range 3 {
			// Laplace scales: counts k/1000, sums 120·k/1000
			if c[g] != wc[g] || math.Abs(a[g]-ws[g]) > 2*float64(k) {
				t.Errorf("max_groups=%d group %d: count %v sum %v, want %v and about %v", k, g, c[g], a[g], wc[g], ws[g])
			}
		}
	}
}

// Grouped calls that cannot be planned are refused before the charge,
// saying what to do.
func TestGroupRefusals(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 30, false, accounting.ReplaceOne)
	registerRegions(t, dir, "users", 30, true, accounting.ReplaceOne)
	registerPeople(t, dir, "blob", false, accounting.ReplaceOne)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")
us := dataset("users")
blob := dataset("blob")`)
	before := status(t, dir, "people").Charges + status(t, dir, "users").Charges + status(t, dir, "blob").Charges
	for _, c := range []struct{ call, want string }{
		{`private_count(ds, by="age", eps=1)`, `column "age" is numeric; by= groups by a categorical column, whose public domain gives the keys (categorical columns: region). To count or sum over ranges of a numeric column, use private_histogram(ds, col="age", bins=N)`},
		{`private_sum(ds, col="income", by="zip", eps=1)`, `no column "zip" to group by; categorical columns: region`},
		{`private_count(blob, by="age", eps=1)`, `dataset "blob" has no categorical column: the data owner declares one at registration`},
		{`private_count(ds, by="region", max_groups=2, eps=1)`, `max_groups=2 applies to user-level data; dataset "people" is row-level`},
		{`private_count(us, by="region", max_groups=4, eps=1)`, `max_groups=4 must be an integer from 1 to 3, the number of keys of "region"`},
		{`private_count(us, by="region", max_groups=0, eps=1)`, `max_groups=0 must be an integer from 1 to 3`},
		{`private_count(us, max_groups=2, eps=1)`, `max_groups=2 needs by="column"`},
		{`private_mean(ds, by="region", eps=1, delta=1e-6)`, `by= averages one column per group: give col=`},
		{`private_mean(ds, col="age", columns=[]string{"age"}, eps=1, delta=1e-6)`, `give col= (one column clamped to its public bounds) or columns= (the row-vector form, rows clipped to a norm), not both`},
		{`private_mean(ds, col="age", by="region", clip=2, eps=1, delta=1e-6)`, `clip= belongs to the row-vector form`},
		{`private_mean(blob, col="score", eps=1, delta=1e-6)`, `--bounds score=lo:hi`},
		{`private_sum(ds, col="region", by="region", eps=1)`, `column "region" is categorical`},
		{`private_sum(ds, col="age", by="region", eps=1e-12)`, `too large relative to the sensitivity`},
	} {
		// A []string of string literals is a literal for the pre-check
		// too, so every call here is refused before the cell runs.
		res, out := s.fails("fmt.Println(\"ran\")\n"+c.call, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) || !strings.Contains(res.Error.Value, "cell refused before running") || out.stdout() != "" {
			t.Errorf("%s: %s (output %q)", c.call, res.Error.Value, out.stdout())
		}
	}
	res, _ := s.fails(`c := private_count(ds, by="region", eps=1)
c.Get("east")`, NameArgumentError)
	if !strings.Contains(res.Error.Value, `no key "east" in this count by region; its keys are "north", "south", "other"`) {
		t.Errorf("Get of an unknown key: %s", res.Error.Value)
	}
	res, _ = s.fails(`c := private_count(ds, eps=1)
c.Get("north")`, NameArgumentError)
	if !strings.Contains(res.Error.Value, `this result is not grouped`) {
		t.Errorf("Get without by: %s", res.Error.Value)
	}
	after := status(t, dir, "people").Charges + status(t, dir, "users").Charges + status(t, dir, "blob").Charges
	if after != before+2 {
		t.Errorf("%d charges after the refusals and two counts, want %d", after, before+2)
	}
}

// The pre-check's cost table prices the grouped forms and the one-column
// mean (pure ε without delta) exactly as their plans charge them.
func TestGroupCostForMatchesPlans(t *testing.T) {
	for _, acct := range []string{"zcdp", "gdp"} {
		for _, unit := range []string{"row", "user"} {
			sc := ledger.Schema{Name: "x", Columns: []string{"age"}, D: 1, Clip: 1, Unit: unit, Neighbour: "replace-one",
				Accountant: acct, Center: "none", Bounds: map[string][2]float64{"age": {0, 100}},
				Categorical: map[string][]string{"region": {"north", "south"}}}
			mg := 1
			if unit == "user" {
				mg = 3
			}
			for _, c := range []struct {
				fn  string
				kws []KW
			}{
				{"private_count", []KW{newKW("by", "region"), newKW("max_groups", mg)}},
				{"private_sum", []KW{newKW("col", "age"), newKW("by", "region"), newKW("max_groups", mg)}},
				{"private_mean", []KW{newKW("col", "age"), newKW("by", "region"), newKW("max_groups", mg)}},
				{"private_mean", []KW{newKW("col", "age")}},
			} {
				for _, delta := range []float64{0, 1e-6} {
					method := ""
					if c.fn == "private_mean" {
						method = "col" // the pre-check's name of the col= form
					}
					want, ok := costFor(c.fn, method, "", acct, 0.7, delta)
					a, err := parseArgs(c.fn, append(c.kws, newKW("eps", 0.7), newKW("delta", delta)))
					if err != nil {
						t.Fatal(err)
					}
					p, err := planRT.exec.Plan(planRT.call(nil, c.fn, &source{name: "x", schema: sc}, a))
					if err != nil || !ok || !sameCost(p.Cost, want) {
						t.Errorf("%s %v delta=%v on %s data (%s): plan %+v (%v), costFor %+v (%v)", c.fn, c.kws, delta, unit, acct, p, err, want, ok)
					}
					if gauss := delta > 0; gauss && (p.Cost.Kind == accounting.GDP) != (acct == "gdp") {
						t.Errorf("%s delta=%v on a %s dataset charges a %v event", c.fn, delta, acct, p.Cost.Kind)
					}
				}
			}
		}
	}
}

// Grouped results show a table of keys and values and the receipt as
// text and HTML (names escaped), through the Count, Sum and Mean results
// that embed them, carry the receipt into the metadata and marshal every
// released field to JSON.
func TestGroupDisplay(t *testing.T) {
	rc := &Receipt{Dataset: "people", Mechanism: "count-by/laplace", Eps: 1, Charged: true, Charge: release.Charge{LedgerID: 9}}
	keys := []string{"<b>north</b>", "south", "other"}
	g := &GroupResult{Stat: "count", By: "re<gion>", Keys: keys, Values: []float64{12, -1, 3}, releaseBase: releaseBase{rc}}
	c := &CountResult{Value: 14, releaseBase: releaseBase{rc}, GroupResult: g}
	if s := c.String(); !strings.Contains(s, "private count by re<gion> (3 keys):") || !strings.Contains(s, "south") || !strings.Contains(s, "        -1") || !strings.Contains(s, "ledger record 9") {
		t.Errorf("text:\n%s", s)
	}
	if s := c.HTML(); strings.Contains(s, "<b>north") || !strings.Contains(s, "&lt;b&gt;north") || !strings.Contains(s, "re&lt;gion&gt;") || !strings.Contains(s, "privnotes-receipt") {
		t.Errorf("HTML: %s", s)
	}
	gs := &GroupResult{Stat: "sum", Column: "income", By: "region", Keys: keys, Values: []float64{1234.5678, 0, -2}, releaseBase: releaseBase{rc}}
	sum := &SumResult{Value: 1232.5678, Column: "income", releaseBase: releaseBase{rc}, GroupResult: gs}
	if s := sum.String(); !strings.HasPrefix(s, "private sum of income by region (3 keys):\n") || !strings.Contains(s, "1234.57") {
		t.Errorf("sum text:\n%s", s)
	}
	gm := &GroupResult{Stat: "mean", Column: "age", By: "region", Keys: keys, Values: []float64{41.5, 0, 7}, releaseBase: releaseBase{rc}}
	mean := &MeanResult{Columns: []string{"age"}, Values: gm.Values, releaseBase: releaseBase{rc}, GroupResult: gm}
	if s := mean.String(); !strings.HasPrefix(s, "private mean of age by region (3 keys):\n") || mean.Get("other") != 7 || !strings.Contains(mean.HTML(), "<caption>private mean of <code>age</code> by <code>region</code></caption>") {
		t.Errorf("mean: %s", s)
	}
	for _, r := range []interface{ Metadata() map[string]any }{c, sum, mean, g} {
		if m, ok := r.Metadata()["privnotes"].(map[string]any); !ok || m["ledger_id"] != int64(9) {
			t.Errorf("%T metadata: %v", r, r.Metadata())
		}
	}
	for _, x := range []struct {
		v    any
		want []string
	}{
		{c, []string{`"Value":14`, `"By":"re\u003cgion\u003e"`, `"Keys":["\u003cb\u003enorth\u003c/b\u003e","south","other"]`, `"Values":[12,-1,3]`, `"Stat":"count"`, `"Receipt":{`}},
		{sum, []string{`"Value":1232.5678`, `"Column":"income"`, `"Values":[1234.5678,0,-2]`, `"By":"region"`}},
		{mean, []string{`"Columns":["age"]`, `"Values":[41.5,0,7]`, `"Keys":[`, `"Stat":"mean"`}},
		{&CountResult{Value: 3, releaseBase: releaseBase{rc}}, []string{`{"Value":3,"Receipt":{`}},
	} {
		b, err := json.Marshal(x.v)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range x.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%T JSON %s lacks %s", x.v, b, w)
			}
		}
	}
	if strings.Contains(fmt.Sprint(mustJSON(t, &CountResult{Value: 3, releaseBase: releaseBase{rc}})), `"Keys"`) {
		t.Error("an ungrouped count marshals group fields")
	}
	// many keys are elided in the middle
	long := &GroupResult{Stat: "count", By: "x", releaseBase: releaseBase{rc}}
	for i := range 200 {
		long.Keys = append(long.Keys, fmt.Sprint(i))
		long.Values = append(long.Values, float64(i))
	}
	if s := long.String(); !strings.Contains(s, "… (160 more keys)") || strings.Contains(s, "\n  100 ") {
		t.Errorf("long text:\n%s", s)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Grouped releases run on subsets like on registered datasets: the keys
// are the domain's whatever the subset holds, the receipt names the
// subset, and on replace-one data the sensitivities are replace-one's
// (which cover a row entering or leaving the subset).
func TestGroupOnSubset(t *testing.T) {
	seedNoise(t, 3)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
north := filter(ds, col="region", op="==", value="north")
c := private_count(north, by="region", eps=1000)
m := private_mean(north, col="age", eps=1000, delta=1e-6)
fmt.Println(c.Keys, c.Values, m.Columns, len(m.Values))
fmt.Println(c.Receipt.Dataset, c.Receipt.NoiseScale)`)
	lines := strings.Split(out, "\n")
	if lines[0] != "[north south other] [100 0 0] [age] 1" {
		t.Errorf("subset: %q", lines[0])
	}
	if !strings.Contains(lines[1], "region") || !strings.Contains(lines[1], "ℓ1 sensitivity 2 under replace-one") {
		t.Errorf("receipt: %q", lines[1])
	}
}
