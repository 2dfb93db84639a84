package fedrep

import (
	"context"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// UsersFromSourceMax keeps each user's first maxRecords rows in row order,
// from a dense and from a streamed source alike: the reference rule on the
// data truncated per user. 0 keeps everything.
func TestUsersFromSourceMax(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 25))
		n, d := 1+rng.IntN(10), 1+rng.IntN(4)
		x, y, units := randomUsersData(seed, n, d, false)
		for _, maxRecords := range []int{0, MinRecords, MinRecords + 1, 7} {
			// the reference: drop every row of a user beyond its first maxRecords
			var keep []int
			seen := make([]int, n)
			for i, u := range units {
				if maxRecords == 0 || seen[u] < maxRecords {
					keep = append(keep, i)
				}
				seen[u]++
			}
			kx := mat.NewDense(max(len(keep), 1), d, nil)
			ky := make([]float64, len(keep))
			ku := make([]int32, len(keep))
			for r, i := range keep {
				kx.SetRow(r, x.RawRowView(i))
				ky[r], ku[r] = y[i], units[i]
			}
			want := refUsers(t, kx, ky, ku, n)
			src, err := rows.FromDense(x).WithLabels(y)
			if err != nil {
				t.Fatal(err)
			}
			if src, err = src.WithUnits(units, n); err != nil {
				t.Fatal(err)
			}
			got, err := UsersFromSourceMax(ctx, src, n, maxRecords, seeded)
			if err != nil {
				t.Fatal(err)
			}
			sameUsers(t, "dense", got, want)
			got, err = UsersFromSourceMax(ctx, &unitSource{x: x, y: y, units: units, seed: seed}, n, maxRecords, seeded)
			if err != nil {
				t.Fatal(err)
			}
			sameUsers(t, "stream", got, want)
		}
	}
}
