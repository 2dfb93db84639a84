package release

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// guarded turns panics into values, including panic(nil) and runtime
// errors, and leaves a normal return alone.
func TestGuarded(t *testing.T) {
	v, err, p := guarded(func() (int, error) { return 3, errors.New("e") })
	if v != 3 || err == nil || p != nil {
		t.Errorf("normal return: %v %v %v", v, err, p)
	}
	var a []int
	i := 5
	v, err, p = guarded(func() (int, error) { return a[i], nil })
	if v != 0 || err != nil || p == nil {
		t.Errorf("index panic: %v %v %v", v, err, p)
	}
	_, _, p = guarded(func() (int, error) { panic(nil) })
	if p == nil {
		t.Error("panic(nil) was not reported")
	}
}

// publicCall is a private_count call on public data of n zero rows.
func publicCall(n int) Call {
	sc := ledger.Schema{Name: "x", Columns: []string{"a"}, D: 1, Clip: 1, Unit: "row", Neighbour: "add-remove", Accountant: "zcdp"}
	return Call{Func: "private_count",
		Args:    mustArgs("private_count", map[string]any{"eps": 1.0}),
		Dataset: Ref{Name: "synthetic:zeros", Schema: sc, Public: &ledger.Data{Schema: sc, X: mat.NewDense(n, 1, nil)}}}
}

// A charge yields one ticket for one plan: the run consumes it, so the
// plan cannot run a second time on it, and another plan cannot run on it.
func TestTicketIsSingleUse(t *testing.T) {
	env := &Local{}
	call := publicCall(10)
	p, err := env.Plan(call)
	if err != nil {
		t.Fatal(err)
	}
	tk, _, err := env.charge(context.Background(), call, p, p.Cost, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := dataOf(call.Dataset.Public)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.runWith(context.Background(), tk, data, nil); err != nil {
		t.Fatalf("first run on a fresh ticket: %v", err)
	}
	if _, err := p.runWith(context.Background(), tk, data, nil); !errors.Is(err, errTicket) {
		t.Errorf("second run on the same ticket: err = %v, want errTicket", err)
	}
	other, err := env.Plan(call)
	if err != nil {
		t.Fatal(err)
	}
	tk2, _, err := env.charge(context.Background(), call, p, p.Cost, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.runWith(context.Background(), tk2, data, nil); !errors.Is(err, errTicket) {
		t.Errorf("a plan ran on another plan's ticket: err = %v", err)
	}
	if _, err := p.runWith(context.Background(), nil, data, nil); !errors.Is(err, errTicket) {
		t.Errorf("a plan ran without a ticket: err = %v", err)
	}
}

// Execute on public data releases through the whole sequence, and the
// gate is asked once with the plan's cost and committed once.
func TestExecuteAsksTheGate(t *testing.T) {
	env := &Local{}
	g := &countingGate{}
	rel, err := env.Execute(context.Background(), publicCall(5), g)
	if err != nil {
		t.Fatal(err)
	}
	if g.admitted != 1 || g.committed != 1 || g.aborted != 0 {
		t.Errorf("gate: %d admits, %d commits, %d aborts; want 1, 1, 0", g.admitted, g.committed, g.aborted)
	}
	if rel.Receipt.Block != "the test gate" || rel.Receipt.Charged {
		t.Errorf("receipt %+v: want the gate's label and not charged (public data)", rel.Receipt)
	}
	if _, ok := rel.Value.(*Count); !ok {
		t.Errorf("value %T, want *Count", rel.Value)
	}
	g.refuse = errors.New("over the cap")
	if _, err := env.Execute(context.Background(), publicCall(5), g); err != g.refuse {
		t.Errorf("a refusing gate: err = %v", err)
	}
	if g.committed != 1 {
		t.Errorf("a refused call committed")
	}
}

type countingGate struct {
	admitted, committed, aborted int
	refuse                       error
}

func (g *countingGate) Admit(_ context.Context, ev accounting.Event, _ Ref) (func() string, func(), error) {
	g.admitted++
	if g.refuse != nil {
		return nil, nil, g.refuse
	}
	return func() string { g.committed++; return "the test gate" }, func() { g.aborted++ }, nil
}

// A plan that panics with an unnamed value (a noise package's check)
// becomes an ArgumentError with a fixed text; a named error passes.
func TestPlanPanicsBecomeArgumentErrors(t *testing.T) {
	call := publicCall(3)
	call.Args.Vals["eps"] = 1e-300
	_, err := (&Local{}).Plan(call)
	var e *Error
	if !errors.As(err, &e) || e.Name != NameArgumentError {
		t.Fatalf("err = %v, want an ArgumentError", err)
	}
	call.Func = "private_nothing"
	if _, err := (&Local{}).Plan(call); !errors.As(err, &e) || e.Name != NameNotAvailable {
		t.Errorf("unknown function: err = %v", err)
	}
}

// Every private function of the catalog has a planner, and Plan refuses a
// name the catalog has but does not mark private.
func TestEveryPrivateFunctionHasAPlanner(t *testing.T) {
	for _, f := range catalog.Private() {
		if !Plans(f) {
			t.Errorf("%s: no planner in dsl/release (add one to planners, keyed by its catalog entry)", f.Name)
		}
	}
	for f := range planners {
		if !f.Private {
			t.Errorf("%s has a planner but is not private in the catalog", f.Name)
		}
	}
	if _, err := (&Local{}).Plan(Call{Func: "dataset", Args: NewArgs(nil)}); err == nil {
		t.Error("Plan planned dataset, which is not a private function")
	}
}
