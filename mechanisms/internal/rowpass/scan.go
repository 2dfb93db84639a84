package rowpass

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// chunkBlocksPerWorker is how many blocks of rows PairwiseScan reads per
// worker before it sums them: large enough that goroutine start-up is
// negligible, small enough that memory stays bounded (a chunk holds
// workers·chunkBlocksPerWorker·BlockRows rows whatever the data's size).
const chunkBlocksPerWorker = 16

// shardsPerWorker is how many shards PairwiseScan cuts a chunk's blocks
// into per goroutine that sums them.
const shardsPerWorker = 4

// PairwiseScan is Pairwise over the rows of one pass of src, with memory
// bounded by a chunk of blocks instead of growing with the row count. It
// re-blocks whatever batches the source delivers into the fixed blocks of
// BlockRows rows, so block k holds rows [k·BlockRows, (k+1)·BlockRows) of
// the stream, sums the blocks of a chunk on several goroutines and feeds
// their nodes, in row order, through the same binary counter: the result
// is bit identical to Pairwise over the same rows in the same order, for
// every batch size and worker count, and Pairwise's bound holds as stated.
// A cursor that lends its rows (rows.Viewer) is summed in place, with no
// copy; block must then not write b's slices.
//
// block(acc, b) receives a zero accumulator and a batch view of one block
// (b.N ≤ BlockRows rows of src.Dim() features; labels and unit indices
// when labels and units are set and the source has them; the rows' norm
// parts when the source stores them, rows.Normed) and must leave in
// acc the sum of the block's rows, summed directly. merge and clear are as
// for Pairwise. The error is the source's, or ctx's; after an error the
// result must be discarded.
func PairwiseScan[A any](ctx context.Context, src rows.Source, opt Options, labels, units bool, newAcc func() A, block func(acc A, b *rows.Batch), merge func(into, from A), clear func(A)) (A, error) {
	var zero A
	dim := src.Dim()
	cur, err := src.Scan(ctx)
	if err != nil {
		return zero, err
	}
	defer cur.Close()
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	minRows := opt.MinRows
	if minRows <= 0 {
		minRows = DefaultMinRows
	}
	blockOpt := Options{Workers: opt.Workers, MinRows: (minRows + BlockRows - 1) / BlockRows}
	chunkBlocks := workers * max(chunkBlocksPerWorker, blockOpt.MinRows)
	sum := &chunkSum[A]{dim: dim, blockOpt: blockOpt, block: block, newAcc: newAcc,
		all: NewCounter(merge, clear), shards: shardsPerWorker}
	// A cursor that lends its rows (a memory-mapped file) is summed in
	// place, chunk by chunk, with no copy and no reader goroutine: the
	// same blocks, nodes and bits as the copying path below.
	viewed := false
	if v, ok := cur.(rows.Viewer); ok {
		var err error
		sum.shards = shardsPerView
		if r, ok := cur.(viewReleaser); ok {
			sum.release = r.ReleaseView
		}
		if viewed, err = sum.views(ctx, v, max(viewRows/BlockRows, chunkBlocks)*BlockRows, labels, units); err != nil {
			return zero, err
		}
	}
	if !viewed {
		sum.shards = shardsPerWorker
		if err := sum.copies(ctx, cur, src, chunkBlocks*BlockRows, labels, units); err != nil {
			return zero, err
		}
	}
	if err := cur.Close(); err != nil {
		return zero, err
	}
	top, ok := sum.all.Sum()
	if !ok {
		return newAcc(), nil
	}
	return top, nil
}

// viewRows is the size of a lent chunk. A view costs no memory, and each
// chunk ends with the workers waiting for each other: on a loaded machine
// a worker descheduled at that point holds up the pass, so lent chunks
// are large (5 per pass on 5e6 rows instead of 610 copied ones). Tests
// lower it. A chunk holds whole blocks.
var viewRows = 1 << 20

