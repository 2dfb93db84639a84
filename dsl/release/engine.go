package release

// Datasets in a live database table (dataset add --from postgres://…):
// private_sql runs its one printed statement in that engine, in the
// engine's dialect, and only aggregates come back. The engine's driver is
// linked in by the binary (dsl/pgsource, registered by cmd/privnotes), as
// the snapshot engine is, so that this package imports no driver.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// EngineSource is a dataset's table in a live database, opened for one
// call.
type EngineSource interface {
	SQLReader
	// Dialect is the engine's SQL dialect, which the plan is printed in.
	Dialect() sqlplan.Dialect
	// Check compares the table's catalog with the registration (cheap: no
	// row is read). Its error is shown before the charge, so its text
	// must say what to do from public facts only (a column's name and
	// types), never quote the engine.
	Check(ctx context.Context) error
	Close() error
}

// EngineOpener connects to the table ref names, registered with schema
// sc, with the password in the file secretPath (absent: none). Its errors are shown (before a charge,
// or as the reason of a load failure after one), so their text must be
// fixed, naming what to do.
type EngineOpener func(ctx context.Context, ref ledger.EngineRef, sc ledger.Schema, secretPath string) (EngineSource, error)

var (
	enginesMu sync.Mutex
	engines   = map[string]EngineOpener{}
)

// RegisterEngine sets how executors open datasets of kind (an
// EngineRef.Kind, such as "postgres"). A nil opener or a second
// registration of a kind is an error.
func RegisterEngine(kind string, open EngineOpener) error {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if open == nil {
		return errors.New("release: RegisterEngine with a nil opener")
	}
	if engines[kind] != nil {
		return fmt.Errorf("release: RegisterEngine(%q) called twice", kind)
	}
	engines[kind] = open
	return nil
}

func engineOpener(kind string) EngineOpener {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	return engines[kind]
}

// openEngine opens dataset name's engine source; ok is false for a
// dataset stored otherwise.
func openEngine(ctx context.Context, st *ledger.Store, name string, sc ledger.Schema) (src EngineSource, ok bool, err error) {
	ref, ok, err := st.Engine(name)
	if err != nil || !ok {
		return nil, ok, err
	}
	return openEngineRef(ctx, st, name, sc, ref)
}

// openEngineRef is openEngine with the dataset's engine reference
// already read (ledger.Store.Storage).
func openEngineRef(ctx context.Context, st *ledger.Store, name string, sc ledger.Schema, ref *ledger.EngineRef) (src EngineSource, ok bool, err error) {
	open := engineOpener(ref.Kind)
	if open == nil {
		return nil, true, Errorf(NameNotAvailable, "dataset %q lives in a %s database, and this build of privnotes has no driver for it", name, ref.Kind)
	}
	src, err = open(ctx, *ref, sc, st.EngineSecretPath(name))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, true, e
		}
		return nil, true, Errorf(NameDatasetError, "dataset %q: %v", name, err)
	}
	return src, true, nil
}

