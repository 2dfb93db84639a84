package synthdp

// MST: Ryan McKenna, Gerome Miklau and Daniel Sheldon, "Winning the NIST
// Contest: A scalable and general approach to differentially private
// synthetic data" (Journal of Privacy and Confidentiality 11(3), 2021),
// Algorithm 1, calibrated in zCDP (Bun and Steinke 2016) with the discrete
// Gaussian of mechanisms/noise. Spec: docs/mechanisms.md, "Private
// synthetic data (MST)".
//
// Every value is first put in one cell of its column's public domain: a
// categorical column's category index (anything else in one cell "other"),
// a numeric column's bin of equal width over its public bounds (clamped;
// a NaN counts in the middle bin). One pass counts, exactly in integers,
// the one-way marginal of each of the r columns and the two-way marginal of
// every pair. The budget ρ is split in thirds:
//
//  1. the r one-way marginals, as one vector with Gaussian noise of ℓ2
//     sensitivity √r (add-remove: a row is one count in each) or √(2r)
//     (replace-one: one count down and one up in each);
//  2. r−1 rounds of Kruskal's algorithm, each choosing among the pairs that
//     join two components one pair by the exponential mechanism
//     (tabular.Selector) at ε_sel = √(8·(ρ/3)/(r−1)), which is
//     ε_sel-bounded-range and so ε_sel²/8-zCDP (Cesar and Rogers 2021);
//     the rounds compose to ρ/3. A pair's score is MST's: the L1 distance
//     of its true two-way marginal M from the product M̂ of the noisy
//     one-way marginals (public after step 1), larger is better. The loss
//     handed to the selector is the mirrored score 2·S − n + N̂ (clamped at
//     0), with S = Σ min(M, M̂), N̂ the noisy row count: as
//     ‖M − M̂‖₁ = n + Σ M̂ − 2S, the loss is a public shift of −‖M − M̂‖₁,
//     and it moves by at most 1 on add-remove neighbours (n by 1, S by 0
//     or 1 in the same direction) and by at most 2 on replace-one ones
//     (S by at most 1), so it is divided by 2 there;
//  3. the two-way marginals of the r−1 chosen pairs, as one vector with
//     Gaussian noise of ℓ2 sensitivity √(r−1) or √(2(r−1)).
//
// Under the gdp accountant the same thirds are μ² shares: each Gaussian
// release is √(2ρ_part)-GDP and each round ε_sel-DP is PureToMu(ε_sel)-GDP
// (Dong, Roth and Su 2022, Prop. 2.5), ε_sel = PureForMu(√(2(ρ/3)/(r−1))).
//
// Everything after is post-processing of the noisy marginals and the
// chosen tree: each column's marginal is the inverse-variance average of
// its own noisy marginal and the margins of its edges' marginals, clipped
// at 0 and normalised; each edge's marginal is clipped at 0 and fitted to
// its two columns' marginals by iterative proportional fitting, so the
// tree's marginals are consistent; the model is the tree rooted at the
// first column, P(root)·Π P(child | parent), and rows are sampled from it
// with a public seeded generator (math/rand/v2's PCG), which touches no
// private value.

