package release

// private_synthesize: MST (McKenna, Miklau and Sheldon 2021) of
// mechanisms/synthdp in zCDP. The planner resolves cols against the
// public schema (categorical columns by their domain, numeric columns
// binned over the owner's bounds), fixes every noise scale and the
// selection's ε before the charge, and the run reads the columns through
// Data.Columns. The release is the fitted tree model; the synthetic rows
// are sampled from it with a public seed (post-processing), so the ledger
// keeps the model, not the rows.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/synthdp"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// Synthesis limits and defaults: the rows sampled when the owner declared
// no public n, and the most rows a call samples.
const (
	synthDefaultRows = 10000
	synthMaxRows     = 1000000
	// synthSeed seeds the public generator of the rows: fixed, so that a
	// release and its replay give the same table.
	synthSeed = 1
)

// Synth is a private_synthesize release: the tree model over the columns'
// cells (synthdp.Model), each cell's value (a category, "other", or a
// numeric bin's midpoint), and the number of rows to sample.
type Synth struct {
	Columns []string
	// Numeric marks the binned numeric columns.
	Numeric []bool
	// Labels are each column's cells as text; Mids the numeric columns'
	// bin midpoints (empty for categorical columns).
	Labels [][]string
	Mids   [][]float64
	// Parent and Tables are the tree model (synthdp.Model).
	Parent []int
	Tables [][]float64
	N      int
}

// Model returns the tree model.
func (v *Synth) Model() *synthdp.Model {
	sizes := make([]int, len(v.Labels))
	for i, l := range v.Labels {
		sizes[i] = len(l)
	}
	return &synthdp.Model{Sizes: sizes, Parent: v.Parent, Tables: v.Tables}
}

// Rows samples the synthetic rows (the same ones every time): a string
// per categorical cell, a float64 per numeric one.
func (v *Synth) Rows() [][]any {
	cells := v.Model().Sample(v.N, synthSeed)
	out := make([][]any, len(cells))
	for i, row := range cells {
		r := make([]any, len(row))
		for j, c := range row {
			if v.Numeric[j] {
				r[j] = v.Mids[j][c]
			} else {
				r[j] = v.Labels[j][c]
			}
		}
		out[i] = r
	}
	return out
}

// synthColumns resolves cols: row-level data, each column once, categorical
// or numeric with owner bounds.
func synthColumns(fn string, src Ref, a *Args, bins int) ([]synthdp.Column, []tabColumn, error) {
	sc := src.Schema
	if sc.Unit == "user" {
		return nil, nil, Errorf(NameArgumentError, "%s: dataset %q is user-level; synthesis is implemented for row-level data only (each row a privacy unit): ask the data owner for a row-level registration", fn, src.Name)
	}
	names := a.Strs("cols")
	if len(names) < 2 || len(names) > synthdp.MaxColumns {
		return nil, nil, Errorf(NameArgumentError, "%s: give cols=[]string{...}, 2 to %d columns (a synthetic table models pairs of columns)", fn, synthdp.MaxColumns)
	}
	if bins < 1 || bins > synthdp.MaxBins {
		return nil, nil, Errorf(NameArgumentError, "%s: bins=%d: give 1 to %d bins per numeric column", fn, bins, synthdp.MaxBins)
	}
	seen := map[string]bool{}
	var cols []synthdp.Column
	var tcs []tabColumn
	for _, name := range names {
		if seen[name] {
			return nil, nil, Errorf(NameArgumentError, "%s: column %q is listed twice in cols", fn, name)
		}
		seen[name] = true
		c, err := columnOf(fn, src, &Args{Vals: map[string]any{"col": name}})
		if err != nil {
			return nil, nil, err
		}
		if !c.numeric {
			cols = append(cols, synthdp.Column{Categories: len(c.domain)})
		} else {
			if !c.bounded {
				return nil, nil, noBounds(fn, c.name)
			}
			cols = append(cols, synthdp.Column{Lo: c.lo, Hi: c.hi, Bins: bins})
		}
		tcs = append(tcs, c)
	}
	return cols, tcs, nil
}

