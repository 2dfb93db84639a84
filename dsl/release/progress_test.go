package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// pcaCall is a private_pca call of method with iters on public data of n
// rows of d columns (deterministic, not all zero).
func pcaCall(method string, iters, n, d int) Call {
	sc := ledger.Schema{Name: "x", D: d, Clip: 1, Unit: "row", Neighbour: "replace-one", Accountant: "zcdp"}
	for j := range d {
		sc.Columns = append(sc.Columns, fmt.Sprintf("c%d", j))
	}
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, float64((i*7+j*3)%11)/11-0.5)
		}
	}
	args := mustArgs("private_pca", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": method, "iters": iters})
	return Call{Func: "private_pca", Args: args,
		Dataset: Ref{Name: "synthetic:test", Schema: sc, Public: &ledger.Data{Schema: sc, X: x}}}
}

// steps records the progress reports of a call.
type steps struct{ got [][2]int }

func (s *steps) ctx(ctx context.Context) context.Context {
	return WithProgress(ctx, func(step, total int) { s.got = append(s.got, [2]int{step, total}) })
}

func seq(total int, steps ...int) [][2]int {
	var out [][2]int
	for _, s := range steps {
		out = append(out, [2]int{s, total})
	}
	return out
}

// A call reports step 0 of T when it starts, then each of the
// mechanism's steps, T planned from public parameters; the sequence is the
// same on data of different sizes. Single-step methods and dry runs report
// nothing, and a context without a callback changes nothing.
func TestExecuteReportsProgress(t *testing.T) {
	for _, tc := range []struct {
		method string
		iters  int
		want   [][2]int
	}{
		{"npm", 5, seq(5, 0, 1, 2, 3, 4, 5)},
		{"adaptive", 3, seq(3, 0, 1, 2, 3)},
		{"npm", 1, nil}, // one step: nothing between start and end
		{"gauss", 0, nil},
	} {
		for _, n := range []int{30, 500} {
			var s steps
			if _, err := (&Local{}).Execute(s.ctx(context.Background()), pcaCall(tc.method, tc.iters, n, 4), nil); err != nil {
				t.Fatalf("%s iters=%d: %v", tc.method, tc.iters, err)
			}
			if !slices.Equal(s.got, tc.want) {
				t.Errorf("%s iters=%d on %d rows: reports %v, want %v", tc.method, tc.iters, n, s.got, tc.want)
			}
		}
	}
	var s steps
	if _, err := (&Local{}).DryRun(s.ctx(context.Background()), pcaCall("npm", 5, 30, 4), nil); err != nil || s.got != nil {
		t.Errorf("dry run: err %v, reports %v; want none", err, s.got)
	}
	if _, err := (&Local{}).Execute(context.Background(), pcaCall("npm", 5, 30, 4), nil); err != nil {
		t.Errorf("without a callback: %v", err)
	}
}

// A run that fails or panics after its charge still ends at T of T, since
// where it stopped could depend on the data; an interrupted run stops where
// it was (the analyst's interrupt, not the data, ended it).
func TestProgressEndsAtTotal(t *testing.T) {
	for name, wrap := range map[string]RunWrapper{
		"error": func(func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error) {
			return func(context.Context, *Data) (any, error) { return nil, errors.New("fails") }
		},
		"panic": func(func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error) {
			return func(context.Context, *Data) (any, error) { panic("fails") }
		},
	} {
		var s steps
		env := &Local{Wrap: func() RunWrapper { return wrap }}
		_, err := env.Execute(s.ctx(context.Background()), pcaCall("npm", 4, 30, 3), nil)
		var e *Error
		if !errors.As(err, &e) || e.Name != NameMechanismFailed {
			t.Fatalf("%s: err %v, want MechanismFailed", name, err)
		}
		if want := seq(4, 0, 4); !slices.Equal(s.got, want) {
			t.Errorf("%s: reports %v, want %v", name, s.got, want)
		}
	}
	var s steps
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Local{}).Execute(s.ctx(ctx), pcaCall("npm", 4, 30, 3), nil)
	var e *Error
	if !errors.As(err, &e) || e.Name != NameInterrupted {
		t.Fatalf("cancelled: err %v, want Interrupted", err)
	}
	if want := seq(4, 0); !slices.Equal(s.got, want) {
		t.Errorf("interrupted: reports %v, want %v", s.got, want)
	}
}

// The relay passes on steps 1..planned in order and once each, whatever a
// mechanism calls it with, and a panicking callback costs nothing.
func TestProgressRelay(t *testing.T) {
	p := &Plan{}
	p.reportsSteps(4)
	var s steps
	p.progress.step(1, 4) // before start: dropped
	p.progress.start(s.ctx(context.Background()))
	for _, st := range []int{2, 1, 2, 5, 0, 3} {
		p.progress.step(st, 99)
	}
	p.progress.finish(false)
	p.progress.step(4, 4) // after finish: dropped
	if want := seq(4, 0, 2, 3, 4); !slices.Equal(s.got, want) {
		t.Errorf("reports %v, want %v", s.got, want)
	}

	p = &Plan{}
	p.reportsSteps(3)
	calls := 0
	p.progress.start(WithProgress(context.Background(), func(int, int) { calls++; panic("display failed") }))
	p.progress.step(1, 3)
	p.progress.finish(false)
	if calls != 3 {
		t.Errorf("a panicking callback was called %d times, want 3 (start, step, finish)", calls)
	}
}
