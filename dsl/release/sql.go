package release

// private_sql (issue 27): the analyst's SELECT over one registered
// dataset, planned by dsl/sqlplan from the query text and the public
// schema, charged once, and run as ONE statement inside the data engine
// (the snapshot's DuckDB) that returns per group the exact aggregates on
// fixed-point grids; the noise is added here.
//
// What is supported, and what is refused before the charge:
//   - datasets stored as snapshots (dataset add --from/--sql), row-level
//     or user-level (each user's rows bounded inside the statement to
//     max_groups groups and max_rows rows per group, sqlplan.Bound, with
//     sensitivities scaled by both), and public tables
//     (private_sql(query, from=t), sql_public.go); data held in memory,
//     synth_* data and subsets (filter/select) are refused; a data
//     server's dataset (FROM server.name) is planned and run by that
//     server (Local.Served), the client sending it the call;
//   - COUNT(*), SUM, AVG, VARIANCE, STDDEV (noise on exact integer sums),
//     QUANTILE and MEDIAN (the exponential mechanism of private_quantile,
//     run here on per-group histograms the statement returns on the
//     mechanism's public grid);
//   - keys with a public domain (declared categories, CASE literals,
//     floor over bounds, keys=), every group released; keys without one
//     by DP partition selection at delta > 0 (sql_select.go).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// FnSQL is the private SQL function's name.
var FnSQL = catalog.PrivateSQL.Name

// Table is a private_sql release: one row per group of the keys' public
// domains (their cross product, first key slowest), one column per SELECT
// item in its order. Key cells are string, float64 or nil (a NULL key);
// value cells are float64, every one as released.
type Table struct {
	Columns []string
	// Kinds says what each column holds: "key", or the aggregate it
	// releases ("count", "count distinct", "sum", "avg", "variance",
	// "stddev", "quantile").
	Kinds []string
	Rows  [][]any
	// Parts are the noisy vectors an AVG, VARIANCE or STDDEV column is
	// computed from, by column: Parts[col][k][row] is part k (count,
	// centred sum, centred sum of squares) of row. Drawn under the same
	// charge as the values, they are released too, so that the column's
	// confidence interval follows (sql_interval.go).
	Parts map[string][][]float64
}

// KeyColumns and ValueColumns name the key and the value columns.
func (t *Table) KeyColumns() []string   { return t.pick(true) }
func (t *Table) ValueColumns() []string { return t.pick(false) }

func (t *Table) pick(keys bool) []string {
	var out []string
	for i, c := range t.Columns {
		if (t.Kinds[i] == "key") == keys {
			out = append(out, c)
		}
	}
	return out
}

// EncodeRelease implements Value.
func (v *Table) EncodeRelease(e *Encoder) {
	e.Strings("columns", v.Columns)
	e.Strings("kinds", v.Kinds)
	rows := make([]any, len(v.Rows))
	for i, r := range v.Rows {
		cells := make([]any, len(r))
		for j, c := range r {
			if x, ok := c.(float64); ok {
				cells[j] = Float(x)
			} else {
				cells[j] = c
			}
		}
		rows[i] = cells
	}
	e.fields["rows"] = rows
	encodeParts(e, v.Parts)
}

// DecodeRelease implements Value.
func (v *Table) DecodeRelease(d *Decoder) error {
	v.Columns, v.Kinds = d.Strings("columns"), d.Strings("kinds")
	var rows [][]any
	d.read("rows", &rows, false)
	if d.Err() != nil {
		return d.Err()
	}
	if len(v.Kinds) != len(v.Columns) {
		return errors.New("columns and kinds differ in length")
	}
	for i, r := range rows {
		if len(r) != len(v.Columns) {
			return fmt.Errorf("row %d has %d cells, not %d", i, len(r), len(v.Columns))
		}
		for j, c := range r {
			switch x := c.(type) {
			case nil:
			case float64:
			case string:
				if v.Kinds[j] != "key" { // a non-finite value
					var f Float
					if err := f.UnmarshalJSON([]byte(strconv.Quote(x))); err != nil {
						return fmt.Errorf("row %d: %v", i, err)
					}
					r[j] = float64(f)
				}
			default:
				return fmt.Errorf("row %d: a cell of type %T", i, c)
			}
		}
	}
	v.Rows = rows
	v.Parts = decodeParts(d)
	return d.Err()
}

// SQLDataset reads the dataset a query's FROM names (server "" for a
// local one), parsing the query with the registered engine's parser and
// checking it against the grammar. The runtime resolves the call's
// dataset with it; the plan checks again that FROM names the call's.
func SQLDataset(ctx context.Context, query string) (server, dataset string, err error) {
	q, err := parseSQL(ctx, query)
	if err != nil {
		return "", "", err
	}
	return q.Server, q.Dataset, nil
}

// parseSQL parses and checks the grammar; refusals are ArgumentErrors.
func parseSQL(ctx context.Context, query string) (*sqlplan.Query, error) {
	parse := registeredSQLParser()
	if parse == nil {
		return nil, Errorf(NameNotAvailable, "%s: this build of privnotes has no SQL engine (DuckDB) to parse the query", FnSQL)
	}
	if strings.ContainsRune(query, 0) {
		return nil, Errorf(NameArgumentError, "%s: the query holds a NUL character", FnSQL)
	}
	ast, err := parse(ctx, query)
	if err != nil {
		// A failure of the parser itself, on public text only.
		return nil, Errorf(NameArgumentError, "%s: the SQL parser failed on this query: %v", FnSQL, err)
	}
	q, err := sqlplan.Parse(ast)
	if err != nil {
		return nil, sqlRefusal(err)
	}
	return q, nil
}

// sqlRefusal turns a planner's refusal into an ArgumentError: its text
// names the construct and the fix, from public facts only.
func sqlRefusal(err error) *Error {
	var pe *sqlplan.Error
	if errors.As(err, &pe) {
		return Errorf(NameArgumentError, "%s: %s", FnSQL, pe.Error())
	}
	return Errorf(NameArgumentError, "%s: %v", FnSQL, err)
}

