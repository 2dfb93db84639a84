package release

// Error bars of private_sql's AVG, VARIANCE, STDDEV and QUANTILE columns
// (COUNT, COUNT(DISTINCT) and SUM columns are one noisy vector each: their
// ErrorModel is noiseModel's). An AVG or VARIANCE column is post-processed
// from several noisy vectors drawn under the call's one charge (the count,
// the sum re-centred on the bounds' midpoint, the centred sum of squares);
// the release keeps those vectors (Table.Parts), which the charge already
// covers, so that an interval at any level follows from them and the
// public scales alone.

import (
	"math"

	"github.com/privnotes/privnotes/dsl/sqlplan"
)

// ErrVariance is the ErrorModel kind of a VARIANCE (or, Root set, STDDEV)
// column: noisy count, centred sum and centred sum of squares.
const ErrVariance = "variance"

// sqlColumnModel is the ErrorModel of one private_sql aggregate's column,
// and false for a kind without one.
func sqlColumnModel(r sqlRelease) (ErrorModel, bool) {
	if r.total {
		// consistent=true: each cell's interval is around its
		// least-squares fit (fittedModel; the fits are the column's
		// Table.Parts).
		v := r.vecs[0]
		count := r.agg.Kind == sqlplan.Count
		return fittedModel(v.gaussian, v.scale, r.groups, count, v.excess, count || r.agg.Lo >= 0), true
	}
	switch r.agg.Kind {
	case sqlplan.Count, sqlplan.CountDistinct:
		v := r.vecs[0]
		return noiseModel(v.gaussian, v.scale, true, 0), true
	case sqlplan.Sum:
		v := r.vecs[0]
		return noiseModel(v.gaussian, v.scale, false, v.excess), true
	case sqlplan.Avg:
		c, s := r.vecs[0], r.vecs[1]
		m := ratioModel(s.gaussian, s.scale, c.scale, s.excess, r.agg.Lo, r.agg.Hi)
		m.Centre, m.GridStep = r.grid.Centre, r.grid.Step
		return m, true
	case sqlplan.Variance, sqlplan.Stddev:
		c, s, q := r.vecs[0], r.vecs[1], r.vecs[2]
		m := ratioModel(s.gaussian, s.scale, c.scale, s.excess, r.agg.Lo, r.agg.Hi)
		m.Kind, m.Centre, m.GridStep = ErrVariance, r.grid.Centre, r.grid.Step
		m.SquareScale, m.SquareExcess = q.scale, q.excess
		m.SquareHalfWidth, _ = noiseHalfWidth(m.Noise, q.scale, false, DefaultLevel)
		m.SquareHalfWidth += q.excess
		m.Root = r.agg.Kind == sqlplan.Stddev
		return m, true
	case sqlplan.Quantile:
		if r.qp == nil {
			return ErrorModel{}, false
		}
		if r.joint != nil {
			return r.joint.rankModel(r.qp), true
		}
		return rankModel(r.qp.Grid+1, r.qp.Ratio()), true
	}
	return ErrorModel{}, false
}

// sqlParts are the noisy vectors behind the AVG, VARIANCE and STDDEV
// output columns, by column name: noisy[i] of rels[i] (in value units,
// after the noise), one value per group; for a consistent=true COUNT or
// SUM, the least-squares fits its cells' intervals are around.
func sqlParts(sp *sqlplan.Plan, rels []sqlRelease, cols []string, noisy [][][]float64) map[string][][]float64 {
	var out map[string][][]float64
	for c, o := range sp.Outputs {
		if o.Key >= 0 || o.Agg < 0 || o.Agg >= len(rels) || c >= len(cols) {
			continue
		}
		switch {
		case rels[o.Agg].total:
			// consistent=true: noisy[o.Agg] is [shown, fits] (fitTotal).
			if out == nil {
				out = map[string][][]float64{}
			}
			out[cols[c]] = noisy[o.Agg][1:]
		case rels[o.Agg].agg.Kind == sqlplan.Avg, rels[o.Agg].agg.Kind == sqlplan.Variance, rels[o.Agg].agg.Kind == sqlplan.Stddev:
			if out == nil {
				out = map[string][][]float64{}
			}
			out[cols[c]] = noisy[o.Agg]
		}
	}
	return out
}

// encodeParts and decodeParts are Table.Parts in a release's fields.
func encodeParts(e *Encoder, parts map[string][][]float64) {
	if len(parts) == 0 {
		return
	}
	m := make(map[string][][]Float, len(parts))
	for c, p := range parts {
		rows := make([][]Float, len(p))
		for i, r := range p {
			rows[i] = floats(r)
		}
		m[c] = rows
	}
	e.fields["parts"] = m
}

func decodeParts(d *Decoder) map[string][][]float64 {
	var m map[string][][]Float
	if !d.read("parts", &m, true) || m == nil {
		return nil
	}
	out := make(map[string][][]float64, len(m))
	for c, p := range m {
		rows := make([][]float64, len(p))
		for i, r := range p {
			rows[i] = make([]float64, len(r))
			for j, x := range r {
				rows[i][j] = float64(x)
			}
		}
		out[c] = rows
	}
	return out
}

