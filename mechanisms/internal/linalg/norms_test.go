package linalg

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// normed is a streamed source that stores its rows' norms, as the data
// engine's row cache does; wrong makes it store wrong ones, to see that
// they are the ones used.
type normed struct {
	rows.Source
	wrong bool
}

func (normed) HasNorms() bool { return true }

func (s normed) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := s.Source.Scan(ctx)
	return normedCursor{cur, s.Dim(), s.wrong}, err
}

type normedCursor struct {
	rows.Cursor
	dim   int
	wrong bool
}

func (c normedCursor) Next(b *rows.Batch) error {
	err := c.Cursor.Next(b)
	if b.NormBig != nil {
		for i := range b.N {
			b.NormBig[i], b.NormRel[i] = rows.StoredNorm(b.Row(i, c.dim))
			if c.wrong {
				b.NormRel[i] *= 2
			}
		}
	}
	return err
}

// TestRowNormReadsStoredNorms: a pass over a source with stored norms
// hands them to every block (through PairwisePass's row counter and
// rowpass's re-blocking), and RowNorm gives them back: the computed ones
// when they are right, the stored ones (so no recomputation) whatever
// they are; without stored norms it computes them.
func TestRowNormReadsStoredNorms(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const n, d = 3000, 7
	raw := make([]float64, n*d)
	for i := range raw {
		raw[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4))
	}
	raw[5*d+2] = math.Inf(1) // a rejected row
	x := mat.NewDense(n, d, raw)
	for _, tc := range []struct {
		src          rows.Source
		stored, want bool // blocks carry norms; RowNorm equals ScaledNorm
	}{
		{normed{Source: stream{rows.FromDense(x)}}, true, true},
		{normed{Source: stream{rows.FromDense(x)}, wrong: true}, true, false},
		{stream{rows.FromDense(x)}, false, true},
	} {
		acc, rowsRead, err := PairwisePass(context.Background(), tc.src, rowpass.Options{Workers: 2, MinRows: 256},
			func() []int { return make([]int, 2) },
			func(acc []int, b *rows.Batch) {
				if (b.NormBig != nil) != tc.stored {
					t.Errorf("a block with stored norms %v", b.NormBig != nil)
				}
				for i := range b.N {
					a := b.Row(i, d)
					big, rel, ok := RowNorm(b, i, a)
					wb, wr, wok := ScaledNorm(a)
					acc[0]++
					if ok == wok && (!ok || big == wb && rel == wr) {
						acc[1]++
					}
				}
			},
			func(into, from []int) { into[0] += from[0]; into[1] += from[1] },
			func(a []int) { clear(a) })
		if err != nil || rowsRead != n || acc[0] != n {
			t.Fatal(err, rowsRead, acc)
		}
		if (acc[1] == n) != tc.want {
			t.Errorf("stored %v: %d of %d norms as ScaledNorm computes them", tc.stored, acc[1], n)
		}
	}
}