// sqlSchema is the dataset's public schema as the planner sees it:
// numeric columns (with the owner's bounds where declared) and
// categorical columns (strings, with their declared categories). closed
// says the table reads every value outside a categorical column's
// categories as NULL (sqlplan.Column.Closed): true of registered datasets
// (a snapshot stores them so, a live table's projection reads them so),
// not of a cell's public table, which keeps its strings.
func sqlSchema(sc ledger.Schema, closed bool) sqlplan.Schema {
	var s sqlplan.Schema
	for _, c := range sc.Columns {
		col := sqlplan.Column{Name: c, Kind: sqlplan.Numeric}
		if b, ok := sc.Bounds[c]; ok {
			col.Bounded, col.Lo, col.Hi = true, b[0], b[1]
		}
		s.Columns = append(s.Columns, col)
	}
	if sc.Label != "" {
		col := sqlplan.Column{Name: sc.Label, Kind: sqlplan.Numeric}
		if sc.LabelClip > 0 {
			col.Bounded, col.Lo, col.Hi = true, -sc.LabelClip, sc.LabelClip
		}
		s.Columns = append(s.Columns, col)
	}
	for _, c := range CategoricalColumns(sc) {
		s.Columns = append(s.Columns, sqlplan.Column{Name: c, Kind: sqlplan.Categorical, Categories: sc.Categorical[c], Closed: closed})
	}
	if sc.Unit == "user" {
		// The unit column is not a column of values: it may stand only
		// in COUNT(DISTINCT unit).
		s.Unit = sc.UserColumn
	}
	return s
}

