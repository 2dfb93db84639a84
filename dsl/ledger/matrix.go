package ledger

import (
	"fmt"
	"math"
)

// KindMatrix is Schema.Kind of a matrix dataset: the snapshot's rows are
// the rows of one public-shape matrix whose private units are its entries
// (privnotes dataset add --matrix). Row datasets leave Kind empty.
const KindMatrix = "matrix"

// NeighbourEntry is Schema.Neighbour of a matrix dataset: two matrices are
// neighbours when they differ in one entry (for a symmetric matrix, one
// entry and its mirror), each entry within [−EntryBound, EntryBound].
const NeighbourEntry = "entry"

// MatrixShape is the public shape of a matrix dataset.
type MatrixShape struct {
	// Rows and Cols are the matrix's dimensions (public, chosen by the
	// owner's file).
	Rows int `json:"rows"`
	Cols int `json:"cols"`
	// Symmetric is set for a symmetric matrix, analysed as it is; a
	// rectangular M is analysed through S = [[0, M], [Mᵀ, 0]].
	Symmetric bool `json:"symmetric"`
	// EntryBound is the public bound B on |entry|: entries lie in [−B, B],
	// so one changed entry moves by at most 2B.
	EntryBound float64 `json:"entry_bound"`
}

// IsMatrix reports whether s is a matrix dataset.
func (s Schema) IsMatrix() bool { return s.Kind == KindMatrix }

// checkMatrix checks a matrix registration against its snapshot's shape.
func checkMatrix(m *MatrixShape, rows, cols int) error {
	switch {
	case m.Rows != rows || m.Cols != cols:
		return fmt.Errorf("ledger: the matrix is declared %d×%d but its snapshot holds %d×%d", m.Rows, m.Cols, rows, cols)
	case m.Symmetric && rows != cols:
		return fmt.Errorf("a symmetric matrix must be square, got %d×%d", rows, cols)
	case !(m.EntryBound > 0) || math.IsInf(m.EntryBound, 0):
		return fmt.Errorf("--entry-bound %v: must be a finite number > 0", m.EntryBound)
	}
	return nil
}

// applyMatrix marks sc as the schema of matrix m.
func applyMatrix(sc *Schema, m *MatrixShape) {
	shape := *m
	sc.Kind, sc.Matrix, sc.Neighbour = KindMatrix, &shape, NeighbourEntry
}
