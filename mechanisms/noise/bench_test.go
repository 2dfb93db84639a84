package noise

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The benchmarks report ns per noise sample for the crypto sampler (what
// production uses) and, as a same-run baseline, plain data passes over a
// 1000×10 matrix, so that the noise/data ratio can be read off one run:
//
//	go test -run '^$' -bench . -benchtime 2s -count 5 ./mechanisms/noise/

var sink float64

func BenchmarkGaussian(b *testing.B) {
	s := New()
	for b.Loop() {
		sink += s.Gaussian(1.5)
	}
}

func BenchmarkGaussianSeeded(b *testing.B) {
	s := NewSeeded(1)
	for b.Loop() {
		sink += s.Gaussian(1.5)
	}
}

func BenchmarkLaplace(b *testing.B) {
	s := New()
	for b.Loop() {
		sink += s.Laplace(1.5)
	}
}

func BenchmarkAddGaussianVector1000(b *testing.B) {
	s := New()
	x := make([]float64, 1000)
	for b.Loop() {
		s.AddGaussian(x, 1.5)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/sample")
}

func benchMatrix() *mat.Dense {
	m := mat.NewDense(1000, 10, nil)
	for i := range 1000 {
		for j := range 10 {
			m.Set(i, j, float64(i*10+j)/1e4)
		}
	}
	return m
}

func BenchmarkAddGaussianMatrix1000x10(b *testing.B) {
	s := New()
	m := benchMatrix()
	for b.Loop() {
		s.AddGaussianMatrix(m, 1.5)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/sample")
}

func BenchmarkAddGaussianMatrix1000x10Seeded(b *testing.B) {
	s := NewSeeded(1)
	m := benchMatrix()
	for b.Loop() {
		s.AddGaussianMatrix(m, 1.5)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10000), "ns/sample")
}

func BenchmarkAddSymmetricGaussian200(b *testing.B) {
	s := New()
	m := mat.NewDense(200, 200, nil)
	for b.Loop() {
		s.AddSymmetricGaussian(m, 1.5)
	}
}

// Baselines: one data pass over the same 1000×10 matrix.

func BenchmarkDataPassMulVec1000x10(b *testing.B) {
	m := benchMatrix()
	x := mat.NewVecDense(10, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	y := mat.NewVecDense(1000, nil)
	for b.Loop() {
		y.MulVec(m, x)
	}
}

func BenchmarkDataPassMul1000x10x10(b *testing.B) {
	m := benchMatrix()
	q := mat.NewDense(10, 10, nil)
	for i := range 10 {
		q.Set(i, i, 1)
		q.Set(i, (i+1)%10, 0.5)
	}
	var y mat.Dense
	y.Mul(m, q)
	for b.Loop() {
		y.Mul(m, q)
	}
}
