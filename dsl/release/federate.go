package release

// Federated DPS-PCA across executors: private_pca(federate(h1, h2, ...),
// method="federated") with each member dataset a provider on its own
// executor (a data service, or this process's Local). Paper: Ge, Wang,
// Wang, Liu, AISTATS 2018 (seed 003), federated.md §1.3–1.4; the
// provider's rounds are mechanisms/federated.Session, the coordinator's
// aggregation federated.PCAPlan.Coordinate, the same code as the
// in-process method.
//
// Sequence: every member plans (DryRun: arguments, dataset, budget; free)
// → the caller's gate admits the cost once → every member prepares the
// call (reserves its cost in its own ledger under the call id: reads no
// data, charges nothing) → only when every member prepared, every member
// commits (its reservation becomes its charge, then it loads its data);
// a member that fails to prepare makes the coordinator abort the others'
// reservations, so nothing is charged anywhere → the rounds, each
// answered by every member with the noise of its own plan → a release
// whose receipt lists every member's charge. private_fedrep on
// a federation (federate_fedrep.go) shares the first two phases and the
// members' sessions; its rounds are fedrep.Silo's.

import (
	"context"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// FedProvider is the executor of one member of a federated call.
type FedProvider interface {
	// DryRun plans the member's call and checks its budget; it charges
	// nothing and reads no data.
	DryRun(ctx context.Context, call Call, gate Gate) (*Receipt, error)
	// FedPrepare plans the member's call from public facts and reserves
	// its cost in the member's ledger under call.ID until the returned
	// expiry (idempotent per call.ID). It reads no data and charges
	// nothing; the reservation counts against the member's budget.
	FedPrepare(ctx context.Context, call Call) (expires time.Time, err error)
	// FedCommit turns call's reservation into the member's charge
	// (idempotent per call.ID) and makes the member ready to answer the
	// call's rounds: only then does it read data.
	FedCommit(ctx context.Context, call Call) (*Receipt, error)
	// FedAbort releases call's reservation if it was not committed. It
	// is idempotent; aborting a committed call is refused.
	FedAbort(ctx context.Context, call Call) error
	// FedRound answers one round of an opened call. The request's Sigma
	// is ignored: the member adds the noise of its own plan. The reply's
	// Count is 0: a member's record count does not leave it.
	FedRound(ctx context.Context, call Call, req federated.PCARequest) (federated.PCAReply, error)
}

// Member is one dataset of a federation.
type Member struct {
	// Label names the member in receipts and errors ("p1:census").
	Label string
	Exec  FedProvider
	// Call is the member's call: Func, Dataset, Args and Cell (its ID is
	// set by RunFederatedPCA).
	Call Call
}

// ProviderCharge is one member's part of a federated receipt. All public.
type ProviderCharge struct {
	Member    string
	Charged   bool
	LedgerID  int64
	Cost      string
	Remaining accounting.Budget
}

// dpspcaOptions are the DPS-PCA options of a private_pca call's keywords
// for d columns (the in-process method and every federation member).
func dpspcaOptions(a *Args, d int) federated.PCAOptions {
	calib := federated.CalibZCDP
	if a.Str("calibration") == "paper" {
		calib = federated.CalibPaper
	}
	s := a.Int("sparsity")
	if s == 0 {
		s = d
	}
	return federated.PCAOptions{K: a.Int("k"), Sparsity: s, Iters: a.Int("iters"), Eps: a.Float("eps"), Delta: a.Float("delta"), Calibration: calib}
}

// fedCall checks that call is a federation member's private_pca call and
// returns its DPS-PCA plan.
func fedCall(call Call) (*federated.PCAPlan, error) {
	if call.Func != catalog.PrivatePCA.Name || call.Args == nil || call.Args.Str("method") != "federated" {
		return nil, Errorf(NameArgumentError, "%s: a federated handle runs method=\"federated\" only (DPS-PCA, each provider adding its own noise)", catalog.PrivatePCA.Name)
	}
	if p := call.Args.Int("providers"); p > 1 {
		return nil, Errorf(NameArgumentError, "%s: providers=%d: on a federated handle each dataset is one provider; leave providers out", catalog.PrivatePCA.Name, p)
	}
	pl, err := federated.PlanPCA(dpspcaOptions(call.Args, call.Dataset.Schema.D), call.Dataset.Schema.D)
	if err != nil {
		return nil, argErr(catalog.PrivatePCA.Name, err)
	}
	return pl, nil
}