// checkEngine refuses, before the charge, a call on an engine dataset
// that cannot run there: a function that reads rows (private_sql, the
// column analyses (engineTabular) and the second moment of Analyze Gauss
// and the noisy power method run in the engine: enginePCA), user-level
// data without a declared row order (the bounding of each user's rows
// keeps their first rows in it), an engine that cannot be reached or
// refuses the credentials, and a table whose registered columns changed
// type. It opens the engine for the catalog check only, and reads no row.
// What a planned call still needs from the rows is refused after
// planning, by engineFacts.check.
func (env *Local) checkEngine(f *catalog.Func, src Ref, a *Args) (*engineFacts, error) {
	if env.Store == nil || src.Synthetic() || src.Public != nil {
		return nil, nil
	}
	st, err := env.store()
	if err != nil {
		return nil, err
	}
	name, sc := src.Name, src.Schema
	if src.Derived != nil {
		name, sc = src.Derived.ParentSchema.Name, src.Derived.ParentSchema
	}
	ref, ok, err := st.Engine(name)
	if err != nil || !ok {
		return nil, err
	}
	switch {
	case f == catalog.PrivatePCA:
		if err := enginePCA(name, ref.Kind, src, a); err != nil {
			return nil, err
		}
	case f == catalog.PrivateMean && optStr(a, "col") == "" && optStr(a, "by") == "":
		if err := engineRowMean(name, ref.Kind, src); err != nil {
			return nil, err
		}
	case f != catalog.PrivateSQL && !engineTabular[f]:
		return nil, Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where only %s, the column analyses (%s) and %s with method \"gauss\" or \"npm\" run (inside the database; only aggregates come back); %s needs the rows, so the data owner registers a snapshot of the table for it (privnotes dataset add NAME --sql ... or --from a file export); nothing was charged", f.Name, name, ref.Kind, FnSQL, engineTabularNames, catalog.PrivatePCA.Name, f.Name)
	}
	if sc.Unit == "user" && ref.Order == "" {
		return nil, Errorf(NameArgumentError, "%s: dataset %q is user-level and lives in a %s table registered without --order: bounding each user's rows needs a fixed row order, which a live table gives only by a column of unique values; the data owner registers it again with --order COLUMN, or a snapshot (nothing was charged)", f.Name, name, ref.Kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), engineCheckTimeout)
	defer cancel()
	es, _, err := openEngine(ctx, st, name, sc)
	if err != nil {
		// Before the charge: the engine's connection classes (cannot be
		// reached, refused the user or password, ...) say so, as the
		// catalog check's do below. engineData's after the charge are
		// wrapped by the load ("could not be read after the charge").
		var e *Error
		if errors.As(err, &e) && e.Name == NameDatasetError {
			return nil, Errorf(NameDatasetError, "%s: %s (nothing was charged)", f.Name, e.Msg)
		}
		return nil, err
	}
	defer es.Close()
	if err := es.Check(ctx); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, Errorf(NameDatasetError, "%s: dataset %q: %v (nothing was charged)", f.Name, name, err)
	}
	facts := &engineFacts{fn: f.Name, name: name, kind: ref.Kind, dialect: es.Dialect(), table: es.Table()}
	if l, ok := es.(interface{ MaxStatementBytes() int }); ok {
		facts.limit = l.MaxStatementBytes()
	}
	return facts, nil
}

// engineTabular are the column analyses, which run on a live table as
// the statements they run on a snapshot (tabsql.go), printed in the
// engine's dialect.
var engineTabular = map[*catalog.Func]bool{
	catalog.PrivateCount: true, catalog.PrivateSum: true, catalog.PrivateMean: true,
	catalog.PrivateHistogram: true, catalog.PrivateQuantile: true,
}

// engineTabularNames lists the column analyses for messages, from their
// catalog entries.
var engineTabularNames = strings.Join([]string{catalog.PrivateCount.Name, catalog.PrivateSum.Name,
	catalog.PrivateMean.Name, catalog.PrivateHistogram.Name, catalog.PrivateQuantile.Name}, ", ")

// engineFacts is what the plan's statement is checked against before the
// charge: the engine's dialect and table reference, and the longest
// statement its server accepts (0: no limit).
type engineFacts struct {
	fn, name, kind string
	dialect        sqlplan.Dialect
	table          string
	limit          int
}

