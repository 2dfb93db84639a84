package main

// privnotes dataset: the data owner's commands. They print facts about the
// data (row counts, dropped lines, rows over the clip norm) because they run
// in the owner's terminal; nothing here is reachable from a notebook.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func init() {
	register(&command{
		name:    "dataset",
		summary: "register and inspect datasets (data owner): add | list | show | rm | recache",
		run:     runDataset,
	})
}

const datasetUsage = `Usage:
  privnotes dataset add NAME --from FILE --eps E --delta D [--clip NORM] [flags]
  privnotes dataset add NAME --matrix FILE --entry-bound B --eps E --delta D [--rectangular]
  privnotes dataset list [--state DIR]
  privnotes dataset show NAME [--owner] [--state DIR]
  privnotes dataset rm NAME [--state DIR]
  privnotes dataset recache NAME [--state DIR]

A budget cannot be raised (register the data under a new name to grant
more). A dataset that has never been charged can be removed with rm (a typo
at registration); one with charges stays, as the ledger is append-only.
show prints the public schema notebooks see (columns with their bounds and
domains, unit, clip, accountant, budget and what remains); --owner adds
the facts only the owner may see (rows, source, data hash).
recache rebuilds a snapshot's row cache in this version's format.
Run "privnotes dataset add -h" for the flags of add.
`

func runDataset(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, datasetUsage)
		return 2
	}
	switch args[0] {
	case "add":
		return datasetAdd(args[1:], stdout, stderr)
	case "list":
		return datasetList(args[1:], stdout, stderr)
	case "show":
		return datasetShow(args[1:], stdout, stderr)
	case "rm":
		return datasetRm(args[1:], stdout, stderr)
	case "recache":
		return datasetRecache(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, datasetUsage)
		return 0
	}
	fmt.Fprintf(stderr, "privnotes dataset: unknown subcommand %q\n\n%s", args[0], datasetUsage)
	return 2
}

// splitName takes NAME from before or after the flags.
func splitName(fs *flag.FlagSet, args []string) (string, error) {
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("unexpected arguments: %s", strings.Join(rest, " "))
	}
	if name == "" {
		return "", errors.New("missing the dataset NAME")
	}
	return name, nil
}

type addFlags struct {
	state, csv, unit, columns, center, mean, accountant, neighbour, header, badRows, label string
	eps, delta, clip, labelClip                                                            float64
	publicN                                                                                bool
	// The data engine's sources (dataset_snapshot.go).
	from, sql string
	// A live PostgreSQL or ClickHouse table (dataset_pg.go): --from
	// postgres://… or clickhouse://… with
	// --table and the password's file or environment variable.
	table, passwordFile, passwordEnv, order string
	bounds                                  repeated
	categories                              repeated
	// A public synthetic dataset (dataset_synth.go): DATASET/RELEASE.
	fromSynth string
	// A matrix dataset (dataset_matrix.go).
	matrix      string
	entryBound  float64
	rectangular bool
}