// sqlKeys converts the keys= keyword: a map from a key's output name to
// its values (strings, numbers, nil for NULL).
func sqlKeys(v any) (map[string][]sqlplan.Value, error) {
	if v == nil {
		return nil, nil
	}
	out := map[string][]sqlplan.Value{}
	add := func(name string, vals []any) error {
		for _, x := range vals {
			switch x := x.(type) {
			case nil:
				out[name] = append(out[name], sqlplan.Value{Kind: sqlplan.ValueNull})
			case string:
				out[name] = append(out[name], sqlplan.String(x))
			case float64:
				out[name] = append(out[name], sqlplan.Number(x))
			case int:
				out[name] = append(out[name], sqlplan.Number(float64(x)))
			default:
				return Errorf(NameArgumentError, "%s: keys=: the values of key %q must be strings or numbers, not %T", FnSQL, name, x)
			}
		}
		return nil
	}
	switch m := v.(type) {
	case map[string][]any:
		for k, vals := range m {
			if err := add(k, vals); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, vals := range m {
			switch l := vals.(type) {
			case []any:
				if err := add(k, l); err != nil {
					return nil, err
				}
			case []string:
				for _, s := range l {
					out[k] = append(out[k], sqlplan.String(s))
				}
			case []float64:
				for _, x := range l {
					out[k] = append(out[k], sqlplan.Number(x))
				}
			case []int:
				for _, x := range l {
					out[k] = append(out[k], sqlplan.Number(float64(x)))
				}
			default:
				return nil, Errorf(NameArgumentError, "%s: keys=: key %q needs a list of values, not %T", FnSQL, k, vals)
			}
		}
	case map[string][]string:
		for k, l := range m {
			for _, s := range l {
				out[k] = append(out[k], sqlplan.String(s))
			}
		}
	default:
		return nil, Errorf(NameArgumentError, "%s: keys= takes a map from a key's name to its list of values, not %T", FnSQL, v)
	}
	return out, nil
}

// sqlWeights reads weights=: one positive number per aggregate, in SELECT
// order (nil: even shares).
func sqlWeights(v any, n int) ([]float64, error) {
	var w []float64
	switch x := v.(type) {
	case nil:
	case []float64:
		w = x
	case []any:
		for _, e := range x {
			switch f := e.(type) {
			case float64:
				w = append(w, f)
			case int:
				w = append(w, float64(f))
			default:
				return nil, Errorf(NameArgumentError, "%s: weights= takes numbers, not %T", FnSQL, e)
			}
		}
	case []int:
		for _, f := range x {
			w = append(w, float64(f))
		}
	default:
		return nil, Errorf(NameArgumentError, "%s: weights= takes a list of numbers, not %T", FnSQL, v)
	}
	shares := make([]float64, n)
	if len(w) == 0 {
		for i := range shares {
			shares[i] = 1 / float64(n)
		}
		return shares, nil
	}
	if len(w) != n {
		return nil, Errorf(NameArgumentError, "%s: weights= gives %d weights for %d aggregates; give one per aggregate, in SELECT order", FnSQL, len(w), n)
	}
	total := 0.0
	for _, x := range w {
		if !(x > 0) || math.IsInf(x, 0) || x > 1e9 {
			return nil, Errorf(NameArgumentError, "%s: weights= must be finite numbers in (0, 1e9]", FnSQL)
		}
		total += x
	}
	for i, x := range w {
		shares[i] = x / total
	}
	return shares, nil
}

// sqlVector is one noised vector of a plan: one value per group.
type sqlVector struct {
	what     string  // "count", "sum", "centred sum", "sum of squares"
	l1, l2   float64 // sensitivities of the exact vector
	excess   float64 // the conversion's rounding excess (sums)
	share    float64 // of the call's ε (Laplace) or ρ (Gaussian)
	scale    float64 // Laplace b or Gaussian σ
	gaussian bool
}

// sqlRelease is one aggregate of a plan.
type sqlRelease struct {
	agg  sqlplan.Aggregate
	grid sqlplan.Grid
	vecs []sqlVector // COUNT: [count]; SUM: [sum]; AVG: [count, sum]; VARIANCE/STDDEV: [count, sum, sumsq]; QUANTILE: none
	// QUANTILE: the exponential mechanism run on each group's histogram
	// (at the per-group ε of sqlQuantileEps), and the aggregate's share.
	qp     *tabular.QuantilePlan
	joint  *sqlJoint // several quantiles of one column drawn together (sql_quantiles.go)
	share  float64
	halved bool // replace-one over several groups: two histograms change
	groups int  // the groups its sensitivities are for
	// nonnegative: a COUNT's noisy values below 0 are shown as 0 (the
	// nonnegative keyword; post-processing).
	nonnegative bool
	// total: consistent=true, the vector carries the groups' total as
	// one more coordinate (sql_consistent.go).
	total bool
}

// The shares of an aggregate's budget among its vectors: an AVG spends
// half on its count and half on its centred sum (as Google's BoundedMean);
// a VARIANCE a third on each of its three.
var sqlVectorShares = map[sqlplan.AggKind][]float64{
	sqlplan.Count:         {1},
	sqlplan.CountDistinct: {1},
	sqlplan.Sum:           {1},
	sqlplan.Avg:           {0.5, 0.5},
	sqlplan.Variance:      {1.0 / 3, 1.0 / 3, 1.0 / 3},
	sqlplan.Stddev:        {1.0 / 3, 1.0 / 3, 1.0 / 3},
}

func planSQL(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := FnSQL
	query, _ := a.Vals["query"].(string)
	if strings.TrimSpace(query) == "" {
		return nil, Errorf(NameArgumentError, "%s: give the query as the first argument: private_sql(`SELECT COUNT(*) FROM name`, eps=…)", fn)
	}
	q, err := parseSQL(context.Background(), query)
	if err != nil {
		return nil, err
	}
	switch {
	case src.Synthetic():
		// A public table's name in FROM is bound by from= (sql_public.go).
		if err := publicSQLSource(fn, src); err != nil {
			return nil, err
		}
	case src.Derived != nil:
		return nil, Errorf(NameArgumentError, "%s: a query reads a registered dataset by its name in FROM; filter rows with WHERE instead of filter()/select()", fn)
	case q.Server != "" && !env.Served:
		// Only a data service runs server.name (the client sends the
		// call there: dsl/runtime/sql.go); the server's part is the
		// client's name for it.
		return nil, Errorf(NameArgumentError, "%s: FROM %s.%s names a dataset on a data server, which runs such a call itself; this executor holds local datasets only", fn, q.Server, q.Dataset)
	case q.Dataset != src.Name:
		return nil, Errorf(NameArgumentError, "%s: FROM names dataset %q, but the call runs on %q; name the dataset the call is for", fn, q.Dataset, src.Name)
	}
	sc := src.Schema
	if sc.IsMatrix() {
		return nil, Errorf(NameArgumentError, "%s: dataset %q is a matrix dataset; private SQL reads row datasets", fn, src.Name)
	}
	if sc.Center == "public-mean" {
		return nil, Errorf(NameArgumentError, "%s: dataset %q was registered with --center public-mean, so its stored values are centred on a public mean; private SQL needs the data registered without centring", fn, src.Name)
	}
	// Only a snapshot is in the data engine. (An executor without a store
	// cannot charge, so it never reaches the read: planning without one,
	// as the memory tests do, skips the check.)
	if env.Store != nil && !src.Synthetic() {
		st, err := env.store()
		if err != nil {
			return nil, err
		}
		if _, _, ok, err := st.Snapshot(src.Name); err != nil {
			return nil, Errorf(NameLedgerError, "%s: dataset %q: %v", fn, src.Name, err)
		} else if _, engine, _ := st.Engine(src.Name); !ok && !engine {
			return nil, Errorf(NameArgumentError, "%s: dataset %q is held in the registry's memory format, not as a snapshot, so the data engine cannot query it; the owner registers it again with privnotes dataset add %s --from FILE", fn, src.Name, src.Name)
		}
	}
	keys, err := sqlKeys(a.Vals["keys"])
	if err != nil {
		return nil, err
	}
	opt := sqlplan.Options{Keys: keys}
	maxGroups, maxRows := optInt(a, "max_groups", 1), optInt(a, "max_rows", 1)
	if sc.Unit == "user" {
		// Each user keeps the rows of their first max_groups groups and
		// their first max_rows rows in each (sqlplan.Bound); the
		// sensitivities below scale with both.
		opt.MaxGroups, opt.MaxRows = maxGroups, maxRows
		if sqlHasColumn(sc, "file_row_number") {
			// The engine's row positions (the bounding's order) cannot be
			// read from a file with a column of that name.
			return nil, Errorf(NameArgumentError, "%s: dataset %q is user-level and has a column named file_row_number, which hides the data engine's row positions that bound each user's rows; the owner registers it again with the column renamed (dataset add --sql)", fn, src.Name)
		}
	} else if maxGroups != 1 || maxRows != 1 {
		return nil, Errorf(NameArgumentError, "%s: max_groups=%d, max_rows=%d apply to user-level data; dataset %q is row-level, where every row is its own unit in one group: leave max_groups and max_rows out", fn, maxGroups, maxRows, src.Name)
	}
	sp, err := q.Plan(sqlSchema(sc, src.Table == nil), opt)
	if err != nil {
		return nil, sqlRefusal(err)
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	quantiles := false
	for _, ag := range sp.Aggregates {
		quantiles = quantiles || ag.Kind == sqlplan.Quantile
	}
	selecting := sp.PartitionSelection()
	if selecting {
		if err := checkPartitionSelection(sp, src, delta); err != nil {
			return nil, err
		}
	}
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	groups := 1
	for _, k := range sp.Keys {
		groups *= len(k.Domain)
	}
	shares, err := sqlWeights(a.Vals["weights"], len(sp.Aggregates))
	if err != nil {
		return nil, err
	}
	var sel *sqlSelection
	aggEps, aggDelta := eps, delta
	if selecting {
		// The released groups are data-dependent, at most MaxGroups of
		// them by the plan's reckoning: the sensitivities are those of
		// more than one group, the noise scales sized for MaxGroups.
		groups = sqlplan.MaxGroups
		if !(eps > 0) || math.IsInf(eps, 0) {
			return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrEps)
		}
		if !(delta > 0 && delta < 1) {
			return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrDelta)
		}
		// Partition selection takes one share, as one more aggregate;
		// the aggregates split the rest by their weights.
		if sel, aggEps, aggDelta, err = planQuerySelection(shares, eps, delta, nb, sp); err != nil {
			return nil, err
		}
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrEps)
	}
	if !(delta >= 0 && delta < 1) {
		return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrDelta)
	}
	gaussian := aggDelta > 0
	if gaussian && quantiles && gaussianCalibration(src) == tabular.CalibrateGDP {
		// The gdp accountant composes Gaussian releases exactly, but an
		// exponential mechanism has no GDP bound of its own.
		return nil, Errorf(NameArgumentError, "%s: dataset %q is accounted in Gaussian DP, where a QUANTILE (the exponential mechanism) has no GDP cost of its own at delta > 0; run the quantiles with delta=0 in their own query, or private_quantile", fn, src.Name)
	}
	ev := accounting.Pure(eps)
	rho := 0.0
	if gaussian {
		var ok bool
		if rho, ev, ok = tabular.GaussianTarget(aggEps, aggDelta, gaussianCalibration(src)); !ok {
			return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrCalibrate)
		}
		if quantiles {
			// Not a composition of Gaussian releases only: a plain zCDP
			// event (the quantiles' share is bounded range, ε²/8-zCDP).
			ev = accounting.Zcdp(rho).WithTarget(eps, delta)
		}
	}
	rels, err := sqlReleases(sp, groups, nb, shares, eps, rho, gaussian)
	if err != nil {
		return nil, err
	}
	if err := planSQLJoints(sp, rels, nb, eps, rho, gaussian); err != nil {
		return nil, err
	}
	post, counts := countRule(a), false
	for i := range rels {
		if k := rels[i].agg.Kind; k == sqlplan.Count || k == sqlplan.CountDistinct {
			rels[i].nonnegative, counts = post.nonnegative, true
		}
	}
	consistentNote, err := sqlConsistent(a, rels, sel != nil, sc.Unit == "user", groups, nb, eps, rho, gaussian)
	if err != nil {
		return nil, err
	}
	// The statement must print from the plan alone (with the quantiles'
	// grids, set by sqlReleases); printing it now makes every printing
	// failure a refusal before the charge (the run prints the same plan
	// again over the reader's table).
	if _, err := sqlplan.Print(sp, sqlplan.DuckDB, "T"); err != nil {
		return nil, sqlRefusal(err)
	}
	method := "sql/laplace"
	calib := fmt.Sprintf("pure ε-DP with ε=%v, split over the releases (sequential composition)%s", eps, zcdpAdvice(sc, eps, true))
	switch {
	case selecting:
		method, ev, calib = sel.charge(eps, delta)
	case gaussian:
		method = "sql/gaussian"
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s, split over the releases", eps, delta, calibrationWords(ev))
	}
	ev.Mechanism = method
	explain := sqlExplain(rels, sp, eps, rho, nb)
	if sel != nil {
		explain = sel.explain(sp, nb) + "; " + explain
	}
	if bd := sp.Bound; bd != nil {
		explain = fmt.Sprintf("contribution bounding: each user keeps their first %d group(s) (max_groups) and their first %d row(s) in each (max_rows), in row order, of the rows that pass WHERE; ", bd.Groups, bd.Rows) + explain
	}
	cols, kinds := sqlOutputs(sp)
	var groupsParam any = groups
	if sel != nil {
		groupsParam = "partition selection"
	}
	note := fmt.Sprintf("%d group(s) from the keys' public domains, every one released whatever the data (rows whose key is outside the domains are in none)", groups)
	if sel != nil {
		note = "groups chosen by DP partition selection: a candidate group (a combination of key values the data hold, public keys within their domains) is released when its row count plus " + sel.noiseName() + " noise reaches the threshold"
	}
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: cols,
		Noise: explain,
		Note: fmt.Sprintf("%s; one statement in the data engine computes each group's exact integer aggregates on fixed-point grids; %s; counts rounded to integers; QUANTILE a point of its public grid drawn per group by the exponential mechanism from the group's histogram; AVG = midpoint + noisy centred sum / noisy count (the midpoint when the count is below 1), clamped to the bounds; VARIANCE from the noisy count, centred sum and sum of squares, clamped to [0, ((hi−lo)/2)²] (0 when the count is below 1); STDDEV its square root%s",
			note, calib, countsNote(counts, post)),
		Params: publicParams(a, sqlParams(sp, map[string]any{"neighbour": nb.String(), "groups": groupsParam, ErrorsParam: sqlErrors(sp.Outputs, rels, cols)}))}
	p.Note += consistentNote
	p.sql = sp
	memGroups := groups
	if sel != nil {
		// The candidates are the data's; the estimate assumes a nominal
		// number of them.
		memGroups = sqlNominalCandidates
	}
	mem, facts := add(1<<20, mul(i64(memGroups), i64(len(cols)+4*len(rels)), 64)), fmt.Sprintf("%d groups × %d columns", memGroups, len(cols))
	for _, r := range rels {
		if r.qp != nil {
			// One dense histogram for the group being drawn, and the
			// engine's sparse ones: at most a bin per grid point and
			// group, and at most one per row in all — counted for up to
			// sqlHistEntries (the rows are not a public fact).
			entries := min(mul(i64(memGroups), i64(r.qp.Grid)+1), sqlHistEntries)
			mem = add(mem, add(mul(i64(r.qp.Grid)+2, tabular.QuantileBytesPerPoint), mul(entries, 48)))
			facts += fmt.Sprintf(", a histogram of %d points for %s and up to %d sparse bins", r.qp.Grid+1, r.agg.Name, entries)
		}
	}
	p.setMemory(mem, facts, "Group by fewer keys, or coarser ones; a quantile over narrower bounds has a smaller grid only when the bounds are within 2^24 ulps")
	p.run = func(ctx context.Context, d *Data) (any, error) {
		if sel != nil {
			return runSelectedSQL(ctx, d, sp, rels, cols, kinds, sel, env.sampler())
		}
		return runSQL(ctx, d, sp, rels, cols, kinds, groups, env.sampler())
	}
	if src.Table != nil {
		p.run = publicSQLRun(src.Table, p.run)
	}
	return p, nil
}