// check prints the statement a planned call runs on a live table in the
// engine's dialect, from public facts, so that a call the engine cannot
// take is refused before the charge instead of failing after it with a
// release of noise alone: a construct the dialect cannot print (a
// bounded user-level plan in a dialect without windows or arrays), a
// text longer than its server's limit, and a column analysis whose plan
// has no statement (its bounds too close to 0 for the sums' grid), which
// would read rows, which a live table does not give.
func (e *engineFacts) check(p *Plan) error {
	switch {
	case e == nil || p.Func == FnSQL || (p.Func == catalog.PrivatePCA.Name && p.moments == nil):
		return e.checkStatement(p)
	case p.Func == catalog.PrivatePCA.Name:
		return e.checkMoments(*p.moments)
	case p.tab != nil:
		return e.checkPass(p.tab)
	case p.rowSum != nil:
		st, err := sqlplan.PrintRowSum(*p.rowSum, e.dialect, e.table)
		if err != nil {
			return e.cannotPrint("call", err)
		}
		return e.checkLength("call", st)
	}
	return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where this call has no statement to run (its bounds are too close to 0 for the exact sums' fixed-point grid) and would need the rows; widen the bounds away from 0, or the data owner registers a snapshot of the table for it (nothing was charged)", e.fn, e.name, e.kind)
}

// checkStatement checks a private_sql plan's statement (check).
func (e *engineFacts) checkStatement(p *Plan) error {
	if e == nil || p.sql == nil {
		return nil
	}
	st, err := sqlplan.Print(p.sql, e.dialect, e.table)
	if err != nil {
		if errors.Is(err, sqlplan.ErrNotYet) {
			return nil
		}
		return e.cannotPrint("query", err)
	}
	return e.checkLength("query", st.SQL)
}

// checkPass checks a column analysis's statement, and on user-level data
// the inner statement of per-user terms it aggregates (check).
func (e *engineFacts) checkPass(t *tabPass) error {
	table := e.table
	if t.inner != nil {
		if _, err := sqlplan.Print(t.inner, e.dialect, e.table); err != nil {
			return e.cannotPrint("call", err)
		}
		table = nestedTable(t.inner, e.dialect, e.table)
	}
	st, err := sqlplan.Print(t.sp, e.dialect, table)
	if err != nil {
		return e.cannotPrint("call", err)
	}
	return e.checkLength("call", st.SQL)
}

// checkMoments checks private_pca's second-moment statement against the
// server's limit (check): d(d+1)/2 sums, so a wide table passes
// ClickHouse's from a few dozen columns on, where the call would be
// charged and release its noise alone. Every sum prints as far more than
// momentsMinBytes (its grid rounding alone is longer), so a statement of
// more sums than limit/momentsMinBytes is refused without printing it (at
// d = 4096, gigabytes).
func (e *engineFacts) checkMoments(m sqlplan.Moments) error {
	if e.limit <= 0 {
		return nil
	}
	d := len(m.Columns)
	n := d * (d + 1) / 2
	size := n * momentsMinBytes
	if size <= e.limit {
		st, err := sqlplan.PrintMoments(m, e.dialect, e.table)
		if err != nil {
			return e.cannotPrint("call", err)
		}
		size = len(st)
	}
	if size > e.limit {
		return Errorf(NameArgumentError, "%s: the second moment of d=%d columns is %d sums, which print as a statement of at least %d bytes for the %s table of dataset %q, above the %d bytes its server accepts; use a subset of the columns, or a snapshot of the table (nothing was charged)", e.fn, d, n, size, e.kind, e.name, e.limit)
	}
	return nil
}

// momentsMinBytes is less than the text of any one sum of
// sqlplan.PrintMoments in any dialect (about 400 bytes in ClickHouse's).
const momentsMinBytes = 64

func (e *engineFacts) cannotPrint(what string, err error) error {
	return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, whose SQL dialect cannot express this %s (%v); a snapshot of the table runs it (nothing was charged)", e.fn, e.name, e.kind, what, err)
}

func (e *engineFacts) checkLength(what, stmt string) error {
	if e.limit > 0 && len(stmt) > e.limit {
		return Errorf(NameArgumentError, "%s: this %s prints as a %d-byte statement for the %s table of dataset %q, above the %d bytes its server accepts (nested expressions are written out in full there); simplify the expressions, or use a snapshot of the table (nothing was charged)", e.fn, what, len(stmt), e.kind, e.name, e.limit)
	}
	return nil
}

// EngineSecret reads the password a registration stored at secretPath
// (an absent file: none). Its error is fixed: an opener returns it as its
// own.
func EngineSecret(secretPath string) (string, error) {
	b, err := os.ReadFile(secretPath)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", errors.New("the stored password of the dataset cannot be read (the state directory's secrets folder)")
	}
	return string(b), nil
}

// CheckColumns compares a live table's catalog now (column name → type,
// as the engine names types) with the types ref registered: a missing
// column or a changed type is an error naming the column and what the
// data owner does, from public facts only.
func CheckColumns(ref ledger.EngineRef, now map[string]string) error {
	for name, typ := range ref.Types {
		got, ok := now[name]
		switch {
		case !ok:
			return fmt.Errorf("the column %q is no longer in the table %s; the data owner registers the table again (under a new name)", name, ref.Table)
		case got != typ:
			return fmt.Errorf("the column %q of the table %s is %s now, but was %s at registration; the data owner registers the table again (under a new name) or restores the type", name, ref.Table, got, typ)
		}
	}
	return nil
}

// InDomain is a categorical column's value as a live table's statement
// reads it: NULL outside the column's declared domain, as a snapshot
// stores it (its "other" bucket), printed in dialect d.
func InDomain(d sqlplan.Dialect, sc ledger.Schema, col string) string {
	q := d.Ident(col)
	lits := make([]string, len(sc.Categorical[col]))
	for i, v := range sc.Categorical[col] {
		lits[i] = d.Str(v)
	}
	return "CASE WHEN " + d.InStrings(q, lits) + " THEN " + q + " END"
}

// engineCheckTimeout bounds the plan's catalog check.
const engineCheckTimeout = 15 * time.Second

// engineData opens an engine dataset's data after the charge: SQL only,
// no row source (every function that reads rows is refused before).
func engineData(st *ledger.Store, src Ref, ref *ledger.EngineRef) (*Data, error) {
	es, _, err := openEngineRef(context.Background(), st, src.Name, src.Schema, ref)
	if err != nil {
		return nil, err
	}
	return &Data{Schema: src.Schema, SQL: es, close: es.Close}, nil
}

// dialectOf is the dialect a reader's statement is printed in: the
// engine's, else DuckDB's (snapshots).
func dialectOf(r SQLReader) sqlplan.Dialect {
	if e, ok := r.(interface{ Dialect() sqlplan.Dialect }); ok {
		return e.Dialect()
	}
	return sqlplan.DuckDB
}

// enginePCA refuses, before the charge, a private_pca call on an engine
// dataset unless it is Analyze Gauss or the noisy power method (method
// "gauss" or "npm", or "auto" choosing one) on row-level data of the
// whole table: both read the rows only through their clipped second
// moment C, a sum over rows, which one statement computes in the engine
// (sqlplan.PrintMoments); npm's products C·X then run in privnotes
// (pca.Plan.RunGram), so npm takes d ≤ pca.MaxGaussDim there, as gauss
// does everywhere. Centred gauss runs a row-sum statement first and then
// the moments of the rows shifted by the private mean (engineGauss);
// centred npm would need its mean's share planned for that path, and is
// refused. The adaptive method filters each row by its own score at every
// iteration, and the other methods need row order or random access;
// user-level data need each user's rows together.
func enginePCA(name, kind string, src Ref, a *Args) error {
	fn := catalog.PrivatePCA.Name
	snap := "the data owner registers a snapshot of the table for it (privnotes dataset add NAME --sql ... or --from a file export); nothing was charged"
	sc := src.Schema
	method := a.Str("method")
	if method == "auto" && !sc.IsMatrix() {
		method = autoMethod(sc.D, a.Int("k"))
	}
	const runs = "methods \"gauss\" and \"npm\""
	switch {
	case method != pca.MethodGauss && method != pca.MethodNPM:
		return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where private_pca runs %s only (they read the rows through their second-moment matrix, a sum the database computes); method %q needs the rows, so %s", fn, name, kind, runs, method, snap)
	case method == pca.MethodNPM && sc.D > pca.MaxGaussDim:
		return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where method \"npm\" iterates on the d×d second-moment matrix the database sums, and d=%d is above %d; use a subset of the columns, or %s", fn, name, kind, sc.D, pca.MaxGaussDim, snap)
	case method == pca.MethodNPM && a.Bool("center"):
		return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table, where %s run, npm uncentred only (gauss runs centred there too), so leave center out, use method \"gauss\", or %s", fn, name, kind, runs, snap)
	case sc.Unit == "user":
		return Errorf(NameArgumentError, "%s: dataset %q is user-level and lives in a %s table, where %s run on row-level data only (each user's rows are averaged first, in privnotes), so %s", fn, name, kind, runs, snap)
	case src.Derived != nil:
		return Errorf(NameArgumentError, "%s: %q is a subset of a dataset that lives in a %s table, where %s run on the whole table only; run it on the dataset, or %s", fn, src.Name, kind, runs, snap)
	}
	return nil
}