// shardsPerView is shardsPerWorker for lent chunks. Each chunk ends with
// the workers waiting for its last shard, on average half a shard of one
// core's time, so the share of the pass lost is about 1/(2·shards per
// chunk) whatever the chunk's size; with no reader goroutine to share
// the cores, finer shards are what keeps that small.
const shardsPerView = 16

// viewReleaser is implemented by a lending cursor (rows.Viewer) whose
// lent rows hold memory the process can give back once they are used (a
// memory map's resident pages): ReleaseView(lo, hi) says the pass reads
// rows [lo, hi) of the last view no more. It is called from the summing
// goroutines, concurrently, and must not change what the view reads.
type viewReleaser interface {
	ReleaseView(lo, hi int)
}

// chunkSum sums a pass chunk by chunk into the pairwise nodes.
type chunkSum[A any] struct {
	dim      int
	blockOpt Options
	block    func(acc A, b *rows.Batch)
	newAcc   func() A
	all      *Counter[A]
	shards   int // shards per goroutine of a chunk
	spare    []A // accumulators to reuse
	total    int // blocks before the current chunk
	// release, when set, is told each shard's rows of a lent chunk
	// once they are summed (viewReleaser).
	release func(lo, hi int)
}

// views sums the pass from the cursor's lent chunks of size rows; it
// reports false, having read nothing, when the cursor lends none.
func (s *chunkSum[A]) views(ctx context.Context, v rows.Viewer, size int, labels, units bool) (bool, error) {
	var view rows.Batch
	for {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		err := v.View(&view, size, labels, units)
		if err == rows.ErrNoView && s.total == 0 {
			return false, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return true, err
		}
		if view.N > size || view.N < 1 || len(view.X) < view.N*s.dim {
			return true, fmt.Errorf("rowpass: the source lent %d rows for a chunk of %d", view.N, size)
		}
		s.sum(&view, view.N)
		if view.N < size {
			// The last rows: a View hands whole chunks before the end, so
			// blocks stay aligned to the pass.
			switch err := v.View(&view, size, labels, units); {
			case err == io.EOF:
				return true, nil
			case err != nil:
				return true, err
			}
			return true, fmt.Errorf("rowpass: the source lent a short chunk before the end of its rows")
		}
	}
}

// copies sums the pass read from the cursor into chunks of size rows.
func (s *chunkSum[A]) copies(ctx context.Context, cur rows.Cursor, src rows.Source, size int, labels, units bool) error {
	dim := s.dim
	newChunk := func() *rows.Batch {
		b := rows.NewBatch(dim, size, labels, units)
		if nm, ok := src.(rows.Normed); ok && nm.HasNorms() {
			b.WithNorms(size)
		}
		return b
	}
	// A reader goroutine fills one chunk from the cursor while the
	// workers sum the other: the cursor's copying or decoding overlaps the
	// arithmetic. Chunks are handed over in order, so the blocks, the
	// nodes and the result are those of a serial pass.
	free := make(chan *rows.Batch, 2)
	free <- newChunk()
	free <- newChunk()
	full := make(chan filledChunk)
	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		defer close(full)
		for {
			var chunk *rows.Batch
			select {
			case chunk = <-free:
			case <-done:
				return
			}
			f := fillChunk(cur, chunk, size, dim)
			select {
			case full <- f:
			case <-done:
				return
			}
			if f.eof || f.err != nil {
				return
			}
		}
	}()
	// Stop the reader before the cursor closes (the caller's).
	defer func() {
		close(done)
		reader.Wait()
	}()
	for f := range full {
		if f.err != nil {
			return f.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.n == 0 {
			break
		}
		s.sum(f.chunk, f.n)
		free <- f.chunk // room for two: never blocks
		if f.eof {
			break
		}
	}
	return nil
}

