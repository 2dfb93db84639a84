package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestHeldRefusal: a refusal in which live reservations counted is a
// *HeldError whose Spent is the charges' alone and whose note says what
// the reservations hold, when the earliest lapses and what to do; one
// without reservations stays a plain refusal. Every writer and checker
// refuses alike.
func TestHeldRefusal(t *testing.T) {
	ctx := context.Background()
	ev := func(eps float64, m string) accounting.Event { return withMech(accounting.Pure(eps), m) }
	cases := []struct {
		name              string
		charged, reserved []float64 // basic composition, budget ε = 1
		request           float64
		// want: nil for a plain refusal; else what the HeldError holds.
		held                   bool
		spent, heldEps, remain float64
		count                  int
		fits                   bool
		says                   []string
	}{
		{"nothing charged, 0.75 held", nil, []float64{0.25, 0.25, 0.25}, 0.5,
			true, 0, 0.75, 0.25, 3, true,
			[]string{"spent ε=0, δ=0;", "(ε=0.75, δ=0) is held by 3 reservation(s) of federated calls in progress", "the earliest lapses at ", "wait until they commit or lapse"}},
		{"0.25 charged, 0.5 held", []float64{0.25}, []float64{0.5}, 0.5,
			true, 0.25, 0.5, 0.25, 1, true,
			[]string{"spent ε=0.25, δ=0;", "held by 1 reservation(s)", "what a committed call spends stays spent"}},
		{"too much even without the reservations", []float64{0.25}, []float64{0.25}, 0.875,
			true, 0.25, 0.25, 0.5, 1, false,
			[]string{"held by 1 reservation(s)", "waiting will not help"}},
		{"no reservations: a plain refusal", []float64{0.75}, nil, 0.5,
			false, 0, 0, 0, 0, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := openTemp(t)
			register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
			for _, e := range c.charged {
				if _, err := st.Charge(ctx, "d", ev(e, "test/charge"), ChargeMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			for i, e := range c.reserved {
				if _, err := st.Reserve(ctx, "call-"+string(rune('a'+i)), "d", ev(e, "test/reserve"), ChargeMeta{}, time.Duration(i+1)*time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			req := ev(c.request, "test/request")
			_, wr := st.WouldRemain("d", req)
			_, rs := st.Reserve(ctx, "z", "d", req, ChargeMeta{}, time.Hour)
			_, ch := st.Charge(ctx, "d", req, ChargeMeta{})
			for op, err := range map[string]error{"Charge": ch, "Reserve": rs, "Precheck": st.Precheck("d", req), "WouldRemain": wr} {
				if !errors.Is(err, accounting.ErrBudgetExceeded) {
					t.Fatalf("%s: %v, want a refusal", op, err)
				}
				var ex *accounting.ExceededError
				if !errors.As(err, &ex) {
					t.Fatalf("%s: %v holds no ExceededError", op, err)
				}
				h, ok := errors.AsType[*HeldError](err)
				if ok != c.held {
					t.Fatalf("%s: HeldError %v, want %v (%v)", op, ok, c.held, err)
				}
				if !ok {
					if strings.Contains(err.Error(), "reservation") {
						t.Errorf("%s: a refusal without reservations mentions them: %v", op, err)
					}
					continue
				}
				if ex.Spent.Eps != c.spent || h.Held.Eps != c.heldEps || ex.Remaining.Eps != c.remain || h.Count != c.count || h.Fits != c.fits {
					t.Errorf("%s: spent %v, held %v, remaining %v, %d reservation(s), fits %v; want %v, %v, %v, %d, %v",
						op, ex.Spent.Eps, h.Held.Eps, ex.Remaining.Eps, h.Count, h.Fits, c.spent, c.heldEps, c.remain, c.count, c.fits)
				}
				// The earliest lapse is the first reservation's, an hour on.
				if d := h.Lapse.Sub(start); d < time.Hour-time.Minute || d > time.Hour+time.Minute {
					t.Errorf("%s: the earliest lapse is %v after the start, want an hour", op, d)
				}
				for _, s := range c.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: refusal %q does not say %q", op, err, s)
					}
				}
			}
			// Nothing was charged or held by the refusals.
			if s, _ := st.Status("d"); s.Charges != len(c.charged) || s.Reservations != len(c.reserved) {
				t.Errorf("after the refusals: %+v", s)
			}
		})
	}
}

// TestStatusHeld: Status separates the charges from what live
// reservations hold, and forgets a reservation once it is aborted.
func TestStatusHeld(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ctx := context.Background()
	if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.125), "test/charge"), ChargeMeta{}); err != nil {
		t.Fatal(err)
	}
	r1, err := st.Reserve(ctx, "a", "d", quarter(), ChargeMeta{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reserve(ctx, "b", "d", quarter(), ChargeMeta{}, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name                          string
		op                            func() error
		reservations                  int
		spent, remaining, held, avail float64
		lapse                         time.Time
	}{
		{"two held", func() error { return nil }, 2, 0.125, 0.875, 0.5, 0.375, r1.Expires},
		{"a aborted", func() error { _, err := st.AbortReserved(ctx, "a"); return err }, 1, 0.125, 0.875, 0.25, 0.625, time.Time{}},
		{"b committed", func() error { _, _, err := st.CommitReserved(ctx, "b", quarter()); return err }, 0, 0.375, 0.625, 0, 0.625, time.Time{}},
	}
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := st.Status("d")
		if err != nil {
			t.Fatal(err)
		}
		if got.Reservations != s.reservations || got.Spent.Eps != s.spent || got.Remaining.Eps != s.remaining || got.Held.Eps != s.held || got.Available.Eps != s.avail {
			t.Errorf("%s: %+v; want %d reservation(s), spent %v, remaining %v, held %v, available %v", s.name, got, s.reservations, s.spent, s.remaining, s.held, s.avail)
		}
		if !s.lapse.IsZero() && !got.Lapse.Equal(s.lapse) {
			t.Errorf("%s: lapse %v, want %v", s.name, got.Lapse, s.lapse)
		}
		if s.reservations == 0 && !got.Lapse.IsZero() {
			t.Errorf("%s: a lapse %v without reservations", s.name, got.Lapse)
		}
	}
	all, err := st.Held("")
	if err != nil || len(all) != 0 {
		t.Errorf("Held(\"\") after the abort and the commit: %v, %v", all, err)
	}
}

