package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// fakeMember is a member executor whose prepare, commit or abort fails
// as told; it records the phases it was asked, in order.
type fakeMember struct {
	id                                 int64
	failPrepare, failCommit, failAbort error
	asked                              []string
}

func (f *fakeMember) DryRun(_ context.Context, c Call, _ Gate) (*Receipt, error) {
	return &Receipt{Dataset: c.Dataset.Name, Function: c.Func, Cost: accounting.Pure(1), Eps: 1, Delta: 1e-6, Charge: Charge{Remaining: accounting.Budget{Eps: 9}}}, nil
}
func (f *fakeMember) FedPrepare(context.Context, Call) (time.Time, error) {
	f.asked = append(f.asked, "prepare")
	return time.Now().Add(time.Minute), f.failPrepare
}
func (f *fakeMember) FedCommit(context.Context, Call) (*Receipt, error) {
	f.asked = append(f.asked, "commit")
	if f.failCommit != nil {
		return nil, f.failCommit
	}
	return &Receipt{Charged: true, Charge: Charge{LedgerID: f.id}, Cost: accounting.Pure(1)}, nil
}
func (f *fakeMember) FedAbort(context.Context, Call) error {
	f.asked = append(f.asked, "abort")
	return f.failAbort
}
func (f *fakeMember) FedRound(context.Context, Call, federated.PCARequest) (federated.PCAReply, error) {
	f.asked = append(f.asked, "round")
	return federated.PCAReply{}, Errorf(NameProviderFailed, "gone")
}

// TestOpenFederationTwoPhase: a member that cannot prepare leaves nothing
// charged anywhere (every reservation made is aborted, the failed
// member's too when its outcome is unknown) and the error says so; a
// commit that fails after another member committed reports the charge
// that stands; the rounds start only after every member committed.
func TestOpenFederationTwoPhase(t *testing.T) {
	down := Errorf(NameProviderFailed, "p3 (127.0.0.1:1) is unreachable or stopped answering")
	refused := Errorf(NameDatasetError, "no dataset \"x\" is registered on this server")
	for _, tc := range []struct {
		name  string
		setup func(m []*fakeMember)
		want  []string // what each member was asked, joined
		errIs string
		msg   []string
	}{
		{"third down at prepare", func(m []*fakeMember) { m[2].failPrepare = down },
			[]string{"prepare abort", "prepare abort", "prepare abort"}, NameProviderFailed,
			[]string{"p3:x", "nothing was charged anywhere", "the reservations at p1:x, p2:x, p3:x were released"}},
		{"third refuses at prepare", func(m []*fakeMember) { m[2].failPrepare = refused },
			[]string{"prepare abort", "prepare abort", "prepare"}, NameDatasetError,
			[]string{"p3:x", "nothing was charged anywhere", "the reservations at p1:x, p2:x were released"}},
		{"first refuses at prepare", func(m []*fakeMember) { m[0].failPrepare = refused },
			[]string{"prepare", "", ""}, NameDatasetError,
			[]string{"nothing was charged anywhere: no member had reserved anything"}},
		{"third down, second's abort lost", func(m []*fakeMember) {
			m[2].failPrepare = down
			m[1].failAbort = Errorf(NameProviderFailed, "gone")
			m[2].failAbort = Errorf(NameProviderFailed, "gone")
		},
			[]string{"prepare abort", "prepare abort", "prepare abort"}, NameProviderFailed,
			[]string{"nothing was charged anywhere", "at p1:x were released", "p2:x, p3:x could not be told", "cannot be charged"}},
		{"second dies at commit", func(m []*fakeMember) { m[1].failCommit = down },
			[]string{"prepare commit", "prepare commit abort", "prepare abort"}, NameProviderFailed,
			[]string{"p2:x failed to commit", "charges made at p1:x (ledger record 1) stand", "whether p2:x charged is in its ledger", "nothing was released"}},
		{"first's reservation expired", func(m []*fakeMember) {
			m[0].failCommit = Errorf(NameArgumentError, "the reservation expired")
		},
			[]string{"prepare commit abort", "prepare abort", "prepare abort"}, NameArgumentError,
			[]string{"nothing was charged anywhere"}},
		{"every member commits, then a round fails", func([]*fakeMember) {},
			[]string{"prepare commit round", "prepare commit round", "prepare commit round"}, NameProviderFailed,
			[]string{"the charges at p1:x (ledger record 1), p2:x (ledger record 2), p3:x (ledger record 3) stand"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakes := []*fakeMember{{id: 1}, {id: 2}, {id: 3}}
			tc.setup(fakes)
			args := mustArgs("private_pca", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6, "method": "federated", "iters": 2})
			var members []Member
			for i, f := range fakes {
				members = append(members, Member{Label: fmt.Sprintf("p%d:x", i+1), Exec: f,
					Call: Call{Func: "private_pca", Dataset: Ref{Name: "x", Schema: ledger.Schema{D: 3}}, Args: args}})
			}
			_, err := RunFederatedPCA(context.Background(), members, nil)
			var e *Error
			if !errors.As(err, &e) || e.Name != tc.errIs {
				t.Fatalf("error %v, want %s", err, tc.errIs)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("the error does not say %q:\n%v", m, err)
				}
			}
			for i, f := range fakes {
				if got := strings.Join(f.asked, " "); got != tc.want[i] {
					t.Errorf("p%d was asked %q, want %q", i+1, got, tc.want[i])
				}
			}
		})
	}
}
