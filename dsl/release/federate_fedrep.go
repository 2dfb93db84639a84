package release

// Private FedRep across executors: private_fedrep(federate(h1, h2, ...))
// with each member dataset a silo on its own executor. Paper: Snedeker,
// Zhou, Bassily (seed 004), Algorithms 2 and 1; federated.md §2.3 for the
// calibration each silo makes for its own users. The silo's rounds are
// mechanisms/fedrep.Silo, the coordinator's loop fedrep.Plan.
// CoordinateSilos; the central run is the same loop over one silo.
//
// Each silo plans, charges and noises as the central private_fedrep on its
// own dataset would (its own clip, its own public number of users, the
// central σ), so each silo's users have the full (ε, δ) guarantee from the
// silo's releases alone. The coordinator averages the silos' noisy
// averages: with S equal silos its step carries √S times the central
// run's noise (docs/mechanisms.md, Private FedRep).

import (
	"context"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
)

// FedRepProvider is the executor of one silo of a federated private_fedrep
// call: a FedProvider that also answers FedRep rounds.
type FedRepProvider interface {
	FedProvider
	// FedRepRound answers one round of an opened private_fedrep call with
	// the silo's noisy average, noised by the silo's own plan. index is
	// the round's number across both steps (fedrep.Plan.RoundIndex), under
	// which a data service keeps its reply.
	FedRepRound(ctx context.Context, call Call, index int, req fedrep.Request) (fedrep.SiloReply, error)
}

// fedRepCoordinatorPlan checks a member's private_fedrep call from its
// arguments alone and returns the coordinator's plan: the public shape of
// the run (d, k, rounds, step size, initialisation), the same for every
// member. Its noise and number of users are unused: the silos noise.
func fedRepCoordinatorPlan(call Call) (*fedrep.Plan, error) {
	if call.Func != catalog.PrivateFedRep.Name || call.Args == nil {
		return nil, Errorf(NameArgumentError, "%s: not a private_fedrep call", call.Func)
	}
	if call.Args.Str(NameKeyword) != "" {
		return nil, Errorf(NameArgumentError, "%s: name= is not available on a federated handle; leave name out", catalog.PrivateFedRep.Name)
	}
	if err := checkFedRepK(call.Dataset, call.Args); err != nil {
		return nil, err
	}
	opt, _, err := fedRepOptions(&Local{}, call.Args, call.Dataset.Schema)
	if err != nil {
		return nil, err
	}
	pl, err := fedrep.PlanRun(opt, call.Dataset.Schema.D, 1)
	if err != nil {
		return nil, argErr(catalog.PrivateFedRep.Name, err)
	}
	return pl, nil
}

// RunFederatedFedRep runs Private FedRep over members, each a silo on its
// own executor, and returns the release with a receipt listing every
// member's charge. gate is asked once, with the call's cost.
func RunFederatedFedRep(ctx context.Context, members []Member, gate Gate) (*Release, error) {
	if len(members) == 0 {
		return nil, Errorf(NameArgumentError, "%s: a federation needs at least one dataset", catalog.PrivateFedRep.Name)
	}
	if err := sameDim(members); err != nil {
		return nil, err
	}
	execs := make([]FedRepProvider, len(members))
	for i, m := range members {
		fp, ok := m.Exec.(FedRepProvider)
		if !ok {
			return nil, Errorf(NameNotAvailable, "%s: %s cannot take part in a federated FedRep call (its executor answers no FedRep rounds); nothing was charged", catalog.PrivateFedRep.Name, m.Label)
		}
		execs[i] = fp
	}
	pl, err := fedRepCoordinatorPlan(members[0].Call)
	if err != nil {
		return nil, err
	}
	calls, rcpt, err := openFederation(ctx, members, gate, "federated/fedrep",
		"each silo clipped and noised its own users' contributions with its own plan, charged its own ledger and sent only noisy averages; the coordinator averaged them (√(silos) times the central noise for equal silos)")
	if err != nil {
		return nil, err
	}
	tr := &fedRepTransport{pl: pl, members: members, execs: execs, calls: calls}
	res, err := pl.CoordinateSilos(ctx, tr)
	if err != nil {
		return nil, roundsFailed(err, rcpt)
	}
	return &Release{Value: &FedRep{U: res.U}, Receipt: rcpt, Columns: members[0].Call.Dataset.Schema.Columns}, nil
}

// fedRepTransport carries the rounds to the silos, all at once.
type fedRepTransport struct {
	pl      *fedrep.Plan
	members []Member
	execs   []FedRepProvider
	calls   []Call
}

func (t *fedRepTransport) Providers() int { return len(t.members) }

func (t *fedRepTransport) Round(ctx context.Context, req fedrep.Request, recv func(int, fedrep.SiloReply) error) error {
	index := t.pl.RoundIndex(req)
	return roundAll(t.members, index, func(i int) (func() error, error) {
		rep, err := t.execs[i].FedRepRound(ctx, t.calls[i], index, req)
		return func() error { return recv(i, rep) }, err
	})
}

var _ FedRepProvider = (*Local)(nil)

// FedRepRequestAt is the silo request of round index of the federated
// private_fedrep call (its step and per-step round, from the call's public
// arguments), as a data service decodes a round it receives.
func FedRepRequestAt(call Call, index int) (fedrep.Request, error) {
	pl, err := fedRepCoordinatorPlan(call)
	if err != nil {
		return fedrep.Request{}, err
	}
	if index < 0 || index >= pl.Rounds() {
		return fedrep.Request{}, Errorf(NameArgumentError, "%s: round %d is outside the call's %d rounds", catalog.PrivateFedRep.Name, index, pl.Rounds())
	}
	return pl.RequestAt(index), nil
}
