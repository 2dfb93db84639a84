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
	// Shift, when not nil, is a public vector (one value per column, in
	// the data's units) subtracted from every clamped row before it is
	// clipped: centred Analyze Gauss shifts the rows by its released
	// private mean μ and sums clip(a − μ)·clip(a − μ)ᵀ. The subtraction
	// is one IEEE rounding, as mechanisms/pca's shifted rows, so the rows
	// the statement clips are the snapshot's bit for bit.
	Shift []float64
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
	l4, x, err := clippedRows(m, d, table, false)
	if err != nil {
		return "", err
	}
	n := len(m.Columns)
	// Each product x̃_i·x̃_j ∈ [−1, 1] (up to the doubles' rounding) on
	// the grid (gridTerm). The products are at least 2⁻¹⁰¹² in magnitude
	// or 0, so the multiplications neither underflow nor overflow.
	var sums []string
	for i := range n {
		for j := i; j < n; j++ {
			sums = append(sums, "coalesce(sum("+exactTerm(d, gridTerm(d, x(i)+" * "+x(j)))+"), 0) AS "+d.Ident(fmt.Sprintf("__pn_m%d_%d", i, j)))
		}
	}
	return "SELECT " + strings.Join(sums, ", ") + " FROM (" + l4 + ") AS " + d.Ident("__pn_x"), nil
}

// gridTerm is the value v ∈ [−1, 1] (up to the doubles' rounding) on
// MomentsGrid: q = y rounded half to even, the grid's rounding, of
// y = v/Step (exact: Step is a power of two), with the same bits in
// every IEEE engine (roundEven); then clamped to the grid's range.
func gridTerm(d Dialect, v string) string {
	g := MomentsGrid()
	lo, hi := strconv.FormatInt(g.Lo, 10), strconv.FormatInt(g.Hi, 10)
	y := "(" + v + " * " + d.Num(1/g.Step) + ")"
	return "least(greatest(" + roundEven(d, y, 1<<GridBits) + ", CAST(" + lo + " AS BIGINT)), CAST(" + hi + " AS BIGINT))"
}

// roundEven is the double y, of magnitude below about m ≤ 2^51, rounded
// to the nearest integer, ties to even, as a 64-bit integer: in DuckDB
// and PostgreSQL a bare cast, which rounds so (rint) and cannot fail for
// such a y (PostgreSQL's cast fails only beyond bigint's range, and y
// is the product of a value and 1/Step ≥ 1, which cannot underflow);
// in ClickHouse, whose cast truncates, chRoundEven first.
func roundEven(d Dialect, y string, m int64) string {
	if _, ok := d.(clickHouse); ok {
		return "toInt64(" + chRoundEven(y, m) + ")"
	}
	return "CAST(" + y + " AS BIGINT)"
}

