package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeSummary prints the table of verdicts, the failures with what to do
// about them, and the totals.
func writeSummary(w io.Writer, results []*Result, total time.Duration) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFILE\tRESULT\tKILLED BY (package, tests)\tSECONDS")
	counts := map[Status]int{}
	for _, r := range results {
		counts[r.Status]++
		file := r.Mutant.File
		if r.Line > 0 {
			file = fmt.Sprintf("%s:%d", file, r.Line)
		}
		by := "-"
		if r.Status == StatusKilled {
			by = r.By
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\n", r.Mutant.ID, file, r.Status, by, r.Seconds)
	}
	tw.Flush()

	var failed []*Result
	for _, r := range results {
		if r.Status != StatusKilled {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n%d mutant(s) not killed:\n", len(failed))
		for _, r := range failed {
			fmt.Fprintf(w, "  %s %s (%s, list line %d): %s\n", r.Status, r.Mutant.ID, r.Mutant.File, r.Mutant.Line, r.By)
			if r.Status == StatusSurvived {
				var specs []string
				for _, s := range r.Mutant.Tests {
					specs = append(specs, s.String())
				}
				fmt.Fprintf(w, "      ran: %s\n      a test of this property is missing or too weak\n", strings.Join(specs, "; "))
			}
		}
	}
	var parts []string
	for _, s := range []Status{StatusKilled, StatusSurvived, StatusRotten, StatusBroken, StatusNoTests, StatusBaseline, StatusError} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(string(s))))
		}
	}
	fmt.Fprintf(w, "\n%d mutants: %s; total time %s\n", len(results), strings.Join(parts, ", "), total.Round(time.Second))
}
