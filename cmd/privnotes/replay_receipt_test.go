package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayReceiptNamesFilter: the receipt of a replayed named release
// says which filter priced the charge it replays, as the first run's did
// (before, its "priced by" row was empty), in the text and in the table.
func TestReplayReceiptNamesFilter(t *testing.T) {
	state, _ := registeredState(t)
	script := filepath.Join(t.TempDir(), "named.pn")
	src := `c := private_count(dataset("d"), eps=0.1, delta=1e-6, name="c")
fmt.Println(c.Receipt.Replayed, c.Receipt.Filter)
fmt.Println(strings.Contains(c.Receipt.HTML(), "<th style=\"text-align:left\">priced by</th><td style=\"text-align:left\">"+c.Receipt.Filter+"</td>"))
fmt.Println(strings.Contains(c.Receipt.String(), "; priced by "+c.Receipt.Filter))
`
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var runs []string
	for i := 0; i < 2; i++ {
		code, out, errs := runCLI("run", "--state", state, script)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", i+1, code, errs)
		}
		runs = append(runs, out)
	}
	if !strings.HasPrefix(runs[0], "false zCDP filter ρ=") || !strings.HasSuffix(runs[0], "\ntrue\ntrue\n") {
		t.Fatalf("first run: %q, want a charge priced by the zCDP filter, in the text and the table", runs[0])
	}
	if want := "true" + strings.TrimPrefix(runs[0], "false"); runs[1] != want {
		t.Errorf("replay: %q, want %q (the same filter, in the text and the table)", runs[1], want)
	}
}