// sqlHasColumn reports whether the schema names column c.
func sqlHasColumn(sc ledger.Schema, c string) bool {
	for _, col := range sqlSchema(sc, false).Columns {
		if col.Name == c {
			return true
		}
	}
	return sc.UserColumn == c
}

// sqlMaxGroups and sqlMaxRows are a plan's contribution bounds: k groups
// and r rows per group for each user (sqlplan.Bound), 1 and 1 on
// row-level data, where a row is its own unit in one group.
func sqlMaxGroups(sp *sqlplan.Plan) int {
	if sp.Bound == nil {
		return 1
	}
	return sp.Bound.Groups
}

func sqlMaxRows(sp *sqlplan.Plan) int {
	if sp.Bound == nil {
		return 1
	}
	return sp.Bound.Rows
}

// sqlParams adds the contribution bounds a user-level plan used to the
// receipt's parameters.
func sqlParams(sp *sqlplan.Plan, p map[string]any) map[string]any {
	if sp.Bound != nil {
		p["unit"] = "user:" + sp.Bound.Unit
		p["max_groups"], p["max_rows"] = sp.Bound.Groups, sp.Bound.Rows
	}
	return p
}

// sqrtUp is a float64 no smaller than √k.
func sqrtUp(k int) float64 {
	r := math.Sqrt(float64(k))
	if math.FMA(r, r, -float64(k)) < 0 { // exact: r·r rounded could hide r < √k
		r = math.Nextafter(r, math.Inf(1))
	}
	return r
}

