package main

// dataset add --from and --sql: the data engine (dsl/snapshot, DuckDB)
// writes the owner's source once into an immutable snapshot, and every
// executor of this binary reads snapshots through it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/pgsource"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/snapshot"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// snapshotPool keeps the process's snapshot readers open across calls
// (dsl/snapshot's Pool): a call leases the reader of its dataset instead
// of starting and stopping a DuckDB. main closes it when the command
// ends.
var snapshotPool = &snapshot.Pool{}

// The pool's leases run private SQL's statements (release.SQLReader).
var _ release.SQLReader = (*snapshot.Lease)(nil)

func init() {
	err := release.RegisterSnapshots(func(path, hash string) (release.SnapshotReader, error) {
		l, err := snapshotPool.Open(path, hash)
		if err != nil {
			return nil, err // not a nil *Lease in an interface
		}
		return l, nil
	})
	if err != nil {
		panic(err) // a second data engine linked in: a build error
	}
	if err := release.RegisterSQLParser(snapshot.ParseSQL); err != nil {
		panic(err)
	}
	err = release.RegisterPublicTables(func(ctx context.Context, name string, t *release.PublicRows) (release.PublicSQL, error) {
		pt, err := snapshot.OpenPublicTable(ctx, name, t.Columns, t.Numeric, t.Rows)
		if err != nil {
			return nil, err // not a nil *PublicTable in an interface
		}
		return pt, nil
	})
	if err != nil {
		panic(err)
	}
	if err := release.RegisterMemoryTables(openMemoryTable); err != nil {
		panic(err)
	}
}

// closeDataEngine closes what the data engine keeps open across calls:
// the snapshot readers, the tables of data held in memory and the live
// tables' sessions (dsl/pgsource's pools, whose servers would otherwise
// see the kernel's, REPL's, script's or data service's sessions dropped
// rather than ended). main calls it when the command ends.
func closeDataEngine() {
	snapshotPool.Close()
	release.CloseMemoryTables()
	pgsource.CloseAll()
}

// openMemoryTable loads data held in memory into the data engine
// (release.RegisterMemoryTables).
func openMemoryTable(ctx context.Context, m *release.MemoryRows) (release.MemoryTable, error) {
	mt, err := snapshot.OpenMemoryTable(ctx, (*snapshot.MemoryRows)(m))
	if err != nil {
		return nil, err // not a nil *MemoryTable in an interface
	}
	return mt, nil
}

// unsetFloat is a float flag whose NaN means "not given": required flags
// start at NaN, and their help shows no "(default NaN)".
type unsetFloat struct{ p *float64 }

