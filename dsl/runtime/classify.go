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
		return &ClassifyJLResult{Receipt: rel.Receipt}
	}
	return &ClassifyJLResult{U: rel.Value.(*release.FedRep).U, Columns: rel.Columns, Receipt: rel.Receipt}
}

// ClassifyJLResult is a private_classify_jl release: U_priv = MᵀŨ, the
// shared representation of the users' ±1 classifiers (d×k, not
// orthonormal). Each user's classifier is sign(⟨x, U_priv·v_i⟩) with a head
// v_i the user fits on its own records; the heads are not released. The
// variant, k′ and the rest are in the receipt's parameters.
type ClassifyJLResult struct {
	U       *mat.Dense
	Columns []string
	Receipt *Receipt
}

func (r *ClassifyJLResult) String() string {
	if r != nil && r.Receipt != nil && r.Receipt.DryRun {
		return r.Receipt.String()
	}
	if r == nil || r.U == nil {
		return noResult
	}
	d, k := r.U.Dims()
	return representationText(fmt.Sprintf("ClassifyJLResult: shared representation U_priv = MᵀŨ (%d×%d)", d, k), r.U, r.Columns, r.Receipt)
}

// HTML renders U and the receipt.
func (r *ClassifyJLResult) HTML() string {
	if r != nil && r.Receipt != nil && r.Receipt.DryRun {
		return dryRunHTML(r.Receipt)
	}
	if r == nil || r.U == nil {
		return noResultHTML
	}
	d, k := r.U.Dims()
	return representationHTML(fmt.Sprintf("%s: U_priv (%d×%d)", catalog.PrivateClassifyJL.Name, d, k), r.U, r.Columns, r.Receipt)
}

// Metadata carries the receipt into the output metadata.
func (r *ClassifyJLResult) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	return r.Receipt.Metadata()
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
