package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// held is the number of live reservations of the fixture's dataset.
func (f *fixture) held() int {
	f.t.Helper()
	h, err := f.st.Held("tab")
	if err != nil {
		f.t.Fatal(err)
	}
	return len(h)
}

func isBudget(err error) bool {
	var be *release.BudgetError
	return errors.As(err, &be)
}

// TestFedTwoPhase: a prepared call holds its cost (another call cannot
// take it) but is not charged and answers no round; the commit charges
// it once however often it is retried, after a restart too; an aborted
// call cannot be committed and a committed one cannot be aborted.
func TestFedTwoPhase(t *testing.T) {
	// Room for one call of ε = 1, not two.
	f := newFixtureBudget(t, accounting.Budget{Eps: 1.05, Delta: 1e-5})
	c := f.client(10 * time.Second)
	ctx := context.Background()
	a, b, x := fedCall(t, f, "two-a"), fedCall(t, f, "two-b"), fedCall(t, f, "two-x")

	expA, err := c.FedPrepare(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(expA); d < release.FedReserve-time.Minute || d > release.FedReserve+time.Minute {
		t.Errorf("the reservation expires in %v, want about %v", d, release.FedReserve)
	}
	if again, err := c.FedPrepare(ctx, a); err != nil || !again.Equal(expA) {
		t.Errorf("a retried prepare: %v, expiry %v vs %v", err, again, expA)
	}
	if f.charges() != 0 || f.held() != 1 {
		t.Fatalf("after the prepare: %d charges, %d held; want 0 and 1", f.charges(), f.held())
	}
	if _, err := c.FedRound(ctx, a, federated.PCARequest{Round: 0, Step: federated.StepDiag}); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "not committed") {
		t.Fatalf("a round of a prepared call: %v", err) // it read data on no charge
	}
	// The reservation holds the budget: another call is refused at its
	// dry run and at its prepare, though nothing is charged.
	if _, err := c.DryRun(ctx, x, nil); !isBudget(err) {
		t.Errorf("a dry run beside a reservation of the budget: %v", err)
	}
	if _, err := c.FedPrepare(ctx, x); !isBudget(err) {
		t.Errorf("a prepare beside a reservation of the budget: %v", err)
	}
	// Abort a: it is released, idempotently, and cannot be committed.
	for range 2 {
		if err := c.FedAbort(ctx, a); err != nil {
			t.Fatalf("abort: %v", err)
		}
	}
	if _, err := c.FedCommit(ctx, a); !isName(err, release.NameArgumentError) {
		t.Errorf("a commit of an aborted call: %v", err)
	}
	if _, err := c.FedPrepare(ctx, b); err != nil {
		t.Fatalf("a prepare after the abort released the budget: %v", err)
	}
	// Restart between the prepare and the commit: the reservation and the
	// prepared request are on disk.
	f.stop()
	f.start(f.addr)
	rc, err := c.FedCommit(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	rc2, err := c.FedCommit(ctx, b)
	if err != nil || rc2.LedgerID != rc.LedgerID || f.charges() != 1 || f.held() != 0 {
		t.Fatalf("a retried commit: %v, ledger %d vs %d, %d charges, %d held", err, rc2.LedgerID, rc.LedgerID, f.charges(), f.held())
	}
	if err := c.FedAbort(ctx, b); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "cannot be aborted") {
		t.Errorf("an abort of a committed call: %v", err)
	}
	if _, err := c.FedRound(ctx, b, federated.PCARequest{Round: 0, Step: federated.StepDiag}); err != nil {
		t.Errorf("round 0 of the committed call: %v", err)
	}
	// A call id this client never opened is refused (as another
	// client's would be: bind.go).
	if _, err := c.FedCommit(ctx, fedCall(t, f, "never-prepared")); !notYours(err) {
		t.Errorf("a commit of a call never prepared: %v", err)
	}
	if err := c.FedAbort(ctx, fedCall(t, f, "never-prepared")); !notYours(err) {
		t.Errorf("an abort of a call never prepared: %v", err)
	}
	if f.charges() != 1 {
		t.Errorf("%d charges, want 1", f.charges())
	}
}