// CellInterval is the level confidence interval of the true value behind
// a private_sql cell: v ± the noise's half-width for COUNT and SUM; for
// AVG, VARIANCE and STDDEV the interval from the cell's noisy parts
// (parts[k] the k-th vector's value at the cell's row: count, centred
// sum, centred sum of squares); for a consistent=true COUNT or SUM the
// interval around the cell's least-squares fit, parts[0]
// (FittedInterval). A QUANTILE has none (RankError).
func (m ErrorModel) CellInterval(v float64, parts []float64, level float64) (lo, hi float64, err error) {
	switch m.Kind {
	case ErrLaplace, ErrGaussian:
		return m.Interval(v, level)
	case ErrRatio:
		if len(parts) != 2 {
			return math.NaN(), math.NaN(), errNoInterval
		}
		return m.RatioInterval(parts[1], parts[0], level)
	case ErrVariance:
		if len(parts) != 3 {
			return math.NaN(), math.NaN(), errNoInterval
		}
		return m.VarianceInterval(parts[0], parts[1], parts[2], level)
	case ErrFitted:
		if len(parts) != 1 {
			return math.NaN(), math.NaN(), errNoInterval
		}
		return m.FittedInterval(parts[0], level)
	}
	return math.NaN(), math.NaN(), errNoInterval
}

// VarianceInterval is a conservative level confidence interval of the
// true population variance V = S2/C − (S1/C)² (or, Root set, of √V) of a
// group behind a noisy count c, centred sum s1 and centred sum of squares
// s2: each part's interval at level 1 − (1 − level)/3 (a union bound: all
// three hold together with probability ≥ level), then the range of the
// released formula over that box (C ≥ 1), intersected with the feasible
// [0, ((Hi − Lo)/2)²]. It is wider than needed: the union bound and the
// box's corners, which no data set reaches, both err outward (coverage
// above 99 % at level 0.95 on dsl/release's coverage data). It reads the
// public scales and the released parts only.
func (m ErrorModel) VarianceInterval(c, s1, s2, level float64) (lo, hi float64, err error) {
	if m.Kind != ErrVariance || m.Noise != ErrLaplace && m.Noise != ErrGaussian {
		return math.NaN(), math.NaN(), errNoInterval
	}
	if !(level > 0 && level < 1) {
		_, err := noiseHalfWidth(m.Noise, m.CountScale, false, level)
		return math.NaN(), math.NaN(), err
	}
	part := 1 - (1-level)/3
	hc, err := noiseHalfWidth(m.Noise, m.CountScale, false, part)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	h1, err := noiseHalfWidth(m.Noise, m.Scale, false, part)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	h2, err := noiseHalfWidth(m.Noise, m.SquareScale, false, part)
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	h1 += m.Excess
	h2 += m.SquareExcess
	w := (m.Hi - m.Lo) / 2
	top := w * w
	lo, hi = varianceRange(c, s1, s2, hc, h1, h2, top)
	// Each centred value is rounded onto the grid by at most half a step,
	// which moves a variance of values within ±w by at most w·step +
	// step²/4; float64 rounding of the range by a relative 1e-12 at most.
	slack := m.GridStep*w + m.GridStep*m.GridStep
	lo = max(lo*(1-1e-12)-slack, 0)
	hi = min(hi*(1+1e-12)+slack, top)
	if m.Root {
		return math.Nextafter(math.Sqrt(lo), 0), math.Nextafter(math.Sqrt(hi), math.Inf(1)), nil
	}
	return lo, hi, nil
}

// varianceRange is the range of S2/C − (S1/C)² over the integers C in
// [c − hc, c + hc] with C ≥ 1, S1 in [s1 − h1, s1 + h1] and S2 in
// [s2 − h2, s2 + h2] (S2 ≥ 0), intersected with [0, top]; 0 is in it when
// the count may be 0 (an empty group's variance is released as 0), and
// an empty intersection gives [0, top].
func varianceRange(c, s1, s2, hc, h1, h2, top float64) (lo, hi float64) {
	if math.IsNaN(c) || math.IsNaN(s1) || math.IsNaN(s2) {
		return 0, top
	}
	cHi := math.Floor(c + hc)
	if cHi < 1 {
		return 0, top
	}
	cLo := math.Ceil(c - hc)
	empty := cLo < 1
	cLo = max(cLo, 1)
	a1, b1 := s1-h1, s1+h1
	// The least and the largest S1² over [a1, b1].
	minSq := 0.0
	if a1 > 0 || b1 < 0 {
		minSq = min(a1*a1, b1*b1)
	}
	maxSq := max(a1*a1, b1*b1)
	s2Lo, s2Hi := max(s2-h2, 0), s2+h2
	// g(C) = a/C − b/C² has one stationary point, C = 2b/a: its extremes
	// over [cLo, cHi] are at the ends or there.
	g := func(a, b, x float64) float64 { return a/x - b/(x*x) }
	cands := func(a, b float64) []float64 {
		xs := []float64{cLo, cHi}
		if a != 0 {
			if x := 2 * b / a; x > cLo && x < cHi {
				xs = append(xs, x)
			}
		}
		return xs
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range cands(s2Lo, maxSq) {
		lo = min(lo, g(s2Lo, maxSq, x))
	}
	for _, x := range cands(s2Hi, minSq) {
		hi = max(hi, g(s2Hi, minSq, x))
	}
	if empty {
		lo = min(lo, 0)
	}
	if hi < 0 || lo > top || math.IsNaN(lo) || math.IsNaN(hi) {
		return 0, top
	}
	return max(lo, 0), min(hi, top)
}