// sqlHistEntries is the most sparse histogram bins a quantile's memory
// estimate counts (each of the engine's bins comes from at least one row).
const sqlHistEntries = 1 << 24

// upward is a float64 no smaller than x (one ulp above the rounded sum).
func upward(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// sqlQuantileEps is the ε of the exponential mechanism each group's
// quantile runs at, for an aggregate with the given share of the call's
// ε (Laplace, pure) or ρ (Gaussian, zCDP) when each unit reaches at most
// b.k groups with at most b.r rows in each (1 and 1 on row-level data).
// The groups are disjoint, so one change of a unit changes the
// histograms of at most T = b.touched(groups, nb) groups (one row: 1
// under add-remove, 2 under replace-one with more than one group), and
// each by at most b.r rows, which moves the rank of any grid point by at
// most b.r: the utility sensitivity is b.r, so a mechanism planned at ε
// is (b.r·ε)-DP, (b.r·ε)-bounded range. Over T groups: ε = share·ε/(T·r)
// (pure), or T·(r·ε)²/8 = share·ρ, ε = √(8·share·ρ/T)/r (zCDP; the
// mechanism, ε-bounded range, costs ε²/8, accounting.BoundedRange).
func sqlQuantileEps(share float64, groups int, nb accounting.Neighbour, eps, rho float64, gaussian bool, b sqlBound) float64 {
	touched, rows := float64(b.touched(groups, nb)), float64(b.rows())
	if gaussian {
		return math.Sqrt(8*rho*share/touched) / rows
	}
	return eps * share / touched / rows
}

// sqlBound is a plan's contribution bound: each unit reaches at most k
// groups with at most r rows in each (sqlplan.Bound); the zero value is
// row-level data, one row in one group.
type sqlBound struct{ k, r int }

// boundOf is the plan's bound.
func boundOf(sp *sqlplan.Plan) sqlBound {
	if sp.Bound == nil {
		return sqlBound{1, 1}
	}
	return sqlBound{sp.Bound.Groups, sp.Bound.Rows}
}

func (b sqlBound) groups() int { return max(b.k, 1) }
func (b sqlBound) rows() int   { return max(b.r, 1) }

// touched is the most groups one neighbouring change reaches: a unit's k
// under add-remove; under replace-one the old unit's k and the new one's
// k, 2k, and never more than the groups there are (with one group, 1).
func (b sqlBound) touched(groups int, nb accounting.Neighbour) int {
	if nb == accounting.ReplaceOne && groups > 1 {
		return min(2*b.groups(), groups)
	}
	return b.groups()
}

// scaleOut is x·r (r ≥ 1 rows of a value x) rounded away from zero, so
// that the range of a unit's total in a group is never underestimated.
func scaleOut(x float64, r int) float64 {
	if r == 1 || x == 0 {
		return x
	}
	return math.Nextafter(x*float64(r), math.Copysign(math.Inf(1), x))
}

// sqlReleases fixes each aggregate's vectors: their sensitivities on
// row-level data under nb (one row, one group), their shares of the call's
// ε (Laplace) or ρ (Gaussian) and their noise scales over groups groups;
// for a QUANTILE, the exponential mechanism's plan, whose grid it sets in
// sp (Aggregate.Bins) for the printer.
func sqlReleases(sp *sqlplan.Plan, groups int, nb accounting.Neighbour, shares []float64, eps, rho float64, gaussian bool) ([]sqlRelease, error) {
	fn := FnSQL
	var err error
	rels := make([]sqlRelease, len(sp.Aggregates))
	b := boundOf(sp)
	for i, ag := range sp.Aggregates {
		r := sqlRelease{agg: ag}
		if ag.Kind == sqlplan.Quantile {
			if err := checkSQLBounds(ag); err != nil {
				return nil, err
			}
			r.share = shares[i] * tabular.MeanRoundDown
			qp, err := tabular.PlanQuantile(ag.Lo, ag.Hi, ag.Q, sqlQuantileEps(r.share, groups, nb, eps, rho, gaussian, b))
			if err != nil {
				return nil, Errorf(NameArgumentError, "%s: %s: %v", fn, ag.Name, err)
			}
			r.qp = qp
			r.halved = nb == accounting.ReplaceOne && groups > 1
			r.groups = groups
			sp.Aggregates[i].Bins = qp.Grid
			r.agg.Bins = qp.Grid
			rels[i] = r
			continue
		}
		// Sensitivities (docs/mechanisms.md, private_sql): a unit reaches
		// at most k groups (touched: T of them change under the
		// relation) with at most r rows in each; on row-level data k = r
		// = 1, one row in one group. A row may leave the selection
		// (WHERE, a key outside its domain, a NULL value) when it is
		// replaced, so under replace-one the sensitivities are also at
		// least add-remove's (addRemoveToo). A count moves by at most r
		// in each of T groups: ℓ1 = T·r, ℓ2 = √T·r.
		touched, rows := b.touched(groups, nb), b.rows()
		count := sqlVector{what: "count", l1: float64(touched * rows), l2: sqrtUp(touched * rows * rows)}
		if ag.Kind != sqlplan.Count && ag.Kind != sqlplan.CountDistinct {
			if r.grid, err = sqlplan.GridOf(ag); err != nil {
				return nil, sqlRefusal(err)
			}
			if err := checkSQLBounds(ag); err != nil {
				return nil, err
			}
		}
		g := r.grid
		// A unit's total in a group is the sum of at most r terms in
		// [lo, hi]: in [lo, hi] or 0 for r = 1 (addRemoveToo covers the
		// 0), else in the hull [min(0, r·lo), max(0, r·hi)]; one unit's
		// totals in k groups then have GroupSumSensitivity's bounds.
		sum := func(what string, lo, hi float64) sqlVector {
			// The conversion's rounding excess depends on the terms'
			// magnitude m only (RoundingExcess: the rows' total is at
			// most MaxRows whatever the bound), not on r.
			m := max(math.Abs(lo), math.Abs(hi))
			if rows > 1 {
				lo, hi = scaleOut(min(lo, 0), rows), scaleOut(max(hi, 0), rows)
			}
			l1, l2 := tabular.GroupSumSensitivity(lo, hi, groups, b.groups(), nb, true)
			return sqlVector{what: what, l1: l1, l2: l2, excess: sqlplan.RoundingExcess(m)}
		}
		switch ag.Kind {
		case sqlplan.Count:
			r.vecs = []sqlVector{count}
		case sqlplan.CountDistinct:
			// A unit counts once in each group it reaches, and each
			// group's number of units moves by at most one: ℓ1 = T,
			// ℓ2 = √T. Without a bound (a plan of a caller that bounds
			// nothing) a unit may be in all G groups: ℓ1 ≤ G, ℓ2 ≤ √G
			// under either relation (GroupCountSensitivity with k = G,
			// capped at them).
			if sp.Bound == nil {
				ul1, ul2 := tabular.GroupCountSensitivity(groups, groups, nb, true)
				r.vecs = []sqlVector{{what: "count of users", l1: min(ul1, float64(groups)), l2: min(ul2, sqrtUp(groups))}}
			} else {
				r.vecs = []sqlVector{{what: "count of users", l1: float64(touched), l2: sqrtUp(touched)}}
			}
		case sqlplan.Sum:
			r.vecs = []sqlVector{sum("sum", g.Low(), g.High())}
		case sqlplan.Avg:
			r.vecs = []sqlVector{count, sum("centred sum", g.Low(), g.High())}
		case sqlplan.Variance, sqlplan.Stddev:
			m := g.Magnitude()
			r.vecs = []sqlVector{count, sum("centred sum", g.Low(), g.High()), sum("centred sum of squares", 0, m*m)}
		default:
			return nil, Errorf(NameArgumentError, "%s: %s (%s) is not executed by private SQL yet", fn, ag.Name, ag.Kind)
		}
		for j := range r.vecs {
			v := &r.vecs[j]
			v.share = shares[i] * sqlVectorShares[ag.Kind][j] * tabular.MeanRoundDown
			v.gaussian = gaussian
			var err error
			if gaussian {
				v.scale, err = noise.GaussianScaleChecked(upward(v.l2+v.excess), 1/math.Sqrt(2*rho*v.share), groups)
			} else {
				v.scale, err = noise.LaplaceScaleChecked(upward(v.l1+v.excess), eps*v.share, groups)
			}
			if err != nil {
				return nil, Errorf(NameArgumentError, "%s: %s: the noise of its %s cannot be calibrated (%v); check eps, delta and the bounds", fn, ag.Name, v.what, err)
			}
		}
		rels[i] = r
	}
	return rels, nil
}

// checkSQLBounds refuses bounds the sensitivities cannot take (beyond
// ±2^990, as the other sums).
func checkSQLBounds(ag sqlplan.Aggregate) error {
	if math.Abs(ag.Lo) > tabular.MaxBound || math.Abs(ag.Hi) > tabular.MaxBound {
		return Errorf(NameArgumentError, "%s: %s: %v", FnSQL, ag.Name, tabular.ErrBoundsRange)
	}
	return nil
}

// sqlOutputs names the release's columns and their kinds, in SELECT order.
func sqlOutputs(sp *sqlplan.Plan) (cols, kinds []string) {
	for _, o := range sp.Outputs {
		if o.Key >= 0 {
			cols, kinds = append(cols, sp.Keys[o.Key].Name), append(kinds, "key")
			continue
		}
		ag := sp.Aggregates[o.Agg]
		cols, kinds = append(cols, ag.Name), append(kinds, strings.ToLower(ag.Kind.String()))
	}
	return cols, kinds
}

// sqlExplain is the receipt's EXPLAIN: per release its mechanism, its
// vectors' sensitivities, noise scales and shares of the cost.
func sqlExplain(rels []sqlRelease, sp *sqlplan.Plan, eps, rho float64, nb accounting.Neighbour) string {
	var b strings.Builder
	for i, r := range rels {
		if i > 0 {
			b.WriteString("; ")
		}
		ag := r.agg
		fmt.Fprintf(&b, "%s = %s", ag.Name, ag.Kind)
		if ag.Kind != sqlplan.Count && ag.Kind != sqlplan.CountDistinct {
			fmt.Fprintf(&b, " over [%v, %v] (%s bounds)", ag.Lo, ag.Hi, map[sqlplan.BoundsSource]string{sqlplan.FromQuery: "query", sqlplan.FromSchema: "owner's"}[ag.Bounds])
		}
		b.WriteString(":")
		if r.qp != nil {
			fmt.Fprintf(&b, " q=%v, exponential mechanism over a grid of %d steps, per group ε=%.4g (weights falling by R=%.6g per rank of distance from q·n; utility sensitivity %d under %s", ag.Q, r.qp.Grid, r.qp.Eps, r.qp.Ratio(), boundOf(sp).rows(), nb)
			if bd := boundOf(sp); sp.Bound != nil {
				fmt.Fprintf(&b, "; a user's change reaches up to %d group(s), each by up to %d row(s): the per-group ε is the release's over %d·%d", bd.touched(r.groups, nb), bd.rows(), bd.touched(r.groups, nb), bd.rows())
			} else if r.halved {
				b.WriteString("; halved: under replace-one a row can leave one group's histogram and enter another's")
			}
			if rho > 0 {
				fmt.Fprintf(&b, "; bounded range, ρ=%.4g", rho*r.share)
			} else {
				fmt.Fprintf(&b, "; ε=%.4g", eps*r.share)
			}
			b.WriteString(r.joint.explain() + ")")
			continue
		}
		for _, v := range r.vecs {
			if v.gaussian {
				fmt.Fprintf(&b, " %s discrete Gaussian σ=%.4g (ℓ2 sensitivity %.4g under %s", v.what, v.scale, v.l2, nb)
			} else {
				fmt.Fprintf(&b, " %s discrete Laplace b=%.4g (ℓ1 sensitivity %.4g under %s", v.what, v.scale, v.l1, nb)
			}
			if v.excess > 0 {
				fmt.Fprintf(&b, ", plus %.3g for the conversion of the exact sum", v.excess)
			}
			if v.gaussian {
				fmt.Fprintf(&b, "; ρ=%.4g),", rho*v.share)
			} else {
				fmt.Fprintf(&b, "; ε=%.4g),", eps*v.share)
			}
		}
		s := strings.TrimSuffix(b.String(), ",")
		b.Reset()
		b.WriteString(s)
	}
	return b.String()
}

// groupKey is the lookup key of one group's key values.
func groupKey(vals []any) (string, bool) {
	var b strings.Builder
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b.WriteString("\x00null")
		case string:
			b.WriteString("\x00s" + x)
		case float64:
			b.WriteString("\x00n" + strconv.FormatFloat(x+0, 'g', -1, 64)) // -0 → 0
		case int64:
			b.WriteString("\x00n" + strconv.FormatFloat(float64(x), 'g', -1, 64))
		case int32:
			b.WriteString("\x00n" + strconv.FormatFloat(float64(x), 'g', -1, 64))
		default:
			return "", false
		}
	}
	return b.String(), true
}

