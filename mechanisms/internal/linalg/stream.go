package linalg

import (
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
)

// Stream sums vectors of length m that arrive one at a time, in the order
// of rowpass.Pairwise: terms are added directly into a block sum of at most
// rowpass.BlockRows terms, and block sums are combined by the binary tree
// of aligned dyadic block ranges, the remaining nodes smallest first. The
// result is bit identical to rowpass.SumVec over the same terms in the same
// order, so the same bound holds: each entry is within
// γ_(k+SumRoundings)·Σ|terms| of the exact sum when every term carries at
// most k roundings. A coordinator uses it to sum its users' messages
// without holding them all.
type Stream struct {
	m      int
	terms  int
	block  []float64 // the open block's sum
	tree   *rowpass.Counter[[]float64]
	closed bool
}

// NewStream returns an empty Stream of m-vectors.
func NewStream(m int) *Stream {
	return &Stream{m: m, tree: rowpass.NewCounter(
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })}
}

// Add calls add with the open block's sum; add must add one term into it
// entry by entry (one addition per entry, or none: a dropped term still
// counts, so the tree does not depend on which terms were dropped). It
// panics after Sum or past MaxRows terms.
func (s *Stream) Add(add func(acc []float64)) {
	if s.closed {
		panic("linalg.Stream: Add after Sum")
	}
	if s.terms >= MaxRows {
		panic(fmt.Sprintf("linalg.Stream: more than MaxRows = %d terms", MaxRows))
	}
	if s.block == nil {
		s.block = s.alloc()
	}
	add(s.block)
	s.terms++
	if s.terms%rowpass.BlockRows == 0 {
		s.tree.Push(s.terms/rowpass.BlockRows-1, s.block)
		s.block = nil
	}
}

// alloc returns a zero block sum, reusing one the tree freed.
func (s *Stream) alloc() []float64 {
	if a, ok := s.tree.Spare(); ok {
		return a
	}
	return make([]float64, s.m)
}

// Terms returns the number of terms added so far.
func (s *Stream) Terms() int { return s.terms }

// Sum closes the stream and returns the sum of its terms (zeros if none).
func (s *Stream) Sum() []float64 {
	if s.closed {
		panic("linalg.Stream: Sum called twice")
	}
	s.closed = true
	if s.block != nil {
		s.tree.Push(s.terms/rowpass.BlockRows, s.block)
		s.block = nil
	}
	if top, ok := s.tree.Sum(); ok {
		return top
	}
	return make([]float64, s.m)
}