// engineRowMean refuses, before the charge, private_mean's row-vector
// form on an engine dataset unless it is row-level data of the whole
// table, uncentred: its one row pass is a sum of the clipped rows, which
// one statement computes in the engine (sqlplan.PrintRowSum). User-level
// data average each user's rows first, in privnotes; a subset's filters
// are not printed into that statement.
func engineRowMean(name, kind string, src Ref) error {
	fn := catalog.PrivateMean.Name
	snap := "the data owner registers a snapshot of the table for it (privnotes dataset add NAME --sql ... or --from a file export); nothing was charged"
	switch {
	case src.Schema.Unit == "user":
		return Errorf(NameArgumentError, "%s: dataset %q is user-level and lives in a %s table, where the row-vector mean (columns=) runs on row-level data only (each user's rows are averaged first, in privnotes); give col= for one column's mean, or %s", fn, name, kind, snap)
	case src.Derived != nil:
		return Errorf(NameArgumentError, "%s: %q is a subset of a dataset that lives in a %s table, where the row-vector mean (columns=) runs on the whole table only; give col= for one column's mean of the subset, or %s", fn, src.Name, kind, snap)
	case src.Schema.Center == "public-mean":
		return Errorf(NameArgumentError, "%s: dataset %q lives in a %s table registered as centred, whose rows the database does not centre; %s", fn, name, kind, snap)
	}
	return nil
}

