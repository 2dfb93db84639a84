package rows

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// countScans counts the passes made over a source.
type countScans struct {
	*Dense
	scans int
}

func (c *countScans) Scan(ctx context.Context) (Cursor, error) {
	c.scans++
	return c.Dense.Scan(ctx)
}

// referenceMeans is the user means held all at once: each user's rows
// summed in row order, divided by their number, users in index order.
func referenceMeans(x *mat.Dense, units []int32, nu int) [][]float64 {
	_, d := x.Dims()
	sums := make([][]float64, nu)
	counts := make([]float64, nu)
	for i, u := range units {
		if sums[u] == nil {
			sums[u] = make([]float64, d)
		}
		for j := range d {
			sums[u][j] += x.At(i, j)
		}
		counts[u]++
	}
	var out [][]float64
	for u := range nu {
		if counts[u] > 0 {
			for j := range sums[u] {
				sums[u][j] /= counts[u]
			}
			out = append(out, sums[u])
		}
	}
	return out
}

// The user means are bit identical for every window size, a scan holds
// the state of at most Window users, reads its parent once per window of
// users that have rows up to the last user present, and stops there.
func TestUserMeansWindowsAreExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const n, d, nu = 500, 3, 40
	x := mat.NewDense(n, d, nil)
	units := make([]int32, n)
	for i := range n {
		for j := range d {
			x.Set(i, j, r.NormFloat64()*math.Pow(10, float64(r.IntN(12)-6)))
		}
		// Users 7 and 13 have no rows; the last users present are below 31.
		u := int32(r.IntN(31))
		for u == 7 || u == 13 {
			u = int32(r.IntN(31))
		}
		units[i] = u
	}
	src, err := FromDense(x).WithUnits(units, nu)
	if err != nil {
		t.Fatal(err)
	}
	want := referenceMeans(x, units, nu)
	for _, w := range []int{0, 1, 2, 3, 7, 30, 31, 40, 100} {
		parent := &countScans{Dense: src}
		m, err := NewUserMeans(parent, w, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The window a scan holds: w, or every user for w ≤ 0 or w > nu.
		eff := w
		if w <= 0 || w > nu {
			eff = nu
		}
		if m.Window() != eff {
			t.Fatalf("window %d: Window() = %d, want %d", w, m.Window(), eff)
		}
		cur, err := m.Scan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := NewBatch(d, 5, false, false)
		var got [][]float64
		for {
			err := cur.Next(b)
			if c := cur.(*userMeansCursor); len(c.sums) > eff*d || len(c.counts) > eff {
				t.Fatalf("window %d: the scan holds %d users", w, len(c.counts))
			}
			if err != nil {
				break
			}
			for i := range b.N {
				got = append(got, append([]float64(nil), b.Row(i, d)...))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("window %d: %d means, want %d", w, len(got), len(want))
		}
		for i := range want {
			for j := range want[i] {
				if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
					t.Fatalf("window %d: mean %d[%d] = %v, want %v", w, i, j, got[i][j], want[i][j])
				}
			}
		}
		// Windows until one holds user 30, the last present.
		if wantScans := 30/eff + 1; parent.scans != wantScans {
			t.Fatalf("window %d: %d passes, want %d", w, parent.scans, wantScans)
		}
	}
}

// A source without unit indices has no user means.
func TestUserMeansEdges(t *testing.T) {
	if _, err := NewUserMeans(struct{ Source }{FromDense(nil)}, 2, nil, nil); err == nil {
		t.Fatal("user means of a source without unit indices")
	}
}
