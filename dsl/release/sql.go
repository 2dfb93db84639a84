package release

// private_sql (issue 27): the analyst's SELECT over one registered
// dataset, planned by dsl/sqlplan from the query text and the public
// schema, charged once, and run as ONE statement inside the data engine
// (the snapshot's DuckDB) that returns per group the exact aggregates on
// fixed-point grids; the noise is added here.
//
// What is supported, and what is refused before the charge:
//   - datasets stored as snapshots (dataset add --from/--sql), row-level;
//     data held in memory, synthetic data, subsets (filter/select) and
//     user-level datasets are refused (contribution bounding inside the
//     statement is not implemented yet);
//   - COUNT(*), SUM, AVG, VARIANCE, STDDEV; QUANTILE/MEDIAN are refused;
//   - keys with a public domain (declared categories, CASE literals,
//     floor over bounds, keys=); keys that would need partition
//     selection are refused.

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
	// releases ("count", "sum", "avg", "variance", "stddev").
	Kinds []string
	Rows  [][]any
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
	return nil
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
// categorical columns (strings, with their declared categories).
func sqlSchema(sc ledger.Schema) sqlplan.Schema {
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
		s.Columns = append(s.Columns, sqlplan.Column{Name: c, Kind: sqlplan.Categorical, Categories: sc.Categorical[c]})
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
	vecs []sqlVector // COUNT: [count]; SUM: [sum]; AVG: [count, sum]; VARIANCE/STDDEV: [count, sum, sumsq]
}

