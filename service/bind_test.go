package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// notYours reports whether err is the server's refusal of a call id the
// client did not open: nothing in it may tell about the call.
func notYours(err error) bool {
	return isName(err, release.NameProviderFailed) && strings.Contains(err.Error(), "refused this client") &&
		strings.Contains(err.Error(), "is not a call this client opened")
}

// issue signs a client certificate named name with the fixture's CA (as
// `privnotes certs client DIR --name NAME` does) and returns its client.
func (f *fixture) issue(name string) *client.Client {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), name)
	if err := tlsdir.Issue(f.tls, name, dir); err != nil {
		f.t.Fatal(err)
	}
	return f.clientFrom(dir, 10*time.Second)
}

func (f *fixture) status(ds string) *ledger.Status {
	f.t.Helper()
	s, err := f.st.Status(ds)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// registerUsers registers "users", a dataset of 40 users with public n,
// for private_fedrep.
func registerUsers(t *testing.T, f *fixture) {
	t.Helper()
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
}

// fedKind is one kind of federated call: how to make it and answer its
// rounds (round i with the request a coordinator would send).
type fedKind struct {
	name   string
	call   func(t *testing.T, f *fixture, id string) release.Call
	rounds int
	round  func(ctx context.Context, c *client.Client, call release.Call, i int) (*mat.Dense, error)
}

var fedKinds = []fedKind{
	{
		name:   "private_pca",
		call:   fedCall,
		rounds: 4,
		round: func(ctx context.Context, c *client.Client, call release.Call, i int) (*mat.Dense, error) {
			req := federated.PCARequest{Round: i, Step: federated.StepProduct, Q: mat.NewDense(3, 1, []float64{1, 0, 0})}
			switch i {
			case 0:
				req = federated.PCARequest{Round: 0, Step: federated.StepDiag}
			case 1:
				req = federated.PCARequest{Round: 1, Step: federated.StepBlock, Support: []int{0, 1, 2}}
			}
			rep, err := c.FedRound(ctx, call, req)
			return rep.Value, err
		},
	},
	{
		name: "private_fedrep",
		call: func(t *testing.T, f *fixture, id string) release.Call {
			c := call(t, "private_fedrep", "users", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "rounds": 2})
			sc, err := f.st.Schema("users")
			if err != nil {
				t.Fatal(err)
			}
			c.Dataset.Schema, c.ID = sc, id
			return c
		},
		rounds: 3,
		round: func(ctx context.Context, c *client.Client, call release.Call, i int) (*mat.Dense, error) {
			req := fedrep.Request{Step: fedrep.StepInit}
			if i > 0 {
				req = fedrep.Request{Round: i - 1, Step: fedrep.StepGradient, U: mat.NewDense(3, 1, []float64{1, 0, 0})}
			}
			rep, err := c.FedRepRound(ctx, call, i, req)
			return rep.Avg, err
		},
	},
}