// engineRowSum is private_mean's row pass on a live table: the clipped
// rows are summed by one statement in the engine (sqlplan.PrintRowSum,
// in its dialect), which returns exact integer sums on the grid and the
// number of rows. An engine failure, or a result it cannot read, leaves
// the sums and the count 0: the release is then the noise alone,
// data-independent, and the engine's message is never shown (as
// engineGauss).
func engineRowSum(ctx context.Context, data *Data, m sqlplan.Moments) ([]float64, int, error) {
	sum, n, err := engineRowSumUnits(ctx, data, m, sqlplan.PrintRowSum)
	for j := range sum {
		sum[j] *= m.Clip
	}
	return sum, n, err
}

// engineRowSumUnits is engineRowSum with the statement print (PrintRowSum,
// or PrintGaussRowSum for Analyze Gauss's row rule), in units of the clip
// (each sum the exact integer times the grid's step, a power of two):
// Σ x̃ with x̃ = a/max(clip, ‖a‖) of norm ≤ 1, as centred Analyze Gauss's
// private mean takes it (pca.Plan.CenterOfSum).
func engineRowSumUnits(ctx context.Context, data *Data, m sqlplan.Moments, print func(sqlplan.Moments, sqlplan.Dialect, string) (string, error)) ([]float64, int, error) {
	stmt, err := print(m, dialectOf(data.SQL), data.SQL.Table())
	if err != nil {
		return nil, 0, err
	}
	sum := make([]float64, len(m.Columns))
	rows, err := data.SQL.Query(ctx, stmt)
	if err != nil && ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	if err != nil {
		return sum, 0, nil
	}
	n, ok := fillRowSum(sum, rows, sqlplan.RowSumGrid().Step, 1)
	if !ok {
		clear(sum)
		return sum, 0, nil
	}
	return sum, n, nil
}

