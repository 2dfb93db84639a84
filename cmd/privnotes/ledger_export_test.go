package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ledger export --csv writes one row per record, seal records included,
// with the cost split into its measure and parameters and a registration's
// schema in columns of its own (not one JSON cell); the rows read back as
// CSV and agree with the JSON export.
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
	if strings.Join(recs[0], ",") != strings.Join(ledgerCSVHeader, ",") || len(recs) != 6 {
		t.Fatalf("header %v and %d rows, want %v and 1+5", recs[0], len(recs), ledgerCSVHeader)
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
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Records) != 5 {
		t.Fatalf("export --json: %v (%d records)", err, len(doc.Records))
	}
	wantKinds := []string{"register", "register", "charge", "seal", "remove"}
	for i, r := range recs[1:] {
		j := doc.Records[i]
		if r[col["id"]] != strconv.FormatInt(j.ID, 10) || r[col["kind"]] != wantKinds[i] || r[col["kind"]] != j.Kind || r[col["hash"]] != j.Hash {
			t.Errorf("row %d: %v; JSON record %+v", i+1, r, j)
		}
		// A registration's schema is in readable columns, not JSON; a
		// charge's and a seal's parameters are JSON.
		switch j.Kind {
		case "register":
			if r[col["params"]] != "" || r[col["budget_eps"]] != "5" || r[col["budget_delta"]] != "1e-06" || r[col["accountant"]] == "" ||
				r[col["unit"]] != "row" || r[col["columns"]] != "a b" || len(r[col["data_hash"]]) != 64 {
				t.Errorf("register row %d: %v", i+1, r)
			}
		case "remove":
			if r[col["params"]] != "" || len(r[col["data_hash"]]) != 64 || r[col["data_hash"]] != recs[2][col["data_hash"]] {
				t.Errorf("remove row %d: %v (typo registered with data hash %s)", i+1, r, recs[2][col["data_hash"]])
			}
		default:
			if !json.Valid([]byte(r[col["params"]])) || r[col["budget_eps"]] != "" || r[col["data_hash"]] != "" {
				t.Errorf("row %d (%s): %v", i+1, j.Kind, r)
			}
		}
		for _, c := range r {
			if strings.Contains(c, `"schema"`) {
				t.Errorf("row %d has the schema's JSON in a cell: %q", i+1, c)
			}
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

// ledger show lists every record of the chain, seal records included as
// rows of their own ("seal of record N", no cost), so that its ids run
// without gaps up to the head ledger verify states: a hidden seal looked
// like a lost record.
func TestLedgerShowListsSeals(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := writeCSV(t, dir, "d.csv", "a,b\n1,2\n3,4\n5,6\n")
	if code, _, errs := runCLI("dataset", "add", "d", "--state", state, "--csv", src, "--eps", "5", "--delta", "1e-6", "--clip", "10"); code != 0 {
		t.Fatalf("add: %d %s", code, errs)
	}
	script := writeCSV(t, dir, "a.pn", "for i := 0; i < 2; i++ {\n\tc := private_count(dataset(\"d\"), eps=0.5, delta=1e-6)\n\t_ = c\n}\n")
	if code, out, errs := runCLI("run", "--state", state, script); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	code, out, errs := runCLI("ledger", "show", "--state", state)
	if code != 0 {
		t.Fatalf("ledger show: %d %s", code, errs)
	}
	var ids []string
	var seals []string
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "head:" {
			break
		}
		ids = append(ids, f[0])
		if strings.Contains(line, "seal of record") {
			seals = append(seals, f[0])
		}
	}
	if strings.Join(ids, " ") != "1 2 3 4 5" || strings.Join(seals, " ") != "3 5" || !strings.Contains(out, "seal of record 2") || !strings.Contains(out, "head: record 5,") {
		t.Errorf("ledger show lists records %v (seals %v), want 1 to 5 (seals 3 and 5):\n%s", ids, seals, out)
	}
	if strings.Contains(out, "not listed") {
		t.Errorf("ledger show still says records are left out:\n%s", out)
	}
	if code, v, _ := runCLI("ledger", "verify", "--state", state); code != 0 || !strings.Contains(v, "ledger OK: 5 records") {
		t.Errorf("ledger verify: %d %s", code, v)
	}
}
