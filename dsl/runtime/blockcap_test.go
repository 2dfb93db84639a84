package runtime

import (
	"strings"
	"testing"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// A call written inside a budget block is held to the block's cap
// wherever and whenever it runs (issue 10, break 3): deferred past the
// block's end, or made by a goroutine the block started after the block
// closed. Before, both were charged to the dataset only.
func TestBlockCapHoldsAfterTheBlock(t *testing.T) {
	cases := []struct {
		name string
		cell string
		// wantOut must appear in the cell's output (the goroutine's
		// recovered refusals); charges is the ledger's count afterwards.
		wantErr string
		wantOut string
		charges int
	}{
		{
			name: "defer with a computed eps",
			cell: `ds := dataset("d")
e := 1.0
func() {
	budget eps=0.1, delta=1e-6 {
		defer private_count(ds, eps=e, delta=1e-6)
	}
}()`,
			wantErr: "BudgetExceeded",
			charges: 0,
		},
		{
			name: "defer within the cap",
			cell: `ds := dataset("d")
func() {
	budget eps=0.5, delta=1e-6 {
		defer private_count(ds, eps=0.3, delta=1e-6)
	}
}()`,
			charges: 1,
		},
		{
			name: "goroutine outliving its block",
			cell: `ds := dataset("d")
done := make(chan string)
var okCalls int
budget eps=0.2, delta=1e-6 {
	go func() {
		<-done
		for i := 0; i < 10; i++ {
			func() {
				defer func() {
					if r := recover(); r != nil {
						fmt.Println("refused:", r)
					} else {
						okCalls++
					}
				}()
				private_count(ds, eps=0.1, delta=1e-6)
			}()
		}
		done <- "end"
	}()
}
done <- "go"
<-done
fmt.Println("ok calls:", okCalls)`,
			// zCDP composition of (0.1, 1e-6) targets under a (0.2, 1e-6)
			// cap admits more than two, far fewer than ten: the test
			// checks refusals happen, and the ledger below counts them.
			wantOut: "budget block at line 4 of cell [1] would exceed the budget",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			register(t, dir, "d", table(40, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
			s := newSession(t, dir)
			res, out := s.run(tc.cell)
			all := out.all(res)
			if tc.wantErr != "" {
				if res.Error == nil || res.Error.Name != tc.wantErr {
					t.Fatalf("want %s, got %s", tc.wantErr, all)
				}
			} else if res.Error != nil {
				t.Fatalf("cell failed: %s", all)
			}
			if tc.wantOut != "" && !strings.Contains(all, tc.wantOut) {
				t.Fatalf("output lacks %q:\n%s", tc.wantOut, all)
			}
			st := status(t, dir, "d")
			if tc.name == "goroutine outliving its block" {
				// Every admitted charge fits the block's cap together.
				acc, err := accounting.NewAccountant(accounting.ModeZCDP, accounting.Budget{Eps: 0.2, Delta: 1e-6})
				if err != nil {
					t.Fatal(err)
				}
				ev := accounting.ZcdpFor(0.1, 1e-6)
				for i := 0; i < st.Charges; i++ {
					if err := acc.Spend(ev); err != nil {
						t.Fatalf("%d charges of (0.1, 1e-6) exceed the block's (0.2, 1e-6) cap: %v", st.Charges, err)
					}
				}
				if st.Charges == 0 || st.Charges >= 10 {
					t.Fatalf("%d charges: want some admitted and some refused", st.Charges)
				}
			} else if st.Charges != tc.charges {
				t.Fatalf("%d charges, want %d\n%s", st.Charges, tc.charges, all)
			}
			verify(t, dir)
		})
	}
}

// A call's own block and the block open when it runs both cap it: a
// deferred call of one block that runs inside a later block of the same
// cell counts against both.
func TestBlockCapBothBlocks(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(40, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	res, out := s.run(`ds := dataset("d")
func() {
	budget eps=1, delta=1e-6 {
		defer private_count(ds, eps=0.5, delta=1e-6)
	}
	budget eps=0.1, delta=1e-6 {
		panic("leave the block open when the deferred call runs")
	}
}()`)
	_ = out
	if res.Error == nil {
		t.Fatalf("cell succeeded")
	}
	if st := status(t, dir, "d"); st.Charges != 0 {
		t.Fatalf("%d charges: the deferred call ran inside the (0.1) block and must have been refused by its cap", st.Charges)
	}
}
