package federated

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestTruncateRows(t *testing.T) {
	v := mat.NewDense(6, 2, []float64{
		1, 0, // norm 1
		0, 3, // 3
		2, 0, // 2
		0, 2, // 2 (tie with row 2; lower index wins)
		0.5, 0, // 0.5
		3, 0, // 3
	})
	keep := TruncateRows(v, 3)
	if !slices.Equal(keep, []int{1, 2, 5}) {
		t.Fatalf("kept rows %v, want [1 2 5]", keep)
	}
	nonzero := 0
	for i := range 6 {
		if v.At(i, 0) != 0 || v.At(i, 1) != 0 {
			nonzero++
			if !slices.Contains(keep, i) {
				t.Errorf("row %d not kept but non-zero", i)
			}
		}
	}
	if nonzero != 3 {
		t.Errorf("%d non-zero rows after truncation to ŝ=3", nonzero)
	}
	all := TruncateRows(mat.NewDense(3, 1, []float64{1, 2, 3}), 5)
	if !slices.Equal(all, []int{0, 1, 2}) {
		t.Errorf("ŝ ≥ d kept %v", all)
	}
}

func TestTopIndices(t *testing.T) {
	if got := TopIndices([]float64{0.1, 5, 2, 5, -1}, 2); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("TopIndices = %v, want [1 3]", got)
	}
}

// orthoErr returns ‖QᵀQ − I‖∞ (largest absolute row sum), which bounds
// every entry's deviation.
func orthoErr(q *mat.Dense) float64 {
	_, k := q.Dims()
	var g mat.Dense
	g.Mul(q.T(), q)
	for i := range k {
		g.Set(i, i, g.At(i, i)-1)
	}
	return mat.Norm(&g, math.Inf(1))
}
