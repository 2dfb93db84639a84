package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ledger export --csv writes one row per record with the cost split into
// its measure and parameters; the rows read back as CSV and agree with the
// JSON export.
func TestLedgerExportCSV(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := writeCSV(t, dir, "d.csv", "a,b\n1,2\n3,4\n5,6\n")
	for _, name := range []string{"d", "typo"} {
		if code, _, errs := runCLI("dataset", "add", name, "--state", state, "--csv", src, "--eps", "5", "--delta", "1e-6", "--clip", "10"); code != 0 {
			t.Fatalf("add: %d %s", code, errs)
		}
	}
	script := writeCSV(t, dir, "a.pn", "c := private_count(dataset(\"d\"), eps=0.5, delta=1e-6)\nfmt.Println(c.Value > -1e9)\n")
	if code, out, errs := runCLI("run", "--state", state, script); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI("dataset", "rm", "typo", "--state", state); code != 0 {
		t.Fatalf("rm: %d %s", code, errs)
	}
	code, out, errs := runCLI("ledger", "export", "--csv", "--state", state)
	if code != 0 {
		t.Fatalf("export --csv: %d %s", code, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("export --csv is not CSV: %v\n%s", err, out)
	}
	if strings.Join(recs[0], ",") != strings.Join(ledgerCSVHeader, ",") || len(recs) != 5 {
		t.Fatalf("header %v and %d rows, want %v and 1+4", recs[0], len(recs), ledgerCSVHeader)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	var doc struct {
		Records []struct {
			ID    int64  `json:"id"`
			Kind  string `json:"kind"`
			Hash  string `json:"hash"`
			Event *struct {
				Kind       string
				Eps, Delta float64
			} `json:"event"`
		} `json:"records"`
	}
	_, js, _ := runCLI("ledger", "export", "--json", "--state", state)
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Records) != 4 {
		t.Fatalf("export --json: %v (%d records)", err, len(doc.Records))
	}
	wantKinds := []string{"register", "register", "charge", "remove"}
	for i, r := range recs[1:] {
		j := doc.Records[i]
		if r[col["id"]] != strconv.FormatInt(j.ID, 10) || r[col["kind"]] != wantKinds[i] || r[col["kind"]] != j.Kind || r[col["hash"]] != j.Hash || !json.Valid([]byte(r[col["params"]])) {
			t.Errorf("row %d: %v; JSON record %+v", i+1, r, j)
		}
		if j.Event == nil {
			if r[col["measure"]] != "" || r[col["eps"]] != "" {
				t.Errorf("row %d (%s) has a cost: %v", i+1, r[col["kind"]], r)
			}
			continue
		}
		if r[col["measure"]] != j.Event.Kind || r[col["eps"]] != strconv.FormatFloat(j.Event.Eps, 'g', -1, 64) || r[col["delta"]] != "1e-06" {
			t.Errorf("row %d: cost %v, JSON %+v", i+1, r, *j.Event)
		}
	}
	if code, _, errs := runCLI("ledger", "export", "--csv", "--json", "--state", state); code != 2 || !strings.Contains(errs, "give --json or --csv, not both") {
		t.Errorf("--csv --json: %d %q", code, errs)
	}
}