// fillRowSum reads the statement's one row (the exact sums in grid steps
// of size step, a power of two, then the number of rows) into sum, in
// the values' units (each sum times step, exact, times clip); false for a
// result of another shape.
func fillRowSum(sum []float64, rows [][]any, step, clip float64) (int, bool) {
	m := len(sum)
	if len(rows) != 1 || len(rows[0]) != m+1 {
		return 0, false
	}
	for j := range m {
		v, ok := exactInt(rows[0][j])
		if !ok {
			return 0, false
		}
		sum[j] = toFloat(v) * step * clip
	}
	n, ok := exactInt(rows[0][m])
	if !ok || n.Sign() < 0 || !n.IsInt64() {
		return 0, false
	}
	return int(n.Int64()), true
}

// engineGauss is Analyze Gauss's row pass on a live table: the clipped
// second-moment matrix is summed by one statement in the engine
// (sqlplan.PrintMoments, in the engine's dialect) and only its d(d+1)/2
// exact integer sums come back; then the plan's noise step. An engine
// failure, or a result it cannot read, leaves the matrix 0: the release
// is then the noise alone, data-independent, and the engine's message is
// never shown (as private_sql's runSQL).
//
// A centred plan first sums the clipped rows in the engine
// (sqlplan.PrintGaussRowSum, by engineRowSumUnits, whose failure likewise
// leaves the sums and the count 0) and draws its private mean μ from them
// in Go; μ, public once released, is printed into the moments statement
// as its shift, which sums clip(a − μ)·clip(a − μ)ᵀ. What the plan charges covers both
// statements' grid rounding as it covers the snapshot's float sums: the
// mean's sums stay within sqlplan.RowSumExcess of their exact values,
// below the excess the plan charges for the mean
// (pca.CenterRoundingExcess), and each shifted row is still a row the
// statement clips to norm ≤ 1 before its products go on the grid, so the
// moments' excess is sqlplan.MomentsExcess whatever the shift, below the
// plan's RoundingExcess (TestCenteredExcessCharged, TestMomentsExcessCharged).
func engineGauss(ctx context.Context, data *Data, pl *pca.Plan, clip float64) (*pca.Result, error) {
	sc := data.Schema
	d := len(sc.Columns)
	m := sqlplan.Moments{Columns: sc.Columns, Bounds: sc.Bounds, Clip: clip}
	var center *pca.CenterRelease
	if pl.CenterStd != 0 {
		sum, n, err := engineRowSumUnits(ctx, data, m, sqlplan.PrintGaussRowSum)
		if err != nil {
			return nil, err
		}
		if center, err = pl.CenterOfSum(sum, n); err != nil {
			return nil, err
		}
		m.Shift = center.Mean()
	}
	g := mat.NewSymDense(d, nil)
	// The statement was printed before the charge at its longest shift
	// (checkMoments); should the drawn mean still not print, the matrix
	// stays 0 and the call releases the noise alone, as after a failing
	// statement: after the charge there is always a release.
	if stmt, err := sqlplan.PrintMoments(m, dialectOf(data.SQL), data.SQL.Table()); err == nil {
		rows, err := data.SQL.Query(ctx, stmt)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && !fillMoments(g, rows, sqlplan.MomentsGrid().Step) {
			g = mat.NewSymDense(d, nil)
		}
	}
	return pl.RunGram(ctx, g, center)
}

// fillMoments reads the statement's one row of exact sums into g (in grid
// steps of size step, a power of two, so the scaling is exact); false for
// a result of another shape.
func fillMoments(g *mat.SymDense, rows [][]any, step float64) bool {
	d := g.SymmetricDim()
	if len(rows) != 1 || len(rows[0]) != d*(d+1)/2 {
		return false
	}
	for i := range d {
		for j := i; j < d; j++ {
			v, ok := exactInt(rows[0][sqlplan.MomentsCell(d, i, j)])
			if !ok {
				return false
			}
			g.SetSym(i, j, toFloat(v)*step)
		}
	}
	return true
}
