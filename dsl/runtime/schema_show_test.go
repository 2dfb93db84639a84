package runtime

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// counts matches the people table's row and user counts.
var counts = regexp.MustCompile(`\b(300|101)\b`)

// TestPublicSchemaShown: %datasets and the handle's displays (text and
// notebook HTML) show the public bounds of numeric columns and the
// categorical columns with their domains, which the next cell's sum or
// by= needs, and nothing derived from the data. Issue 29, item 8.
func TestPublicSchemaShown(t *testing.T) {
	dir := t.TempDir()
	registerSnapshot(t, dir, "people", peopleCSV(300),
		snapshot.Spec{Bounds: map[string][2]float64{"age": {0, 120}}, Categories: map[string][]string{"region": {"north", "south"}}, UserColumn: "uid"},
		ledger.Registration{Budget: accounting.Budget{Eps: 5, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1e5})
	breastCancer(t, dir, "plain", accounting.Budget{Eps: 1, Delta: 1e-6})
	s := newSession(t, dir)
	display := func(code, mime string) string {
		res, o := s.run(code)
		if res.Error != nil {
			t.Fatalf("%s: %s: %s", code, res.Error.Name, res.Error.Value)
		}
		var b strings.Builder
		for _, d := range o.disp {
			fmt.Fprint(&b, d.Data[mime])
		}
		if res.Value != nil {
			fmt.Fprint(&b, res.Value.Data[mime])
		}
		return b.String()
	}
	tests := []struct {
		name, code, mime string
		want             []string
	}{
		{"%datasets text", "%datasets", "text/plain", []string{
			"DATASET", "people age numeric bounds [0, 120]",
			`people region categorical domain {north, south} (other values: "other")`}},
		{"%datasets html", "%datasets", "text/html", []string{
			`<table class="privnotes-datasets-columns">`, "<td style=\"text-align:left\">bounds [0, 120]</td>",
			"domain {north, south}"}},
		{"handle text", `dataset("people")`, "text/plain", []string{
			"categorical=[region], bounds={age [0, 120]}, domains={region {north, south}})"}},
		{"handle html", `dataset("people")`, "text/html", []string{
			"numeric columns (public bounds in brackets): age [0, 120], income",
			"categorical column <b>region</b>: domain {north, south}"}},
		{"handle without bounds", `dataset("plain")`, "text/html", []string{
			"numeric columns (public bounds in brackets): c1, c2, c3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Runs of spaces (the text tables' alignment) count as one.
			out := strings.Join(strings.Fields(display(tc.code, tc.mime)), " ")
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s lacks %q:\n%s", tc.mime, w, out)
				}
			}
			// Public facts only: neither the 300 rows nor the 101 users.
			if counts.MatchString(out) {
				t.Errorf("%s shows a count:\n%s", tc.mime, out)
			}
		})
	}
}