// clippedRows is the statement of the rows x̃ = a/max(Clip, ‖a‖) of m's
// columns over table (the clamped rows whose values are all finite),
// whose column j is named x(j).
//
// With zeroBig, a row whose squared norm overflows float64
// (‖a‖ > √MaxFloat64, after clamping) is 0, as in tabular.ClippedRowSum,
// whose scale 1/‖a‖ is then 0: the statement computes the norm scaled,
// without overflow, and compares it with that threshold (the two can
// differ only for a norm within a few roundings of it).
func clippedRows(m Moments, d Dialect, table string, zeroBig bool) (stmt string, x func(int) string, err error) {
	n := len(m.Columns)
	if n == 0 {
		return "", nil, fmt.Errorf("sqlplan: moments of no columns")
	}
	if !(m.Clip >= 1e-100 && m.Clip <= 1e100) {
		return "", nil, fmt.Errorf("sqlplan: moments with clip %v outside [1e-100, 1e100]", m.Clip)
	}
	if m.Shift != nil && len(m.Shift) != n {
		return "", nil, fmt.Errorf("sqlplan: moments of %d columns with a shift of %d values", n, len(m.Shift))
	}
	for _, v := range m.Shift {
		// A finite shift keeps a finite value finite (its magnitude is at
		// most the clip, far below MaxFloat64), so the row rule's
		// finiteness test on the unshifted values still decides.
		if !(math.Abs(v) <= 1e100) {
			return "", nil, fmt.Errorf("sqlplan: moments with shift %v outside [-1e100, 1e100]", v)
		}
	}
	a := func(j int) string { return d.Ident("__pn_a" + strconv.Itoa(j)) }
	w := func(j int) string { return d.Ident("__pn_w" + strconv.Itoa(j)) }
	// Short names: each of the d(d+1)/2 sums writes two of them three
	// times (gridTerm), most of the statement's length at large d. Only
	// the outer query reads them, beside the fence column.
	x = func(j int) string { return d.Ident("x" + strconv.Itoa(j)) }
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
				return "", nil, fmt.Errorf("sqlplan: moments: column %s has invalid bounds [%g, %g]", c, b[0], b[1])
			}
			v = d.Clamp(v, d.Num(b[0]), d.Num(b[1]))
		}
		if m.Shift != nil {
			v = "(" + v + " - " + d.Num(m.Shift[j]) + ")"
		}
		sel = append(sel, v+" AS "+a(j))
		absv = append(absv, "abs("+a(j)+")")
	}
	// Each layer is kept from being inlined into the next (see l4): by
	// OFFSET 0, or by a dialect's fence column (PostgreSQL: a volatile,
	// parallel-safe one; ClickHouse 18.16, which parses no OFFSET without
	// LIMIT).
	fz, off := "", " OFFSET 0"
	if f, ok := d.(layerFence); ok {
		fz, off = ", "+f.LayerFence()+" AS "+d.Ident("__pn_f"), ""
	}
	l1 := "SELECT " + strings.Join(sel, ", ") + fz + " FROM " + table + " WHERE " + strings.Join(finite, " AND ")
	// The row's scale as nested two-argument greatest (ClickHouse 18.16
	// takes no more).
	scale := d.Num(m.Clip)
	for _, v := range absv {
		scale = "greatest(" + scale + ", " + v + ")"
	}
	l1b := "SELECT " + joinCols(n, a) + ", " + scale + " AS " + mm + fz + " FROM (" + l1 + off + ") AS " + d.Ident("__pn_l1")

	// Layer 2: w = a/m in [−1, 1] (0 below the flush), and t = clip/m
	// (0 below the flush, where the largest w is 1 and t cannot win).
	sel = sel[:0]
	for j := range n {
		sel = append(sel, "CASE WHEN abs("+a(j)+") >= "+mm+" * "+flush+" THEN "+a(j)+" / "+mm+" ELSE "+zero+" END AS "+w(j))
	}
	c := d.Num(m.Clip)
	var carry2, keep3, keep4 string
	if zeroBig {
		keep := d.Ident("__pn_keep")
		carry2 = ", " + mm
		keep3 = ", CASE WHEN " + mm + " > " + d.Num(math.Sqrt(math.MaxFloat64)) + " / greatest(sqrt(" + strings.Join(squares(n, w), " + ") + "), " + d.Num(1) + ") THEN " + zero + " ELSE " + d.Num(1) + " END AS " + keep
		keep4 = " * " + keep
	}
	l2 := "SELECT " + strings.Join(sel, ", ") + carry2 + ", CASE WHEN " + c + " > " + mm + " * " + flush + " THEN " + c + " / " + mm + " ELSE " + zero + " END AS " + t +
		fz + " FROM (" + l1b + off + ") AS " + d.Ident("__pn_l2")

	// Layer 3: the denominator max(t, ‖w‖) ≥ 2⁻⁵⁰⁰ (w's squares are 0
	// or at least 2⁻¹⁰⁰⁰), so x̃ = w/den = a/max(clip, ‖a‖).
	sq := squares(n, w)
	l3 := "SELECT " + joinCols(n, w) + ", greatest(" + t + ", sqrt(" + strings.Join(sq, " + ") + ")) AS " + den + keep3 + fz + " FROM (" + l2 + off + ") AS " + d.Ident("__pn_l3")
	sel = sel[:0]
	for j := range n {
		q := w(j) + " / " + den
		if keep4 != "" {
			q = "(" + q + ")" + keep4
		}
		sel = append(sel, q+" AS "+x(j))
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

	return l4, x, nil
}

// RowSumGrid is the grid of PrintRowSum's sums: every x̃_j lies in
// [−1, 1], a step of 2⁻⁶⁰, fine enough that the rounding of MaxRows rows
// stays far below what the plan charges (RowSumDrift). The sums reach
// 2⁹⁰, which each dialect's Quantize sums exactly (DuckDB's HUGEINT,
// PostgreSQL's numeric, ClickHouse's Decimal(38, 0)).
func RowSumGrid() Grid { return Grid{Step: 0x1p-60, Lo: -(1 << 60), Hi: 1 << 60} }

// RowSumExcess bounds, for m columns, how much further apart than their
// exact values (in units of the clip) the sums PrintRowSum's statement
// releases for two neighbouring tables can be, beyond the sensitivity:
// the two rows of a replace-one pair each differ from their exact x̃ by
// rowSumRowError, and each data set's sums pass through two roundings,
// their conversion to float64 and the product by the clip, each moving
// them by 2⁻⁵³ of at most MaxRows·(1 + that). tabular's RowSumExcess,
// which private_mean charges for its row pass, covers it (dsl/release's
// TestRowSumExcessCharged).
func RowSumExcess(m int) float64 {
	row := rowSumRowError(m)
	conv := 2 * 2 * 0x1p-53 * MaxRows * (1 + row) * (1 + 0x1p-50)
	return (2*row + conv) * (1 + 0x1p-40)
}

