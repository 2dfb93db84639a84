package runtime

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// private_synthesize from cells on a snapshot: a public table of the
// asked rows, categorical values from the domain (or "other"), numeric
// values bin midpoints within the bounds, explored with Go code at no
// further cost, one charge; CSV() and download give every row.
func TestSynthesizeEndToEnd(t *testing.T) {
	seedNoise(t, 41)
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	s := newSession(t, dir)
	out := s.ok(`ds := dataset("people")
syn := private_synthesize(ds, cols=[]string{"region", "age", "income"}, eps=1, delta=1e-6, rows=500, bins=4)
north := 0
bad := 0
for _, r := range syn.Rows {
	if r[0].(string) == "north" {
		north++
	}
	switch r[0].(string) {
	case "north", "south", "other":
	default:
		bad++
	}
	age := r[1].(float64)
	if age != 15 && age != 45 && age != 75 && age != 105 {
		bad++
	}
}
fmt.Println(len(syn.Rows), syn.Columns, bad, north > 0, syn.Receipt.Mechanism)
fmt.Println(strings.Count(syn.CSV(), "\n"))`)
	lines := strings.Split(out, "\n")
	if lines[0] != "500 [region age income] 0 true synth/mst" || lines[1] != "501" {
		t.Errorf("synthetic table: %q", out)
	}
	if st := status(t, dir, "people"); st.Charges != 1 {
		t.Errorf("%d charges, want 1", st.Charges)
	}
	res, o := s.run(`download(syn, "syn.csv")`)
	if res.Error != nil || len(o.disp) != 1 {
		t.Fatalf("download: %+v, %d displays", res.Error, len(o.disp))
	}
	h, _ := o.disp[0].Data["text/html"].(string)
	m := dataURI.FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("download: no data URI in %q", h)
	}
	raw, err := base64.StdEncoding.DecodeString(m[3])
	if err != nil || !strings.HasPrefix(string(raw), "region,age,income\n") || strings.Count(string(raw), "\n") != 501 {
		t.Errorf("download body: %.80q (%v)", raw, err)
	}
	if st := status(t, dir, "people"); st.Charges != 1 {
		t.Errorf("%d charges after exploring and downloading, want 1", st.Charges)
	}
}

