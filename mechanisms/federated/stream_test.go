package federated

import (
	"context"
	"errors"
	"github.com/privnotes/privnotes/mechanisms/internal/rowstest"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// streamRows returns n rows of d columns over many magnitudes, with
// non-finite, zero and huge rows among them.
func streamRows(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, rng.NormFloat64()*math.Exp(2*rng.NormFloat64()))
		}
		switch i % 53 {
		case 7:
			x.Set(i, rng.IntN(d), math.NaN())
		case 8:
			x.SetRow(i, make([]float64, d))
		case 9:
			x.Set(i, 0, 1e300)
		}
	}
	return x
}

func sameBits(t *testing.T, name string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values against %d", name, len(a), len(b))
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("%s: entry %d is %v against %v (must be bit identical)", name, i, a[i], b[i])
		}
	}
}

// TestProviderSourceBitIdentical: a provider over a matrix and one over a
// source cutting the same rows into random batches give the same replies
// bit for bit, with and without noise, and the same count.
func TestProviderSourceBitIdentical(t *testing.T) {
	const n, d = 3000, 9
	x := streamRows(n, d, 1)
	q := mat.NewDense(d, 2, nil)
	for i := range d {
		q.Set(i, 0, math.Sin(float64(i)))
		q.Set(i, 1, math.Cos(float64(3*i)))
	}
	for _, sigma := range []float64{0, 0.7} {
		pm, err := NewPCAProvider(x, noise.NewSeeded(5))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := NewPCAProviderSource(jitter(x), noise.NewSeeded(5))
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []PCARequest{
			{Round: 0, Step: StepDiag, Sigma: sigma},
			{Round: 1, Step: StepBlock, Support: []int{0, 4, 8}, Sigma: sigma},
			{Round: 2, Step: StepProduct, Q: q, Sigma: sigma},
		} {
			a, err := pm.Answer(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ps.Answer(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if a.Count != n || b.Count != n {
				t.Errorf("%v: counts %d and %d, want %d", req.Step, a.Count, b.Count, n)
			}
			sameBits(t, req.Step.String(), b.Value.RawMatrix().Data, a.Value.RawMatrix().Data)
		}
	}
}

// splitMatrix deals the rows of x to n providers as the runtime did before
// rows were streamed (dsl/runtime splitProviders): one compact matrix per
// provider, a single zero row for a provider left without rows.
func splitMatrix(t *testing.T, x *mat.Dense, n int, seed uint64) []*PCAProvider {
	r, c := x.Dims()
	parts := make([][]float64, n)
	for i := range r {
		parts[i%n] = append(parts[i%n], x.RawRowView(i)...)
	}
	out := make([]*PCAProvider, n)
	for j, part := range parts {
		if len(part) == 0 {
			part = make([]float64, c)
		}
		p, err := NewPCAProvider(mat.NewDense(len(part)/c, c, part), noise.NewSeeded(seed+uint64(j)))
		if err != nil {
			t.Fatal(err)
		}
		out[j] = p
	}
	return out
}

// TestRoundRobinProvidersMatchSplit: providers over RoundRobin's parts of
// a matrix, or of a stream, run DPS-PCA exactly as providers over the
// split matrices, bit for bit, including providers left without rows,
// which answer as one zero row.
func TestRoundRobinProvidersMatchSplit(t *testing.T) {
	const d = 6
	for _, tc := range []struct{ rows, providers int }{{700, 3}, {4, 7}, {1, 2}} {
		x := streamRows(tc.rows, d, uint64(tc.rows))
		opt := PCAOptions{K: 2, Sparsity: 4, Iters: 3, Eps: 1, Delta: 1e-5}
		for _, private := range []bool{true, false} {
			run := func(ps []*PCAProvider) *PCAResult {
				t.Helper()
				f := RunPCA
				if !private {
					f = RunPCANonPrivate
				}
				res, err := f(context.Background(), ps, opt)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			want := run(splitMatrix(t, x, tc.providers, 40))
			for name, parent := range map[string]rows.Source{"dense": rows.FromDense(x), "stream": jitter(x)} {
				parts := RoundRobin(parent, tc.providers)
				ps := make([]*PCAProvider, len(parts))
				for j, part := range parts {
					p, err := NewPCAProviderSource(part, noise.NewSeeded(40+uint64(j)))
					if err != nil {
						t.Fatal(err)
					}
					ps[j] = p
				}
				got := run(ps)
				for i, h := range want.History {
					sameBits(t, name+" history", got.History[i].RawMatrix().Data, h.RawMatrix().Data)
				}
				if !slicesEqual(got.Support, want.Support) || got.Padded != want.Padded {
					t.Errorf("%d rows, %d providers, %s: support %v padded %d, want %v, %d", tc.rows, tc.providers, name, got.Support, got.Padded, want.Support, want.Padded)
				}
			}
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRoundRobinDeals: part j of n holds rows j, j+n, … of the parent in
// order, with their labels and unit indices, whether the parent is a
// matrix (dealt as views) or a stream (dealt by scanning); a part without
// rows keeps the parent's columns.
func TestRoundRobinDeals(t *testing.T) {
	const total, d = 1100, 3
	x := mat.NewDense(total, d, nil)
	y := make([]float64, total)
	u := make([]int32, total)
	for i := range total {
		x.SetRow(i, []float64{float64(i), -float64(i), 0.5})
		y[i] = float64(10 * i)
		u[i] = int32(i % 13)
	}
	dense, err := rows.FromDense(x).WithLabels(y)
	if err != nil {
		t.Fatal(err)
	}
	if dense, err = dense.WithUnits(u, 13); err != nil {
		t.Fatal(err)
	}
	if RoundRobin(dense, 0) != nil || RoundRobin(nil, 3) != nil {
		t.Error("RoundRobin of no parts or no source returned parts")
	}
	for _, n := range []int{1, 2, 7, 256, total + 3} {
		for name, parent := range map[string]rows.Source{"dense": dense, "stream": &rowstest.Jitter{D: dense}} {
			parts := RoundRobin(parent, n)
			if len(parts) != n {
				t.Fatalf("%s n=%d: %d parts", name, n, len(parts))
			}
			for j, part := range parts {
				if part.Dim() != d {
					t.Fatalf("%s n=%d part %d: %d columns", name, n, j, part.Dim())
				}
				got, err := rows.Collect(context.Background(), part)
				if err != nil {
					t.Fatal(err)
				}
				var want []int
				for i := j; i < total; i += n {
					want = append(want, i)
				}
				if got.NumRows() != len(want) || len(want) > 0 && (!got.HasLabels() || got.NumUnits() != 13) {
					t.Fatalf("%s n=%d part %d: %d rows (labels %v, %d units), want %d", name, n, j, got.NumRows(), got.HasLabels(), got.NumUnits(), len(want))
				}
				row := make([]float64, d)
				for r, i := range want {
					got.ReadRow(r, row)
					if row[0] != float64(i) || row[1] != -float64(i) || got.Labels()[r] != y[i] || got.UnitIndex()[r] != u[i] {
						t.Fatalf("%s n=%d part %d row %d: %v label %v unit %v, want parent row %d", name, n, j, r, row, got.Labels()[r], got.UnitIndex()[r], i)
					}
				}
			}
		}
	}
}

// TestProviderSourceErrors: a failing source, a cancelled context and a
// source without columns give errors that name no data.
func TestProviderSourceErrors(t *testing.T) {
	x := streamRows(2000, 4, 3)
	p, err := NewPCAProviderSource(&rowstest.Jitter{D: rows.FromDense(x), Fail: 900}, noise.NewSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Answer(context.Background(), PCARequest{Round: 4, Step: StepDiag})
	if !errors.Is(err, rowstest.ErrDisk) || !strings.HasPrefix(err.Error(), "round 4: ") {
		t.Errorf("failing source: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, _ = NewPCAProviderSource(jitter(x), nil)
	for _, req := range []PCARequest{{Step: StepDiag}, {Step: StepBlock, Support: []int{1}}, {Step: StepProduct, Q: mat.NewDense(4, 1, nil)}} {
		if _, err := p.Answer(ctx, req); !errors.Is(err, context.Canceled) {
			t.Errorf("%v cancelled: %v", req.Step, err)
		}
	}
	if _, err := NewPCAProviderSource(nil, nil); err == nil {
		t.Error("a provider over no source")
	}
	if _, err := NewPCAProviderSource(rows.FromDense(nil), nil); err == nil {
		t.Error("a provider over a source without columns")
	}
}

// jitter serves the rows of x in batches of random sizes.
func jitter(x *mat.Dense) *rowstest.Jitter { return &rowstest.Jitter{D: rows.FromDense(x)} }