// RowSumDrift bounds, in units of the clip, how far the sums of
// PrintRowSum's statement can be from the exact sum of the clipped rows
// of one table of at most MaxRows rows: each row's error, and the two
// roundings of the sums. private_mean's interval allows half of
// tabular's RowSumExcess for it, which covers it
// (TestRowSumExcessCharged).
func RowSumDrift(m int) float64 {
	row := rowSumRowError(m)
	return (MaxRows*row + 2*0x1p-53*MaxRows*(1+row)*(1+0x1p-50)) * (1 + 0x1p-40)
}

// rowSumRowError bounds the ℓ2 distance of one row's term on the grid
// from its exact x̃, for m columns: half a step per entry (√m·Step/2),
// and the statement's floating-point steps, which put each entry within
// m/2 + 4 roundings of its exact value (one each for w = a/m, the
// squares, the sum of m squares, the square root, t = clip/m and the
// quotient w/den; the sum of squares' m − 1 additions halved by the
// square root), so within (m + 4)·2⁻⁵³ of x̃ in norm, and the entries
// flushed to 0 below 2⁻⁵⁰⁰.
func rowSumRowError(m int) float64 {
	return (math.Sqrt(float64(m))*RowSumGrid().Step/2 + float64(m+4)*0x1p-53 + float64(m)*0x1p-499) * (1 + 0x1p-40)
}

// PrintRowSum writes the statement of the sum of m's clipped rows over
// table in dialect d: one row of len(m.Columns) exact integer sums of
// x̃_j = a_j/max(Clip, ‖a‖) on RowSumGrid (a row clipped to norm Clip,
// divided by Clip; each 0 for a table without rows), then the number of
// rows. The rows follow tabular.ClippedRowSum's rule: values clamped to
// their bounds, and a row with a NULL or non-finite value, or whose
// squared norm overflows, adds nothing to the sums; but it counts in the
// number of rows, as ClippedRowSum counts it.
func PrintRowSum(m Moments, d Dialect, table string) (string, error) {
	return printRowSum(m, d, table, true)
}

// PrintGaussRowSum is PrintRowSum with Analyze Gauss's row rule, the
// rule of PrintMoments and of mechanisms/pca's row passes: a row whose
// squared norm overflows float64 is clipped like any other (x̃ = a/‖a‖,
// its norm computed scaled), not dropped. Centred Analyze Gauss takes its
// private mean from these sums. Each row's term is within rowSumRowError
// of its exact x̃ on either rule, so RowSumExcess and RowSumDrift bound
// both statements.
func PrintGaussRowSum(m Moments, d Dialect, table string) (string, error) {
	return printRowSum(m, d, table, false)
}

func printRowSum(m Moments, d Dialect, table string, zeroBig bool) (string, error) {
	l4, x, err := clippedRows(m, d, table, zeroBig)
	if err != nil {
		return "", err
	}
	var sums []string
	for j := range m.Columns {
		sums = append(sums, "coalesce(sum("+d.Quantize(x(j), RowSumGrid())+"), 0) AS "+d.Ident(fmt.Sprintf("__pn_s%d", j)))
	}
	sums = append(sums, "(SELECT count(*) FROM "+table+") AS "+d.Ident("__pn_n"))
	return "SELECT " + strings.Join(sums, ", ") + " FROM (" + l4 + ") AS " + d.Ident("__pn_x"), nil
}

// squares are the columns' squares w(j) * w(j).
func squares(n int, w func(int) string) []string {
	sq := make([]string, n)
	for j := range n {
		sq[j] = w(j) + " * " + w(j)
	}
	return sq
}

// exactTerm is a grid integer of PrintMoments as the dialect sums it
// exactly: as it is, or as its exactSummer writes it.
func exactTerm(d Dialect, q string) string {
	if e, ok := d.(exactSummer); ok {
		return e.ExactTerm(q)
	}
	return q
}

// exactSummer is a dialect whose sum of BIGINT wraps around (ClickHouse's
// Int64), where MaxRows terms of up to 2⁴⁷ reach 2⁸⁷: ExactTerm converts
// a grid integer to a type whose sums are exact. DuckDB's and
// PostgreSQL's sums of BIGINT are HUGEINT and numeric already.
type exactSummer interface{ ExactTerm(q string) string }

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
