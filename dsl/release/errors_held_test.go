package release

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestBudgetErrorHeld: a ledger refusal in which live reservations
// counted keeps the refusal's wording and adds what they hold; others get
// no such note.
func TestBudgetErrorHeld(t *testing.T) {
	ex := &accounting.ExceededError{Requested: accounting.Budget{Eps: 0.5}, Spent: accounting.Budget{Eps: 0.25},
		Remaining: accounting.Budget{Eps: 0.25}, Budget: accounting.Budget{Eps: 1}}
	lapse := time.Date(2026, 11, 24, 23, 10, 5, 0, time.UTC)
	cases := []struct {
		name string
		err  error
		want []string
		not  []string
	}{
		{"held", fmt.Errorf("ledger: %w", &ledger.HeldError{Exceeded: ex, Held: accounting.Budget{Eps: 0.5}, Count: 2, Lapse: lapse, Fits: true}),
			[]string{`refused: dataset "d" would exceed the budget: requested (ε=0.5, δ=0); spent (ε=0.25, δ=0); remaining (ε=0.25, δ=0) of (ε=1, δ=0)`,
				"(ε=0.5, δ=0) is held by 2 reservation(s) of federated calls in progress (the earliest lapses at 2026-11-24 23:10:05 UTC)",
				"wait until they commit or lapse"}, nil},
		{"plain", ex, []string{"spent (ε=0.25, δ=0); remaining (ε=0.25, δ=0)"}, []string{"reservation"}},
	}
	for _, c := range cases {
		be, ok := AsBudgetError(`dataset "d"`, c.err, false)
		if !ok {
			t.Fatalf("%s: not a budget error: %v", c.name, c.err)
		}
		for _, w := range c.want {
			if !strings.Contains(be.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, be, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(be.Error(), w) {
				t.Errorf("%s: %q says %q", c.name, be, w)
			}
		}
	}
}
