// Package rowpass runs a function over the rows [0, n) of a data set on
// several goroutines and combines the per-goroutine results in a fixed order.
//
// Mechanisms make many passes over the same rows (power iterations, Oja steps,
// per-provider statistics). Each pass is split into contiguous shards, one per
// worker; every shard owns its accumulator, so workers never share memory
// while they run, and the accumulators are merged in shard order 0, 1, 2, ...
// on the calling goroutine.
//
// Determinism: for a fixed row count and effective worker count the shard
// boundaries and the merge order are fixed, so floating-point results are bit
// identical from run to run. They are NOT bit identical across worker counts,
// because floating-point addition is not associative and a different count
// changes where the partial sums are split; integer accumulators (counts,
// histograms) are identical for every worker count. Callers that need a
// reproducible result across machines should pin Options.Workers.
//
// Small inputs run inline on the calling goroutine: a pass over fewer than
// 2·MinRows rows is not worth a goroutine.
package rowpass

import (
	"fmt"
	"runtime"
	"sync"
)

// DefaultMinRows is the smallest shard worth a goroutine when Options.MinRows
// is zero. It suits rows of a few dozen floats; raise it for cheap rows.
const DefaultMinRows = 2048

// Options controls how a pass is split. The zero value uses every available
// core (runtime.GOMAXPROCS(0)) and DefaultMinRows.
type Options struct {
	// Workers is the maximum number of goroutines; 0 means GOMAXPROCS.
	Workers int
	// MinRows is the smallest number of rows a shard may hold; 0 means
	// DefaultMinRows.
	MinRows int
}

// Range is the half-open row interval [Lo, Hi) of one shard.
type Range struct{ Lo, Hi int }

// Split returns the shards a pass over n rows uses: contiguous, in row order,
// covering [0, n), their sizes differing by at most one. It returns no shard
// for n <= 0.
func Split(n int, opt Options) []Range {
	if n <= 0 {
		return nil
	}
	w := opt.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	minRows := opt.MinRows
	if minRows <= 0 {
		minRows = DefaultMinRows
	}
	if most := n / minRows; w > most {
		w = most
	}
	if w < 1 {
		w = 1
	}
	shards := make([]Range, w)
	base, extra := n/w, n%w
	lo := 0
	for i := range shards {
		size := base
		if i < extra {
			size++
		}
		shards[i] = Range{lo, lo + size}
		lo += size
	}
	return shards
}

// For calls body(shard, lo, hi) once per shard of [0, n), concurrently. Use
// it when each row writes only to its own output slot (per-row scores,
// buckets), so no merge is needed. A panic in body is re-raised on the
// calling goroutine.
func For(n int, opt Options, body func(shard, lo, hi int)) {
	shards := Split(n, opt)
	if len(shards) <= 1 {
		for i, s := range shards {
			body(i, s.Lo, s.Hi)
		}
		return
	}
	var wg sync.WaitGroup
	panics := make([]any, len(shards))
	for i, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics[i] = r
				}
			}()
			body(i, s.Lo, s.Hi)
		}()
	}
	wg.Wait()
	for i, p := range panics {
		if p != nil {
			panic(fmt.Sprintf("rowpass: shard %d: %v", i, p))
		}
	}
}

// Reduce runs body over every shard of [0, n) with a fresh accumulator from
// newAcc per shard, then merges the accumulators in shard order with
// merge(into, from), into being shard 0's accumulator, which it returns.
// For n <= 0 it returns newAcc() untouched.
func Reduce[A any](n int, opt Options, newAcc func() A, body func(acc A, lo, hi int), merge func(into, from A)) A {
	shards := Split(n, opt)
	if len(shards) == 0 {
		return newAcc()
	}
	accs := make([]A, len(shards))
	for i := range accs {
		accs[i] = newAcc()
	}
	For(n, opt, func(shard, lo, hi int) { body(accs[shard], lo, hi) })
	for _, a := range accs[1:] {
		merge(accs[0], a)
	}
	return accs[0]
}