// parseAdd parses and validates the flags of dataset add.
func parseAdd(args []string, stderr io.Writer) (string, *addFlags, error) {
	fs := newFlags("dataset add", "dataset add NAME (--from FILE | --sql QUERY | --csv FILE) --eps E --delta D [--clip NORM] [flags]", `Registers data as dataset NAME with a total privacy budget (data owner
only). A budget cannot be raised; a dataset that was never charged can be
removed with "privnotes dataset rm NAME" (a typo at registration) and the
name registered again.

--from (or its alias --csv) and --sql write the data once into an immutable
snapshot (Parquet, read with DuckDB) in the state directory: any size up to
2^30 rows, typed columns (numeric, or categorical with --categories), public
bounds for the tabular analyses (--bounds). A CSV file may take --header and
--columns. A CSV file whose line 1 is scikit-learn's header
(n_samples,n_features,label names...) registers its n_features columns as
features and its last column, the class, as the categorical column "target"
whose public domain is the label names.

Column names (and the label and user columns) must be printable: names with
control characters (line breaks, tabs, escape sequences) are refused.

The number of rows (or of users, with --unit user:COLUMN) is private unless
--public-n declares it public. Mechanisms that need it (DP-PCA, private Oja,
FedRep) run only on datasets whose count is public.`, stderr)
	nan := math.NaN()
	f := &addFlags{eps: nan, delta: nan, clip: nan, labelClip: nan, entryBound: nan}
	fs.StringVar(&f.state, "state", "", "state directory (default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	fs.StringVar(&f.csv, "csv", "", "alias of --from for a CSV file")
	fs.StringVar(&f.from, "from", "", "a file to register as an immutable snapshot: CSV, gzipped CSV, Parquet or JSON lines, detected from its content and name")
	fs.StringVar(&f.table, "table", "", "with --from postgres://USER@HOST:PORT/DB or clickhouse://USER@HOST:HTTP_PORT/DB: the table SCHEMA.TABLE (DB.TABLE) to register in place (only its catalog is read; private SQL runs in the server)")
	fs.StringVar(&f.passwordFile, "password-file", "", "with --from postgres://… or clickhouse://…: a file holding the database user's password (copied into the state directory's private secrets folder)")
	fs.StringVar(&f.order, "order", "", "with --from postgres://… and --unit user:COLUMN: a NOT NULL column with a unique index whose order is the rows' order, in which each user's first rows are kept (max_groups, max_rows)")
	fs.StringVar(&f.passwordEnv, "password-env", "", "with --from postgres://… or clickhouse://…: the environment variable holding the database user's password (copied as --password-file)")
	fs.StringVar(&f.sql, "sql", "", "a SELECT over files (for example SELECT a, b FROM read_parquet('x.parquet')) whose result is registered as a snapshot")
	fs.Var(&f.bounds, "bounds", "public bounds of numeric columns, COLUMN=LO:HI[,COLUMN=LO:HI...] (repeatable); values are clamped to them at analysis time")
	fs.Var(&f.categories, "categories", "public domain of a categorical column, COLUMN=A,B,C (repeatable; --from and --sql only); other values fall into \"other\"")
	fs.Var(unsetFloat{&f.eps}, "eps", "total privacy budget ε for this dataset (required, > 0)")
	fs.Var(unsetFloat{&f.delta}, "delta", "total privacy budget δ (required, in [0, 1); 0 allows pure ε-DP mechanisms only)")
	fs.Var(unsetFloat{&f.clip}, "clip", "L2 norm each row is clipped to at analysis time (> 0; public: choose it without looking at the data). Needed by the matrix methods (private_pca, private_mean of columns=, private_classify_jl, private_fedrep), which refuse a dataset without it; counts, histograms, sums and quantiles do not use it")
	fs.StringVar(&f.unit, "unit", "row", "privacy unit: row, or user:COLUMN (all rows with the same COLUMN value are one user)")
	fs.StringVar(&f.columns, "columns", "", "CSV only: feature columns: names, 1-based positions or ranges, comma-separated (default: all but the user, label and sklearn class columns)")
	fs.StringVar(&f.label, "label", "", "label column for regression (kept apart from the features)")
	fs.Var(unsetFloat{&f.labelClip}, "label-clip", "bound on |label| (required with --label)")
	fs.StringVar(&f.center, "center", "none", "no longer offered (snapshots keep values as given): subtract a public mean in --sql")
	fs.StringVar(&f.mean, "mean", "", "no longer offered, as --center")
	fs.StringVar(&f.accountant, "accountant", "zcdp", "composition: zcdp (default, tight) or basic (sum of ε and δ, for paper reproductions), or gdp (exact Gaussian DP: the tightest for sessions of Gaussian calls; it refuses calls it cannot price, such as DP-PCA), or rdp (a Rényi filter: the tightest for sessions with pure-ε counts, sums and quantiles; it refuses approximate (ε, δ) calls such as oja-shuffle and calibration=\"paper\"); all are sound when analysts choose each ε after seeing earlier results")
	fs.StringVar(&f.neighbour, "neighbour", "replace-one", "default neighbouring relation: replace-one or add-remove")
	fs.StringVar(&f.header, "header", "auto", "CSV only: line 1 is auto (detected), yes (column names), no (data), sklearn (n_samples,n_features,label names...)")
	fs.StringVar(&f.badRows, "bad-rows", "reject", "malformed or non-finite rows: reject (the file) or drop (the rows, counted here)")
	fs.BoolVar(&f.publicN, "public-n", false, "declare the number of rows (users, with --unit user:COLUMN) public: it is stored in the public schema, where notebooks can read it, and lets mechanisms that need it run. Only for a count that is public already (published with the data, say)")
	fs.StringVar(&f.fromSynth, "from-synth", "", "DATASET/RELEASE: register the synthetic rows of a stored private_synthesize release (named RELEASE, of DATASET) as a PUBLIC dataset, sampled as its replay samples them; calls on it charge nothing, and no budget or other source is given (see docs/deployment.md)")
	fs.StringVar(&f.matrix, "matrix", "", "a matrix file (numbers, one matrix row per line) to register as a matrix dataset whose private units are its entries; with --entry-bound (see docs/mechanisms.md)")
	fs.Var(unsetFloat{&f.entryBound}, "entry-bound", "--matrix: public bound B on |entry|; neighbouring matrices differ in one entry, anywhere in [-B, B] (entries outside are refused)")
	fs.BoolVar(&f.rectangular, "rectangular", false, "--matrix: the matrix need not be symmetric; it is analysed through [[0, M], [Mᵀ, 0]] (left and right singular vectors)")
	name, err := splitName(fs, args)
	if err != nil {
		return "", nil, err
	}
	if f.fromSynth != "" {
		return name, f, checkSynthFlags(f)
	}
	if f.matrix != "" {
		return name, f, checkMatrixFlags(f)
	}
	if f.rectangular || !math.IsNaN(f.entryBound) {
		return "", nil, errors.New("--entry-bound and --rectangular are for --matrix FILE")
	}
	switch {
	case countSet(f.csv, f.from, f.sql) != 1:
		return "", nil, errors.New("give the data with exactly one of --from FILE (--csv FILE is its alias) or --sql QUERY")
	case math.IsNaN(f.eps):
		return "", nil, errors.New("--eps is required: the dataset's total privacy budget ε")
	case !(f.eps > 0) || math.IsInf(f.eps, 0):
		return "", nil, fmt.Errorf("--eps %v: must be a finite number > 0", f.eps)
	case math.IsNaN(f.delta):
		return "", nil, errors.New("--delta is required: the dataset's total δ (0 allows only pure ε-DP mechanisms; 1e-6 or less than 1/rows is usual)")
	case !(f.delta >= 0 && f.delta < 1):
		return "", nil, fmt.Errorf("--delta %v: must be in [0, 1)", f.delta)
	case !math.IsNaN(f.clip) && (!(f.clip > 0) || math.IsInf(f.clip, 0)):
		return "", nil, fmt.Errorf("--clip %v: must be a finite number > 0", f.clip)
	case f.label == "" && !math.IsNaN(f.labelClip):
		return "", nil, errors.New("--label-clip is only for --label")
	case f.label != "" && math.IsNaN(f.labelClip):
		return "", nil, errors.New("--label needs --label-clip: a public bound on |label|")
	case f.label != "" && (!(f.labelClip > 0) || math.IsInf(f.labelClip, 0)):
		return "", nil, fmt.Errorf("--label-clip %v: must be a finite number > 0", f.labelClip)
	}
	mode, err := accounting.ParseMode(f.accountant)
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("--accountant %q: use zcdp or basic (or gdp or rdp, for sessions of Gaussian, pure-ε and exponential-mechanism calls)", f.accountant)
	case mode == accounting.ModeAdvanced:
		// Kept by the accounting package for datasets registered with it
		// by earlier versions, which now compose as basic.
		return "", nil, errors.New(`--accountant advanced is no longer offered: it assumed every call's ε fixed in advance, which interactive analysis does not do. Use zcdp (tighter, the default) or basic`)
	}
	if mode.NeedsDelta() && f.delta == 0 {
		return "", nil, fmt.Errorf("--delta 0: the %s accountant states costs as (ε, δ) with δ > 0; give --delta (e.g. 1e-6) or use --accountant basic for a pure ε budget", mode)
	}
	if _, err := accounting.ParseNeighbour(f.neighbour); err != nil {
		return "", nil, fmt.Errorf("--neighbour %q: use replace-one or add-remove", f.neighbour)
	}
	if math.IsNaN(f.clip) {
		// No clip norm: counts, histograms, sums, means of a column and
		// quantiles need none; the methods that clip rows (PCA, row-vector
		// means, classification, FedRep) refuse the dataset before any
		// charge unless the call gives clip= (release.clipOf).
		f.clip = 0
	}
	return name, f, nil
}

