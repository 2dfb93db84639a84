package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestFederateLocal federates three local datasets: each is charged once
// with the call's cost, the receipt lists the three charges, and a
// refusal at any member (here a budget) happens before any is charged.
func TestFederateLocal(t *testing.T) {
	dir := t.TempDir()
	b := accounting.Budget{Eps: 2, Delta: 1e-5}
	register(t, dir, "a", table(300, 6, 1, 0.3), b, accounting.ModeZCDP)
	register(t, dir, "b", table(300, 6, 2, 0.3), b, accounting.ModeZCDP)
	register(t, dir, "c", table(300, 6, 3, 0.3), accounting.Budget{Eps: 0.5, Delta: 1e-5}, accounting.ModeZCDP)
	register(t, dir, "wide", table(50, 7, 4, 0.3), b, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`fed := federate(dataset("a"), dataset("b"))
all := federate(dataset("a"), dataset("b"), dataset("c"))`)
	out := s.ok(`r := private_pca(fed, k=2, eps=1, delta=1e-6, method="federated", sparsity=4, iters=3)
fmt.Println(fed, r.Receipt)`)
	t.Log(out)
	for _, want := range []string{"federate(a, b)", "charged by each provider", "a: charged", "b: charged"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, n := range []string{"a", "b"} {
		if st := status(t, dir, n); st.Charges != 1 {
			t.Errorf("%s: %d charges, want 1", n, st.Charges)
		}
	}
	// c's budget (ε=0.5) cannot pay ε=1: refused at planning, nobody charged.
	s.fails(`r := private_pca(all, k=2, eps=1, delta=1e-6, method="federated", iters=3)`, NameBudgetExceeded)
	for _, n := range []string{"a", "b", "c"} {
		want := 1
		if n == "c" {
			want = 0
		}
		if st := status(t, dir, n); st.Charges != want {
			t.Errorf("%s: %d charges after the refusal, want %d", n, st.Charges, want)
		}
	}
	out = s.ok(`d := private_pca(all, k=2, eps=0.2, delta=1e-6, method="federated", iters=3, dry_run=true)
fmt.Println(d.Receipt)`)
	for _, want := range []string{"dry run", "c: would be charged", "federate(a, b, c)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run's receipt lacks %q:\n%s", want, out)
		}
	}
	s.fails(`d := private_pca(all, k=2, eps=1, delta=1e-6, method="federated", iters=3, dry_run=true)`, NameBudgetExceeded)
	if st := status(t, dir, "c"); st.Charges != 0 {
		t.Errorf("c: %d charges after dry runs, want 0", st.Charges)
	}
	if _, o := s.fails(`c := private_count(fed, eps=0.1)`, NameArgumentError); o == nil {
		t.Fatal("no output")
	}
	s.fails(`f := federate(dataset("a"), dataset("wide"))`, NameArgumentError)
	s.fails(`f := federate(dataset("a"), dataset("a"))`, NameArgumentError)
	s.fails(`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="npm")`, NameArgumentError)
	s.fails(`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", providers=3)`, NameArgumentError)
	if res, _ := s.fails(`r := private_pca(fed, k=1, eps=1, delta=1e-6, method="federated", name="f")`, NameArgumentError); !strings.Contains(res.Error.Value, "name= is not available on a federated handle") {
		t.Errorf("name= on a federation: %s", res.Error.Value)
	}
	for _, n := range []string{"a", "b"} {
		if st := status(t, dir, n); st.Charges != 1 {
			t.Errorf("%s: %d charges after the refusals, want 1", n, st.Charges)
		}
	}
}