// TestFedReservationLapses: a prepared call nobody commits stops holding
// budget at its expiry and can no longer be committed.
func TestFedReservationLapses(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	keep := release.FedReserve
	release.FedReserve = 300 * time.Millisecond
	t.Cleanup(func() { release.FedReserve = keep })
	a := fedCall(t, f, "lapse-a")
	exp, err := c.FedPrepare(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(exp) + 100*time.Millisecond)
	if f.held() != 0 {
		t.Errorf("%d held after the expiry", f.held())
	}
	if _, err := c.FedCommit(ctx, a); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a commit after the expiry: %v", err)
	}
	if f.charges() != 0 {
		t.Errorf("%d charges after a lapsed reservation", f.charges())
	}
}

// TestFedKeptRepliesBoundToRequest: a kept answer goes only to a retry of
// the same request; another request under the same call id (and round)
// gets an error and no answer.
func TestFedKeptRepliesBoundToRequest(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	a := fedCall(t, f, "bound-a")
	if _, err := c.FedPrepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	other := a
	other.Args = a.Args.With("k", 2) // k is given in both
	if _, err := c.FedPrepare(ctx, other); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "different request") {
		t.Errorf("a prepare of another call under the same id: %v", err)
	}
	if _, err := c.FedCommit(ctx, a); err != nil {
		t.Fatal(err)
	}
	rounds := []federated.PCARequest{
		{Round: 0, Step: federated.StepDiag},
		{Round: 1, Step: federated.StepBlock, Support: []int{0, 1, 2}},
		{Round: 2, Step: federated.StepProduct, Q: mat.NewDense(3, 1, []float64{1, 0, 0})},
	}
	var last federated.PCAReply
	for _, r := range rounds {
		rep, err := c.FedRound(ctx, a, r)
		if err != nil {
			t.Fatalf("round %d: %v", r.Round, err)
		}
		last = rep
	}
	again, err := c.FedRound(ctx, a, rounds[2])
	if err != nil || !mat.Equal(again.Value, last.Value) {
		t.Fatalf("a retry of round 2: %v", err)
	}
	// The same round with another basis: not the kept answer, no answer.
	rot := rounds[2]
	rot.Q = mat.NewDense(3, 1, []float64{0, 1, 0})
	if rep, err := c.FedRound(ctx, a, rot); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "different request") || rep.Value != nil {
		t.Errorf("round 2 again with another basis: %v (reply %v)", err, rep.Value)
	}
	// And after a restart, from disk.
	f.stop()
	f.start(f.addr)
	if _, err := c.FedRound(ctx, a, rot); !isName(err, release.NameArgumentError) || !strings.Contains(err.Error(), "different request") {
		t.Errorf("round 2 with another basis after a restart: %v", err)
	}
	if again, err := c.FedRound(ctx, a, rounds[2]); err != nil || !mat.Equal(again.Value, last.Value) {
		t.Errorf("a retry of round 2 after a restart: %v", err)
	}
	if f.charges() != 1 {
		t.Errorf("%d charges, want 1", f.charges())
	}
}

// TestFedCommitRetryOpensNothing: a commit retried after a restart that
// lost its kept receipt finds the charge in the ledger and returns it
// without opening the call again at round 0 (which would answer rounds a
// second time on one charge); the call continues after its kept rounds.
func TestFedCommitRetryOpensNothing(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	a := fedCall(t, f, "recommit")
	if _, err := c.FedPrepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	rc, err := c.FedCommit(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []federated.PCARequest{{Round: 0, Step: federated.StepDiag}, {Round: 1, Step: federated.StepBlock, Support: []int{0, 1, 2}}} {
		if _, err := c.FedRound(ctx, a, r); err != nil {
			t.Fatalf("round %d: %v", r.Round, err)
		}
	}
	f.stop()
	h := sha256.Sum256([]byte("fed-open\x00" + a.ID))
	if err := os.Remove(filepath.Join(f.state, "service", "replies", hex.EncodeToString(h[:])+".pb")); err != nil {
		t.Fatal(err)
	}
	f.start(f.addr)
	rc2, err := c.FedCommit(ctx, a)
	if err != nil || rc2.LedgerID != rc.LedgerID {
		t.Fatalf("the commit again: %v, ledger %d vs %d", err, rc2.LedgerID, rc.LedgerID)
	}
	if _, err := c.FedRound(ctx, a, federated.PCARequest{Round: 2, Step: federated.StepProduct, Q: mat.NewDense(3, 1, []float64{1, 0, 0})}); err != nil {
		t.Errorf("round 2 after the commit again: %v", err)
	}
	if f.charges() != 1 {
		t.Errorf("%d charges, want 1", f.charges())
	}
}
