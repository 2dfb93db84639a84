package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// TestWriterSeesOtherConnections: the charge path's connection remembers
// the chain head and a dataset's totals between its transactions
// (writer.go); a charge committed in between by another connection must
// count. Two Stores on one state directory are two processes (a kernel
// and a REPL); CommitReserved runs on the Store's pool, another
// connection of the same process. A writer that trusted its memory
// without asking data_version would pass the third charge (it remembers
// 0.4 spent of 1) and chain a record on a stale head.
func TestWriterSeesOtherConnections(t *testing.T) {
	ctx := context.Background()
	ev := withMech(accounting.Pure(0.4), "test/count")
	for _, other := range []string{"another process", "another connection of the process"} {
		t.Run(other, func(t *testing.T) {
			a, dir := openTemp(t)
			register(t, a, "d", accounting.ModeBasic, accounting.Budget{Eps: 1, Delta: 1e-6})
			r1, err := a.Charge(ctx, "d", ev, ChargeMeta{Cell: "a1", Release: &ReleaseMeta{Call: "{}"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.SealRelease(ctx, r1.ID, []byte(`{"v":1}`)); err != nil {
				t.Fatal(err)
			}
			switch other {
			case "another process":
				b, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.Charge(ctx, "d", ev, ChargeMeta{Cell: "b1"}); err != nil {
					t.Fatal(err)
				}
				b.Close()
			default:
				if _, err := a.Reserve(ctx, "call-1", "d", ev, ChargeMeta{Cell: "r1"}, time.Minute); err != nil {
					t.Fatal(err)
				}
				if _, first, err := a.CommitReserved(ctx, "call-1", ev); err != nil || !first {
					t.Fatalf("CommitReserved: first=%v, %v", first, err)
				}
			}
			// 0.8 of 1 is spent: a third 0.4 does not fit.
			_, err = a.Charge(ctx, "d", ev, ChargeMeta{Cell: "a2"})
			var ex *accounting.ExceededError
			if !errors.As(err, &ex) {
				t.Fatalf("third charge of 0.4 on a budget of 1 = %v, want *ExceededError", err)
			}
			if got := ex.Spent.Eps; got < 0.8-1e-12 || got > 0.8+1e-12 {
				t.Errorf("refusal says %v spent, want 0.8", got)
			}
			// A charge that fits chains on the other connection's record.
			r3, err := a.Charge(ctx, "d", withMech(accounting.Pure(0.1), "test/count"), ChargeMeta{Cell: "a3", Release: &ReleaseMeta{Call: "{}"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.SealRelease(ctx, r3.ID, []byte(`{"v":3}`)); err != nil {
				t.Fatal(err)
			}
			if err := a.Verify(); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if s, err := a.Status("d"); err != nil || s.Charges != 3 {
				t.Fatalf("Status = %+v, %v; want 3 charges", s, err)
			}
		})
	}
}

// TestWriterRemembersOwnCommits: with no other connection writing, the
// writer's memory holds across its own transactions (what saves the
// reads), and a refused charge or a failed seal leaves the next ones
// right.
func TestWriterRemembersOwnCommits(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1, Delta: 1e-6})
	ev := withMech(accounting.Pure(0.25), "test/count")
	for i := range 3 {
		r, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: "c", Release: &ReleaseMeta{Call: "{}"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SealRelease(ctx, r.ID, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := st.SealRelease(ctx, r.ID, []byte(`{}`)); err == nil {
				t.Fatal("a second seal of one release was accepted")
			}
		}
		if i == 1 {
			if _, err := st.Charge(ctx, "d", withMech(accounting.Pure(0.9), "test/count"), ChargeMeta{Cell: "over"}); !errors.Is(err, accounting.ErrBudgetExceeded) {
				t.Fatalf("over-budget charge = %v", err)
			}
		}
	}
	st.w.mu.Lock()
	known, d, fresh := st.w.known, st.w.datasets["d"], st.w.fresh
	st.w.mu.Unlock()
	if !known || d.state.Events() != 3 {
		t.Errorf("writer memory: known=%v, events=%d; want its last commit's (3 charges)", known, d.state.Events())
	}
	// Transactions that found the memory fresh: each seal after its
	// charge (3), the refused second seal and the refused charge (2); a
	// rollback forgets, so each charge after one reads the database.
	if fresh != 5 {
		t.Errorf("%d transactions used the writer's memory, want 5", fresh)
	}
	if r, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: "last"}); err != nil || r.Spent.Eps != 1 {
		t.Fatalf("fourth 0.25 after 0.75 and a refusal: %+v, %v; want it to fit, spending 1", r, err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestWriterSealsAnEarlierCharge: a release sealed after later records
// (two calls charged, then both sealed) chains to its own charge record,
// not to the head the writer remembers.
func TestWriterSealsAnEarlierCharge(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t)
	register(t, st, "d", accounting.ModeBasic, accounting.Budget{Eps: 1, Delta: 1e-6})
	ev := withMech(accounting.Pure(0.1), "test/count")
	r1, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: "c1", Release: &ReleaseMeta{Call: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := st.Charge(ctx, "d", ev, ChargeMeta{Cell: "c2", Release: &ReleaseMeta{Call: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{r1.ID, r2.ID} {
		if _, err := st.SealRelease(ctx, id, []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// TestHotQueriesPrepared: every statement of the call path prepares at
// open (a typo would leave it running as text, slower but unnoticed), and
// the release lookup of SealRelease is the text releaseRow runs.
func TestHotQueriesPrepared(t *testing.T) {
	st, _ := openTemp(t)
	for _, q := range hotQueries {
		if st.stmts[q] == nil {
			t.Errorf("not prepared: %s", q)
		}
	}
	if got := releaseCols + `WHERE r.record = ?` + ` ORDER BY r.record`; got != qReleaseOf {
		t.Errorf("releaseRow runs %q, the prepared statement is %q", got, qReleaseOf)
	}
}