func valueCell(v sqlplan.Value) any {
	switch v.Kind {
	case sqlplan.ValueNumber:
		return v.Num + 0
	case sqlplan.ValueString:
		return v.Str
	}
	return nil
}

// sqlGroups lists the groups: the cross product of the keys' domains,
// the first key slowest.
func sqlGroups(sp *sqlplan.Plan, groups int) [][]any {
	out := make([][]any, groups)
	for g := range groups {
		row := make([]any, len(sp.Keys))
		rest := g
		for k := len(sp.Keys) - 1; k >= 0; k-- {
			dom := sp.Keys[k].Domain
			row[k] = valueCell(dom[rest%len(dom)])
			rest /= len(dom)
		}
		out[g] = row
	}
	return out
}

// exactInt reads an integer cell of the statement's result.
func exactInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), true
	case *big.Int:
		return x, true
	case int64:
		return big.NewInt(x), true
	case int32:
		return big.NewInt(int64(x)), true
	case uint64:
		return new(big.Int).SetUint64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 0x1p53 {
			return big.NewInt(int64(x)), true
		}
	}
	return nil, false
}

// toFloat is the correctly rounded float64 of an exact integer.
func toFloat(x *big.Int) float64 {
	f, _ := new(big.Float).SetInt(x).Float64()
	return f
}

