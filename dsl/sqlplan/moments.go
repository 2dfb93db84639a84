package sqlplan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Moments is the plan of Analyze Gauss's row pass run inside an engine:
// one statement that returns the clipped second-moment matrix
// Σ_i x̃_i x̃_iᵀ of a table's rows, x̃ = a/max(Clip, ‖a‖) (the row scaled
// by 1/Clip and clipped to norm ≤ 1), as d(d+1)/2 exact integer sums on
// the grid MomentsGrid. Only those sums come back.
//
// The row rule is the snapshot's: a value of a column with bounds is
// clamped to them, and a row with a NULL or non-finite value contributes
// nothing. It is built from public facts only (the columns, their bounds,
// the clip).
type Moments struct {
	Columns []string
	// Bounds are the columns' public bounds (absent: none).
	Bounds map[string][2]float64
	Clip   float64
}

// MomentsGrid is the grid of the sums: every entry of x̃x̃ᵀ lies in
// [−1, 1], a step of 2⁻⁴⁷.
func MomentsGrid() Grid {
	g, _ := GridOf(Aggregate{Kind: Sum, Name: "moments", Lo: -1, Hi: 1})
	return g
}

// MomentsCell is the index of entry (i, j), i ≤ j < d, of the upper
// triangle in the statement's one result row (row-major).
func MomentsCell(d, i, j int) int { return i*d - i*(i-1)/2 + (j - i) }

// momentsFlush is the relative size below which an entry of a row is
// taken as 0 in the statement (2⁻⁵⁰⁰ of the row's largest entry, or of
// the clip): it keeps every product and quotient of the statement inside
// the doubles' normal range, where PostgreSQL raises no underflow error.
const momentsFlush = 0x1p-500

// MomentsExcess bounds, for d columns, how much further apart than their
// exact values the released sums of two neighbouring tables can be (the
// ℓ2 distance of v(C) = (C_ii, √2·C_ij), beyond the sensitivity), when
// the engine sums them on the grid: each row's term differs from x̃x̃ᵀ by
// its quantization (at most a step per entry, d·2⁻⁴⁷ in Frobenius norm) and
// the engine's floating-point scaling (‖fl x̃‖² ≤ 1 + (2d+8)·2⁻⁵³, the
// flushed entries below 2⁻⁵⁰⁰ adding less), for each of the two rows of a
// replace-one pair; the exact integer sums then pass through two
// roundings, their conversion to float64 and the noise step's √2, each
// moving a sum by 2⁻⁵³ of at most MaxRows·(1 + that) per data set. It is
// what docs/mechanisms.md ("Analyze Gauss in the engine") compares with
// the excess a plan charges.
func MomentsExcess(d int) float64 {
	row := float64(d)*0x1p-47 + float64(2*d+8)*0x1p-53
	conv := 2 * 2 * 0x1p-53 * MaxRows * (1 + row) * (1 + 0x1p-50)
	return (2*row + conv) * (1 + 0x1p-40)
}