func datasetAdd(args []string, stdout, stderr io.Writer) int {
	name, f, err := parseAdd(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return 2
	}
	if f.fromSynth != "" {
		return datasetAddSynth(name, f, stdout, stderr)
	}
	if f.matrix != "" {
		return datasetAddMatrix(name, f, stdout, stderr)
	}
	bounds, err := parseBounds(f.bounds)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return 2
	}
	if isLiveURL(f.from) || f.table != "" || f.passwordFile != "" || f.passwordEnv != "" || f.order != "" {
		return datasetAddLive(name, f, bounds, stdout, stderr)
	}
	return datasetAddSnapshot(name, f, bounds, stdout, stderr)
}

func writeOwnerInfo(w io.Writer, info *ledger.OwnerInfo, st *ledger.Status) {
	sc := info.Schema
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if sc.IsMatrix() {
		writeMatrixInfo(tw, info)
		if st != nil {
			fmt.Fprintf(tw, "  spent\tε=%.6g, δ=%.3g in %d charges\n", st.Spent.Eps, st.Spent.Delta, st.Charges)
			fmt.Fprintf(tw, "  remaining\tε=%.6g, δ=%.3g\n", st.Remaining.Eps, st.Remaining.Delta)
		}
		tw.Flush()
		return
	}
	live := liveTable(info)
	fmt.Fprintf(tw, "  name\t%s\n", sc.Name)
	if live {
		fmt.Fprintf(tw, "  rows (owner only)\tnot counted (a live table: registration reads no row)\n")
	} else {
		fmt.Fprintf(tw, "  rows (owner only)\t%d\n", info.Rows)
	}
	if sc.Unit == "user" {
		if !live {
			fmt.Fprintf(tw, "  users (owner only)\t%d\n", info.Users)
		}
		fmt.Fprintf(tw, "  privacy unit\tuser (column %s)\n", sc.UserColumn)
	} else {
		fmt.Fprintf(tw, "  privacy unit\trow\n")
	}
	fmt.Fprintf(tw, "  columns (d=%d)\t%s\n", sc.D, strings.Join(sc.Columns, ", "))
	if sc.Label != "" {
		fmt.Fprintf(tw, "  label\t%s (|label| ≤ %g)\n", sc.Label, sc.LabelClip)
	}
	fmt.Fprintf(tw, "  clip norm\t%s\n", clipLabel(sc.Clip))
	if sc.Center == "public-mean" {
		fmt.Fprintf(tw, "  centred by\tpublic mean %v\n", sc.Mean)
	}
	fmt.Fprintf(tw, "  neighbours\t%s\n", sc.Neighbour)
	fmt.Fprintf(tw, "  bad rows\t%s\n", sc.BadRows)
	if sc.PublicN > 0 {
		unit := "rows"
		if sc.Unit == "user" {
			unit = "users"
		}
		how := "declared public with --public-n"
		if sc.Public() {
			how = "the synthetic table's, public"
		}
		fmt.Fprintf(tw, "  public n\t%d %s (%s: notebooks may read it)\n", sc.PublicN, unit, how)
	}
	if o := sc.Synthetic; o != nil {
		fmt.Fprintf(tw, "  PUBLIC\tsynthetic rows of release %q of dataset %q (ledger record %d, release hash %.16s…): calls charge nothing\n", o.Release, o.Dataset, o.Record, o.ValueHash)
	}
	fmt.Fprintf(tw, "  budget\tε=%g, δ=%g (%s accountant)\n", sc.Budget.Eps, sc.Budget.Delta, accountantLabel(sc.Accountant))
	if st != nil {
		fmt.Fprintf(tw, "  spent\tε=%.6g, δ=%.3g in %d charges\n", st.Spent.Eps, st.Spent.Delta, st.Charges)
		fmt.Fprintf(tw, "  remaining\tε=%.6g, δ=%.3g\n", st.Remaining.Eps, st.Remaining.Delta)
	}
	fmt.Fprintf(tw, "  source\t%s\n", info.Source)
	if !live {
		fmt.Fprintf(tw, "  data hash (salted)\t%s\n", info.DataHash)
	}
	fmt.Fprintf(tw, "  registered\t%s\n", info.Created.Format("2006-01-02 15:04:05 UTC"))
	tw.Flush()
}

