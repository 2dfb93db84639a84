package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestTabularNotebookReruns: running notebooks/tabular.ipynb a second time
// (Run All, or make demo again on a kept state) spends nothing: each of its
// private calls is named, so the second run replays the stored releases.
// Before, every run spent ε=2.7 of wine's 6. The cells run in a piped REPL
// session, one after the other, as a kernel runs them.
func TestTabularNotebookReruns(t *testing.T) {
	raw, err := os.ReadFile("../../notebooks/tabular.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Type   string   `json:"cell_type"`
			Source []string `json:"source"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(raw, &nb); err != nil {
		t.Fatal(err)
	}
	var session strings.Builder
	for _, c := range nb.Cells {
		if c.Type == "code" {
			session.WriteString(strings.Join(c.Source, "") + "\n")
		}
	}
	state := t.TempDir()
	// As notebooks/scripts/register_datasets.sh registers it.
	if code, _, errs := runCLI("dataset", "add", "wine", "--state", state, "--from", "../../notebooks/data/wine.csv",
		"--categories", "cultivar=class_0,class_1,class_2",
		"--bounds", "alcohol=10:15,magnesium=60:170,proline=200:1800,color_intensity=0:14",
		"--eps", "6", "--delta", "1e-6", "--clip", "2000"); code != 0 {
		t.Fatal(errs)
	}
	var spent []string
	for run := 1; run <= 2; run++ {
		var out, errb strings.Builder
		if code := runRepl([]string{"--state", state, "--history", "off"}, strings.NewReader(session.String()), &out, &errb); code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out.String(), errb.String())
		}
		_, list, _ := runCLI("dataset", "list", "--state", state)
		spent = append(spent, norm(list))
	}
	if spent[0] != spent[1] || !strings.Contains(spent[0], "wine") {
		t.Errorf("a second run of tabular.ipynb spent budget:\nafter the first: %s\nafter the second: %s", spent[0], spent[1])
	}
}
