package jlclass

import (
	"context"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// The exact draw against the noise-free argmax over the same 1000 totals
// (scores of 300 toy users), and the scoring that both need:
// `go test ./mechanisms/jlclass -bench . -run ^$`.
func benchTotals(b *testing.B) []int64 {
	src := noise.NewSeeded(1)
	pub := &Public{Candidates: PoolCandidates(1000, 2, 1, src)}
	users := toyUsers(b, 300, 3)
	tot, err := Totals(context.Background(), pub, users, 0)
	if err != nil {
		b.Fatal(err)
	}
	return tot
}

func BenchmarkSelectExact(b *testing.B) {
	tot := benchTotals(b)
	for _, eps := range []float64{1, 8} {
		b.Run(map[float64]string{1: "eps1", 8: "eps8"}[eps], func(b *testing.B) {
			src := noise.NewSeeded(2)
			for b.Loop() {
				sampleEM(tot, eps, 1, src)
			}
		})
	}
}

func BenchmarkSelectArgmax(b *testing.B) {
	tot := benchTotals(b)
	for b.Loop() {
		BestCandidate(tot)
	}
}

func BenchmarkScore(b *testing.B) {
	src := noise.NewSeeded(1)
	pub := &Public{Candidates: PoolCandidates(1000, 2, 1, src)}
	users := toyUsers(b, 300, 3)
	for b.Loop() {
		if _, err := Totals(context.Background(), pub, users, 0); err != nil {
			b.Fatal(err)
		}
	}
}
