// Package benchrun runs privnotes' whole-workload benchmarks (`privnotes
// bench`): the workloads registered with mechanisms/bench, seeded noise on
// public synthetic data, summarised as a median table or one JSON object
// per run; the tabular workload (tabular.go), which times the data engine
// against DuckDB's own scan; and the --transport comparison of a federated
// call over data services on loopback against in-process members
// (transport.go).
//
// It sits beside the binary rather than under mechanisms/ because it needs
// the data engine (dsl/snapshot, cgo) and the data service: cmd/privnotes
// parses the subcommand's flags and calls Run or Transport.Run; importing
// this package registers the tabular workload.
package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/privnotes/privnotes/mechanisms/bench"
)

// Options are `privnotes bench`'s settings once its flags are parsed and
// checked.
type Options struct {
	Workload string // run only this workload; "" runs them all
	JSON     bool   // one JSON object per run instead of the median table
	Config   bench.Config
	// Dispatch runs a privnotes command line; the snapshot workload
	// registers its datasets through it, as the data owner does. Without
	// it that workload fails.
	Dispatch func(args []string, stdout, stderr io.Writer) int
}

// Run runs the workloads opts selects, writes their results to stdout and
// returns the command's exit status: 0, 1 if a workload failed (or was
// interrupted), 2 for an unknown workload. An interrupt stops the run
// after the workload in progress.
func Run(opts Options, stdout, stderr io.Writer) int {
	cfg := opts.Config
	dispatchCmd = opts.Dispatch
	defer func() { dispatchCmd = nil }()
	todo := bench.Workloads()
	if opts.Workload != "" {
		w, err := bench.Lookup(opts.Workload)
		if err != nil {
			fmt.Fprintln(stderr, "privnotes", err) // err reads "bench: unknown workload ..."
			return 2
		}
		todo = []bench.Workload{w}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	enc := json.NewEncoder(stdout)
	var all []bench.Row
	status := 0
	start := time.Now()
	for _, w := range todo {
		rows, err := w.Run(ctx, cfg)
		if opts.JSON {
			for _, r := range rows {
				if err := enc.Encode(jsonRow(r)); err != nil {
					fmt.Fprintln(stderr, "privnotes bench:", err)
					return 1
				}
			}
		}
		all = append(all, rows...)
		if err != nil {
			fmt.Fprintf(stderr, "privnotes bench: workload %s: %v\n", w.Name, err)
			status = 1
			if ctx.Err() != nil {
				break
			}
		}
	}
	if !opts.JSON && len(all) > 0 {
		printSummary(stdout, bench.Summarize(all))
		for _, w := range todo {
			if report := benchReports[w.Name]; report != nil {
				report(stdout, all)
			}
		}
		fmt.Fprintf(stdout, "\n%d runs in %.1fs (seeded noise, public synthetic data)\n", len(all), time.Since(start).Seconds())
	}
	return status
}

// Transport is a configured `privnotes bench --transport` comparison
// (transport.go).
type Transport struct{ cfg transportBench }

// NewTransport checks bench's flags for --transport and fills in the
// workload's defaults (0: not given).
func NewTransport(transport, workload string, providers, reps, n, d, k int) (*Transport, error) {
	cfg, err := newTransportBench(transport, workload, providers, reps, n, d, k)
	if err != nil {
		return nil, err
	}
	return &Transport{cfg: cfg}, nil
}

// Run runs the comparison, writes its table to stdout and returns the
// command's exit status. dispatch runs a privnotes command line: each
// provider's data are registered through it (`dataset add`), as the data
// owner registers data, which needs the data engine the binary links in.
func (t *Transport) Run(dispatch func(args []string, stdout, stderr io.Writer) int, stdout, stderr io.Writer) int {
	return runTransportBench(t.cfg, dispatch, stdout, stderr)
}

// benchReports are tables a workload prints after the median table, by
// workload name, for what that table has no column for (tabular.go: the
// engine against DuckDB's floor).
var benchReports = map[string]func(w io.Writer, rows []bench.Row){}

// jsonRow replaces non-finite numbers, which encoding/json rejects.
func jsonRow(r bench.Row) bench.Row {
	if math.IsNaN(r.Error) || math.IsInf(r.Error, 0) {
		r.Error = -1
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		r.Extra["error_note"] = "non-finite"
	}
	for k, v := range r.Extra {
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			r.Extra[k] = fmt.Sprint(f)
		}
	}
	return r
}

func printSummary(w io.Writer, sums []bench.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmethod\tn\td\tk\teps\tdelta\tsetting\tseeds\tmedian error\tmedian s\t")
	for _, s := range sums {
		setting := s.Setting
		if setting == "" {
			setting = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%g\t%g\t%s\t%d\t%.3g\t%.3f\t\n",
			s.Workload, s.Method, s.N, s.D, s.K, s.Eps, s.Delta, setting, s.Seeds, s.MedianError, s.MedianSeconds)
	}
	tw.Flush()
}
