package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
)

// TestServeSQL: private_sql over FROM p1.people runs on a real server
// process (its ledger charged, a named replay free) and its table shows,
// writes CSV and gives intervals as the same query's table on a local
// copy of the dataset; an unknown dataset on the server and an unknown
// server are ArgumentErrors about FROM, before any charge.
func TestServeSQL(t *testing.T) {
	testtier.Integration(t)
	dir, tls := newServeDir(t)
	var b strings.Builder
	b.WriteString("age,income,region\n")
	for i := range 300 {
		fmt.Fprintf(&b, "%d,%d,%s\n", 20+i%60, 1000*(i%50), []string{"north", "south", "mars"}[i%3])
	}
	csv := writeCSV(t, dir, "people.csv", b.String())
	add := func(state string) {
		if code, _, errs := runCLI("dataset", "add", "people", "--from", csv, "--bounds", "age=0:120", "--categories", "region=north,south",
			"--eps", "10", "--delta", "1e-5", "--clip", "100000", "--state", state); code != 0 {
			t.Fatalf("dataset add: %s", errs)
		}
	}
	server, local := filepath.Join(dir, "p1"), filepath.Join(dir, "local")
	add(server)
	add(local)
	srv := startServe(t, server, tls, "127.0.0.1:0")
	const body = `r := private_sql(%q, eps=1, name="by_region")
fmt.Print(r.CSV())
lo, hi := r.IntervalOf("north", "avg_income", 0.95)
v := r.Get("north", "avg_income")
fmt.Println(lo <= v && v <= hi, r.Receipt.Dataset, r.Receipt.Replayed)
show(r)
show(private_sql(%[1]q, eps=0.5, dry_run=true))
`
	const query = "SELECT region, COUNT(*) AS n, AVG(income, 0, 50000) AS avg_income FROM %speople GROUP BY region"
	run := func(state, from string, extra ...string) (string, string, int) {
		script := writeCSV(t, t.TempDir(), "sql.pn", fmt.Sprintf(body, fmt.Sprintf(query, from)))
		var out, errb bytes.Buffer
		code := runScript(append([]string{script, "--state", state}, extra...), nil, &out, &errb)
		return out.String(), errb.String(), code
	}
	remote := []string{"--servers", "p1=" + srv.addr, "--tls-dir", tls}
	got, errs, code := run(t.TempDir(), "p1.", remote...)
	if code != 0 {
		t.Fatalf("remote: exit %d\n%s\n%s", code, got, errs)
	}
	want, errs, code := run(local, "")
	if code != 0 {
		t.Fatalf("local: exit %d\n%s\n%s", code, want, errs)
	}
	// The noise differs; the shape of every output does not.
	shape := func(out string) []string {
		var s []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "privacy receipt:") {
				// A server's receipt does not say what one more call
				// would fit there; the rest of it is the same.
				l, _, _ = strings.Cut(l, " (one more call alone")
				l, _, _ = strings.Cut(l, ";")
			}
			f := strings.FieldsFunc(l, func(r rune) bool { return r == ',' || r == ' ' || r == '|' })
			var words []string
			for _, w := range f {
				if strings.ContainsAny(w, "0123456789") {
					w = "#"
				}
				words = append(words, w)
			}
			s = append(s, strings.Join(words, " "))
		}
		return s
	}
	if g, w := shape(got), shape(want); strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("remote output\n%s\nlocal output\n%s", got, want)
	}
	if !strings.Contains(got, "dry run") || !strings.Contains(got, "true people false") || !strings.HasPrefix(got, "region,n,n ±95%,avg_income,avg_income ±95%\nnorth,") {
		t.Errorf("remote output:\n%s", got)
	}
	again, errs, code := run(t.TempDir(), "p1.", remote...)
	if code != 0 || !strings.Contains(again, "true people true") || strings.Split(again, "\n")[1] != strings.Split(got, "\n")[1] {
		t.Errorf("replay: exit %d\n%s\n%s\nfirst:\n%s", code, again, errs, got)
	}
	_, ledger, _ := runCLI("ledger", "show", "--dataset", "people", "--state", server)
	if n := recordRows(ledger) - 1; n != 1 {
		t.Errorf("server ledger: %d charges after a query and its replay, want 1:\n%s", n, ledger)
	}
	for _, c := range []struct{ from, want string }{
		{"p1.no", `ArgumentError: line 1: private_sql: FROM p1.no: no dataset "no" is registered on this server`},
		{"p9.people", `ArgumentError: line 1: private_sql: FROM p9.people: server "p9": no server is named "p9"`},
	} {
		script := writeCSV(t, t.TempDir(), "bad.pn", fmt.Sprintf("r := private_sql(%q, eps=1)\n", "SELECT COUNT(*) FROM "+c.from))
		var out, errb bytes.Buffer
		code := runScript(append([]string{script, "--state", t.TempDir()}, remote...), nil, &out, &errb)
		if code != exitError || !strings.Contains(errb.String(), c.want) {
			t.Errorf("FROM %s: exit %d, %q; want %q", c.from, code, errb.String(), c.want)
		}
	}
	// The cell's pre-check prices a literal query on a server as it
	// prices other remote calls (the server's budget is the server's to
	// check): in a budget block, at least what its (ε, δ) costs, so a
	// cell whose block cannot hold it is refused before anything runs.
	script := writeCSV(t, t.TempDir(), "block.pn", fmt.Sprintf("budget eps=0.5 {\n    r := private_sql(%q, eps=1)\n}\n",
		"SELECT COUNT(*) FROM p1.people"))
	var out, errb bytes.Buffer
	code = runScript(append([]string{script, "--state", t.TempDir()}, remote...), nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "BudgetExceeded: cell refused before running (nothing ran)") {
		t.Errorf("over-budget block: exit %d, %q; want a refusal before the cell runs", code, errb.String())
	}
	_, ledger, _ = runCLI("ledger", "show", "--dataset", "people", "--state", server)
	if n := recordRows(ledger) - 1; n != 1 {
		t.Errorf("server ledger after refusals: %d charges, want 1", n)
	}
}