func planSynthesize(env *Local, src Ref, a *Args) (*Plan, error) {
	fn := catalog.PrivateSynthesize.Name
	bins := a.Int("bins")
	cols, tcs, err := synthColumns(fn, src, a, bins)
	if err != nil {
		return nil, err
	}
	n := a.Int("rows")
	if n == 0 {
		n = synthDefaultRows
		if pn := registeredPublicN(src); pn > 0 {
			n = min(pn, synthMaxRows)
		}
	}
	if n < 1 || n > synthMaxRows {
		return nil, Errorf(NameArgumentError, "%s: rows=%d: give 1 to %d synthetic rows", fn, n, synthMaxRows)
	}
	nb, err := registeredRelation(fn, src)
	if err != nil {
		return nil, err
	}
	// A subset of replace-one data has added or removed rows as
	// neighbours too; every synthdp sensitivity under replace-one is at
	// least its add-remove one, so the registered relation covers them.
	eps, delta := a.Float("eps"), a.Float("delta")
	sp, err := synthdp.NewPlan(cols, eps, delta, nb, gaussianCalibration(src) == tabular.CalibrateGDP)
	if err != nil {
		if errors.Is(err, synthdp.ErrCells) || errors.Is(err, synthdp.ErrColumn) {
			return nil, Errorf(NameArgumentError, "%s: columns %s: %v", fn, strings.Join(a.Strs("cols"), ", "), err)
		}
		return nil, argErr(fn, err)
	}
	ev := sp.Event
	const method = "synth/mst"
	ev.Mechanism = method
	names := a.Strs("cols")
	var what []string
	for i, c := range tcs {
		if c.numeric {
			what = append(what, fmt.Sprintf("%s (%d bins over [%v, %v])", c.name, bins, c.lo, c.hi))
		} else {
			what = append(what, fmt.Sprintf("%s (%d categories and \"other\")", c.name, cols[i].Categories))
		}
	}
	p := &Plan{Func: fn, Method: method, Cost: ev, Eps: eps, Delta: delta, Columns: append([]string(nil), names...),
		Noise: fmt.Sprintf("discrete Gaussian: std %.4g per cell of the one-way marginals (ℓ2 sensitivity %.4g), %.4g per cell of the tree's two-way marginals (sensitivity %.4g); exponential mechanism at ε=%.4g in each of %d rounds (loss sensitivity %d), under %s",
			sp.One.Sigma, sp.One.Sens, sp.Two.Sigma, sp.Two.Sens, sp.SelectEps, len(cols)-1, sp.SelectSens, nb),
		Note: fmt.Sprintf("MST synthetic table of %d rows over %s: one-way marginals of every column, a spanning tree of column pairs chosen by the exponential mechanism, two-way marginals on its edges, calibrated to ε=%v, δ=%v %s, a third each; the rows are sampled from the fitted tree model with a public seed (post-processing) and are public",
			n, strings.Join(what, ", "), eps, delta, calibrationWords(ev)),
		Params: publicParams(a, map[string]any{"neighbour": nb.String(), "rows": n})}
	p.setStreamMemory(src, synthMemory(sp, n, len(cols)), 0,
		fmt.Sprintf("a pass over rows of width %d, %d marginal cells, %d synthetic rows", readWidth(src), sp.Cells, n),
		"Synthesize fewer columns, fewer bins or fewer rows")
	p.run = func(ctx context.Context, d *Data) (any, error) {
		s, err := columnsSource(d, names)
		if err != nil {
			return nil, err
		}
		md, _, err := sp.Run(ctx, s, env.sampler())
		if err != nil {
			return nil, err
		}
		v := &Synth{Columns: append([]string(nil), names...), Parent: md.Parent, Tables: md.Tables, N: n}
		for i, c := range tcs {
			v.Numeric = append(v.Numeric, c.numeric)
			var labels []string
			var mids []float64
			if c.numeric {
				for b := range bins {
					m := cols[i].Midpoint(b)
					mids = append(mids, m)
					labels = append(labels, strconv.FormatFloat(m, 'g', -1, 64))
				}
			} else {
				labels = append(append(labels, c.domain...), "other")
			}
			v.Labels = append(v.Labels, labels)
			v.Mids = append(v.Mids, mids)
		}
		return v, nil
	}
	return p, nil
}

