package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/internal/benchrun"
	"github.com/privnotes/privnotes/mechanisms/bench"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "run accuracy/time benchmarks of the mechanisms on public synthetic data",
		run:     runBench,
	})
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", "bench [flags]", "Runs the registered workloads with seeded noise on public synthetic data and prints\nmedian error (sin² for k=1, ‖sinΘ‖²_F for k>1) and time per method and setting.", stderr)
	var (
		workload = fs.String("workload", "", "run only this workload (default: all; see --list)")
		list     = fs.Bool("list", false, "list the workloads and exit")
		quick    = fs.Bool("quick", false, "reduced grids (all workloads within about a minute)")
		asJSON   = fs.Bool("json", false, "print one JSON object per run instead of the median table")
		seeds    = fs.Int("seeds", 0, "seeds per setting (default: the workload's)")
		n        = fs.Int("n", 0, "override the number of rows")
		d        = fs.Int("d", 0, "override the dimension")
		k        = fs.Int("k", 0, "override the number of components")
		epsList  = fs.String("eps", "", "comma-separated ε grid, e.g. 0.5,1,2")
		delta    = fs.Float64("delta", 0, "override δ")
		methods  = fs.String("methods", "", "comma-separated methods to run (default: all)")
		calib    = fs.String("calibration", "", "zcdp, analytic, gdp or paper (default: each workload's tight one: zcdp/analytic for the PCA workloads, gdp for the federated ones); gdp on the PCA workloads calibrates npm, gauss and adaptive to μ*(ε, δ) as on a gdp dataset; a workload that has no such calibration says so")
		acct     = fs.String("accountant", "", "zcdp (default) or gdp: calibrate the PCA workloads as on a dataset registered with that accountant (gdp: --calibration gdp)")
		nb       = fs.String("neighbour", "", "replace-one (default) or add-remove")
		workers  = fs.Int("workers", 0, "goroutines per data pass (default: all cores)")
		trans    = fs.String("transport", "", "with --workload dpspca or fedrep: grpc times the federated call (DPS-PCA, or FedRep across silos) over data services on loopback (mutual TLS) against in-process members, and a remote private_count's round trip against a local one")
		provs    = fs.Int("providers", 5, "--transport: number of providers (servers)")
		reps     = fs.Int("reps", 5, "--transport: timed repetitions of the federated call (private_count: 10×)")
	)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "privnotes bench: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	if *trans != "" {
		t, err := benchrun.NewTransport(*trans, *workload, *provs, *reps, *n, *d, *k)
		if err != nil {
			fmt.Fprintln(stderr, "privnotes bench:", err)
			return 2
		}
		return t.Run(dispatch, stdout, stderr)
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, w := range bench.Workloads() {
			fmt.Fprintf(tw, "%s\t%s\n", w.Name, w.Summary)
		}
		tw.Flush()
		return 0
	}
	switch strings.ToLower(strings.TrimSpace(*acct)) {
	case "", "zcdp":
	case "gdp":
		if c := strings.ToLower(strings.TrimSpace(*calib)); c != "" && c != "zcdp" && c != "gdp" {
			fmt.Fprintf(stderr, "privnotes bench: --accountant gdp calibrates to μ*(ε, δ); it does not combine with --calibration %q\n", *calib)
			return 2
		}
		*calib = "gdp"
	default:
		fmt.Fprintf(stderr, "privnotes bench: --accountant %q: use zcdp or gdp\n", *acct)
		return 2
	}
	cfg := bench.Config{Quick: *quick, Seeds: *seeds, N: *n, D: *d, K: *k, Delta: *delta,
		Calibration: *calib, Neighbour: *nb, Workers: *workers}
	if *epsList != "" {
		for _, f := range strings.Split(*epsList, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				fmt.Fprintf(stderr, "privnotes bench: --eps: %q is not a positive number\n", f)
				return 2
			}
			cfg.Eps = append(cfg.Eps, v)
		}
	}
	if *methods != "" {
		for _, m := range strings.Split(*methods, ",") {
			cfg.Methods = append(cfg.Methods, strings.TrimSpace(m))
		}
	}
	if *seeds < 0 || *n < 0 || *d < 0 || *k < 0 || *delta < 0 || *delta >= 1 || *workers < 0 {
		fmt.Fprintln(stderr, "privnotes bench: sizes, seeds and workers must be ≥ 0 and delta in [0, 1)")
		return 2
	}
	switch strings.ToLower(strings.TrimSpace(*calib)) {
	case "", "zcdp", "analytic", "gdp", "paper":
	default:
		fmt.Fprintf(stderr, "privnotes bench: --calibration %q: use zcdp, analytic, gdp or paper\n", *calib)
		return 2
	}
	return benchrun.Run(benchrun.Options{Workload: *workload, JSON: *asJSON, Config: cfg, Dispatch: dispatch}, stdout, stderr)
}