// The shares of an aggregate's budget among its vectors: an AVG spends
// half on its count and half on its centred sum (as Google's BoundedMean);
// a VARIANCE a third on each of its three.
var sqlVectorShares = map[sqlplan.AggKind][]float64{
	sqlplan.Count:    {1},
	sqlplan.Sum:      {1},
	sqlplan.Avg:      {0.5, 0.5},
	sqlplan.Variance: {1.0 / 3, 1.0 / 3, 1.0 / 3},
	sqlplan.Stddev:   {1.0 / 3, 1.0 / 3, 1.0 / 3},
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
		return nil, Errorf(NameArgumentError, "%s: synthetic data are not held in the data engine; register the data as a snapshot (privnotes dataset add NAME --from FILE) to query them", fn)
	case src.Derived != nil:
		return nil, Errorf(NameArgumentError, "%s: a query reads a registered dataset by its name in FROM; filter rows with WHERE instead of filter()/select()", fn)
	case q.Server != "":
		return nil, Errorf(NameArgumentError, "%s: FROM %s.%s names a dataset on a data server; private_sql runs on local datasets so far", fn, q.Server, q.Dataset)
	case q.Dataset != src.Name:
		return nil, Errorf(NameArgumentError, "%s: FROM names dataset %q, but the call runs on %q; name the dataset the call is for", fn, q.Dataset, src.Name)
	}
	sc := src.Schema
	if sc.IsMatrix() {
		return nil, Errorf(NameArgumentError, "%s: dataset %q is a matrix dataset; private SQL reads row datasets", fn, src.Name)
	}
	if sc.Unit == "user" {
		return nil, Errorf(NameArgumentError, "%s: dataset %q is user-level (--unit user:%s): bounding each user's contribution inside the query is not implemented yet, so private SQL runs on row-level datasets only; use private_count/private_sum/private_mean with by= on this dataset", fn, src.Name, sc.UserColumn)
	}
	if sc.Center == "public-mean" {
		return nil, Errorf(NameArgumentError, "%s: dataset %q was registered with --center public-mean, so its stored values are centred on a public mean; private SQL needs the data registered without centring", fn, src.Name)
	}
	// Only a snapshot is in the data engine. (An executor without a store
	// cannot charge, so it never reaches the read: planning without one,
	// as the memory tests do, skips the check.)
	if env.Store != nil {
		st, err := env.store()
		if err != nil {
			return nil, err
		}
		if _, _, ok, err := st.Snapshot(src.Name); err != nil {
			return nil, Errorf(NameLedgerError, "%s: dataset %q: %v", fn, src.Name, err)
		} else if !ok {
			return nil, Errorf(NameArgumentError, "%s: dataset %q is held in the registry's memory format, not as a snapshot, so the data engine cannot query it; the owner registers it again with privnotes dataset add %s --from FILE", fn, src.Name, src.Name)
		}
	}
	keys, err := sqlKeys(a.Vals["keys"])
	if err != nil {
		return nil, err
	}
	sp, err := q.Plan(sqlSchema(sc), sqlplan.Options{Keys: keys})
	if err != nil {
		return nil, sqlRefusal(err)
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	if sp.PartitionSelection() {
		var names []string
		for _, k := range sp.Keys {
			if k.Source == sqlplan.PartitionSelection {
				names = append(names, k.Name)
			}
		}
		why := "DP partition selection is not implemented yet"
		if delta == 0 {
			why = "that needs DP partition selection, which needs delta > 0 (and is not implemented yet)"
		}
		return nil, Errorf(NameArgumentError, "%s: GROUP BY key(s) %s have no public domain, and %s; give their values with keys={%q: […]}, or group by a column with declared categories, a CASE with literal results or floor(col / c) over a bounded column", fn, strings.Join(names, ", "), why, names[0])
	}
	for _, ag := range sp.Aggregates {
		if ag.Kind == sqlplan.Quantile {
			return nil, Errorf(NameArgumentError, "%s: %s (%s) is not executed by private SQL yet; use private_quantile(ds, col=…, q=…) for one column's quantile", fn, ag.Name, ag.Kind)
		}
	}
	// The statement must print from the plan alone; printing it now makes
	// every printing failure a refusal before the charge (the run prints
	// the same plan again over the reader's table).
	if _, err := sqlplan.Print(sp, sqlplan.DuckDB, "T"); err != nil {
		return nil, sqlRefusal(err)
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
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrEps)
	}
	if !(delta >= 0 && delta < 1) {
		return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrDelta)
	}
	gaussian := delta > 0
	ev := accounting.Pure(eps)
	rho := 0.0
	if gaussian {
		var ok bool
		if rho, ev, ok = tabular.GaussianTarget(eps, delta, gaussianCalibration(src)); !ok {
			return nil, Errorf(NameArgumentError, "%s: %v", fn, tabular.ErrCalibrate)
		}
	}
	rels, err := sqlReleases(sp, groups, nb, shares, eps, rho, gaussian)
	if err != nil {
		return nil, err
	}
	method := "sql/laplace"
	calib := fmt.Sprintf("pure ε-DP with ε=%v, split over the releases (sequential composition)%s", eps, zcdpAdvice(sc, eps, true))
	if gaussian {
		method = "sql/gaussian"
		calib = fmt.Sprintf("calibrated to ε=%v, δ=%v %s, split over the releases", eps, delta, calibrationWords(ev))
	}
	ev.Mechanism = method
	explain := sqlExplain(rels, sp, eps, rho, nb)
	cols, kinds := sqlOutputs(sp)
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: cols,
		Noise: explain,
		Note: fmt.Sprintf("%d group(s) from the keys' public domains, every one released whatever the data (rows whose key is outside the domains are in none); one statement in the data engine computes each group's exact integer aggregates on fixed-point grids; %s; counts rounded to integers; AVG = midpoint + noisy centred sum / noisy count (the midpoint when the count is below 1), clamped to the bounds; VARIANCE from the noisy count, centred sum and sum of squares, clamped to [0, ((hi−lo)/2)²] (0 when the count is below 1); STDDEV its square root",
			groups, calib),
		Params: publicParams(a, map[string]any{"neighbour": nb.String(), "groups": groups, ErrorsParam: sqlErrors(sp.Outputs, rels, cols)})}
	p.setMemory(add(1<<20, mul(i64(groups), i64(len(cols)+4*len(rels)), 64)),
		fmt.Sprintf("%d groups × %d columns", groups, len(cols)), "Group by fewer keys, or coarser ones")
	p.run = func(ctx context.Context, d *Data) (any, error) {
		return runSQL(ctx, d, sp, rels, cols, kinds, groups, env.sampler())
	}
	return p, nil
}