// TestRemoveWithReservations: a dataset with a live reservation stays
// registered (the refusal names the call and when it lapses); once the
// reservation is aborted or lapsed it may go, and a reservation of a
// removed or registered-again dataset is never committed.
func TestRemoveWithReservations(t *testing.T) {
	ctx := context.Background()
	t.Run("live reservation refuses the removal", func(t *testing.T) {
		st, _ := openTemp(t)
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		r, err := st.Reserve(ctx, "call-7", "d", quarter(), ChargeMeta{}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Remove(ctx, "d")
		if !errors.Is(err, ErrHasReservations) {
			t.Fatalf("Remove with a live reservation: %v, want ErrHasReservations", err)
		}
		for _, want := range []string{"1 live reservation(s)", "call-7", r.Expires.Format("2006-01-02 15:04:05 UTC"), "commits or aborts them or they lapse", "privnotes ledger show --dataset d"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		if _, err := st.Schema("d"); err != nil {
			t.Fatalf("the refused dataset is gone: %v", err)
		}
		if released, err := st.AbortReserved(ctx, "call-7"); err != nil || !released {
			t.Fatalf("abort: %v, %v", released, err)
		}
		if _, err := st.Remove(ctx, "d"); err != nil {
			t.Fatalf("Remove after the abort: %v", err)
		}
		if _, _, err := st.CommitReserved(ctx, "call-7", quarter()); !errors.Is(err, ErrReservationAborted) {
			t.Errorf("commit of an aborted reservation of a removed dataset: %v", err)
		}
	})
	t.Run("lapsed reservation of a dataset registered again", func(t *testing.T) {
		st, _ := openTemp(t)
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		r, err := st.Reserve(ctx, "call-8", "d", quarter(), ChargeMeta{}, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(r.Expires) + 20*time.Millisecond)
		if _, err := st.Remove(ctx, "d"); err != nil {
			t.Fatalf("Remove after the lapse: %v", err)
		}
		if _, _, err := st.CommitReserved(ctx, "call-8", quarter()); !errors.Is(err, ErrReservationExpired) {
			t.Errorf("commit of a lapsed reservation of a removed dataset: %v", err)
		}
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		if _, _, err := st.CommitReserved(ctx, "call-8", quarter()); !errors.Is(err, ErrReservationExpired) {
			t.Errorf("commit of a lapsed reservation of a dataset registered again: %v", err)
		}
		if s, _ := st.Status("d"); s.Charges != 0 {
			t.Errorf("the new registration was charged: %+v", s)
		}
	})
	t.Run("live reservation older than the registration", func(t *testing.T) {
		// Remove refuses while a reservation is live, so this can only be
		// made by hand: a live reservation dated before its dataset's
		// registration (the same name and schema) is never committed.
		st, _ := openTemp(t)
		register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
		if _, err := st.Reserve(ctx, "call-9", "d", quarter(), ChargeMeta{}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := st.db.Exec(`UPDATE reservations SET created = ? WHERE call_id = 'call-9'`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.CommitReserved(ctx, "call-9", quarter()); !errors.Is(err, ErrRegistrationChanged) {
			t.Errorf("commit of a reservation older than the registration: %v", err)
		}
		if s, _ := st.Status("d"); s.Charges != 0 {
			t.Errorf("charged: %+v", s)
		}
	})
}

// TestCommitReceiptHeld: a committed reservation's receipt shows the
// charges as spent and the other live reservations in what remains.
func TestCommitReceiptHeld(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := st.Reserve(ctx, id, "d", quarter(), ChargeMeta{}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id               string
		spent, remaining float64
	}{{"a", 0.25, 0.5}, {"b", 0.5, 0.5}} {
		rc, first, err := st.CommitReserved(ctx, c.id, quarter())
		if err != nil || !first {
			t.Fatalf("commit %s: %v %v", c.id, first, err)
		}
		if rc.Spent.Eps != c.spent || rc.Remaining.Eps != c.remaining {
			t.Errorf("commit %s: spent %v, remaining %v; want %v and %v", c.id, rc.Spent.Eps, rc.Remaining.Eps, c.spent, c.remaining)
		}
	}
}
