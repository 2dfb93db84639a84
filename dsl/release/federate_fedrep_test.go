package release

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// pcaOnly is a member executor that answers DPS-PCA rounds only (as a data
// server of this build does); it records what it was asked.
type pcaOnly struct{ asked []string }

func (p *pcaOnly) DryRun(context.Context, Call, Gate) (*Receipt, error) {
	p.asked = append(p.asked, "DryRun")
	return nil, errors.New("not reached")
}
func (p *pcaOnly) FedPrepare(context.Context, Call) (time.Time, error) {
	p.asked = append(p.asked, "FedPrepare")
	return time.Time{}, errors.New("not reached")
}
func (p *pcaOnly) FedCommit(context.Context, Call) (*Receipt, error) {
	p.asked = append(p.asked, "FedCommit")
	return nil, errors.New("not reached")
}
func (p *pcaOnly) FedAbort(context.Context, Call) error {
	p.asked = append(p.asked, "FedAbort")
	return errors.New("not reached")
}
func (p *pcaOnly) FedRound(context.Context, Call, federated.PCARequest) (federated.PCAReply, error) {
	p.asked = append(p.asked, "FedRound")
	return federated.PCAReply{}, errors.New("not reached")
}

// A federated FedRep call with a member that answers no FedRep rounds, or
// members of different dimensions, is refused before any member is
// planned or charged.
func TestFederatedFedRepRefusesBeforeAnyMember(t *testing.T) {
	args := mustArgs("private_fedrep", map[string]any{"k": 1, "eps": 1.0, "delta": 1e-6})
	ref := func(d int) Ref { return Ref{Name: "x", Schema: ledger.Schema{D: d, Unit: "user", Label: "y"}} }
	for _, tc := range []struct {
		name string
		d    [2]int
		want string
	}{
		{"pca-only member", [2]int{3, 3}, NameNotAvailable},
		{"mismatched d", [2]int{3, 4}, NameArgumentError},
	} {
		a, b := &pcaOnly{}, &pcaOnly{}
		members := []Member{
			{Label: "p1:x", Exec: a, Call: Call{Func: "private_fedrep", Dataset: ref(tc.d[0]), Args: args}},
			{Label: "p2:x", Exec: b, Call: Call{Func: "private_fedrep", Dataset: ref(tc.d[1]), Args: args}},
		}
		_, err := RunFederatedFedRep(context.Background(), members, nil)
		var e *Error
		if !errors.As(err, &e) || e.Name != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
		if len(a.asked)+len(b.asked) != 0 {
			t.Errorf("%s: members were asked %v, %v before the refusal", tc.name, a.asked, b.asked)
		}
	}
}