// Dry runs charge nothing; a named call replays the same table without a
// new charge; rows= defaults to the public n or 10000; the pre-check
// refuses a cell the budget cannot pay before anything runs.
func TestSynthesizeDryRunReplayPrecheck(t *testing.T) {
	seedNoise(t, 42)
	dir := t.TempDir()
	registerLine(t, dir, accounting.Budget{Eps: 3, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("line")`)
	out := s.ok(`d := private_synthesize(ds, cols=[]string{"x1", "x2"}, eps=1, delta=1e-6, dry_run=true)
fmt.Println(d.Rows == nil, d.Receipt.DryRun)
fmt.Println(d)`)
	if !strings.HasPrefix(out, "true true\n") || !strings.Contains(out, "synth/mst") {
		t.Errorf("dry run: %q", out)
	}
	if st := status(t, dir, "line"); st.Charges != 0 {
		t.Fatalf("a dry run charged %d times", st.Charges)
	}
	out = s.ok(`a := private_synthesize(ds, cols=[]string{"x1", "x2", "lab"}, eps=1, delta=1e-6, name="syn")
b := private_synthesize(ds, cols=[]string{"x1", "x2", "lab"}, eps=1, delta=1e-6, name="syn")
same := len(a.Rows) == len(b.Rows)
for i := range a.Rows {
	for j := range a.Rows[i] {
		if a.Rows[i][j] != b.Rows[i][j] {
			same = false
		}
	}
}
fmt.Println(len(a.Rows), same, a.Receipt.Replayed, b.Receipt.Replayed)`)
	if out != "10000 true false true\n" {
		t.Errorf("named replay: %q", out)
	}
	if st := status(t, dir, "line"); st.Charges != 1 {
		t.Errorf("%d charges after a named call and its replay, want 1", st.Charges)
	}
	if res, _ := s.fails(`private_synthesize(ds, cols=[]string{"x1", "x2"}, eps=1, delta=1e-6, name="syn")`, NameArgumentError); !strings.Contains(res.Error.Value, "syn") {
		t.Errorf("same name, other parameters: %s", res.Error.Value)
	}
	res, o := s.run(`fmt.Println("side effect")
m := private_synthesize(ds, cols=[]string{"x1", "x2"}, eps=5, delta=1e-6)`)
	if res.Error == nil || res.Error.Name != NameBudgetExceeded || o.stdout() != "" {
		t.Errorf("over budget: %+v, output %q; want BudgetExceeded before the cell runs", res.Error, o.stdout())
	}
	if st := status(t, dir, "line"); st.Charges != 1 {
		t.Errorf("%d charges after the refused cell, want 1", st.Charges)
	}
}

// Refusals come before the charge, from public facts, and name the fix.
func TestSynthesizeRefusals(t *testing.T) {
	dir := t.TempDir()
	registerRegions(t, dir, "people", 300, false, accounting.ReplaceOne)
	registerRegions(t, dir, "users", 300, true, accounting.ReplaceOne)
	registerLine(t, dir, accounting.Budget{Eps: 100, Delta: 1e-3}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("people")`)
	for _, c := range []struct{ cell, want string }{
		{`private_synthesize(ds, cols=[]string{"age"}, eps=1, delta=1e-6)`, "2 to 64 columns"},
		{`private_synthesize(ds, cols=[]string{"age", "nope"}, eps=1, delta=1e-6)`, `no column "nope"`},
		{`private_synthesize(ds, cols=[]string{"age", "age"}, eps=1, delta=1e-6)`, "listed twice"},
		{`private_synthesize(ds, cols=[]string{"age", "region"}, eps=1, delta=0)`, "delta"},
		{`private_synthesize(ds, cols=[]string{"age", "region"}, eps=1, delta=1e-6, bins=0)`, "bins=0"},
		{`private_synthesize(dataset("line"), cols=[]string{"x1", "x2", "y", "lab"}, eps=1, delta=1e-6, bins=1024)`, "2^22 cells"},
		{`private_synthesize(ds, cols=[]string{"age", "region"}, eps=1, delta=1e-6, rows=-1)`, "rows=-1"},
		{`private_synthesize(dataset("users"), cols=[]string{"age", "region"}, eps=1, delta=1e-6)`, "row-level data only"},
		{`private_synthesize(dataset("line"), cols=[]string{"x1", "z"}, eps=1, delta=1e-6)`, "--bounds z=lo:hi"},
	} {
		res, out := s.fails("fmt.Println(\"ran\")\n"+c.cell, NameArgumentError)
		if !strings.Contains(res.Error.Value, c.want) || out.stdout() != "" {
			t.Errorf("%s: %s (output %q), want %q before the cell runs", c.cell, res.Error.Value, out.stdout(), c.want)
		}
	}
	for _, ds := range []string{"people", "users", "line"} {
		if st := status(t, dir, ds); st.Charges != 0 {
			t.Errorf("%s: refusals charged %d times", ds, st.Charges)
		}
	}
}

// The pre-check's cost table (costFor) is what the plan charges, under
// the zcdp and gdp accountants, and the registered relation sets the
// noise.
func TestSynthesizeCostForMatchesPlans(t *testing.T) {
	const fn = "private_synthesize"
	noiseText := map[string]string{}
	for _, nb := range []string{"replace-one", "add-remove"} {
		for _, acct := range []string{"zcdp", "gdp"} {
			sc := ledger.Schema{Name: "x", Columns: []string{"a", "b"}, D: 2, Clip: 1, Unit: "row", Neighbour: nb,
				Accountant: acct, Center: "none", Bounds: map[string][2]float64{"a": {0, 100}, "b": {0, 1}},
				Categorical: map[string][]string{"g": {"u", "v"}}}
			a, err := parseArgs(fn, []KW{newKW("cols", []string{"a", "b", "g"}), newKW("eps", 0.7), newKW("delta", 1e-6)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := planRT.exec.Plan(planRT.call(nil, fn, &source{name: "x", schema: sc}, a))
			if err != nil {
				t.Fatal(err)
			}
			noiseText[nb+" "+acct] = strings.ReplaceAll(p.Noise, nb, "NB")
			want, ok := costFor(fn, "", "", acct, 0.7, 1e-6)
			if !ok || !sameCost(p.Cost, want) {
				t.Errorf("%s (%s): plan %+v, costFor %+v (%v)", nb, acct, p.Cost, want, ok)
			}
		}
	}
	// rows= defaults to the owner's public n when declared (else 10000).
	for _, c := range []struct{ publicN, want int }{{0, 10000}, {777, 777}, {5000000, 1000000}} {
		sc := ledger.Schema{Name: "x", Columns: []string{"a", "b"}, D: 2, Clip: 1, Unit: "row", Neighbour: "add-remove",
			Accountant: "zcdp", Center: "none", Bounds: map[string][2]float64{"a": {0, 100}, "b": {0, 1}}, PublicN: c.publicN}
		a, err := parseArgs(fn, []KW{newKW("cols", []string{"a", "b"}), newKW("eps", 0.7), newKW("delta", 1e-6)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := planRT.exec.Plan(planRT.call(nil, fn, &source{name: "x", schema: sc}, a))
		if err != nil || p.Params["rows"] != c.want {
			t.Errorf("public n %d: rows %v (%v), want %d", c.publicN, p.Params["rows"], err, c.want)
		}
	}
	if noiseText["replace-one zcdp"] == noiseText["add-remove zcdp"] {
		t.Errorf("the same noise under both relations: %s", noiseText["add-remove zcdp"])
	}
}

// The table shows its first rows and receipt as text and HTML (names
// escaped), carries the receipt into the metadata and marshals to JSON.
func TestSynthesizeDisplay(t *testing.T) {
	r := &SynthTable{Columns: []string{"a<b", "x"}, Numeric: []bool{false, true},
		releaseBase: releaseBase{&Receipt{Mechanism: "synth/mst"}}}
	for i := range 12 {
		r.Rows = append(r.Rows, []any{"u", float64(i) + 0.5})
	}
	if s := r.String(); !strings.Contains(s, "a<b") || !strings.Contains(s, "9.5") || strings.Contains(s, "10.5") || !strings.Contains(s, "2 more rows") {
		t.Errorf("text: %q", s)
	}
	if h := r.HTML(); !strings.Contains(h, "a&lt;b") || strings.Contains(h, "a<b") || !strings.Contains(h, "2 more rows") {
		t.Errorf("HTML: %q", h)
	}
	if csv := r.CSV(); !strings.HasPrefix(csv, "a<b,x\nu,0.5\n") || strings.Count(csv, "\n") != 13 {
		t.Errorf("CSV: %q", csv)
	}
	if r.Metadata() == nil || r.Column("x") != 1 || r.Column("y") != -1 {
		t.Error("metadata or Column")
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"Columns":["a\u003cb","x"]`) {
		t.Errorf("JSON: %s (%v)", b, err)
	}
	var nilResult *SynthTable
	if nilResult.String() != noResult || nilResult.CSV() != "" {
		t.Error("a nil result does not show as no result")
	}
}