import (
	"context"
	"errors"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// Limits of a plan. MaxCells bounds the counts one pass keeps (the
// one-way and all two-way marginals, 8 bytes each: 32 MiB).
const (
	MaxColumns    = 64
	MaxBins       = 1024
	MaxCategories = 1 << 16
	MaxCells      = 1 << 22
	// MaxRows is the most rows a run reads (rowpass.MaxRows = 2^30), so
	// that every count and fixed-point score fits an int64.
	MaxRows = rowpass.MaxRows
)

// share is each step's share of ρ: the one-way marginals, the selection
// and the two-way marginals (McKenna et al.: a third each).
const share = 1.0 / 3

// fixed is the fixed-point scale of the scores: M̂'s cells are rounded to
// multiples of 1/fixed so that S is an exact integer sum.
const fixed = 1 << 16

// fitIters is the number of iterative proportional fitting sweeps per edge.
const fitIters = 50

// Errors of the plans and runs. Their texts are fixed: they name no value.
var (
	ErrColumns     = errors.New("give between 2 and 64 columns")
	ErrColumn      = errors.New("every column needs a categorical domain of 1 to 65536 categories, or finite public bounds lo < hi and 1 to 1024 bins")
	ErrCells       = errors.New("the columns' pairwise marginals have more than 2^22 cells in all: use fewer columns, fewer bins or smaller domains")
	ErrEps         = errors.New("eps must be a finite number > 0")
	ErrDelta       = errors.New("delta must satisfy 0 < δ < 1: the mechanism adds Gaussian noise")
	ErrCalibrate   = errors.New("no zCDP budget ρ > 0 meets this (eps, delta): raise eps or delta")
	ErrCoarse      = errors.New("eps is too small to represent the noise: raise eps")
	ErrDim         = errors.New("synthdp: the source's width does not match the plan")
	ErrTooManyRows = rowpass.ErrTooManyRows
)

// Column is one column's public domain: Categories > 0 for a categorical
// column whose values are category indices (one more cell counts every
// other value), else a numeric column binned over [Lo, Hi] into Bins bins.
type Column struct {
	Categories int
	Lo, Hi     float64
	Bins       int
}

// Size is the number of cells of the column's domain.
func (c Column) Size() int {
	if c.Categories > 0 {
		return c.Categories + 1
	}
	return c.Bins
}

func (c Column) check() error {
	if c.Categories > 0 {
		if c.Categories > MaxCategories {
			return ErrColumn
		}
		return nil
	}
	ok := c.Bins >= 1 && c.Bins <= MaxBins && c.Lo < c.Hi &&
		!math.IsInf(c.Lo, 0) && !math.IsInf(c.Hi, 0) && !math.IsInf(c.Hi-c.Lo, 0)
	if !ok {
		return ErrColumn
	}
	return nil
}

// Cell returns the cell of value v: a public rule of the value alone.
func (c Column) Cell(v float64) int {
	if c.Categories > 0 {
		if v >= 0 && v < float64(c.Categories) && v == math.Trunc(v) {
			return int(v)
		}
		return c.Categories
	}
	if v != v {
		return c.Bins / 2
	}
	f := math.Floor((v - c.Lo) / (c.Hi - c.Lo) * float64(c.Bins))
	return int(min(max(f, 0), float64(c.Bins-1)))
}

// Midpoint returns the midpoint of a numeric column's bin,
// lo + (hi − lo)·(2·cell + 1)/(2·bins) with one division last, so that
// round bounds give round midpoints (7.7, not 7.699999999999999).
func (c Column) Midpoint(cell int) float64 {
	return c.Lo + (c.Hi-c.Lo)*float64(2*cell+1)/float64(2*c.Bins)
}

// Gaussian is one Gaussian release of a plan: its ℓ2 sensitivity, its
// share ρ of the zCDP budget, (an upper bound of) its number of
// coordinates and the noise std on the lattice.
type Gaussian struct {
	Sens  float64
	Rho   float64
	Coord int
	Sigma float64
}

func (g *Gaussian) calibrate() error {
	s, err := noise.GaussianScaleChecked(g.Sens, 1/math.Sqrt(2*g.Rho), g.Coord)
	if err != nil {
		return ErrCoarse
	}
	g.Sigma = s
	return nil
}

// countSens is the ℓ2 sensitivity of m marginals released together: a
// row is one count in each, so √m when a row is added or removed, and
// √(2m) when it is replaced (one count down, one up, in each). Rounded up.
func countSens(m int, nb accounting.Neighbour) float64 {
	if nb == accounting.ReplaceOne {
		m *= 2
	}
	return math.Nextafter(math.Sqrt(float64(m)), math.Inf(1))
}

// lossSens is the sensitivity of a pair's mirrored L1 score 2S − n:
// 1 under add-remove, 2 under replace-one (see the file comment).
func lossSens(nb accounting.Neighbour) int64 {
	if nb == accounting.ReplaceOne {
		return 2
	}
	return 1
}

// Plan is a planned MST release. Every field is public.
type Plan struct {
	Cols      []Column
	Neighbour accounting.Neighbour
	// Rho is the call's zCDP budget; Event the charge.
	Rho   float64
	Event accounting.Event
	// One and Two are the one-way and the edges' two-way releases.
	One, Two Gaussian
	// SelectEps is the exponential mechanism's ε in each of the r−1
	// rounds; SelectSens the loss's divisor (its sensitivity).
	SelectEps  float64
	SelectSens int64
	// Cells is the number of counts one pass keeps.
	Cells int
}

// NewPlan plans MST over cols at (eps, delta) under nb; gdp selects the
// gdp accountant (one μ*-GDP event) instead of zCDP.
func NewPlan(cols []Column, eps, delta float64, nb accounting.Neighbour, gdp bool) (*Plan, error) {
	r := len(cols)
	if r < 2 || r > MaxColumns {
		return nil, ErrColumns
	}
	cells := 0
	for i, c := range cols {
		if err := c.check(); err != nil {
			return nil, err
		}
		cells += c.Size()
		for _, o := range cols[i+1:] {
			cells += c.Size() * o.Size()
			if cells > MaxCells {
				return nil, ErrCells
			}
		}
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, ErrEps
	}
	if !(delta > 0 && delta < 1) {
		return nil, ErrDelta
	}
	rho, ev, ok := accounting.GaussianTarget(eps, delta, gdp)
	if !ok {
		return nil, ErrCalibrate
	}
	part := rho * share
	p := &Plan{Cols: append([]Column(nil), cols...), Neighbour: nb, Rho: rho, Event: ev, Cells: cells, SelectSens: lossSens(nb)}
	p.One = Gaussian{Sens: countSens(r, nb), Rho: part, Coord: 0}
	for _, c := range cols {
		p.One.Coord += c.Size()
	}
	p.Two = Gaussian{Sens: countSens(r-1, nb), Rho: part, Coord: cells - p.One.Coord}
	if err := p.One.calibrate(); err != nil {
		return nil, err
	}
	if err := p.Two.calibrate(); err != nil {
		return nil, err
	}
	round := part / float64(r-1)
	if gdp {
		p.SelectEps = accounting.PureForMu(math.Sqrt(2*round)) * (1 - 0x1p-40)
	} else {
		p.SelectEps = math.Sqrt(8*round) * (1 - 0x1p-40)
	}
	if _, err := tabular.NewSelector(p.SelectEps); err != nil {
		return nil, ErrCalibrate
	}
	return p, nil
}

// counts are the exact marginals of one pass.
type counts struct {
	n    int64
	one  [][]int64
	pair [][][]int64 // pair[i][j−i−1]: columns i < j, row-major
}

func (p *Plan) count(ctx context.Context, src rows.Source) (*counts, error) {
	r := len(p.Cols)
	if src.Dim() != r {
		return nil, ErrDim
	}
	c := &counts{one: make([][]int64, r), pair: make([][][]int64, r)}
	for i, col := range p.Cols {
		c.one[i] = make([]int64, col.Size())
		for _, o := range p.Cols[i+1:] {
			c.pair[i] = append(c.pair[i], make([]int64, col.Size()*o.Size()))
		}
	}
	cell := make([]int, r)
	err := rows.ForEach(ctx, src, 1024, false, false, func(b *rows.Batch) error {
		if c.n += int64(b.N); c.n > MaxRows {
			return ErrTooManyRows
		}
		for k := range b.N {
			row := b.Row(k, r)
			for i, col := range p.Cols {
				cell[i] = col.Cell(row[i])
				c.one[i][cell[i]]++
			}
			for i := range r {
				for j := i + 1; j < r; j++ {
					c.pair[i][j-i-1][cell[i]*p.Cols[j].Size()+cell[j]]++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Edge is a pair of columns A < B chosen for the tree.
type Edge struct{ A, B int }

// Measured are the noisy releases of a run: the one-way marginals, the
// chosen edges in the order chosen, and their two-way marginals
// (row-major, A's cell first).
type Measured struct {
	One   [][]float64
	Edges []Edge
	Two   [][]float64
}

// Run measures src (one column per plan column) and fits the tree model.
// It fails only with the source's or ctx's error.
func (p *Plan) Run(ctx context.Context, src rows.Source, s *noise.Sampler) (*Model, *Measured, error) {
	c, err := p.count(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	m := p.measure(c, s)
	return p.Fit(m), m, nil
}

// measure makes the three releases from the exact counts.
func (p *Plan) measure(c *counts, s *noise.Sampler) *Measured {
	r := len(p.Cols)
	m := &Measured{}
	var flat []float64
	for _, o := range c.one {
		for _, v := range o {
			flat = append(flat, float64(v))
		}
	}
	s.AddGaussian(flat, p.One.Sigma)
	for _, col := range p.Cols {
		m.One = append(m.One, flat[:col.Size():col.Size()])
		flat = flat[col.Size():]
	}
	// The noisy row count: the mean of the noisy marginals' totals,
	// rounded and kept in [1, MaxRows] (public).
	total := 0.0
	for _, o := range m.One {
		for _, v := range o {
			total += v
		}
	}
	nHat := int64(min(max(math.Round(total/float64(r)), 1), MaxRows))
	probs := make([][]float64, r)
	for i, o := range m.One {
		probs[i] = normalised(o)
	}
	sel, err := tabular.NewSelector(p.SelectEps)
	if err != nil {
		panic("synthdp: the plan checked SelectEps")
	}
	m.Edges = selectTree(c, probs, nHat, p.SelectSens, sel, func() bool { return s.Bernoulli(1, 2) })
	flat = flat[:0]
	for _, e := range m.Edges {
		for _, v := range c.pair[e.A][e.B-e.A-1] {
			flat = append(flat, float64(v))
		}
	}
	s.AddGaussian(flat, p.Two.Sigma)
	for _, e := range m.Edges {
		k := p.Cols[e.A].Size() * p.Cols[e.B].Size()
		m.Two = append(m.Two, flat[:k:k])
		flat = flat[k:]
	}
	return m
}

// selectTree runs the r−1 rounds of Kruskal's algorithm with the
// exponential mechanism sel over the pairs joining two components, on the
// pairs' losses (pairLoss with divisor sens) against the public product
// of the one-way marginals probs scaled to nHat.
func selectTree(c *counts, probs [][]float64, nHat, sens int64, sel *tabular.Selector, bit func() bool) []Edge {
	r := len(probs)
	comp := make([]int, r)
	for i := range comp {
		comp[i] = i
	}
	find := func(i int) int {
		for comp[i] != i {
			i = comp[i]
		}
		return i
	}
	// The losses of all pairs, once: the one-way marginals are fixed.
	loss := make([][]int64, r)
	var bound int64
	for i := range r {
		loss[i] = make([]int64, r)
		for j := i + 1; j < r; j++ {
			l, b := pairLoss(c.pair[i][j-i-1], probs[i], probs[j], nHat, c.n, sens)
			loss[i][j] = l
			bound = max(bound, b)
		}
	}
	var edges []Edge
	for range r - 1 {
		var cand []Edge
		var ls []int64
		for i := range r {
			for j := i + 1; j < r; j++ {
				if find(i) != find(j) {
					cand = append(cand, Edge{i, j})
					ls = append(ls, loss[i][j])
				}
			}
		}
		// The weights are computed up to the public bound whatever the
		// losses, so the selection's work does not depend on the scores.
		k, _ := sel.SelectWithin(ls, bound, bit)
		e := cand[k]
		comp[find(e.A)] = find(e.B)
		edges = append(edges, e)
	}
	return edges
}

// pairLoss is a pair's loss for the selector, ⌊max(0, 2S − n + N̂)/sens⌋
// in exact fixed point, with S = Σ min(M, M̂) and M̂ = N̂·p_a⊗p_b, and a
// public bound of every such loss (from N̂ and the public M̂ alone).
func pairLoss(m []int64, pa, pb []float64, nHat, n, sens int64) (loss, bound int64) {
	var s, hatSum int64
	for a, x := range pa {
		for b, y := range pb {
			h := int64(math.Round(float64(nHat) * x * y * fixed))
			hatSum += h
			s += min(m[a*len(pb)+b]*fixed, h)
		}
	}
	v := max(2*s-n*fixed+nHat*fixed, 0)
	return v / (fixed * sens), (2*hatSum+nHat*fixed)/(fixed*sens) + 1
}

// normalised returns v clipped at 0 and scaled to sum 1 (uniform when
// nothing is left).
func normalised(v []float64) []float64 {
	out := make([]float64, len(v))
	t := 0.0
	for i, x := range v {
		out[i] = max(x, 0)
		t += out[i]
	}
	for i := range out {
		if t > 0 {
			out[i] /= t
		} else {
			out[i] = 1 / float64(len(out))
		}
	}
	return out
}
