package synthdp

// A privacy audit of MST's tree selection on worst-case replace-one
// neighbours: the first round's choice is the exponential mechanism on
// the pairs' losses, so the probability of each pair may change by at
// most a factor e^ε_sel between neighbours. The audit estimates the
// probabilities from seeded draws on both data sets and checks the largest
// log ratio against ε_sel, and checks that a twin whose losses are not
// halved under replace-one (sensitivity 2 handed to a selector that
// assumes 1) fails it.

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// auditRows are 32 shared rows of three 0/1 columns and a last row x; with
// the public product M̂ = 10 in each of a pair's four cells, replacing
// x = (0, 0, 0) by y = (1, 1, 1) raises S of the pair (0, 1) by one (x
// leaves an over-estimated cell, y enters an under-estimated one) and
// lowers S of the pairs (0, 2) and (1, 2) by one (the other way round):
// the halved losses move by +1 and −1, the most they may.
func auditRows(last []float64) *mat.Dense {
	var data []float64
	add := func(k int, row ...float64) {
		for range k {
			data = append(data, row...)
		}
	}
	add(12, 0, 0, 1)
	add(10, 1, 0, 1)
	add(10, 0, 1, 1)
	add(1, last...)
	return mat.NewDense(33, 3, data)
}

// firstEdges returns how often each of the three pairs is chosen first,
// over draws selections on x with loss divisor sens.
func firstEdges(t *testing.T, p *Plan, x *mat.Dense, sens int64, sel *tabular.Selector, seed uint64, draws int) map[Edge]float64 {
	t.Helper()
	c, err := p.count(context.Background(), rows.FromDense(x))
	if err != nil {
		t.Fatal(err)
	}
	probs := [][]float64{{0.5, 0.5, 0}, {0.5, 0.5, 0}, {0.5, 0.5, 0}}
	s := noise.NewSeeded(seed)
	bit := func() bool { return s.Bernoulli(1, 2) }
	got := map[Edge]float64{}
	for range draws {
		got[selectTree(c, probs, 40, sens, sel, bit)[0]]++
	}
	for e := range got {
		got[e] /= float64(draws)
	}
	return got
}

func TestAuditSelectionReplaceOne(t *testing.T) {
	testtier.Long(t)
	const draws, eps = 50000, 0.2
	p, err := NewPlan(cats(3, 2), 1, 1e-6, accounting.ReplaceOne, false)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := tabular.NewSelector(eps)
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := auditRows([]float64{0, 0, 0}), auditRows([]float64{1, 1, 1})
	worst := func(sens int64) (lr, se float64) {
		p0 := firstEdges(t, p, d0, sens, sel, 401, draws)
		p1 := firstEdges(t, p, d1, sens, sel, 402, draws)
		for _, e := range []Edge{{0, 1}, {0, 2}, {1, 2}} {
			if p0[e] == 0 || p1[e] == 0 {
				t.Fatalf("pair %v never drawn: %v, %v", e, p0, p1)
			}
			if l := math.Abs(math.Log(p1[e] / p0[e])); l > lr {
				lr = l
				se = math.Sqrt((1-p0[e])/(draws*p0[e]) + (1-p1[e])/(draws*p1[e]))
			}
		}
		return lr, se
	}
	lr, se := worst(p.SelectSens)
	tlr, tse := worst(1)
	t.Logf("largest log ratio %.3f ± %.3f (ε_sel %.3f); twin without the halving %.3f ± %.3f", lr, se, eps, tlr, tse)
	if lr > eps+4*se {
		t.Errorf("log ratio %.3f exceeds ε_sel = %.3f + 4·se (%.3f)", lr, eps, se)
	}
	if tlr <= eps+4*tse {
		t.Errorf("the twin passes the audit (log ratio %.3f): the neighbours are not worst case", tlr)
	}
}
