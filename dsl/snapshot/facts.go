package snapshot

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OwnerFacts are facts about a snapshot's values for its owner's terminal
// at registration (`dataset add` prints them as notes), never for an
// analyst: they are exact functions of the data.
type OwnerFacts struct {
	// OverNorm is the number of rows whose Euclidean norm over the
	// columns (clamped to their bounds, as passes read them) exceeds the
	// norm given; 0 when that norm is not positive.
	OverNorm int64
	// LastClasses is the number of distinct values of the last column
	// when it holds integers only, at most the limit given of them, in
	// more rows than that; else 0.
	LastClasses int
}

// OwnerFacts computes the facts over the numeric columns given, in that
// order, in DuckDB: one aggregate query over the snapshot (and a second,
// over the last column, only when it may hold few distinct integers),
// where a pass through Go would decode and hand over every value. The
// norms are summed as a pass sums them, column after column from zero,
// so a row's norm is the same float64. The queries are built from the
// registered names and bounds only.
func (r *Reader) OwnerFacts(ctx context.Context, columns []string, norm float64, maxClasses int) (OwnerFacts, error) {
	var facts OwnerFacts
	if len(columns) == 0 {
		return facts, nil
	}
	var clamped, squares []string
	for i, name := range columns {
		j := slices.IndexFunc(r.info.Columns, func(c Column) bool { return c.Name == name })
		if j < 0 || r.info.Columns[j].Kind != Numeric {
			return facts, fmt.Errorf("snapshot: the snapshot has no numeric column %q", name)
		}
		c, e := r.info.Columns[j], quoteIdent(name)
		if c.HasBounds {
			e = fmt.Sprintf("least(greatest(%s, %s), %s)", e, float(c.Lo), float(c.Hi))
		}
		clamped = append(clamped, fmt.Sprintf("%s AS v%d", e, i))
		squares = append(squares, fmt.Sprintf("v%d * v%d", i, i))
	}
	last := fmt.Sprintf("v%d", len(columns)-1)
	from := fmt.Sprintf("(SELECT %s FROM read_parquet(%s))", strings.Join(clamped, ", "), quoteString(r.path))
	over := "0"
	if norm > 0 {
		over = fmt.Sprintf("count(*) FILTER (WHERE sqrt(%s) > %s)", strings.Join(squares, " + "), float(norm))
	}
	if err := r.acquire(); err != nil {
		return facts, err
	}
	defer r.release()
	db := sql.OpenDB(keepOpen{r.db})
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return facts, r.errRead
	}
	defer conn.Close()
	if norm <= 0 {
		// Without a norm the facts are about the last column only, and
		// LastClasses is 0 unless every value is an integer: a query
		// that stops at the first value that is not (at once, for a
		// continuous column) saves the whole scan the aggregate below
		// would make (about a sixth of a registration's time at 10⁷ rows).
		var some int64
		err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s <> trunc(%s) LIMIT 1)", from, last, last)).Scan(&some)
		if err != nil {
			return OwnerFacts{}, r.errRead
		}
		if some > 0 {
			return facts, nil
		}
	}
	var n, approx int64
	var integers bool
	q := fmt.Sprintf("SELECT %s, count(*), coalesce(bool_and(%s = trunc(%s)), true), approx_count_distinct(%s) FROM %s",
		over, last, last, last, from)
	if err := conn.QueryRowContext(ctx, q).Scan(&facts.OverNorm, &n, &integers, &approx); err != nil {
		return OwnerFacts{}, r.errRead
	}
	// The estimate errs by a few percent: far above the limit, the exact
	// count (a hash table of every distinct value) is not needed.
	if !integers || approx > int64(4*maxClasses+8) {
		return facts, nil
	}
	var distinct int64
	if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT count(DISTINCT %s) FROM %s", last, from)).Scan(&distinct); err != nil {
		return OwnerFacts{}, r.errRead
	}
	if distinct <= int64(maxClasses) && n > distinct {
		facts.LastClasses = int(distinct)
	}
	return facts, nil
}

// float is a DuckDB DOUBLE literal of the finite x, exact (shortest
// round-trip digits).
func float(x float64) string {
	return "CAST(" + quoteString(strconv.FormatFloat(x, 'g', -1, 64)) + " AS DOUBLE)"
}
