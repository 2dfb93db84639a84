package runtime

// Matrix datasets in the DSL: private_low_rank and the result types'
// matrix parts. private_pca(ds, method="ppm-entry") runs through
// private_pca's binding (bindings.go); dsl/release/matrix.go plans both
// and refuses functions on the wrong kind of dataset before the charge.

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
)

// LowRankResult is a private_low_rank release on a matrix dataset.
type LowRankResult struct {
	// Matrix is the private approximation of rank ≤ 2k: d×d for a
	// symmetric matrix, m×n (of M itself) for a rectangular one.
	Matrix *mat.Dense
	// Components are k orthonormal columns derived from it (eigenvectors;
	// left singular vectors for a rectangular M), Right the right singular
	// vectors (rectangular only) and Values the matching eigenvalues or
	// singular values.
	Components *mat.Dense
	Right      *mat.Dense
	Values     []float64
	Method     string
	releaseBase
}

func lowRankResult(rel *release.Release) *LowRankResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &LowRankResult{releaseBase: releaseBase{rel.Receipt}, Method: rel.Receipt.Mechanism}
	}
	v := rel.Value.(*release.LowRank)
	return &LowRankResult{Matrix: v.Matrix, Components: v.Components, Right: v.Right, Values: v.Values,
		Method: rel.Receipt.Mechanism, releaseBase: releaseBase{rel.Receipt}}
}

// Component returns column j (1-based) of Components.
func (r *LowRankResult) Component(j int) []float64 {
	if r == nil || r.Components == nil {
		panic(errorf(NameArgumentError, "component %d: no result (the LowRankResult is nil or empty)", j))
	}
	_, k := r.Components.Dims()
	if j < 1 || j > k {
		panic(errorf(NameArgumentError, "component %d: the result has components 1..%d", j, k))
	}
	return mat.Col(nil, j-1, r.Components)
}

func (r *LowRankResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.Matrix == nil); ok {
		return s
	}
	m, n := r.Matrix.Dims()
	_, k := r.Components.Dims()
	var b strings.Builder
	fmt.Fprintf(&b, "LowRankResult(%s): a %d×%d approximation, %d component(s)\n", r.Method, m, n, k)
	for i := range min(m, 20) {
		b.WriteString(" ")
		for j := range min(n, 10) {
			fmt.Fprintf(&b, " % .4g", r.Matrix.At(i, j))
		}
		if n > 10 {
			b.WriteString(" …")
		}
		b.WriteByte('\n')
	}
	if m > 20 {
		fmt.Fprintf(&b, "  … (%d more rows)\n", m-20)
	}
	fmt.Fprintf(&b, "  values: %v\n", fmtFloats(r.Values))
	writeRight(&b, r.Right)
	return r.text(b.String())
}

// HTML renders the values and the receipt (the matrix is in .Matrix).
func (r *LowRankResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.Matrix == nil); ok {
		return s
	}
	m, n := r.Matrix.Dims()
	return r.html(fmt.Sprintf("<p>private_low_rank (%s): a %d×%d approximation of rank ≤ %d in <code>.Matrix</code>; values %s</p>\n",
		html.EscapeString(r.Method), m, n, 2*len(r.Values), html.EscapeString(fmtFloats(r.Values))))
}

// Metadata carries the receipt into the output metadata.
func (r *LowRankResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// MarshalJSON encodes every released field, matrices as rows.
func (r *LowRankResult) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		Matrix     [][]float64
		Components [][]float64
		Right      [][]float64 `json:",omitempty"`
		Values     []float64
		Method     string
		Receipt    *Receipt
	}{rowsOf(r.Matrix), rowsOf(r.Components), rowsOrNil(r.Right), r.Values, r.Method, r.Receipt})
}

func rowsOrNil(m *mat.Dense) [][]float64 {
	if m == nil {
		return nil
	}
	return rowsOf(m)
}

// writeRight notes the right singular vectors of a rectangular matrix.
func writeRight(b *strings.Builder, right *mat.Dense) {
	if right == nil {
		return
	}
	n, k := right.Dims()
	fmt.Fprintf(b, "  right singular vectors: %d×%d in .Right (Components are the left ones)\n", n, k)
}

// describeMatrix is a matrix dataset handle's public description.
func describeMatrix(s ledger.Schema) string {
	ms := s.Matrix
	kind := "symmetric"
	if !ms.Symmetric {
		kind = "rectangular"
	}
	return fmt.Sprintf("Dataset(%s: %d×%d %s matrix, neighbours=entry (|entry| ≤ %g), budget ε=%g δ=%g)",
		s.Name, ms.Rows, ms.Cols, kind, ms.EntryBound, s.Budget.Eps, s.Budget.Delta)
}
