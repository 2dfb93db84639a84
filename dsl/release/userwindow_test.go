package release

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// userData is user-level data whose number of users is private: n rows of
// width 4 in [0, 1] over nu users, in a shuffled order.
func userData(n, nu int) Ref {
	r := rand.New(rand.NewPCG(21, 8))
	sc := memSchema(4, "user", 0)
	x := mat.NewDense(n, 4, nil)
	users := make([]int32, n)
	y := make([]float64, n)
	for i := range n {
		for j := range 4 {
			x.Set(i, j, r.Float64()*float64(j+1)/4)
		}
		users[i] = int32(r.IntN(nu))
		if i < nu {
			users[i] = int32(i) // every user has rows, as in registered data
		}
		y[i] = r.Float64()
	}
	return Ref{Name: "synthetic:m", Schema: sc, Public: &ledger.Data{Schema: sc, X: x, Y: y, Users: users, NumUsers: nu}}
}

// windowCalls are the releases that hold their users' state a window of
// the user index at a time (setWindowedMemory).
func windowCalls(src Ref) []Call {
	c := func(fn string, vals map[string]any) Call {
		return Call{Func: fn, Dataset: src, Args: memArgs(fn, vals)}
	}
	return []Call{
		c("private_mean", map[string]any{"eps": 5.0}),
		c("private_sum", map[string]any{"col": "x1"}),
		c("private_quantile", map[string]any{"col": "x3", "delta": 0.0}),
		c("private_pca", map[string]any{"k": 2, "method": "npm", "eps": 5.0}),
		c("private_pca", map[string]any{"k": 1, "method": "adaptive", "eps": 5.0, "iters": 6}),
		c("private_pca", map[string]any{"k": 2, "method": "gauss", "eps": 5.0}),
		c("private_pca", map[string]any{"k": 2, "method": "federated", "providers": 2, "eps": 5.0}),
	}
}

// On user-level data with a private number of users, the releases are bit
// identical whatever the window of users a run holds at once (issue 25.5):
// small windows, forced through userWindowMax, give the release of one
// window, with the same seed.
func TestUserWindowReleasesExact(t *testing.T) {
	src := userData(600, 53)
	env := &Local{NewSampler: func() *noise.Sampler { return noise.NewSeeded(9) }}
	release := func(call Call, max int) (any, int) {
		t.Helper()
		defer func(old int) { userWindowMax = old }(userWindowMax)
		userWindowMax = max
		p, err := env.Plan(call)
		if err != nil {
			t.Fatalf("%s: %v", callName(call), err)
		}
		rel, err := env.Execute(context.Background(), call, nil)
		if err != nil {
			t.Fatalf("%s: %v", callName(call), err)
		}
		return rel.Value, p.userWindow
	}
	for _, call := range windowCalls(src) {
		want, w := release(call, 1<<24)
		if w < 53 {
			t.Fatalf("%s: default window %d", callName(call), w)
		}
		for _, max := range []int{1, 4, 7, 52} {
			got, w := release(call, max)
			if w != max {
				t.Fatalf("%s: window %d, want %d", callName(call), w, max)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, window %d: %+v, want %+v", callName(call), max, got, want)
			}
		}
	}
}

// The users' means a run reads hold at most the plan's window of users.
func TestUnitSourceHoldsAWindow(t *testing.T) {
	src := userData(600, 53)
	d, err := dataOf(src.Public)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 4, 52} {
		us, err := unitSource(context.Background(), d, w)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := us.(*rows.UserMeans)
		if !ok || m.Window() != w {
			t.Fatalf("window %d: %T", w, us)
		}
	}
	if us, _ := unitSource(context.Background(), d, 53); reflect.TypeOf(us) != reflect.TypeOf(&rows.Dense{}) {
		t.Fatalf("users that fit the window are not held: %T", us)
	}
}
