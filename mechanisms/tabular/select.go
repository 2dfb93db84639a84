package tabular

import (
	"errors"
	"math"
	"sort"
)

// Selector is the exponential mechanism over finitely many candidates
// whose losses are integers of sensitivity 1 (McSherry and Talwar 2007),
// sampled exactly as the quantile is (sampleLevels): candidate j is drawn
// with probability f(L_j)/Σ_k f(L_k), where f is the weight sequence of
// ratio R ≤ e^(ε/2) (weights: f(0) = 1, non-increasing, f(d)/f(d+1) ≤ R).
// Other mechanisms (the adaptive power method's gap selection) use it to
// pick one of their candidate runs.
//
// Privacy. On neighbouring data every L_j moves by at most 1, so every
// weight moves by a factor in [1/R, R], the normaliser too, and every
// probability by at most R² ≤ e^ε: ε-DP. It is also ε-bounded-range
// (log f(L_j) − log f(L'_j) ∈ [−ln R, ln R] for all j, an interval of
// width 2 ln R ≤ ε), hence ε²/8-zCDP (Cesar and Rogers 2021,
// "Bounding, concentrating, and truncating", bounded range implies
// ε²/8-zCDP).
type Selector struct {
	Eps   float64
	ratio dyadic
}

// ErrSelectEps: the selection's ε is not a finite number > 0.
var ErrSelectEps = errors.New("the exponential mechanism's eps must be a finite number > 0")

// NewSelector returns the exponential mechanism at ε.
func NewSelector(eps float64) (*Selector, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, ErrSelectEps
	}
	return &Selector{Eps: eps, ratio: ratioFor(eps)}, nil
}

// Select returns the index of the drawn candidate, given the candidates'
// losses (≥ 0; a smaller loss is better) and fair bits from bit. The
// losses must be absolute (a function of the data with sensitivity 1),
// not shifted by their minimum: the minimum moves with the data too.
func (s *Selector) Select(losses []int64, bit func() bool) int {
	return s.selectEnv(losses, bit, cutBits)
}

// SelectWithin is Select with work that does not depend on the losses:
// bound is a public upper bound of every loss (from public facts, or at
// worst from what the caller's running time shows already, such as the
// row count), and the weights of all candidates are computed in one walk
// of the weight sequence to bound, whatever the losses. Select's walk
// stops at the worst candidate in the head, so its time grows with the
// best loss, a timing channel (docs/threat-model.md). The draw is
// Select's exactly: the same weights, the same fair bits. It also returns
// the number of weight steps, bound when the bound holds (for tests).
func (s *Selector) SelectWithin(losses []int64, bound int64, bit func() bool) (int, int64) {
	lv, order := s.levels(losses)
	tab, steps := tableWeights(s.ratio, lv, int(max(bound, 0)))
	i, _ := sampleLevels(func(i int) dyadic { return tab[i] }, lv, bit, cutBits)
	return order[i], int64(steps)
}

func (s *Selector) selectEnv(losses []int64, bit func() bool, envBits int64) int {
	lv, order := s.levels(losses)
	i, _ := sampleLevels(walkWeights(s.ratio, lv), lv, bit, envBits)
	return order[i]
}

// levels returns one level per candidate in order of loss, and the
// candidates in that order.
func (s *Selector) levels(losses []int64) ([]level, []int) {
	order := make([]int, len(losses))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return losses[order[a]] < losses[order[b]] })
	lv := make([]level, len(order))
	for i, j := range order {
		lv[i] = level{d: int(max(losses[j], 0)), count: 1}
	}
	return lv, order
}
