package service_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/service/wire"
)

// TestFedRepSiloRounds: the server as one silo of a federated
// private_fedrep call. It is charged once, answers the rounds of its own
// plan in order (init, then one gradient round per step), a retried round
// gets the same noisy average, a server restarted between rounds resumes
// from the rounds it kept, and a round past the plan or of the wrong step
// is refused.
func TestFedRepSiloRounds(t *testing.T) {
	f := newFixture(t)
	tab := &dataset.Table{Columns: []string{"x1", "x2", "x3"}, UserColumn: "uid", NumUsers: 40, Label: "y"}
	for u := range 40 {
		for r := range 6 {
			tab.X = append(tab.X, math.Sin(float64(u*7+r)), math.Cos(float64(u+r)), 0.1*float64(r))
			tab.Y = append(tab.Y, math.Sin(float64(u)))
			tab.Users = append(tab.Users, int32(u))
			tab.Rows++
		}
	}
	if _, err := f.st.Register(context.Background(), ledger.Registration{Name: "users", Table: tab, Budget: accounting.Budget{Eps: 5, Delta: 1e-5},
		Accountant: accounting.ModeZCDP, Clip: 1, LabelClip: 1, PublicN: true, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	c := f.client(10 * time.Second)
	ctx := context.Background()
	fc := call(t, "private_fedrep", "users", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "rounds": 2})
	sc, err := f.st.Schema("users")
	if err != nil {
		t.Fatal(err)
	}
	fc.Dataset.Schema, fc.ID = sc, "fedrep-1"
	charges := func() int {
		s, err := f.st.Status("users")
		if err != nil {
			t.Fatal(err)
		}
		return s.Charges
	}
	if _, err := c.FedOpen(ctx, fc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FedOpen(ctx, fc); err != nil || charges() != 1 {
		t.Fatalf("a retried open: %v, %d charges", err, charges())
	}
	u := mat.NewDense(3, 1, []float64{1, 0, 0})
	grad := func(index, round int) fedrep.Request {
		return fedrep.Request{Round: round, Step: fedrep.StepGradient, U: u}
	}
	if _, err := c.FedRepRound(ctx, fc, 1, grad(1, 0)); !isName(err, release.NameArgumentError) {
		t.Errorf("a gradient round before the init round: %v", err)
	}
	if _, err := c.FedRepRound(ctx, fc, 0, grad(0, 0)); !isName(err, release.NameArgumentError) {
		t.Errorf("round 0 as a gradient round: %v", err)
	}
	r0, err := c.FedRepRound(ctx, fc, 0, fedrep.Request{Step: fedrep.StepInit})
	if err != nil || r0.Avg == nil {
		t.Fatalf("round 0: %v", err)
	}
	if r, c := r0.Avg.Dims(); r != 3 || c != 3 {
		t.Fatalf("the init release is %d×%d, want 3×3", r, c)
	}
	f.stop()
	f.start(f.addr)
	again, err := c.FedRepRound(ctx, fc, 0, fedrep.Request{Step: fedrep.StepInit})
	if err != nil || !mat.Equal(again.Avg, r0.Avg) {
		t.Fatalf("round 0 after the restart: %v", err)
	}
	for index := 1; index <= 2; index++ {
		rep, err := c.FedRepRound(ctx, fc, index, grad(index, index-1))
		if err != nil || rep.Avg == nil {
			t.Fatalf("round %d after the restart: %v", index, err)
		}
	}
	if _, err := c.FedRepRound(ctx, fc, 3, grad(3, 2)); !isName(err, release.NameArgumentError) {
		t.Errorf("a round past the plan: %v", err)
	}
	if charges() != 1 {
		t.Errorf("%d charges, want 1", charges())
	}
}

// FuzzDecodeFedRepRound: any bytes decode to a FedRep round or to a named
// DSL error, never a panic; a decoded round respects the limits.
func FuzzDecodeFedRepRound(f *testing.F) {
	c := call(f, "private_fedrep", "tab", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6})
	c.ID = "x"
	req, err := wire.EncodeFedRepRound(c, 2, fedrep.Request{Round: 1, Step: fedrep.StepGradient, U: mat.NewDense(3, 1, []float64{1, 0, 0})})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := proto.Marshal(req)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("\x10\x05\x1a\x04init"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &pb.FedRoundRequest{}
		if proto.Unmarshal(data, r) != nil {
			return
		}
		index, step, u, err := wire.DecodeFedRepRound(r)
		if err == nil {
			var rq fedrep.Request
			rq, err = wire.WithU(fedrep.Request{Step: step}, u)
			if err == nil {
				if index < 0 || index >= wire.MaxRounds || (step != fedrep.StepInit && step != fedrep.StepGradient) {
					t.Fatalf("decoded out of limits: round %d, step %v", index, step)
				}
				if rq.U != nil {
					if r, c := rq.U.Dims(); r*c > wire.MaxBasisEntries {
						t.Fatalf("a %d×%d representation", r, c)
					}
				}
				return
			}
		}
		var e *release.Error
		if !errors.As(err, &e) {
			t.Fatalf("an error without a DSL name: %v", err)
		}
	})
}