func (f unsetFloat) String() string {
	if f.p == nil || math.IsNaN(*f.p) {
		return ""
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

func (f unsetFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("parse error")
	}
	*f.p = v
	return nil
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, " ") }

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// parseBounds reads --bounds COLUMN=LO:HI[,COLUMN=LO:HI...], repeatable.
func parseBounds(specs []string) (map[string][2]float64, error) {
	out := map[string][2]float64{}
	for _, spec := range specs {
		for _, item := range strings.Split(spec, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			col, rng, ok := strings.Cut(item, "=")
			lo, hi, ok2 := strings.Cut(rng, ":")
			if !ok || !ok2 || strings.TrimSpace(col) == "" {
				return nil, fmt.Errorf("--bounds %q: write COLUMN=LO:HI, for example age=0:120", item)
			}
			l, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
			h, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("--bounds %q: LO and HI must be numbers", item)
			}
			col = strings.TrimSpace(col)
			if _, dup := out[col]; dup {
				return nil, fmt.Errorf("--bounds: column %q given twice", col)
			}
			out[col] = [2]float64{l, h}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// parseCategories reads --categories COLUMN=A,B,C, one column per flag.
func parseCategories(specs []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, spec := range specs {
		col, vals, ok := strings.Cut(spec, "=")
		col = strings.TrimSpace(col)
		if !ok || col == "" || strings.TrimSpace(vals) == "" {
			return nil, fmt.Errorf("--categories %q: write COLUMN=A,B,C (one column per flag)", spec)
		}
		if _, dup := out[col]; dup {
			return nil, fmt.Errorf("--categories: column %q given twice", col)
		}
		var domain []string
		seen := map[string]bool{}
		for _, v := range strings.Split(vals, ",") {
			v = strings.TrimSpace(v)
			if v == "" || seen[v] {
				return nil, fmt.Errorf("--categories %s: empty or repeated category %q", col, v)
			}
			if v == ledger.OtherCategory {
				return nil, fmt.Errorf("--categories %s: %q names the bucket of values outside the domain; rename that category", col, v)
			}
			seen[v] = true
			domain = append(domain, v)
		}
		out[col] = domain
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// datasetAddSnapshot registers --from or --sql as a snapshot.
func datasetAddSnapshot(name string, f *addFlags, bounds map[string][2]float64, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "privnotes dataset add: %v\n", err)
		return code
	}
	if f.csv != "" {
		f.from = f.csv // --csv is an alias of --from
	}
	if f.center != "none" || f.mean != "" {
		// The former database path subtracted the owner's public mean at
		// registration; a snapshot keeps values as given, which the
		// tabular analyses (sums, bounds, quantiles) need.
		return fail(2, errors.New(`--center and --mean are no longer offered: a snapshot keeps the values as given. Subtract your public mean in a query instead, for example --sql "SELECT a - 1.5 AS a, b - 0.2 AS b FROM read_csv('FILE')", or centre the file before registering`))
	}
	csvOnly := f.header != "auto" || f.columns != ""
	if f.sql != "" && csvOnly {
		return fail(2, errors.New("--header and --columns are for a CSV file (--from or --csv); with --sql, choose and name the columns in the SELECT"))
	}
	cats, err := parseCategories(f.categories)
	if err != nil {
		return fail(2, err)
	}
	spec := snapshot.Spec{From: f.from, SQL: f.sql, Label: f.label, Bounds: bounds, Categories: cats, BadRows: f.badRows}
	var csv *csvPlan
	if f.from != "" {
		lower := strings.TrimSuffix(strings.ToLower(f.from), ".gz")
		isCSV := f.csv != "" || strings.HasSuffix(lower, ".csv")
		if !isCSV && csvOnly {
			return fail(2, fmt.Errorf("--header and --columns are for a CSV file; %s is not named .csv (choose columns with --sql)", f.from))
		}
		if isCSV {
			if csv, err = planCSV(f, cats); err != nil {
				return fail(1, err)
			}
			if csv.query != "" {
				spec.From, spec.SQL, spec.Desc = "", csv.query, f.from
				if csv.classNames != nil {
					if spec.Categories == nil {
						spec.Categories = map[string][]string{}
					}
					spec.Categories[SklearnTarget] = csv.classNames
				}
			}
		}
	}
	switch {
	case f.unit == "row":
	case strings.HasPrefix(f.unit, "user:") && len(f.unit) > len("user:"):
		spec.UserColumn = strings.TrimPrefix(f.unit, "user:")
	default:
		return fail(2, fmt.Errorf("--unit %q: use row or user:COLUMN", f.unit))
	}
	mode, _ := accounting.ParseMode(f.accountant)
	nb, _ := accounting.ParseNeighbour(f.neighbour)
	st, err := openForRegistration(f.state, name)
	if err != nil {
		return fail(1, err)
	}
	defer st.Close()
	ctx := context.Background()
	info, err := snapshot.Build(ctx, spec, st.SnapshotDir(), name)
	if err != nil {
		return fail(1, err)
	}
	if csv != nil && csv.layout != nil && csv.layout.Header == "sklearn" && int64(csv.layout.Samples) != info.Rows+info.Dropped+int64(csv.ragged) {
		snapshot.Discard(info.Path) // nothing registered: neither file is kept
		return fail(1, fmt.Errorf("%s: line 1 (sklearn header) says %d samples but the file has %d data rows", f.from, csv.layout.Samples, info.Rows+info.Dropped+int64(csv.ragged)))
	}
	ref := info.Ref()
	source := sourcePath(f.from)
	if source == "" {
		source = "sql: " + f.sql
	}
	owner, err := st.Register(ctx, ledger.Registration{
		Name: name, Snapshot: ref, Budget: accounting.Budget{Eps: f.eps, Delta: f.delta}, Accountant: mode,
		Neighbour: nb, Clip: f.clip, LabelClip: f.labelClip, BadRows: spec.BadRows, Source: source, PublicN: f.publicN,
	})
	if err != nil {
		snapshot.Discard(info.Path) // nothing registered: the snapshot and its row cache are not kept
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "registered dataset %q in %s\n", name, st.Dir())
	writeOwnerInfo(stdout, owner, nil)
	if csv != nil {
		writeCSVNotes(stdout, f.header, csv)
	}
	writeTypedColumns(stdout, owner.Schema, info.Path)
	if info.Dropped > 0 {
		fmt.Fprintf(stdout, "dropped %d bad rows (--bad-rows drop)\n", info.Dropped)
	}
	cols := owner.Schema.Columns
	notes, err := scanOwnerNotes(ctx, info, cols, f.clip)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "note: could not count the rows over --clip: %v\n", err)
	default:
		if notes.over > 0 {
			fmt.Fprintf(stdout, "note (owner only): %d of %d rows have an L2 norm above --clip %g; mechanisms clip them at analysis time\n", notes.over, info.Rows, f.clip)
		}
		if notes.lastClasses > 0 {
			last := cols[len(cols)-1]
			fmt.Fprintf(stdout, "warning: the last column, %s, is registered as a feature but looks like a class label (integers, %d distinct values).\n"+
				"  If it is the target, remove this registration (privnotes dataset rm %s) and register again with\n"+
				"  --categories %s=... (a categorical column), --label %s --label-clip B (for regression), or --columns without it.\n",
				last, notes.lastClasses, name, last, last)
		}
	}
	return 0
}

