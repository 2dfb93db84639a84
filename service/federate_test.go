package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/service/wire"
)

func fedCall(t *testing.T, f *fixture, id string) release.Call {
	c := call(t, "private_pca", "tab", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "federated", "iters": 2})
	sc, err := f.st.Schema("tab")
	if err != nil {
		t.Fatal(err)
	}
	c.Dataset.Schema, c.ID = sc, id
	return c
}

// TestFedRoundsKeptAcrossRestart: a federated call is charged once
// however often it is opened; a retried round gets the same noisy reply;
// a server restarted between rounds answers the rounds it kept from disk
// and resumes the call at the next one; rounds are answered in order
// only, and one past the plan is refused.
func TestFedRoundsKeptAcrossRestart(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	fc := fedCall(t, f, "fed-1")
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 0, Step: federated.StepDiag}); !notYours(err) {
		t.Errorf("a round of an unopened call: %v", err)
	}
	rc, err := c.FedOpen(ctx, fc)
	if err != nil {
		t.Fatal(err)
	}
	rc2, err := c.FedOpen(ctx, fc)
	if err != nil || rc2.LedgerID != rc.LedgerID || f.charges() != 1 {
		t.Fatalf("a retried open: %v, ledger %d vs %d, %d charges", err, rc2.LedgerID, rc.LedgerID, f.charges())
	}
	r0, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 0, Step: federated.StepDiag})
	if err != nil || r0.Count != 0 {
		t.Fatalf("round 0: %v, count %d", err, r0.Count)
	}
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 2, Step: federated.StepProduct}); !isName(err, release.NameArgumentError) {
		t.Errorf("round 2 before round 1: %v", err)
	}
	// Restart: the new server has no session; the kept round comes back
	// as it was, and the call resumes at round 1.
	f.stop()
	f.start(f.addr)
	again, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 0, Step: federated.StepDiag})
	if err != nil || !mat.Equal(again.Value, r0.Value) {
		t.Fatalf("round 0 after the restart: %v (equal %v)", err, err == nil && mat.Equal(again.Value, r0.Value))
	}
	sup := []int{0, 1, 2}
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 1, Step: federated.StepBlock, Support: sup}); err != nil {
		t.Fatalf("round 1 after the restart: %v", err)
	}
	q := mat.NewDense(3, 1, []float64{1, 0, 0})
	for r := 2; r < 4; r++ {
		if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: r, Step: federated.StepProduct, Q: q}); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 4, Step: federated.StepProduct, Q: q}); !isName(err, release.NameArgumentError) {
		t.Errorf("a round past the plan: %v", err)
	}
	if f.charges() != 1 {
		t.Errorf("%d charges, want 1", f.charges())
	}
	// A basis far from orthonormal is refused: it would read more than
	// the plan paid for.
	fc2 := fedCall(t, f, "fed-2")
	if _, err := c.FedOpen(ctx, fc2); err != nil {
		t.Fatal(err)
	}
	c.FedRound(ctx, fc2, federated.PCARequest{Round: 0, Step: federated.StepDiag})
	c.FedRound(ctx, fc2, federated.PCARequest{Round: 1, Step: federated.StepBlock, Support: sup})
	big := mat.NewDense(3, 1, []float64{100, 0, 0})
	if _, err := c.FedRound(ctx, fc2, federated.PCARequest{Round: 2, Step: federated.StepProduct, Q: big}); !isName(err, release.NameArgumentError) {
		t.Errorf("a scaled basis: %v", err)
	}
}

func isName(err error, name string) bool {
	var e *release.Error
	return errors.As(err, &e) && e.Name == name
}

// TestFedOpenRefusesBeforeCharge: a call the server's budget cannot pay,
// or that is not DPS-PCA, is refused and charges nothing.
func TestFedOpenRefusesBeforeCharge(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	big := fedCall(t, f, "fed-big")
	big.Args.Vals["eps"] = 50.0
	if _, err := c.FedOpen(ctx, big); err == nil {
		t.Error("an open beyond the budget succeeded")
	}
	npm := fedCall(t, f, "fed-npm")
	npm.Args.Vals["method"] = "npm"
	if _, err := c.FedOpen(ctx, npm); !isName(err, release.NameArgumentError) {
		t.Errorf("an npm call opened as a federated one: %v", err)
	}
	if f.charges() != 0 {
		t.Errorf("%d charges after refusals", f.charges())
	}
}

// FuzzDecodeRound: any bytes decode to a round request or to a named
// DSL error, never a panic; a decoded request respects the limits.
func FuzzDecodeRound(f *testing.F) {
	c := call(f, "private_pca", "tab", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "federated"})
	c.ID = "x"
	req, err := wire.EncodeRound(c, federated.PCARequest{Round: 3, Step: federated.StepProduct, Q: mat.NewDense(3, 1, []float64{1, 0, 0}), Support: []int{0, 2}})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := proto.Marshal(req)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("\x10\x05\x1a\x04diag"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &pb.FedRoundRequest{}
		if proto.Unmarshal(data, r) != nil {
			return
		}
		_, _, _, rq, err := wire.DecodeRound(r)
		if err != nil {
			var e *release.Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without a DSL name: %v", err)
			}
			return
		}
		if rq.Round < 0 || rq.Round >= wire.MaxRounds || len(rq.Support) > federated.MaxBlockDim {
			t.Fatalf("decoded out of limits: round %d, support %d", rq.Round, len(rq.Support))
		}
		if rq.Q != nil {
			if r, c := rq.Q.Dims(); r*c > wire.MaxBasisEntries {
				t.Fatalf("a %d×%d basis", r, c)
			}
		}
		if rq.Sigma != 0 {
			t.Fatal("a decoded round carries a noise scale")
		}
	})
}

// TestFedIdleCallResumes: a call whose coordinator stayed away longer
// than release.FedIdle has its data closed; its next round resumes it
// from the ledger charge and the kept rounds, with no second charge.
func TestFedIdleCallResumes(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	fc := fedCall(t, f, "idle-1")
	if _, err := c.FedOpen(ctx, fc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 0, Step: federated.StepDiag}); err != nil {
		t.Fatal(err)
	}
	idle := release.FedIdle
	release.FedIdle = 0
	t.Cleanup(func() { release.FedIdle = idle })
	time.Sleep(time.Millisecond)
	if _, err := c.FedOpen(ctx, fedCall(t, f, "idle-2")); err != nil { // sweeps idle-1
		t.Fatal(err)
	}
	release.FedIdle = idle
	if _, err := c.FedRound(ctx, fc, federated.PCARequest{Round: 1, Step: federated.StepBlock, Support: []int{0, 1, 2}}); err != nil {
		t.Fatalf("round 1 after the idle close: %v", err)
	}
	if f.charges() != 2 {
		t.Errorf("%d charges, want 2 (one per call)", f.charges())
	}
}