// PrintMoments writes the statement of m over table (a table reference,
// such as a registered engine table's subquery) in dialect d: one row of
// d(d+1)/2 exact integer sums, in MomentsCell order, each 0 for a table
// without rows. Every step is total in a dialect that raises on overflow
// or underflow (PostgreSQL): entries are divided by the row's largest
// magnitude (or the clip, when larger) before any product, and entries
// below momentsFlush of it are 0.
func PrintMoments(m Moments, d Dialect, table string) (string, error) {
	n := len(m.Columns)
	if n == 0 {
		return "", fmt.Errorf("sqlplan: moments of no columns")
	}
	if !(m.Clip >= 1e-100 && m.Clip <= 1e100) {
		return "", fmt.Errorf("sqlplan: moments with clip %v outside [1e-100, 1e100]", m.Clip)
	}
	a := func(j int) string { return d.Ident("__pn_a" + strconv.Itoa(j)) }
	w := func(j int) string { return d.Ident("__pn_w" + strconv.Itoa(j)) }
	x := func(j int) string { return d.Ident("__pn_x" + strconv.Itoa(j)) }
	mm, t, den := d.Ident("__pn_m"), d.Ident("__pn_t"), d.Ident("__pn_den")
	zero := d.Num(0)
	flush := d.Num(momentsFlush)

	// Layer 1: the clamped values of the rows whose values are all
	// finite (NULL, NaN and ±inf fail the comparison), and the row's
	// scale m = max(clip, max_j |a_j|).
	var sel, finite, absv []string
	for j, c := range m.Columns {
		// As a double: ClickHouse's greatest and least refuse an
		// integer beside a double (the other engines convert it so).
		v := d.Float(d.Ident(c))
		finite = append(finite, "abs("+v+") <= "+d.Num(math.MaxFloat64))
		if b, ok := m.Bounds[c]; ok {
			if !(b[0] <= b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) {
				return "", fmt.Errorf("sqlplan: moments: column %s has invalid bounds [%g, %g]", c, b[0], b[1])
			}
			v = d.Clamp(v, d.Num(b[0]), d.Num(b[1]))
		}
		sel = append(sel, v+" AS "+a(j))
		absv = append(absv, "abs("+a(j)+")")
	}
	// Each layer is kept from being inlined into the next (see l4):
	// by OFFSET 0, or by a dialect's parallel-safe fence column.
	fz, off := "", " OFFSET 0"
	if f, ok := d.(layerFence); ok {
		fz, off = ", "+f.LayerFence()+" AS "+d.Ident("__pn_f"), ""
	}
	l1 := "SELECT " + strings.Join(sel, ", ") + fz + " FROM " + table + " WHERE " + strings.Join(finite, " AND ")
	l1b := "SELECT " + joinCols(n, a) + ", " + greatest(append([]string{d.Num(m.Clip)}, absv...)) + " AS " + mm + fz + " FROM (" + l1 + off + ") AS " + d.Ident("__pn_l1")

	// Layer 2: w = a/m in [−1, 1] (0 below the flush), and t = clip/m
	// (0 below the flush, where the largest w is 1 and t cannot win).
	sel = sel[:0]
	for j := range n {
		sel = append(sel, "CASE WHEN abs("+a(j)+") >= "+mm+" * "+flush+" THEN "+a(j)+" / "+mm+" ELSE "+zero+" END AS "+w(j))
	}
	c := d.Num(m.Clip)
	l2 := "SELECT " + strings.Join(sel, ", ") + ", CASE WHEN " + c + " > " + mm + " * " + flush + " THEN " + c + " / " + mm + " ELSE " + zero + " END AS " + t +
		fz + " FROM (" + l1b + off + ") AS " + d.Ident("__pn_l2")

	// Layer 3: the denominator max(t, ‖w‖) ≥ 2⁻⁵⁰⁰ (w's squares are 0
	// or at least 2⁻¹⁰⁰⁰), so x̃ = w/den = a/max(clip, ‖a‖).
	sq := make([]string, n)
	for j := range n {
		sq[j] = w(j) + " * " + w(j)
	}
	l3 := "SELECT " + joinCols(n, w) + ", greatest(" + t + ", sqrt(" + strings.Join(sq, " + ") + ")) AS " + den + fz + " FROM (" + l2 + off + ") AS " + d.Ident("__pn_l3")
	sel = sel[:0]
	for j := range n {
		sel = append(sel, w(j)+" / "+den+" AS "+x(j))
	}
	// OFFSET 0 on each layer keeps the engine from inlining a layer's
	// expressions into every use in the next (PostgreSQL pulls such
	// subqueries up and has no common-subexpression elimination: without
	// it the statement computes each row's scale O(d³) times, 50 times
	// slower at d = 3). The rows are the same either way. PostgreSQL
	// runs a LIMIT/OFFSET subquery in one process, so its dialect fences
	// the layers with a volatile, parallel-safe column instead (it does
	// not pull up a subquery whose output has a volatile function), and
	// the aggregate runs in parallel workers as PostgreSQL's own.
	l4 := "SELECT " + strings.Join(sel, ", ") + fz + " FROM (" + l3 + ") AS " + d.Ident("__pn_l4") + off

	// Each product x̃_i·x̃_j ∈ [−1, 1] (up to the doubles' rounding) on
	// the grid: q = ±floor(|y| + ½) of y = x̃_i·x̃_j/Step (exact: Step is
	// a power of two), which rounds half away from zero up to one ulp of
	// y + ½ at a tie, with the same bits in every IEEE engine and without
	// the dialects' guarded rounding (a sub-select per value in
	// PostgreSQL, the cost of the pass); then clamped to the grid's range.
	// The products are at least 2⁻¹⁰¹² in magnitude or 0, so the
	// multiplications neither underflow nor overflow.
	g := MomentsGrid()
	inv, half := d.Num(1/g.Step), d.Num(0.5)
	lo, hi := strconv.FormatInt(g.Lo, 10), strconv.FormatInt(g.Hi, 10)
	var sums []string
	for i := range n {
		for j := i; j < n; j++ {
			y := "(" + x(i) + " * " + x(j) + " * " + inv + ")"
			q := "CASE WHEN " + y + " >= 0 THEN floor(" + y + " + " + half + ") ELSE -floor(" + half + " - " + y + ") END"
			q = "least(greatest(CAST(" + q + " AS BIGINT), CAST(" + lo + " AS BIGINT)), CAST(" + hi + " AS BIGINT))"
			sums = append(sums, "coalesce(sum("+q+"), 0) AS "+d.Ident(fmt.Sprintf("__pn_m%d_%d", i, j)))
		}
	}
	return "SELECT " + strings.Join(sums, ", ") + " FROM (" + l4 + ") AS " + d.Ident("__pn_x"), nil
}

// greatest is the largest of args (non-NULL doubles) by two-argument
// greatest calls, which every engine has (ClickHouse 18.16 has no other).
func greatest(args []string) string {
	g := args[len(args)-1]
	for i := len(args) - 2; i >= 0; i-- {
		g = "greatest(" + args[i] + ", " + g + ")"
	}
	return g
}

// layerFence is a dialect whose layers of the moments statement are kept
// apart by an extra column (LayerFence, an expression) rather than OFFSET 0.
type layerFence interface{ LayerFence() string }

func joinCols(n int, name func(int) string) string {
	s := make([]string, n)
	for j := range n {
		s[j] = name(j)
	}
	return strings.Join(s, ", ")
}
