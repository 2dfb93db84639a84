package fedrep

import (
	"context"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/federated"
)

// One gradient round and one initialisation round of the coordinator over
// 20000 users (d = 50, k = 2, m = 10): the users' work on both cores plus the
// ordered clipping and summation.
func benchRound(b *testing.B, req Request) {
	_, users := makeUsers(b, 1, 20000, 10, 50, 2)
	ps := make([]federated.Provider[Request, Reply], len(users))
	for i, u := range users {
		ps[i] = u
	}
	tr := federated.NewLocal(ps)
	pl, err := plan(Options{K: 2, Iters: 5, Eta: 0.5, Psi: 10, PsiInit: 5}, 50, len(users), false)
	if err != nil {
		b.Fatal(err)
	}
	res, err := pl.Coordinate(context.Background(), tr)
	if err != nil {
		b.Fatal(err)
	}
	req.U = res.History[1]
	b.ResetTimer()
	for range b.N {
		err := tr.Round(context.Background(), req, func(i int, rep Reply) error {
			if rep.Grad != nil {
				addClipped(res.U.RawMatrix().Data, rep.Grad, 10)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGradientRound20000Users(b *testing.B) {
	benchRound(b, Request{Step: StepGradient, Iters: 5})
}

func BenchmarkInitRound20000Users(b *testing.B) {
	benchRound(b, Request{Step: StepInit, Iters: 5})
}
