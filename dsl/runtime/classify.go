package runtime

// private_classify_jl (seed 004, Algorithm 3 in the practical variants of
// federated.md §3.5; planned by dsl/release/classify.go).

import (
	"encoding/json"
	"fmt"
	"github.com/privnotes/privnotes/dsl/catalog"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/release"
)

func classifyJLResult(rel *release.Release) *ClassifyJLResult {
	if rel.Value == nil { // a dry run: the receipt only
		return &ClassifyJLResult{releaseBase: releaseBase{rel.Receipt}}
	}
	return &ClassifyJLResult{U: rel.Value.(*release.FedRep).U, Columns: rel.Columns, releaseBase: releaseBase{rel.Receipt}}
}

// ClassifyJLResult is a private_classify_jl release: U_priv = MᵀŨ, the
// shared representation of the users' ±1 classifiers (d×k, not
// orthonormal). Each user's classifier is sign(⟨x, U_priv·v_i⟩) with a head
// v_i the user fits on its own records; the heads are not released. The
// variant, k′ and the rest are in the receipt's parameters.
type ClassifyJLResult struct {
	U       *mat.Dense
	Columns []string
	releaseBase
}

func (r *ClassifyJLResult) String() string {
	if r == nil {
		return noResult
	}
	if s, ok := r.shownText(r.U == nil); ok {
		return s
	}
	d, k := r.U.Dims()
	return r.text(representationText(fmt.Sprintf("ClassifyJLResult: shared representation U_priv = MᵀŨ (%d×%d)", d, k), r.U, r.Columns) + errorTextLine(r.errorLine()))
}

// HTML renders U and the receipt.
func (r *ClassifyJLResult) HTML() string {
	if r == nil {
		return noResultHTML
	}
	if s, ok := r.shownHTML(r.U == nil); ok {
		return s
	}
	d, k := r.U.Dims()
	return r.html(representationHTML(fmt.Sprintf("%s: U_priv (%d×%d)", catalog.PrivateClassifyJL.Name, d, k), r.U, r.Columns) + errorHTMLLine(r.errorLine()))
}

// Metadata carries the receipt into the output metadata.
func (r *ClassifyJLResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.metadata()
}

// MarshalJSON encodes every released field, U as rows.
func (r *ClassifyJLResult) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		U       [][]float64
		Columns []string
		Receipt *Receipt
	}{rowsOf(r.U), r.Columns, r.Receipt})
}
