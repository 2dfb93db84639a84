package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

func quarter() accounting.Event { return withMech(accounting.Pure(0.25), "test/reserve") }

// TestReservationLifecycle walks the table of operations over one
// dataset of ε = 1 and checks, after each, what is spent, what is held
// and which records the ledger has.
func TestReservationLifecycle(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "r", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ctx := context.Background()
	hour := time.Hour
	steps := []struct {
		name    string
		op      func() error
		wantErr error // nil: succeeds
		spent   float64
		held    int
	}{
		{"reserve a", func() error { _, err := st.Reserve(ctx, "a", "r", quarter(), ChargeMeta{Cell: "c1"}, hour); return err }, nil, 0, 1},
		{"reserve a again (a retry)", func() error { _, err := st.Reserve(ctx, "a", "r", quarter(), ChargeMeta{}, hour); return err }, nil, 0, 1},
		{"reserve a with another cost", func() error {
			_, err := st.Reserve(ctx, "a", "r", withMech(accounting.Pure(0.5), "test/reserve"), ChargeMeta{}, hour)
			return err
		}, ErrReservationMismatch, 0, 1},
		{"reserve b", func() error { _, err := st.Reserve(ctx, "b", "r", quarter(), ChargeMeta{}, hour); return err }, nil, 0, 2},
		{"reserve c", func() error { _, err := st.Reserve(ctx, "c", "r", quarter(), ChargeMeta{}, hour); return err }, nil, 0, 3},
		// 0.75 held: a charge of 0.5 does not fit, though nothing is spent.
		{"charge 0.5 beside the reservations", func() error {
			_, err := st.Charge(ctx, "r", withMech(accounting.Pure(0.5), "test/charge"), ChargeMeta{})
			return err
		}, accounting.ErrBudgetExceeded, 0, 3},
		{"reserve d of 0.5", func() error {
			_, err := st.Reserve(ctx, "d", "r", withMech(accounting.Pure(0.5), "test/reserve"), ChargeMeta{}, hour)
			return err
		}, accounting.ErrBudgetExceeded, 0, 3},
		{"precheck 0.5", func() error { return st.Precheck("r", withMech(accounting.Pure(0.5), "test/charge")) }, accounting.ErrBudgetExceeded, 0, 3},
		{"commit a", func() error { _, _, err := st.CommitReserved(ctx, "a", quarter()); return err }, nil, 0.25, 2},
		{"commit a again (a retry)", func() error {
			rc, first, err := st.CommitReserved(ctx, "a", quarter())
			if err == nil && (first || rc.ID != 2) {
				return fmt.Errorf("a retried commit: first %v, record %d", first, rc.ID)
			}
			return err
		}, nil, 0.25, 2},
		{"abort a (committed)", func() error { _, err := st.AbortReserved(ctx, "a"); return err }, ErrReservationCommitted, 0.25, 2},
		{"abort b", func() error { _, err := st.AbortReserved(ctx, "b"); return err }, nil, 0.25, 1},
		{"abort b again", func() error { _, err := st.AbortReserved(ctx, "b"); return err }, nil, 0.25, 1},
		{"abort an unknown id", func() error { _, err := st.AbortReserved(ctx, "nobody"); return err }, nil, 0.25, 1},
		{"commit b (aborted)", func() error { _, _, err := st.CommitReserved(ctx, "b", quarter()); return err }, ErrReservationAborted, 0.25, 1},
		{"commit an unknown id", func() error { _, _, err := st.CommitReserved(ctx, "nobody", quarter()); return err }, ErrNoReservation, 0.25, 1},
		{"commit c with another cost", func() error {
			_, _, err := st.CommitReserved(ctx, "c", withMech(accounting.Pure(0.5), "test/reserve"))
			return err
		}, ErrReservationMismatch, 0.25, 1},
		// 0.25 spent, 0.25 held: 0.5 fits now.
		{"charge 0.5", func() error {
			_, err := st.Charge(ctx, "r", withMech(accounting.Pure(0.5), "test/charge"), ChargeMeta{})
			return err
		}, nil, 0.75, 1},
		{"commit c", func() error { _, _, err := st.CommitReserved(ctx, "c", quarter()); return err }, nil, 1, 0},
		{"reserve e (nothing left)", func() error { _, err := st.Reserve(ctx, "e", "r", quarter(), ChargeMeta{}, hour); return err }, accounting.ErrBudgetExceeded, 1, 0},
	}
	for _, s := range steps {
		err := s.op()
		switch {
		case s.wantErr == nil && err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.wantErr != nil && !errors.Is(err, s.wantErr):
			t.Fatalf("%s: error %v, want %v", s.name, err, s.wantErr)
		}
		status, err := st.Status("r")
		if err != nil {
			t.Fatal(err)
		}
		held, err := st.Held("r")
		if err != nil {
			t.Fatal(err)
		}
		if status.Spent.Eps != s.spent || len(held) != s.held {
			t.Fatalf("after %s: spent %v, %d held; want %v and %d", s.name, status.Spent.Eps, len(held), s.spent, s.held)
		}
	}
	// The committed reservations are charge records like any other, with
	// the reservation's cell; the chain and the totals verify.
	entries, err := st.Entries("r")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 || entries[1].Kind != "charge" || entries[1].Cell != "c1" || entries[1].Mechanism != "test/reserve" {
		t.Errorf("entries: %+v", entries)
	}
	if err := st.Verify(); err != nil {
		t.Error(err)
	}
}

