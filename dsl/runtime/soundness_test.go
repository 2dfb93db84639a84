package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// The reproductions of issue 10's breaks 1 and 4, as the review ran them
// (breaks 2 and 3: TestTeethNeighbourBinds, TestBlockCapHoldsAfterTheBlock;
// the harness in neighbours_test.go covers all four classes).

// usersTable is n users of 3 records each, with a label.
func usersTable(n int) *dataset.Table {
	t := &dataset.Table{Columns: []string{"x1", "x2", "x3"}, UserColumn: "uid", NumUsers: n, Label: "y"}
	for u := 0; u < n; u++ {
		for r := 0; r < 3; r++ {
			t.X = append(t.X, 0.3*math.Sin(float64(u+r)), 0.2*math.Cos(float64(u)), 0.1)
			t.Users = append(t.Users, int32(u))
			t.Y = append(t.Y, 0.5*math.Sin(float64(u)))
			t.Rows++
		}
	}
	return t
}

// Break 1: a tiny clip made private_fedrep fail after its charge on 51
// users but not on 50, so a bisection over clip found n. Now the outcome
// is the same on both, with and without neighbour=, with the user count
// private or public, and a refusal charges nothing.
func TestFedRepTinyClipSameOnAnyUserCount(t *testing.T) {
	for _, public := range []bool{false, true} {
		for _, call := range []string{
			`private_fedrep(ds, k=1, eps=0.15, delta=1e-6, rounds=2, clip=1.39e-271)`,
			`private_fedrep(ds, k=1, eps=0.15, delta=1e-6, rounds=2, clip=1.39e-271, neighbour="replace-one")`,
			`private_fedrep(ds, k=1, eps=0.15, delta=1e-6, rounds=2, clip=1e-90)`,
		} {
			var outs []string
			for _, n := range []int{50, 51} {
				dir := t.TempDir()
				registerWith(t, dir, ledger.Registration{Name: "u", Table: usersTable(n),
					Budget: accounting.Budget{Eps: 10, Delta: 1e-5}, Accountant: accounting.ModeZCDP, Clip: 1, LabelClip: 1, PublicN: public})
				s := newSession(t, dir)
				res, _ := s.run("ds := dataset(\"u\")\nr := " + call)
				o := "ok"
				if res.Error != nil {
					o = res.Error.Name + ": " + res.Error.Value
					if c := status(t, dir, "u").Charges; c != 0 {
						t.Errorf("public n %v, %d users, %s: refused after %d charge(s): %s", public, n, call, c, o)
					}
				}
				if strings.Contains(o, NameMechanismFailed) {
					t.Errorf("public n %v, %d users, %s: failed after the charge: %s", public, n, call, o)
				}
				outs = append(outs, o)
			}
			if outs[0] != outs[1] {
				t.Errorf("public n %v, %s: 50 users give %q, 51 give %q", public, call, outs[0], outs[1])
			}
		}
	}
}

// Break 4: a huge ε hung the session in the accountant's inverse. Every
// such call now returns at once with an ArgumentError and charges nothing.
func TestHugeEpsReturns(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(20, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	for _, eps := range []string{"1e300", "1.3e154", "math.MaxFloat64", "1e7"} {
		for _, call := range []string{
			`private_count(ds, eps=%s, delta=1e-7)`,
			`private_count(ds, eps=%s)`,
			`private_mean(ds, eps=%s, delta=1e-7)`,
			`private_pca(ds, k=1, eps=%s, delta=1e-7, method="npm", iters=2)`,
		} {
			cell := "import \"math\"\nds := dataset(\"d\")\nr := " + fmt.Sprintf(call, eps)
			done := make(chan string, 1)
			go func() {
				res, _ := s.run(cell)
				if res.Error == nil {
					done <- "ok"
					return
				}
				done <- res.Error.Name + ": " + res.Error.Value
			}()
			select {
			case got := <-done:
				if !strings.HasPrefix(got, NameArgumentError) {
					t.Errorf("%s: got %s, want an ArgumentError", cell, got)
				}
			case <-time.After(60 * time.Second): // a hang, not a timing bound
				t.Fatalf("%s did not return within 60 s", cell)
			}
		}
	}
	if c := status(t, dir, "d").Charges; c != 0 {
		t.Errorf("%d charges, want none", c)
	}
}