// synthMemory is what a run holds besides the scan: the marginals' counts
// and noisy copies (8 bytes each, twice), and the synthetic rows (an int
// and a boxed value per cell).
func synthMemory(sp *synthdp.Plan, n, r int) int64 {
	return add(mul(i64(sp.Cells), 16), mul(mul(i64(n), i64(r)), 48))
}

// EncodeRelease implements Value.
func (v *Synth) EncodeRelease(e *Encoder) {
	e.Strings("columns", v.Columns)
	num := make([]int, len(v.Numeric))
	sizes := make([]int, len(v.Labels))
	var labels []string
	var mids, tables []float64
	for i := range v.Labels {
		if v.Numeric[i] {
			num[i] = 1
		}
		sizes[i] = len(v.Labels[i])
		labels = append(labels, v.Labels[i]...)
		mids = append(mids, v.Mids[i]...)
	}
	for _, t := range v.Tables {
		tables = append(tables, t...)
	}
	e.Ints("numeric", num)
	e.Ints("sizes", sizes)
	e.Strings("labels", labels)
	e.Floats("mids", mids)
	e.Ints("parent", v.Parent)
	e.Floats("tables", tables)
	e.Ints("rows", []int{v.N})
}

// DecodeRelease implements Value.
func (v *Synth) DecodeRelease(d *Decoder) error {
	v.Columns = d.Strings("columns")
	num, sizes := d.Ints("numeric"), d.Ints("sizes")
	labels, mids := d.Strings("labels"), d.Floats("mids")
	v.Parent = d.Ints("parent")
	tables := d.Floats("tables")
	n := d.Ints("rows")
	if err := d.Err(); err != nil {
		return err
	}
	bad := errors.New("release: a malformed synthetic table")
	r := len(v.Columns)
	if len(num) != r || len(sizes) != r || len(v.Parent) != r || len(n) != 1 {
		return bad
	}
	v.N = n[0]
	v.Numeric, v.Labels, v.Mids, v.Tables = make([]bool, r), make([][]string, r), make([][]float64, r), make([][]float64, r)
	for i := range r {
		k := sizes[i]
		if k < 1 || len(labels) < k || v.Parent[i] >= r || v.Parent[i] < -1 {
			return bad
		}
		v.Labels[i], labels = labels[:k:k], labels[k:]
		if v.Numeric[i] = num[i] == 1; v.Numeric[i] {
			if len(mids) < k {
				return bad
			}
			v.Mids[i], mids = mids[:k:k], mids[k:]
		}
	}
	for i := range r {
		m := sizes[i]
		if p := v.Parent[i]; p >= 0 {
			m *= sizes[p]
		}
		if len(tables) < m {
			return bad
		}
		v.Tables[i], tables = tables[:m:m], tables[m:]
	}
	if len(labels) != 0 || len(mids) != 0 || len(tables) != 0 || v.N < 1 || v.N > synthMaxRows {
		return bad
	}
	// The parents form a tree: from every column the walk up ends at a
	// root within r steps (Sample's order needs it).
	for i := range r {
		j, steps := i, 0
		for ; j >= 0 && steps <= r; steps++ {
			j = v.Parent[j]
		}
		if j >= 0 {
			return bad
		}
	}
	return nil
}