// TestReservationCountsInDryRuns: WouldRemain (what a dry run shows) and
// the reservation's own receipt count every live reservation.
func TestReservationCountsInDryRuns(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "r", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ctx := context.Background()
	r, err := st.Reserve(ctx, "a", "r", quarter(), ChargeMeta{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r.Remaining.Eps != 0.75 || r.State != Held {
		t.Errorf("reservation: %+v", r)
	}
	left, err := st.WouldRemain("r", quarter())
	if err != nil || left.Eps != 0.5 {
		t.Errorf("WouldRemain with 0.25 held: %v, %v; want 0.5", left, err)
	}
	if _, err := st.WouldRemain("r", withMech(accounting.Pure(0.875), "x")); !errors.Is(err, accounting.ErrBudgetExceeded) {
		t.Errorf("WouldRemain past the budget with the reservation: %v", err)
	}
	if released, err := st.AbortReserved(ctx, "a"); err != nil || !released {
		t.Errorf("abort: %v, %v", released, err)
	}
	if left, _ := st.WouldRemain("r", quarter()); left.Eps != 0.75 {
		t.Errorf("after the abort: %v", left)
	}
}

// TestReservationExpiry: an expired reservation no longer counts and
// cannot be committed; nothing is charged.
func TestReservationExpiry(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "r", accounting.ModeBasic, accounting.Budget{Eps: 1})
	ctx := context.Background()
	ttl := 200 * time.Millisecond
	full := withMech(accounting.Pure(1), "test/reserve")
	r, err := st.Reserve(ctx, "a", "r", full, ChargeMeta{}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reserve(ctx, "b", "r", quarter(), ChargeMeta{}, ttl); !errors.Is(err, accounting.ErrBudgetExceeded) {
		t.Fatalf("a reservation beside a live one of the whole budget: %v", err)
	}
	time.Sleep(time.Until(r.Expires) + 50*time.Millisecond)
	if held, _ := st.Held("r"); len(held) != 0 {
		t.Errorf("%d held after the expiry", len(held))
	}
	if _, _, err := st.CommitReserved(ctx, "a", full); !errors.Is(err, ErrReservationExpired) {
		t.Errorf("commit after the expiry: %v", err)
	}
	if _, err := st.Reserve(ctx, "a", "r", full, ChargeMeta{}, ttl); !errors.Is(err, ErrReservationExpired) {
		t.Errorf("reserving an expired id again: %v", err)
	}
	if s, _ := st.Status("r"); s.Spent.Eps != 0 || s.Charges != 0 {
		t.Errorf("an expired reservation charged: %+v", s)
	}
	if _, err := st.Charge(ctx, "r", full, ChargeMeta{}); err != nil {
		t.Errorf("the whole budget after the expiry: %v", err)
	}
	if released, err := st.AbortReserved(ctx, "a"); err != nil || released {
		t.Errorf("aborting an expired reservation: released %v, %v (want false, nil)", released, err)
	}
	if _, err := st.Reserve(ctx, "z", "r", quarter(), ChargeMeta{}, 0); err == nil {
		t.Error("a reservation without a lifetime was taken")
	}
}

// TestReservationRegistrationChanged: a reservation planned from another
// schema is refused.
func TestReservationRegistrationChanged(t *testing.T) {
	st, _ := openTemp(t)
	register(t, st, "r", accounting.ModeBasic, accounting.Budget{Eps: 1})
	sc, err := st.Schema("r")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clip = 99
	if _, err := st.Reserve(context.Background(), "a", "r", quarter(), ChargeMeta{Schema: &sc}, time.Hour); !errors.Is(err, ErrRegistrationChanged) {
		t.Errorf("a reservation planned from another schema: %v", err)
	}
}

// TestConcurrentReserversTwoHandles: reservers and chargers on two
// handles of one state directory (two SQLite connections, as two
// processes have) never hold and spend more than the budget together.
func TestConcurrentReserversTwoHandles(t *testing.T) {
	a, dir := openTemp(t)
	register(t, a, "g", accounting.ModeBasic, accounting.Budget{Eps: 1})
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	reserved, charged, refused := 0, 0, 0
	for i := range 24 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			var err error
			if i%3 == 0 {
				_, err = st.Charge(ctx, "g", withMech(accounting.Pure(0.125), "test/charge"), ChargeMeta{})
			} else {
				_, err = st.Reserve(ctx, fmt.Sprint("call-", i), "g", withMech(accounting.Pure(0.125), "test/reserve"), ChargeMeta{}, time.Hour)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && i%3 == 0:
				charged++
			case err == nil:
				reserved++
			case errors.Is(err, accounting.ErrBudgetExceeded):
				refused++
			default:
				t.Errorf("%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if reserved+charged != 8 || refused != 16 {
		t.Errorf("%d reserved, %d charged, %d refused; want 8 taken and 16 refused", reserved, charged, refused)
	}
	held, _ := b.Held("g")
	s, _ := b.Status("g")
	if len(held) != reserved || s.Spent.Eps != 0.125*float64(charged) {
		t.Errorf("%d held (want %d), spent %v", len(held), reserved, s.Spent)
	}
	// Committing every reservation from the other handle spends exactly
	// the budget.
	for _, r := range held {
		if _, _, err := a.CommitReserved(ctx, r.CallID, r.Event); err != nil {
			t.Errorf("commit %s: %v", r.CallID, err)
		}
	}
	if s, _ := a.Status("g"); s.Spent.Eps != 1 {
		t.Errorf("spent %v after the commits, want 1", s.Spent)
	}
	if err := a.Verify(); err != nil {
		t.Error(err)
	}
}

// BenchmarkReserveCommit times the two-phase charge of a federated member
// (Reserve, then CommitReserved) against one Charge, in one run, with 8
// other reservations live (each charge and check reads them).
func BenchmarkReserveCommit(b *testing.B) {
	st, _ := openTemp(b)
	register(b, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1e12})
	ev := withMech(accounting.Pure(1e-3), "bench")
	ctx := context.Background()
	for i := range 8 {
		if _, err := st.Reserve(ctx, fmt.Sprint("live-", i), "d", ev, ChargeMeta{}, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("charge", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	n := 0
	b.Run("reserve+commit", func(b *testing.B) {
		for b.Loop() {
			n++
			id := fmt.Sprint("call-", n)
			if _, err := st.Reserve(ctx, id, "d", ev, ChargeMeta{Cell: "bench"}, time.Hour); err != nil {
				b.Fatal(err)
			}
			if _, _, err := st.CommitReserved(ctx, id, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
