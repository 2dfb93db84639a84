package release

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Data is what a plan's run reads, after the charge: the dataset's public
// schema and its rows as a stream, with labels and unit indices when the
// schema has them.
type Data struct {
	Schema ledger.Schema
	Rows   rows.Source
}

// dataOf adapts data held in memory (today's registry, synthetic data).
func dataOf(d *ledger.Data) (*Data, error) {
	src := rows.FromDense(d.X)
	if d.Y != nil {
		var err error
		if src, err = src.WithLabels(d.Y); err != nil {
			return nil, err
		}
	}
	if d.Users != nil {
		var err error
		if src, err = src.WithUnits(d.Users, max(d.NumUsers, 1)); err != nil {
			return nil, err
		}
	}
	return &Data{Schema: d.Schema, Rows: src}, nil
}

// unitSource returns one row per privacy unit: the rows themselves, or for
// unit=user the mean of each user's rows (a public rule, so one user moves
// one row: row-level mechanisms on these rows are user-level DP). The user
// means take one pass and memory for one row per user; each is the sum of
// the user's rows in row order divided by their number.
func unitSource(ctx context.Context, d *Data) (rows.Source, error) {
	units, ok := d.Rows.(rows.Units)
	if d.Schema.Unit != "user" || !ok || units.NumUnits() == 0 {
		return d.Rows, nil
	}
	cols := d.Rows.Dim()
	nu := max(units.NumUnits(), 1)
	out := mat.NewDense(nu, cols, nil)
	counts := make([]float64, nu)
	err := rows.ForEach(ctx, d.Rows, 1024, false, true, func(b *rows.Batch) error {
		for i := range b.N {
			u := b.Unit[i]
			if int(u) < 0 || int(u) >= nu {
				continue
			}
			row := out.RawRowView(int(u))
			for j, v := range b.Row(i, cols) {
				row[j] += v
			}
			counts[u]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for u := range nu {
		if counts[u] > 0 {
			row := out.RawRowView(u)
			for j := range row {
				row[j] /= counts[u]
			}
		}
	}
	return rows.FromDense(out), nil
}

// unitCount is the number of privacy units: users, or rows counted in one
// pass.
func unitCount(ctx context.Context, d *Data) (int, error) {
	if units, ok := d.Rows.(rows.Units); ok && d.Schema.Unit == "user" && units.NumUnits() > 0 {
		return units.NumUnits(), nil
	}
	n := 0
	err := rows.ForEach(ctx, d.Rows, 4096, false, false, func(b *rows.Batch) error {
		n += b.N
		return nil
	})
	return n, err
}

// unitMatrix is unitSource read into memory, for the mechanisms that
// take a matrix.
func unitMatrix(ctx context.Context, d *Data) (*mat.Dense, error) {
	src, err := unitSource(ctx, d)
	if err != nil {
		return nil, err
	}
	return matrixOf(ctx, src)
}

// matrixOf reads a source into memory (for mechanisms that take a matrix).
func matrixOf(ctx context.Context, src rows.Source) (*mat.Dense, error) {
	d, err := rows.Collect(ctx, src)
	if err != nil {
		return nil, err
	}
	if d.Matrix() == nil {
		return &mat.Dense{}, nil
	}
	return d.Matrix(), nil
}

// scaleRows returns the rows scaled by min(1/clip, 1/‖a‖) so that each has
// norm at most 1 (pca's public rule); non-finite rows become zero rows.
func scaleRows(x *mat.Dense, clip float64) *mat.Dense {
	if x.IsEmpty() {
		return x
	}
	r, c := x.Dims()
	out := mat.NewDense(r, c, nil)
	for i := range r {
		row := x.RawRowView(i)
		var ss float64
		finite := true
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				finite = false
				break
			}
			ss += v * v
		}
		if !finite {
			continue
		}
		norm := math.Sqrt(ss)
		s := 1 / clip
		if norm > clip {
			s = 1 / norm
		}
		dst := out.RawRowView(i)
		for j, v := range row {
			dst[j] = v * s
		}
	}
	return out
}

// clipRows returns the rows clipped to L2 norm at most clip; non-finite
// rows become zero rows.
func clipRows(x *mat.Dense, clip float64) *mat.Dense {
	out := scaleRows(x, clip)
	out.Scale(clip, out)
	return out
}

func columnIndex(sc ledger.Schema, names []string) ([]int, error) {
	if len(names) == 0 {
		idx := make([]int, sc.D)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	pos := map[string]int{}
	for i, c := range sc.Columns {
		pos[c] = i
	}
	var idx []int
	seen := map[string]bool{}
	for _, n := range names {
		i, ok := pos[n]
		if !ok {
			return nil, fmt.Errorf("no column %q; the columns are %v", n, sc.Columns)
		}
		if seen[n] {
			return nil, fmt.Errorf("column %q listed twice", n)
		}
		seen[n] = true
		idx = append(idx, i)
	}
	return idx, nil
}