// sourcePath is the source a registration records: the file's absolute
// path, which names it wherever `dataset show` runs (a relative path as
// typed names a file only from the directory it was typed in).
func sourcePath(file string) string {
	if file == "" {
		return ""
	}
	if abs, err := filepath.Abs(file); err == nil {
		return abs
	}
	return file
}

// clipLabel is a registered clip norm, "none" for a dataset registered
// without --clip (the matrix methods refuse it).
func clipLabel(c float64) string {
	if c == 0 {
		return "none"
	}
	return fmt.Sprintf("%g", c)
}

// accountantLabel names a dataset's accountant for the owner; a dataset
// registered with the former "advanced" accountant composes as basic.
func accountantLabel(name string) string {
	if m, err := accounting.ParseMode(name); err == nil && m == accounting.ModeAdvanced {
		return "advanced, composed as basic"
	}
	return name
}

// openState parses --state (and NAME when withName) and opens the
// existing store.
func openState(fs *flag.FlagSet, args []string, stderr io.Writer, withName bool) (*ledger.Store, string, int) {
	st, name, code, _ := openStateErr(fs, args, stderr, withName)
	return st, name, code
}

// openStateErr is openState that also returns the error it reported, for
// commands whose exit status depends on it.
func openStateErr(fs *flag.FlagSet, args []string, stderr io.Writer, withName bool) (*ledger.Store, string, int, error) {
	state := fs.String("state", "", "state directory (default $PRIVNOTES_STATE, else ~/.local/share/privnotes)")
	fs.SetOutput(stderr)
	name := ""
	if withName {
		n, err := splitName(fs, args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, "", 0, nil
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return nil, "", 2, err
		}
		name = n
	} else if code, ok := parseFlags(fs, args); !ok {
		return nil, "", code, nil
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		return nil, "", 2, errors.New("unexpected arguments")
	}
	// Reading commands create nothing: a mistyped --state must be an
	// error, not an empty ledger that verifies as OK.
	dir, err := ledger.ResolveStateDir(*state)
	if err == nil {
		var st *ledger.Store
		if st, err = ledger.OpenExisting(dir); err == nil {
			return st, name, 0, nil
		}
	}
	if errors.Is(err, ledger.ErrNoState) {
		fmt.Fprintf(stderr, "%s: no privnotes state in %s; register data with `privnotes dataset add --state %s ...`\n", fs.Name(), dir, dir)
		return nil, "", 1, err
	}
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	return nil, "", 1, err
}