// ownerNotes are facts about the registered data for the owner's terminal
// only: the rows over the clip norm, and whether the last numeric column
// looks like a class label (at most maxClassValues distinct integers, in
// more rows than that).
type ownerNotes struct{ over, lastClasses int }

const maxClassValues = 10

// scanOwnerNotes computes the ownerNotes over the numeric columns (bounds
// applied, as the mechanisms read them) in the data engine, which reads
// only those columns, instead of a pass that hands every value to Go (a
// fifth of a registration's time).
func scanOwnerNotes(ctx context.Context, info *snapshot.Info, columns []string, clip float64) (ownerNotes, error) {
	var notes ownerNotes
	if len(columns) == 0 {
		return notes, nil
	}
	r, err := snapshot.Open(info.Path, info.Hash)
	if err != nil {
		return notes, err
	}
	defer r.Close()
	facts, err := r.OwnerFacts(ctx, columns, clip, maxClassValues)
	if err != nil {
		return notes, err
	}
	notes.over = int(facts.OverNorm)
	if len(columns) > 1 { // a single column is no feature table with a label
		notes.lastClasses = facts.LastClasses
	}
	return notes, nil
}

// writeTypedColumns lists the public bounds and categorical domains.
func writeTypedColumns(out io.Writer, sc ledger.Schema, snapshotPath string) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	defer w.Flush()
	var names []string
	for c := range sc.Bounds {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		b := sc.Bounds[c]
		fmt.Fprintf(w, "  bounds\t%s in [%g, %g]\n", c, b[0], b[1])
	}
	names = names[:0]
	for c := range sc.Categorical {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		fmt.Fprintf(w, "  categorical\t%s: %s (others: %s)\n", c, strings.Join(sc.Categorical[c], ", "), ledger.OtherCategory)
	}
	fmt.Fprintf(w, "  snapshot\t%s\n", snapshotPath)
}

// openForRegistration opens the state directory's store for registering
// name: the name must be new (registrations are final) and the snapshot
// directory must exist. Both --from/--sql and --matrix registrations use it.
func openForRegistration(state, name string) (*ledger.Store, error) {
	dir, err := ledger.StateDir(state)
	if err != nil {
		return nil, err
	}
	st, err := ledger.Open(dir)
	if err != nil {
		return nil, err
	}
	if _, err := st.Schema(name); err == nil {
		st.Close()
		return nil, fmt.Errorf("dataset %q is already registered; registrations are final (choose another name)", name)
	} else if !errors.Is(err, ledger.ErrNoDataset) {
		st.Close()
		return nil, err
	}
	if err := os.MkdirAll(st.SnapshotDir(), 0o755); err != nil {
		st.Close()
		return nil, err
	}
	// The name is free: sessions this process kept for an earlier,
	// removed registration of it end (dataset_rm.go ends them too).
	pgsource.Close(st.EngineSecretPath(name))
	return st, nil
}