// upward is a float64 no smaller than x (one ulp above the rounded sum).
func upward(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// sqlReleases fixes each aggregate's vectors: their sensitivities on
// row-level data under nb (one row, one group), their shares of the call's
// ε (Laplace) or ρ (Gaussian) and their noise scales over groups groups.
func sqlReleases(sp *sqlplan.Plan, groups int, nb accounting.Neighbour, shares []float64, eps, rho float64, gaussian bool) ([]sqlRelease, error) {
	fn := FnSQL
	var err error
	rels := make([]sqlRelease, len(sp.Aggregates))
	for i, ag := range sp.Aggregates {
		r := sqlRelease{agg: ag}
		// Sensitivities on row-level data (one row, one group). A row
		// may leave the selection (WHERE, a key outside its domain, a
		// NULL value) when it is replaced, so under replace-one the
		// sensitivities are also at least add-remove's (addRemoveToo).
		cl1, cl2 := tabular.GroupCountSensitivity(groups, 1, nb, true)
		count := sqlVector{what: "count", l1: cl1, l2: cl2}
		if ag.Kind != sqlplan.Count {
			if r.grid, err = sqlplan.GridOf(ag); err != nil {
				return nil, sqlRefusal(err)
			}
			if err := checkSQLBounds(ag); err != nil {
				return nil, err
			}
		}
		g := r.grid
		sum := func(what string, lo, hi float64) sqlVector {
			l1, l2 := tabular.GroupSumSensitivity(lo, hi, groups, 1, nb, true)
			m := max(math.Abs(lo), math.Abs(hi))
			return sqlVector{what: what, l1: l1, l2: l2, excess: sqlplan.RoundingExcess(m)}
		}
		switch ag.Kind {
		case sqlplan.Count:
			r.vecs = []sqlVector{count}
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
		if ag.Kind != sqlplan.Count {
			fmt.Fprintf(&b, " over [%v, %v] (%s bounds)", ag.Lo, ag.Hi, map[sqlplan.BoundsSource]string{sqlplan.FromQuery: "query", sqlplan.FromSchema: "owner's"}[ag.Bounds])
		}
		b.WriteString(":")
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
	keyRows := sqlGroups(sp, groups)
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
	if d == nil || d.SQL == nil {
		// A build whose data layer has no SQL access (a public fact of
		// the build, not of the data): nothing to release.
		return nil, errNoSQL
	}
	if rows, err := querySQL(ctx, d, sp); err == nil {
		if !fillSQL(rows, sp, rels, index, exact) {
			for i := range exact {
				for j := range exact[i] {
					clear(exact[i][j])
				}
			}
		}
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	t := &Table{Columns: cols, Kinds: kinds, Rows: make([][]any, groups)}
	vals := make([][]float64, len(rels))
	for i, r := range rels {
		for j, v := range r.vecs {
			x := exact[i][j]
			if v.what != "count" {
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
	return t, nil
}

// sqlFinish post-processes one release's noisy vectors into its values.
func sqlFinish(r sqlRelease, noisy [][]float64) []float64 {
	ag := r.agg
	out := make([]float64, len(noisy[0]))
	for g := range out {
		switch ag.Kind {
		case sqlplan.Count:
			out[g] = math.Round(noisy[0][g])
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
	st, err := sqlplan.Print(sp, sqlplan.DuckDB, d.SQL.Table())
	if err != nil {
		return nil, err
	}
	rows, err := d.SQL.Query(ctx, st.SQL)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// fillSQL places the statement's rows in exact; false when a row cannot
// be read (then the caller releases the noise alone).
func fillSQL(rows [][]any, sp *sqlplan.Plan, rels []sqlRelease, index map[string]int, exact [][][]float64) bool {
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
			case sqlplan.RoleCount:
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
