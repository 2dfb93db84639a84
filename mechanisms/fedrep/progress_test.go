package fedrep

import (
	"context"
	"slices"
	"testing"
)

// Progress sees exactly 1..T in order, T the planned rounds, for user sets
// of different sizes: the sequence of reports is a function of the plan
// alone.
func TestProgressIsDataIndependent(t *testing.T) {
	const T = 4
	want := []int{1, 2, 3, 4}
	for _, size := range []struct {
		seed uint64
		n, m int
	}{{1, 20, 5}, {2, 120, 12}} {
		_, users := makeUsers(t, size.seed, size.n, size.m, 5, 2)
		var got []int
		opt := Options{K: 2, Iters: T, Eta: 0.5, Psi: 10, PsiInit: 20, Eps: 1, Delta: 1e-6,
			Progress: func(step, total int) {
				if total != T {
					t.Errorf("total %d, want %d", total, T)
				}
				got = append(got, step)
			}}
		if _, err := Run(context.Background(), users, opt); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d users: rounds %v, want %v", size.n, got, want)
		}
	}
}
