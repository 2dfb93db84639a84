package release

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// unitRows returns one row per privacy unit: the rows themselves, or for
// unit=user the mean of each user's rows (a public rule, so one user moves
// one row: row-level mechanisms on these rows are user-level DP).
func unitRows(d *ledger.Data) *mat.Dense {
	if d.Schema.Unit != "user" || d.Users == nil {
		return d.X
	}
	_, cols := d.X.Dims()
	nu := d.NumUsers
	if nu < 1 {
		nu = 1
	}
	out := mat.NewDense(nu, cols, nil)
	counts := make([]float64, nu)
	for i, u := range d.Users {
		if int(u) < 0 || int(u) >= nu {
			continue
		}
		row := out.RawRowView(int(u))
		for j, v := range d.X.RawRowView(i) {
			row[j] += v
		}
		counts[u]++
	}
	for u := range nu {
		if counts[u] > 0 {
			row := out.RawRowView(u)
			for j := range row {
				row[j] /= counts[u]
			}
		}
	}
	return out
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