// runSQL runs the printed statement after the charge, adds the noise and
// post-processes. An engine failure (or a result it cannot read) makes
// the run continue on an empty result: every group's aggregates are 0, so
// the release is then the noise alone, data-independent, and the call
// still returns a release; the engine's message is never shown.
func runSQL(ctx context.Context, d *Data, sp *sqlplan.Plan, rels []sqlRelease, cols, kinds []string, groups int, s *noise.Sampler) (any, error) {
	if d == nil || d.SQL == nil {
		// A build whose data layer has no SQL access (a public fact of
		// the build, not of the data): nothing to release.
		return nil, errNoSQL
	}
	rows, err := querySQL(ctx, d, sp)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return releaseSQL(rows, err == nil, sp, rels, cols, kinds, sqlGroups(sp, groups), s)
}

// releaseSQL adds the noise to the statement's rows (ok false: the
// engine failed, every aggregate is 0) for the groups keyRows, in order.
func releaseSQL(rows [][]any, ok bool, sp *sqlplan.Plan, rels []sqlRelease, cols, kinds []string, keyRows [][]any, s *noise.Sampler) (any, error) {
	groups := len(keyRows)
	index := make(map[string]int, groups)
	for g, r := range keyRows {
		k, _ := groupKey(r)
		index[k] = g
	}
	// exact[i][j][g]: release i's vector j at group g, as float64 of the
	// exact integer (sums in grid steps).
	exact := make([][][]float64, len(rels))
	for i, r := range rels {
		exact[i] = make([][]float64, len(r.vecs))
		for j := range r.vecs {
			exact[i][j] = make([]float64, groups)
		}
	}
	// hists[i][g]: quantile i's histogram at group g, sparse.
	hists := make([][][]binCount, len(rels))
	for i, r := range rels {
		if r.qp != nil {
			hists[i] = make([][]binCount, groups)
		}
	}
	if ok && !fillSQL(rows, sp, rels, index, exact, hists) {
		for i := range exact {
			for j := range exact[i] {
				clear(exact[i][j])
			}
			clear(hists[i])
		}
	}
	t := &Table{Columns: cols, Kinds: kinds, Rows: make([][]any, groups)}
	vals := make([][]float64, len(rels))
	for i, r := range rels {
		if r.joint != nil {
			if err := r.joint.release(hists, vals, groups, s); err != nil {
				return nil, err
			}
			continue
		}
		if r.qp != nil {
			// The exponential mechanism per group, on a dense histogram
			// of the grid (one buffer, refilled per group).
			buf := make([]int32, r.qp.Grid+1)
			vals[i] = make([]float64, groups)
			for g := range groups {
				clear(buf)
				for _, bc := range hists[i][g] {
					buf[bc.bin] = bc.count
				}
				v, err := r.qp.SampleHistogram(buf, s)
				if err != nil {
					return nil, err
				}
				vals[i][g] = v
			}
			continue
		}
		if r.total {
			exact[i][0] = withTotal(exact[i][0])
		}
		for j, v := range r.vecs {
			x := exact[i][j]
			if !strings.HasPrefix(v.what, "count") { // sums are in grid steps
				step := r.grid.Step
				for g := range x {
					x[g] *= step
					if j == 2 { // squares: step² (normal: GridOf bounds the variance's step)
						x[g] *= step
					}
				}
			}
			if v.gaussian {
				s.AddGaussian(x, v.scale)
			} else {
				s.AddLaplace(x, v.scale)
			}
		}
		if r.total {
			exact[i] = fitTotal(r, exact[i][0]) // [shown, fits]
		}
		vals[i] = sqlFinish(r, exact[i])
	}
	for g := range groups {
		row := make([]any, len(cols))
		for c, o := range sp.Outputs {
			if o.Key >= 0 {
				row[c] = keyRows[g][o.Key]
			} else {
				row[c] = vals[o.Agg][g]
			}
		}
		t.Rows[g] = row
	}
	t.Parts = sqlParts(sp, rels, cols, exact)
	return t, nil
}

// countsNote is the plan note's words for the COUNT columns'
// post-processing ("" without COUNT).
func countsNote(counts bool, post postRule) string {
	if !counts {
		return ""
	}
	if post.nonnegative {
		return "; post-processing (nonnegative=true, no cost): a COUNT below 0 is shown as 0 (nonnegative=false shows the raw, unbiased counts)"
	}
	return "; nonnegative=false: COUNT values are the raw noisy counts, which may fall below 0"
}