// TestFedCallBoundToClient is the review's attack (issue 25.3): alice and
// bob hold certificates signed by the same CA and no authz file limits
// them; alice prepares a federated call and bob, who learned its call id,
// tries every RPC on it at every stage (prepared, committed, between
// rounds, after a server restart, finished): preparing or opening it
// again, committing it, aborting it, and taking a round's answer, the
// next one or one alice already has. Each is refused with the same words
// as for a call id nobody used, and alice's call runs to its end
// unaffected: one reservation, one charge, and the answers she got are
// the ones kept for her.
func TestFedCallBoundToClient(t *testing.T) {
	for _, k := range fedKinds {
		t.Run(k.name, func(t *testing.T) {
			f := newFixture(t)
			registerUsers(t, f)
			alice, bob := f.issue("alice"), f.issue("bob")
			ctx := context.Background()
			a := k.call(t, f, "alice-"+k.name)
			ds := a.Dataset.Name

			// attack runs bob's every move on alice's call when she has
			// answered done rounds, and checks that none got through.
			attack := func(stage string, done int) {
				t.Helper()
				fresh := k.call(t, f, "nobody-"+strings.ReplaceAll(stage, " ", "-"))
				tries := []struct {
					what string
					do   func(release.Call) error
					// continues: a call id nobody opened is refused alike
					continues bool
				}{
					{"FedPrepare", func(c release.Call) error { _, err := bob.FedPrepare(ctx, c); return err }, false},
					{"FedOpen", func(c release.Call) error { _, err := bob.FedOpen(ctx, c); return err }, false},
					{"FedCommit", func(c release.Call) error { _, err := bob.FedCommit(ctx, c); return err }, true},
					{"FedAbort", func(c release.Call) error { return bob.FedAbort(ctx, c) }, true},
					{"the next round", func(c release.Call) error { _, err := k.round(ctx, bob, c, min(done, k.rounds-1)); return err }, true},
					{"round 0 again", func(c release.Call) error { _, err := k.round(ctx, bob, c, 0); return err }, true},
				}
				before := f.status(ds)
				for _, tr := range tries {
					err := tr.do(a)
					if !notYours(err) {
						t.Errorf("%s: bob's %s of alice's call: %v", stage, tr.what, err)
						continue
					}
					if !tr.continues {
						continue
					}
					// The refusal reads as for a call that does not exist.
					other := tr.do(fresh)
					if got, want := strings.ReplaceAll(err.Error(), a.ID, "ID"), strings.ReplaceAll(other.Error(), fresh.ID, "ID"); got != want {
						t.Errorf("%s: bob's %s tells alice's call from none:\n%s\n%s", stage, tr.what, got, want)
					}
				}
				if after := f.status(ds); after.Charges != before.Charges || after.Reservations != before.Reservations {
					t.Errorf("%s: bob changed the ledger: %d charges, %d reservations; were %d, %d", stage, after.Charges, after.Reservations, before.Charges, before.Reservations)
				}
			}

			if _, err := alice.FedPrepare(ctx, a); err != nil {
				t.Fatal(err)
			}
			attack("prepared", 0)
			if s := f.status(ds); s.Reservations != 1 || s.Charges != 0 {
				t.Fatalf("after bob: %d reservations, %d charges; alice's reservation must hold", s.Reservations, s.Charges)
			}
			if _, err := alice.FedCommit(ctx, a); err != nil {
				t.Fatalf("alice's commit after bob: %v", err)
			}
			attack("committed", 0)
			answers := make([]*mat.Dense, k.rounds)
			var err error
			if answers[0], err = k.round(ctx, alice, a, 0); err != nil {
				t.Fatalf("alice's round 0 after bob: %v", err)
			}
			attack("between rounds", 1)
			f.stop()
			f.start(f.addr)
			attack("restarted", 1)
			if again, err := k.round(ctx, alice, a, 0); err != nil || !mat.Equal(again, answers[0]) {
				t.Fatalf("alice's retry of round 0 after the restart: %v", err)
			}
			for i := 1; i < k.rounds; i++ {
				if answers[i], err = k.round(ctx, alice, a, i); err != nil {
					t.Fatalf("alice's round %d: %v", i, err)
				}
			}
			attack("finished", k.rounds)
			if again, err := k.round(ctx, alice, a, k.rounds-1); err != nil || !mat.Equal(again, answers[k.rounds-1]) {
				t.Errorf("alice's retry of her last round: %v", err)
			}
			if s := f.status(ds); s.Charges != 1 || s.Reservations != 0 {
				t.Errorf("%d charges, %d reservations; want alice's one charge", s.Charges, s.Reservations)
			}
		})
	}
}

// TestCallBoundToKey: a second certificate with alice's name, which
// whoever holds the CA key can issue, does not continue her call: the
// owner is the name and the public key the handshake proved.
func TestCallBoundToKey(t *testing.T) {
	f := newFixture(t)
	alice, twin := f.issue("alice"), f.issue("alice")
	ctx := context.Background()
	a := fedCall(t, f, "alice-key")
	if _, err := alice.FedPrepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := twin.FedCommit(ctx, a); !notYours(err) {
		t.Errorf("another certificate named alice commits her call: %v", err)
	}
	if err := twin.FedAbort(ctx, a); !notYours(err) {
		t.Errorf("another certificate named alice aborts her call: %v", err)
	}
	if _, err := alice.FedCommit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if f.charges() != 1 {
		t.Errorf("%d charges, want 1", f.charges())
	}
}

// TestCallIDRace: two clients preparing one fresh call id at once: one
// gets it, the other is refused, and one reservation is held.
func TestCallIDRace(t *testing.T) {
	f := newFixture(t)
	cs := []*client.Client{f.issue("alice"), f.issue("bob")}
	ctx := context.Background()
	for try := range 5 {
		a := fedCall(t, f, "race-"+string(rune('a'+try)))
		errs := make([]error, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() { _, errs[i] = c.FedPrepare(ctx, a) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !notYours(errs[0]) && !notYours(errs[1]) {
			t.Errorf("try %d: %v; %v; want one prepare and one refusal", try, errs[0], errs[1])
		}
		for _, c := range cs {
			c.FedAbort(ctx, a) // only the winner's abort goes through
		}
	}
	if f.held() != 0 {
		t.Errorf("%d reservations held after the aborts", f.held())
	}
}

// TestCallWithoutOwnerIsNobodys: a call the server holds state for but no
// owner (opened by a privnotes from before the binding, or its record
// lost) is continued by no client: its reservation lapses, nothing is
// charged.
func TestCallWithoutOwnerIsNobodys(t *testing.T) {
	f := newFixture(t)
	c := f.client(10 * time.Second)
	ctx := context.Background()
	a := fedCall(t, f, "legacy")
	if _, err := c.FedPrepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	f.stop()
	h := sha256.Sum256([]byte(a.ID))
	if err := os.Remove(filepath.Join(f.state, "service", "calls", hex.EncodeToString(h[:])+".json")); err != nil {
		t.Fatal(err)
	}
	f.start(f.addr)
	if _, err := c.FedPrepare(ctx, a); !notYours(err) {
		t.Errorf("a prepare of an ownerless call: %v", err)
	}
	if _, err := c.FedCommit(ctx, a); !notYours(err) {
		t.Errorf("a commit of an ownerless call: %v", err)
	}
	if f.charges() != 0 {
		t.Errorf("%d charges", f.charges())
	}
}
