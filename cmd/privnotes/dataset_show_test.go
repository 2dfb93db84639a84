package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDatasetShowPublicSchema: dataset show prints the public schema an
// analyst needs (columns, kinds, bounds, domains, unit, clip, accountant,
// budget, remaining) and nothing derived from the data unless --owner
// asks; a missing state directory or dataset is refused clearly. Issue
// 29, item 8.
func TestDatasetShowPublicSchema(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	csv := filepath.Join(dir, "people.csv")
	var b strings.Builder
	b.WriteString("age,income,region,uid\n")
	for i := range 37 { // 37 rows of 13 users: counts no other number here equals
		b.WriteString(strings.Join([]string{strconv.Itoa(20 + i), strconv.Itoa(1000 * i), []string{"north", "south", "mars"}[i%3], "u" + strconv.Itoa(i%13)}, ",") + "\n")
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI("dataset", "add", "people", "--from", csv, "--eps", "4", "--delta", "1e-6", "--clip", "200000",
		"--bounds", "age=0:120,income=0:200000", "--categories", "region=north,south,east,west", "--unit", "user:uid", "--state", state); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	public := []string{
		"dataset people (public schema: what notebooks see)",
		"privacy unit user (column uid)",
		"clip norm 200000",
		"budget ε=4, δ=1e-06 (zcdp accountant)",
		"spent ε=0, δ=0 in 0 charges",
		"remaining ε=4, δ=1e-06",
		"COLUMN KIND PUBLIC",
		"age numeric bounds [0, 120]",
		"income numeric bounds [0, 200000]",
		`region categorical domain {north, south, east, west} (other values: "other")`,
	}
	counts := regexp.MustCompile(`\b(37|13)\b`)
	tests := []struct {
		name       string
		args       []string
		code       int
		want       []string
		counts     bool   // the output may show the row and user counts
		wantStderr string // for a refusal
	}{
		{"public", []string{"people"}, 0, public, false, ""},
		{"owner", []string{"people", "--owner"}, 0, append(public, "owner only (never shown to notebooks)", "rows 37", "users 13", "source "+csv), true, ""},
		{"unknown dataset", []string{"nope"}, 1, nil, false, `privnotes dataset show: no such dataset "nope"`},
		{"missing name", nil, 2, nil, false, "missing the dataset NAME"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append(append([]string{"dataset", "show"}, tc.args...), "--state", state)...)
			if code != tc.code || !strings.Contains(errs, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errs, tc.code, tc.wantStderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(norm(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if !tc.counts && counts.MatchString(out) {
				t.Errorf("the public schema shows a count:\n%s", out)
			}
		})
	}
	// A missing state directory: refused, and nothing created
	// (TestReadCommandsRefuseMissingState covers every reading command).
	typo := filepath.Join(dir, "typo")
	if code, out, errs := runCLI("dataset", "show", "people", "--state", typo); code != 1 || out != "" || !strings.Contains(errs, "no privnotes state in "+typo) {
		t.Errorf("missing state: exit %d, %q, %q", code, out, errs)
	}
}