// sqlFinish post-processes one release's noisy vectors into its values.
func sqlFinish(r sqlRelease, noisy [][]float64) []float64 {
	ag := r.agg
	out := make([]float64, len(noisy[0]))
	for g := range out {
		switch ag.Kind {
		case sqlplan.Count, sqlplan.CountDistinct:
			out[g] = math.Round(noisy[0][g]) + 0 // + 0: no "-0"
			if r.nonnegative && out[g] < 0 {
				out[g] = 0
			}
		case sqlplan.Sum:
			out[g] = noisy[0][g]
		case sqlplan.Avg:
			n := math.Round(noisy[0][g])
			mean := r.grid.Centre
			if n >= 1 {
				mean += noisy[1][g] / n
			}
			out[g] = min(max(mean, ag.Lo), ag.Hi)
		case sqlplan.Variance, sqlplan.Stddev:
			n := math.Round(noisy[0][g])
			v := 0.0
			if n >= 1 {
				m1 := noisy[1][g] / n
				v = noisy[2][g]/n - m1*m1
			}
			w := (ag.Hi - ag.Lo) / 2
			v = min(max(v, 0), w*w)
			if ag.Kind == sqlplan.Stddev {
				v = math.Sqrt(v)
			}
			out[g] = v
		}
	}
	return out
}

// errNoSQL is the run's failure without a SQL reader: the plan refuses
// data outside the engine before the charge, so only a build whose
// snapshot reader lacks SQLReader gets here.
var errNoSQL = errors.New("release: the data give no SQL access")

// querySQL prints the plan over the reader's table and runs it.
func querySQL(ctx context.Context, d *Data, sp *sqlplan.Plan) ([][]any, error) {
	if d == nil || d.SQL == nil {
		return nil, errNoSQL
	}
	st, err := sqlplan.Print(sp, dialectOf(d.SQL), d.SQL.Table())
	if err != nil {
		return nil, err
	}
	if n, ok := metadataCount(d, sp, st); ok {
		return [][]any{{n}}, nil
	}
	rows, err := d.SQL.Query(ctx, st.SQL)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// metadataCount is the statement's one row without running it when the
// statement is an unfiltered, ungrouped COUNT(*) of a whole row-level
// snapshot: n is then the row count of the snapshot's verified metadata,
// as an unfiltered private_count takes it (unitCount), which saves the
// engine's statement (a few milliseconds of a call's fixed cost). n only
// feeds the mechanism, as the statement's count would. A subset (a filter
// handle) or user-level data (whose rows a plan may bound per user) runs
// the statement.
func metadataCount(d *Data, sp *sqlplan.Plan, st *sqlplan.Statement) (int64, bool) {
	if sp.Where != nil || len(sp.Keys) > 0 || len(st.Columns) != 1 || st.Columns[0].Role != sqlplan.RoleRows {
		return 0, false
	}
	if d.derived || d.Schema.Unit == "user" {
		return 0, false
	}
	rc, ok := d.Rows.(rowCounter)
	if !ok {
		return 0, false
	}
	return rc.NumRows(), true
}

// binCount is one non-empty bin of a quantile's histogram.
type binCount struct {
	bin   int
	count int32
}

// readHist reads a histogram cell (the engine's map from bin to count,
// as its key, value pairs; nil for a group without values) for a grid of
// bins+1 points: false when a bin or count is out of range, a bin is
// repeated or the total exceeds the rows a quantile takes.
func readHist(v any, bins int) ([]binCount, bool) {
	if v == nil {
		return nil, true
	}
	pairs, ok := v.([][2]any)
	if !ok {
		return nil, false
	}
	out := make([]binCount, 0, len(pairs))
	seen := make(map[int64]bool, len(pairs))
	var total int64
	for _, kv := range pairs {
		b, ok1 := exactInt(kv[0])
		c, ok2 := exactInt(kv[1])
		if !ok1 || !ok2 || !b.IsInt64() || !c.IsInt64() {
			return nil, false
		}
		bi, ci := b.Int64(), c.Int64()
		if bi < 0 || bi > int64(bins) || ci < 1 || ci > tabular.MaxRows || seen[bi] {
			return nil, false
		}
		seen[bi] = true
		if total += ci; total > tabular.MaxRows {
			return nil, false
		}
		out = append(out, binCount{bin: int(bi), count: int32(ci)})
	}
	return out, true
}

// fillSQL places the statement's rows in exact and the quantiles'
// histograms in hists; false when a row cannot be read (then the caller
// releases the noise alone, and the quantiles of empty histograms).
func fillSQL(rows [][]any, sp *sqlplan.Plan, rels []sqlRelease, index map[string]int, exact [][][]float64, hists [][][]binCount) bool {
	st, err := sqlplan.Print(sp, sqlplan.DuckDB, "T")
	if err != nil {
		return false
	}
	for _, row := range rows {
		if len(row) != len(st.Columns) {
			return false
		}
		keys := make([]any, len(sp.Keys))
		for c, col := range st.Columns {
			if col.Role == sqlplan.RoleKey {
				keys[col.Index] = row[c]
			}
		}
		k, ok := groupKey(keys)
		if !ok {
			return false
		}
		g, ok := index[k]
		if !ok {
			continue // outside the domains: the statement already drops these
		}
		for c, col := range st.Columns {
			if col.Role == sqlplan.RoleHist {
				h, ok := readHist(row[c], rels[col.Index].qp.Grid)
				if !ok {
					return false
				}
				hists[col.Index][g] = h
				continue
			}
			x, ok := exactInt(row[c])
			if !ok && col.Role != sqlplan.RoleKey {
				return false
			}
			switch col.Role {
			case sqlplan.RoleRows:
				for i, r := range rels {
					if r.agg.Kind == sqlplan.Count {
						exact[i][0][g] = toFloat(x)
					}
				}
			case sqlplan.RoleCount, sqlplan.RoleUsers:
				exact[col.Index][0][g] = toFloat(x)
			case sqlplan.RoleSum:
				j := 1
				if rels[col.Index].agg.Kind == sqlplan.Sum {
					j = 0
				}
				exact[col.Index][j][g] = toFloat(x)
			case sqlplan.RoleSumSq:
				exact[col.Index][2][g] = toFloat(x)
			}
		}
	}
	return true
}