// sum adds the first filled rows of chunk, the pass's rows from block
// s.total on, to the pairwise nodes.
func (s *chunkSum[A]) sum(chunk *rows.Batch, filled int) {
	dim := s.dim
	if s.total+(filled+BlockRows-1)/BlockRows > MaxRows/BlockRows {
		panic("rowpass: PairwiseScan over more than MaxRows = 2^30 rows: the data registry must refuse such data sets")
	}
	nb := (filled + BlockRows - 1) / BlockRows
	// The chunk's blocks are cut into more shards than goroutines, which
	// take the next shard as they finish one: the reader goroutine shares
	// the cores, so a fixed split would leave one core idle while the
	// other worker waits for the reader to yield.
	nw := len(Split(nb, s.blockOpt))
	shards := Split(nb, Options{Workers: nw * s.shards, MinRows: 1})
	per := make([]Counter[A], len(shards))
	for i := range per {
		per[i].merge, per[i].clear = s.all.merge, s.all.clear
		// Hand each shard spare accumulators from earlier chunks.
		if k := len(s.spare); k > 0 {
			per[i].free = []A{s.spare[k-1]}
			s.spare = s.spare[:k-1]
		}
	}
	var next atomic.Int64
	total := s.total
	For(nw, Options{Workers: nw, MinRows: 1}, func(_, _, _ int) {
		for {
			t := int(next.Add(1) - 1)
			if t >= len(shards) {
				return
			}
			c := &per[t]
			for b := shards[t].Lo; b < shards[t].Hi; b++ {
				acc, ok := c.Spare()
				if !ok {
					acc = s.newAcc()
				}
				v := sub(chunk, b*BlockRows, min((b+1)*BlockRows, filled), dim)
				v.First = (total + b) * BlockRows
				s.block(acc, v)
				c.Push(total+b, acc)
			}
			if s.release != nil {
				s.release(shards[t].Lo*BlockRows, min(shards[t].Hi*BlockRows, filled))
			}
		}
	})
	for i := range per {
		for _, nd := range per[i].nodes {
			s.all.push(nd)
		}
		s.spare = append(s.spare, per[i].free...)
	}
	s.spare = append(s.spare, s.all.free...)
	s.all.free = s.all.free[:0]
	s.total += nb
}

// SumVecScan is PairwiseScan for a float64 vector of length m: block(dst,
// b) receives dst zeroed and must add the block's rows into it directly.
func SumVecScan(ctx context.Context, src rows.Source, m int, opt Options, labels, units bool, block func(dst []float64, b *rows.Batch)) ([]float64, error) {
	return PairwiseScan(ctx, src, opt, labels, units,
		func() []float64 { return make([]float64, m) },
		block,
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })
}

// filledChunk is a chunk the reader filled: n rows, the end of the pass
// reached, or the cursor's error.
type filledChunk struct {
	chunk *rows.Batch
	n     int
	eof   bool
	err   error
}

// fillChunk fills chunk with up to size whole rows from the cursor,
// whatever the cursor's batch sizes. Each Next gets the whole rest of the
// chunk, so a source that reads its storage in large pieces (the data
// engine's row cache reads a batch's features in one read) makes few
// calls.
func fillChunk(cur rows.Cursor, chunk *rows.Batch, size, dim int) filledChunk {
	f := filledChunk{chunk: chunk}
	for f.n < size {
		room := size - f.n
		view := sub(chunk, f.n, f.n+room, dim)
		err := cur.Next(view)
		if err == io.EOF {
			f.eof = true
			return f
		}
		if err != nil {
			f.err = err
			return f
		}
		if view.N > room {
			f.err = fmt.Errorf("rowpass: the source filled %d rows into a batch of %d", view.N, room)
			return f
		}
		f.n += view.N
	}
	return f
}

// sub returns a batch viewing rows [lo, hi) of b (its buffers, not a copy),
// with N = hi − lo.
func sub(b *rows.Batch, lo, hi, dim int) *rows.Batch {
	v := &rows.Batch{X: b.X[lo*dim : hi*dim], N: hi - lo}
	if b.Label != nil {
		v.Label = b.Label[lo:hi]
	}
	if b.Unit != nil {
		v.Unit = b.Unit[lo:hi]
	}
	if b.NormBig != nil {
		v.NormBig, v.NormRel = b.NormBig[lo:hi], b.NormRel[lo:hi]
	}
	return v
}