func datasetList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dataset list", "dataset list [--state DIR]", "Lists the registered datasets with their budgets (data owner).", stderr)
	st, _, code := openState(fs, args, stderr, false)
	if st == nil {
		return code
	}
	defer st.Close()
	schemas, err := st.Datasets()
	if err != nil {
		fmt.Fprintf(stderr, "privnotes dataset list: %v\n", err)
		return 1
	}
	if len(schemas) == 0 {
		fmt.Fprintf(stdout, "no datasets in %s (register one with `privnotes dataset add`)\n", st.Dir())
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROWS\tD\tUNIT\tCLIP\tACCOUNTANT\tBUDGET (ε, δ)\tSPENT (ε, δ)\tREMAINING (ε, δ)")
	for _, sc := range schemas {
		info, err := st.OwnerInfo(sc.Name)
		if err != nil {
			fmt.Fprintf(stderr, "privnotes dataset list: %v\n", err)
			return 1
		}
		s, err := st.Status(sc.Name)
		if err != nil {
			fmt.Fprintf(stderr, "privnotes dataset list: %v\n", err)
			return 1
		}
		unit := sc.Unit
		if sc.IsMatrix() {
			unit = "entry" // a matrix dataset: CLIP is its entry bound
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%g, %g\t%.4g, %.3g\t%.4g, %.3g\n", sc.Name, info.Rows, sc.D, unit, clipLabel(sc.Clip), accountantLabel(sc.Accountant),
			sc.Budget.Eps, sc.Budget.Delta, s.Spent.Eps, s.Spent.Delta, s.Remaining.Eps, s.Remaining.Delta)
	}
	tw.Flush()
	return 0
}
