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
	nodes  []streamNode
	free   [][]float64
	closed bool
}

type streamNode struct {
	start, level int // aligned block range [start, start+2^level)
	acc          []float64
}

// NewStream returns an empty Stream of m-vectors.
func NewStream(m int) *Stream {
	return &Stream{m: m}
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
		s.push(streamNode{start: s.terms/rowpass.BlockRows - 1, acc: s.block})
		s.block = nil
	}
}

func (s *Stream) alloc() []float64 {
	if k := len(s.free); k > 0 {
		a := s.free[k-1]
		s.free = s.free[:k-1]
		clear(a)
		return a
	}
	return make([]float64, s.m)
}

// push appends a node and merges siblings, as the binary counter of
// rowpass.Pairwise does.
func (s *Stream) push(nd streamNode) {
	s.nodes = append(s.nodes, nd)
	for len(s.nodes) >= 2 {
		r := s.nodes[len(s.nodes)-1]
		l := &s.nodes[len(s.nodes)-2]
		if l.level != r.level || l.start%(2<<l.level) != 0 {
			return
		}
		for i, v := range r.acc {
			l.acc[i] += v
		}
		s.free = append(s.free, r.acc)
		l.level++
		s.nodes = s.nodes[:len(s.nodes)-1]
	}
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
		s.push(streamNode{start: s.terms / rowpass.BlockRows, acc: s.block})
		s.block = nil
	}
	if len(s.nodes) == 0 {
		return make([]float64, s.m)
	}
	top := s.nodes[len(s.nodes)-1].acc
	for i := len(s.nodes) - 2; i >= 0; i-- {
		into := s.nodes[i].acc
		for j, v := range top {
			into[j] += v
		}
		top = into
	}
	return top
}
