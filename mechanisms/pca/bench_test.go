package pca

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
)

// benchData is a 200000×100 Gaussian matrix, built once.
var benchData *mat.Dense

func benchMatrix() *mat.Dense {
	if benchData == nil {
		rng := rand.New(rand.NewPCG(1, 1))
		const n, d = 200000, 100
		raw := make([]float64, n*d)
		for i := range raw {
			raw[i] = rng.NormFloat64() * 0.1
		}
		benchData = mat.NewDense(n, d, raw)
	}
	return benchData
}

// BenchmarkIteration compares one private npm iteration on the single-pass
// path (C·X from the rows on all cores, Gaussian noise, Householder QR)
// with the baseline of two plain gonum passes over the same matrix (M·X,
// then Mᵀ·(M·X)) in the same run. Target: private/baseline ≤ 1.3.
//
//	go test -run '^$' -bench Iteration -benchtime 20x ./mechanisms/pca/
func BenchmarkIteration(b *testing.B) {
	m := benchMatrix()
	n, d := m.Dims()
	for _, k := range []int{1, 5} {
		x := randomOrtho(rand.New(rand.NewPCG(2, 2)), d, k)
		b.Run(fmt.Sprintf("k=%d/private", k), func(b *testing.B) {
			r := prepareRows(m, 1, 0)
			src := source{s: noise.NewSeeded(1), scale: 1}
			pl, err := PlanNoisyPower(Options{K: k, Eps: 1, Delta: 1e-6, Iters: 50}, d)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				y := r.covTimes(x)
				src.gaussianMatrix(y, pl.NoiseStd)
				orthonormalize(y)
			}
		})
		b.Run(fmt.Sprintf("k=%d/gonum-two-passes", k), func(b *testing.B) {
			mx := mat.NewDense(n, k, nil)
			y := mat.NewDense(d, k, nil)
			if k == 1 {
				xv := mat.NewVecDense(d, mat.Col(nil, 0, x))
				mv := mat.NewVecDense(n, nil)
				yv := mat.NewVecDense(d, nil)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					mv.MulVec(m, xv)
					yv.MulVec(m.T(), mv)
				}
				return
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mx.Mul(m, x)
				y.Mul(m.T(), mx)
			}
		})
	}
}

// BenchmarkGram measures forming C = MᵀM once (the Gram path of npm), to be
// compared with L single-pass iterations (see gramPays).
func BenchmarkGram(b *testing.B) {
	r := prepareRows(benchMatrix(), 1, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.gram(context.Background())
	}
}
