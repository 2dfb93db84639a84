package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// dataset add --from-synth: the owner registers a stored private_synthesize
// release as a PUBLIC dataset, with no new charge; calls on it charge
// nothing (Charged: false), its handle and %datasets say where it came
// from, a notebook reads its rows (the release's replay rows) freely, and
// the ledger still verifies. Every refusal leaves the registry as it was.
func TestDatasetAddFromSynth(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var b strings.Builder
	b.WriteString("age,region\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,%s\n", 20+i%60, []string{"north", "south", "mars"}[i%3])
	}
	src := writeCSV(t, dir, "people.csv", b.String())
	if code, _, errs := runCLI("dataset", "add", "people", "--state", state, "--from", src, "--eps", "5", "--delta", "1e-5",
		"--bounds", "age=0:120", "--categories", "region=north,south"); code != 0 {
		t.Fatalf("dataset add: %d %s", code, errs)
	}
	script := writeCSV(t, dir, "syn.pn", `ds := dataset("people")
syn := private_synthesize(ds, cols=[]string{"region", "age"}, eps=1, delta=1e-6, rows=200, bins=4, name="share")
c := private_count(ds, eps=0.1, delta=1e-6, name="count")
fmt.Print(syn.CSV())
`)
	code, synCSV, errs := runCLI("run", "--state", state, script)
	if code != 0 {
		t.Fatalf("run: %d %s", code, errs)
	}
	charges := func() int {
		st, err := ledger.Open(state)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s, err := st.Status("people")
		if err != nil {
			t.Fatal(err)
		}
		return s.Charges
	}
	before := charges()

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no release", []string{"--from-synth", "people/nosuch"}, 1, `no release named "nosuch"`},
		{"not a synthetic table", []string{"--from-synth", "people/count"}, 1, "not a synthetic table"},
		{"no dataset", []string{"--from-synth", "ghost/share"}, 1, `dataset "ghost"`},
		{"bad form", []string{"--from-synth", "people"}, 2, "DATASET/RELEASE"},
		{"a budget", []string{"--from-synth", "people/share", "--eps", "1", "--delta", "1e-6"}, 2, "charge nothing"},
		{"another source", []string{"--from-synth", "people/share", "--from", src}, 2, "source of its own"},
		{"bounds", []string{"--from-synth", "people/share", "--bounds", "age=0:1"}, 2, "from the release"},
	} {
		args := append([]string{"dataset", "add", "pub", "--state", state}, tc.args...)
		if code, _, errs := runCLI(args...); code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d %q, want %d and %q", tc.name, code, errs, tc.code, tc.want)
		}
	}
	code, out, errs := runCLI("dataset", "add", "pub", "--state", state, "--from-synth", "people/share")
	if code != 0 || !strings.Contains(out, `registered PUBLIC dataset "pub"`) || !strings.Contains(norm(out), `PUBLIC synthetic rows of release "share" of dataset "people"`) {
		t.Fatalf("dataset add --from-synth: %d %q %s", code, out, errs)
	}
	// The same name again, and a public dataset as an origin, are refused.
	if code, _, errs := runCLI("dataset", "add", "pub", "--state", state, "--from-synth", "people/share"); code != 1 || !strings.Contains(errs, "already registered") {
		t.Errorf("second registration: %d %s", code, errs)
	}
	if code, _, errs := runCLI("dataset", "add", "pub2", "--state", state, "--from-synth", "pub/share"); code != 1 || !strings.Contains(errs, "itself public") {
		t.Errorf("public origin: %d %s", code, errs)
	}
	if n := charges(); n != before {
		t.Errorf("people has %d charges after the registration, want %d (no new charge)", n, before)
	}
	if code, out, errs := runCLI("ledger", "verify", "--state", state); code != 0 {
		t.Fatalf("ledger verify: %d %s %s", code, out, errs)
	}
	if code, out, errs := runCLI("dataset", "show", "pub", "--state", state); code != 0 || !strings.Contains(out, "PUBLIC") || !strings.Contains(out, "people") {
		t.Errorf("dataset show pub: %d %q %s: want it to say PUBLIC and its origin", code, out, errs)
	}
	use := writeCSV(t, dir, "use.pn", `pub := dataset("pub")
fmt.Println(strings.Contains(pub.String(), "PUBLIC synthetic data sampled from release \"share\" of dataset \"people\""))
c := private_count(pub, eps=1)
fmt.Println(c.Receipt.Charged)
q := private_sql("SELECT region, COUNT(*) AS n FROM pub GROUP BY region", eps=1)
fmt.Println(q.Receipt.Charged, len(q.Rows))
t := pub.Table()
fmt.Println(len(t.Rows), t.Columns)
e := t.Query("SELECT COUNT(*) AS n FROM pub WHERE region = 'north'")
fmt.Println(e.Rows[0][0])
fmt.Print(t.CSV())
`)
	code, out, errs = runCLI("run", "--state", state, use)
	if code != 0 {
		t.Fatalf("run on pub: %d %s", code, errs)
	}
	lines := strings.SplitN(out, "\n", 6)
	if len(lines) < 6 || lines[0] != "true" || lines[1] != "false" || lines[2] != "false 2" || lines[3] != "200 [age region]" {
		t.Fatalf("run on pub: %q", out)
	}
	// The public rows are the release's replay rows (columns reordered:
	// numeric first), and the exact count is theirs.
	north := strings.Count(synCSV, "\nnorth,")
	if lines[4] != fmt.Sprint(north) {
		t.Errorf("exact north count %s, want %d", lines[4], north)
	}
	if want := reorder(synCSV); lines[5] != want {
		t.Errorf("public rows differ from the release's:\n%.200s\nwant\n%.200s", lines[5], want)
	}
	if n := charges(); n != before {
		t.Errorf("people has %d charges after calls on pub, want %d", n, before)
	}
}

// reorder turns region,age CSV lines into age,region ones.
func reorder(csv string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(csv, "\n"), "\n") {
		r, a, _ := strings.Cut(l, ",")
		b.WriteString(a + "," + r + "\n")
	}
	return b.String()
}
