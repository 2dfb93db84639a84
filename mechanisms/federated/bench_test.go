package federated

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/synth"
)

// The provider's hot loop, Σ_x x xᵀ Q, as one cache-friendly pass over the
// rows (covTimes) against the two-product baseline Xᵀ·(X·Q) with gonum's
// BLAS, at the bench's base size (n = 20000, d = 500, k = 2).
func benchProduct(b *testing.B, f func(p *PCAProvider, x, q *mat.Dense)) {
	data, err := synth.SparseSpiked(1, 20000, 500, 10, []float64{25, 12.5})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPCAProvider(data.X, nil)
	if err != nil {
		b.Fatal(err)
	}
	q := mat.NewDense(500, 2, nil)
	q.Set(0, 0, 1)
	q.Set(1, 1, 1)
	b.ResetTimer()
	for range b.N {
		f(p, data.X, q)
	}
}

func BenchmarkProviderProductOnePass(b *testing.B) {
	benchProduct(b, func(p *PCAProvider, _, q *mat.Dense) {
		if _, _, err := p.covTimes(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkProviderProductTwoGemm(b *testing.B) {
	benchProduct(b, func(_ *PCAProvider, x, q *mat.Dense) {
		var y, out mat.Dense
		y.Mul(x, q)
		out.Mul(x.T(), &y)
	})
}
