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
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
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

// fedSession is an opened member call of a Local.
type fedSession struct {
	mu   sync.Mutex
	s    *federated.Session // private_pca's DPS-PCA provider, or
	silo *fedrep.Silo       // private_fedrep's silo
	data *Data
	rc   *Receipt
	last atomic.Int64 // unix nanoseconds of the last use
}

// FedIdle is how long an opened call may wait for its next round before
// its data are closed (a coordinator that went away). A data service
// resumes such a call from its ledger charge and kept rounds if the
// coordinator comes back (FedResume); in-process, the call is over.
var FedIdle = 30 * time.Minute

// sweepFed closes the calls of env idle for longer than FedIdle.
func (env *Local) sweepFed() {
	cutoff := time.Now().Add(-FedIdle).UnixNano()
	fedSessions.Range(func(k, v any) bool {
		key, sess := k.(fedKey), v.(*fedSession)
		if key.env != env || sess.last.Load() > cutoff || !sess.mu.TryLock() {
			return true
		}
		if sess.data != nil {
			sess.data.Close()
			sess.data = nil
		}
		fedSessions.CompareAndDelete(key, sess)
		sess.mu.Unlock()
		return true
	})
}

// fedSessions holds the opened calls of every Local, by executor and id.
var fedSessions sync.Map // fedKey → *fedSession

type fedKey struct {
	env *Local
	id  string
}

// FedReserve is how long a prepared member call holds its reservation
// when nobody commits or aborts it (its coordinator went away): after it,
// the reservation no longer counts against the budget and cannot be
// committed. `privnotes serve --fed-reserve` sets it.
var FedReserve = 10 * time.Minute

// fedPlan plans a member call from this executor's registry and public
// facts only, as every phase of the call does.
func (env *Local) fedPlan(call Call) (*Plan, accounting.Event, error) {
	if call.ID == "" {
		return nil, accounting.Event{}, Errorf(NameArgumentError, "%s: a federated call needs a call id", call.Func)
	}
	if _, err := fedRounds(call); err != nil {
		return nil, accounting.Event{}, err
	}
	p, err := env.Plan(call)
	if err != nil {
		return nil, accounting.Event{}, err
	}
	ev := p.Event()
	if err := ev.Validate(); err != nil {
		return nil, accounting.Event{}, Errorf(NameArgumentError, "%s: %v", p.Func, err)
	}
	return p, ev, nil
}

// FedPrepare implements FedProvider: it plans call and reserves its cost
// in the ledger (no gate: the coordinator's caller admitted the call
// once). A public synthetic dataset has nothing to reserve.
func (env *Local) FedPrepare(ctx context.Context, call Call) (time.Time, error) {
	p, ev, err := env.fedPlan(call)
	if err != nil || call.Dataset.Synthetic() {
		return time.Time{}, err
	}
	st, err := env.store()
	if err != nil {
		return time.Time{}, err
	}
	r, err := st.Reserve(ctx, call.ID, call.Dataset.Name, ev, chargeMeta(call, p, nil), FedReserve)
	if err != nil {
		return time.Time{}, reserveErr(ctx, call, ev, err, "nothing was reserved or charged")
	}
	return r.Expires, nil
}

// FedCommit implements FedProvider: it charges call's reservation, then
// loads the data and keeps the call open for its rounds. A retry returns
// the first commit's receipt; a commit found already made by an earlier
// run of this executor (a restarted data service) opens nothing: the
// service resumes the call after the rounds it kept (FedResume).
func (env *Local) FedCommit(ctx context.Context, call Call) (*Receipt, error) {
	env.sweepFed()
	key := fedKey{env, call.ID}
	if v, ok := fedSessions.Load(key); ok {
		return v.(*fedSession).rc, nil // a retry of the commit
	}
	p, ev, err := env.fedPlan(call)
	if err != nil {
		return nil, err
	}
	var ch Charge
	first := true
	if !call.Dataset.Synthetic() {
		st, err := env.store()
		if err != nil {
			return nil, err
		}
		rec, ok, err := st.CommitReserved(ctx, call.ID, ev)
		if err != nil {
			return nil, reserveErr(ctx, call, ev, err, "nothing was charged")
		}
		first = ok
		ch = ledgerCharge(rec)
	}
	rc := newReceipt(call.Dataset, p, ev, ch)
	if !first {
		return rc, nil
	}
	sess, err := env.fedSession(ctx, call, 0)
	if err != nil {
		// After the charge: a provider failure, whose charge stands.
		return nil, Errorf(NameProviderFailed, "%s (ledger record %d stands)", err.Error(), ch.LedgerID)
	}
	sess.rc = rc
	fedSessions.Store(key, sess)
	return rc, nil
}

// FedAbort implements FedProvider.
func (env *Local) FedAbort(ctx context.Context, call Call) error {
	if call.ID == "" {
		return Errorf(NameArgumentError, "%s: a federated call needs a call id", call.Func)
	}
	if call.Dataset.Synthetic() {
		return nil
	}
	st, err := env.store()
	if err != nil {
		return err
	}
	if _, err := st.AbortReserved(ctx, call.ID); err != nil {
		return reserveErr(ctx, call, accounting.Event{}, err, "")
	}
	return nil
}

// committedText is how a refused abort of a committed call reads, here
// and across the wire (abortAll recognises it).
const committedText = "was committed: its charge stands and cannot be aborted"

// reserveErr names a ledger's refusal of a reservation, a commit or an
// abort of call; what says what the refusal left ("nothing was charged").
func reserveErr(ctx context.Context, call Call, ev accounting.Event, err error, what string) error {
	src := call.Dataset
	if what != "" {
		what = " (" + what + ")"
	}
	if be, ok := AsBudgetError(fmt.Sprintf("dataset %q", src.Name), err, false); ok {
		if n := ApproxNote(ev, src.Schema.Accountant); n != "" {
			be.Notes = append(be.Notes, n)
		}
		return be
	}
	switch {
	case errors.Is(err, ledger.ErrRegistrationChanged):
		return Errorf(NameDatasetError, "dataset %q was removed and registered again with another schema since this call was planned; open it again with dataset(%q)%s", src.Name, src.Name, what)
	case errors.Is(err, ledger.ErrReservationCommitted):
		return Errorf(NameArgumentError, "%s: call %s on %q %s", call.Func, call.ID, src.Name, committedText)
	case errors.Is(err, ledger.ErrReservationExpired):
		return Errorf(NameArgumentError, "%s: the reservation of call %s on %q expired before it was committed (it lapses %v after the prepare; the server's --fed-reserve); run the call again%s", call.Func, call.ID, src.Name, FedReserve, what)
	case errors.Is(err, ledger.ErrReservationAborted), errors.Is(err, ledger.ErrNoReservation), errors.Is(err, ledger.ErrReservationMismatch):
		return Errorf(NameArgumentError, "%s: call %s on %q: %v; run the call again%s", call.Func, call.ID, src.Name, err, what)
	case ctx.Err() != nil:
		return Errorf(NameInterrupted, "%s: interrupted%s", call.Func, what)
	}
	return Errorf(NameLedgerError, "%s on %q: %v%s", call.Func, src.Name, err, what)
}

// FedResume reopens a member call committed earlier (a data service
// restarted between rounds: its reservation under call.ID is committed in
// the ledger) at round next, the first round it has not answered. Nothing
// is charged; a call that was only prepared is refused.
func (env *Local) FedResume(ctx context.Context, call Call, next int) error {
	rounds, err := fedRounds(call)
	if err != nil {
		return err
	}
	if _, err := env.Plan(call); err != nil {
		return err
	}
	if !call.Dataset.Synthetic() {
		// Only a committed call reads data: a prepared one has paid nothing.
		st, err := env.store()
		if err != nil {
			return err
		}
		r, err := st.ReservationOf(call.ID)
		if err != nil && !errors.Is(err, ledger.ErrNoReservation) {
			return Errorf(NameLedgerError, "%s: reading the reservation of call %s: %v", call.Func, call.ID, err)
		}
		if err != nil || r.State != ledger.Committed {
			return Errorf(NameArgumentError, "%s: call %s is not committed on %q (commit it first; a prepared call reads no data)", call.Func, call.ID, call.Dataset.Name)
		}
	}
	if next >= rounds {
		return Errorf(NameArgumentError, "%s: call %s answered all its %d rounds", call.Func, call.ID, rounds)
	}
	sess, err := env.fedSession(ctx, call, next)
	if err != nil {
		return err
	}
	if _, loaded := fedSessions.LoadOrStore(fedKey{env, call.ID}, sess); loaded && sess.data != nil {
		sess.data.Close()
	}
	return nil
}

// FedOpened reports whether call id is open on env.
func (env *Local) FedOpened(id string) bool {
	_, ok := fedSessions.Load(fedKey{env, id})
	return ok
}

// fedRounds checks that call is a federation member's call (private_pca
// with method "federated", or private_fedrep) from its arguments alone and
// returns the number of rounds it answers.
func fedRounds(call Call) (int, error) {
	if call.Func == catalog.PrivateFedRep.Name {
		pl, err := fedRepCoordinatorPlan(call)
		if err != nil {
			return 0, err
		}
		return pl.Rounds(), nil
	}
	fpl, err := fedCall(call)
	if err != nil {
		return 0, err
	}
	return fpl.Rounds(), nil
}

// fedSession loads call's data (after its charge) as one provider: a
// DPS-PCA provider (private_pca) or a FedRep silo (private_fedrep), each
// with the noise of this executor's own plan.
func (env *Local) fedSession(ctx context.Context, call Call, next int) (*fedSession, error) {
	src := call.Dataset
	mech := "federated/dpspca"
	if call.Func == catalog.PrivateFedRep.Name {
		mech = "federated/fedrep"
	}
	data, err, pv := guarded(func() (*Data, error) { return env.load(src) })
	if err != nil || pv != nil {
		why := loadFailure
		if pv == nil {
			why = loadError(err)
		}
		return nil, Errorf(NameLedgerError, "%s: the data of %q could not be read after the charge: %s", call.Func, src.Name, why)
	}
	sess := &fedSession{data: data}
	_, err, pv = guarded(func() (struct{}, error) {
		if call.Func == catalog.PrivateFedRep.Name {
			pl, n, _, err := fedRepPlan(env, src, call.Args, nil)
			if err != nil {
				return struct{}{}, err
			}
			users, err := env.fedRepUsers(ctx, src, data, call.Args.Int("k"), n)
			if err != nil {
				return struct{}{}, err
			}
			sess.silo, err = fedrep.NewSilo(pl, users, next)
			return struct{}{}, err
		}
		fpl, err := fedCall(call)
		if err != nil {
			return struct{}{}, err
		}
		// The users' means a window at a time, the window of the plan
		// the call was checked with before its charge (the same public
		// facts give the same plan; were it to fail now, all users at
		// once, as before windows).
		window := 0
		if p, err := env.Plan(call); err == nil {
			window = p.userWindow
		}
		us, err := unitSource(ctx, data, window)
		if err != nil {
			return struct{}{}, err
		}
		clip, err := clipOf(catalog.PrivatePCA.Name, call.Args, src.Schema)
		if err != nil {
			return struct{}{}, err
		}
		prov, err := federated.NewPCAProviderSource(scaledSource(us, clip), env.sampler())
		if err != nil {
			return struct{}{}, err
		}
		sess.s, err = federated.NewSession(fpl, prov, next)
		return struct{}{}, err
	})
	if err != nil || pv != nil {
		data.Close()
		return nil, Errorf(NameMechanismFailed, "%s (%s) could not start on %q; the reason is not shown because it may depend on the data", call.Func, mech, src.Name)
	}
	sess.last.Store(time.Now().UnixNano())
	return sess, nil
}

// FedRound implements FedProvider.
func (env *Local) FedRound(ctx context.Context, call Call, req federated.PCARequest) (federated.PCAReply, error) {
	var rep federated.PCAReply
	err := env.fedAnswer(ctx, call, req.Round, func(sess *fedSession) (bool, error) {
		if sess.s == nil {
			return false, Errorf(NameArgumentError, "%s: call %s is not a DPS-PCA call", call.Func, call.ID)
		}
		var err error
		rep, err = sess.s.Answer(ctx, req)
		return sess.s.Done(), err
	})
	return rep, err
}

// FedRepRound implements FedRepProvider: one round of an opened
// private_fedrep call, answered by this executor's silo.
func (env *Local) FedRepRound(ctx context.Context, call Call, index int, req fedrep.Request) (fedrep.SiloReply, error) {
	var rep fedrep.SiloReply
	err := env.fedAnswer(ctx, call, index, func(sess *fedSession) (bool, error) {
		if sess.silo == nil {
			return false, Errorf(NameArgumentError, "%s: call %s is not a FedRep call", call.Func, call.ID)
		}
		var err error
		rep, err = sess.silo.Answer(ctx, req)
		return sess.silo.Done(), err
	})
	return rep, err
}

// fedAnswer runs answer on call's open session (it reports whether the
// session is done, closing it, and the answer's error) and names the
// failure from public facts only.
func (env *Local) fedAnswer(ctx context.Context, call Call, round int, answer func(*fedSession) (bool, error)) error {
	key := fedKey{env, call.ID}
	v, ok := fedSessions.Load(key)
	if !ok {
		return Errorf(NameArgumentError, "%s: call %s is not open here (open it first; a finished call answers no more rounds)", call.Func, call.ID)
	}
	sess := v.(*fedSession)
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.data == nil { // closed by sweepFed meanwhile
		return Errorf(NameArgumentError, "%s: call %s is not open here (it waited more than %v for a round)", call.Func, call.ID, FedIdle)
	}
	sess.last.Store(time.Now().UnixNano())
	done, err, pv := guarded(func() (bool, error) { return answer(sess) })
	if done && sess.data != nil {
		sess.data.Close()
		sess.data = nil
		fedSessions.CompareAndDelete(key, sess)
	}
	var e *Error
	switch {
	case pv == nil && err == nil:
		return nil
	case pv == nil && errors.As(err, &e) && e.Name == NameArgumentError:
		return err // public: the session's kind
	case pv == nil && (errors.Is(err, federated.ErrRound) || errors.Is(err, fedrep.ErrRound)):
		return Errorf(NameArgumentError, "%s: %v", call.Func, err) // public: the request and the plan
	case ctx.Err() != nil:
		return Errorf(NameInterrupted, "%s: round %d was interrupted", call.Func, round)
	}
	mech := "federated/dpspca"
	if call.Func == catalog.PrivateFedRep.Name {
		mech = "federated/fedrep"
	}
	return Errorf(NameMechanismFailed, "%s (%s) could not answer round %d on %q; the reason is not shown because it may depend on the data", call.Func, mech, round, call.Dataset.Name)
}

// RunFederatedPCA runs DPS-PCA over members, each a provider on its own
// executor, and returns the release with a receipt listing every member's
// charge. gate is asked once, with the call's cost: a member's release is
// DP with respect to its own data, and members hold different data.
func RunFederatedPCA(ctx context.Context, members []Member, gate Gate) (*Release, error) {
	if len(members) == 0 {
		return nil, Errorf(NameArgumentError, "%s: a federation needs at least one dataset", catalog.PrivatePCA.Name)
	}
	if err := sameDim(members); err != nil {
		return nil, err
	}
	fpl, err := fedCall(members[0].Call)
	if err != nil {
		return nil, err
	}
	calls, rcpt, err := openFederation(ctx, members, gate, "federated/dpspca",
		"each provider planned its own noise, charged its own ledger and sent only noisy statistics; no provider's row count left it")
	if err != nil {
		return nil, err
	}
	// 4. The rounds.
	tr := &fedTransport{members: members, calls: calls}
	res, err := fpl.Coordinate(ctx, tr)
	if err != nil {
		return nil, roundsFailed(err, rcpt)
	}
	return &Release{Value: &PCA{Components: res.Q, Support: append([]int(nil), res.Support...)}, Receipt: rcpt, Columns: members[0].Call.Dataset.Schema.Columns}, nil
}

// sameDim refuses members of different dimensions.
func sameDim(members []Member) error {
	d := members[0].Call.Dataset.Schema.D
	for _, m := range members {
		if m.Call.Dataset.Schema.D != d {
			return Errorf(NameArgumentError, "%s: the federated datasets must share their dimension: %s has d=%d, %s has d=%d", m.Call.Func, members[0].Label, d, m.Label, m.Call.Dataset.Schema.D)
		}
	}
	return nil
}

// roundsFailed is the error of a federated call whose rounds failed after
// every member was charged.
func roundsFailed(err error, rcpt *Receipt) error {
	var e *Error
	if errors.As(err, &e) {
		e.Msg += fmt.Sprintf("; the charges at %s stand (each member's answers so far are DP releases of its own data)", chargesList(rcpt.Providers))
		return e
	}
	return Errorf(NameMechanismFailed, "%s (%s) could not finish; the charges at %s stand", rcpt.Function, rcpt.Mechanism, chargesList(rcpt.Providers))
}

// openFederation runs the first phases of every federated call: plan
// every member (free; everything that can fail from public facts fails
// here), ask gate once, prepare (reserve at) every member under one call
// id, and only when all prepared, commit (charge) every member. It
// returns the members' calls and the receipt listing the charges.
func openFederation(ctx context.Context, members []Member, gate Gate, mech, note string) ([]Call, *Receipt, error) {
	fn := members[0].Call.Func
	// 1. Plan everywhere.
	plans := make([]*Receipt, len(members))
	for i, m := range members {
		rc, err := m.Exec.DryRun(ctx, m.Call, nil)
		if err != nil {
			return nil, nil, memberErr(m, err, "nothing was charged")
		}
		plans[i] = rc
	}
	ev := plans[0].Cost
	commit, abort := func() string { return "" }, func() {}
	if gate != nil {
		var err error
		if commit, abort, err = gate.Admit(ctx, ev, members[0].Call.Dataset); err != nil {
			return nil, nil, err
		}
	}
	id := rand.Text()
	calls := make([]Call, len(members))
	rcpt := &Receipt{Dataset: Federation(members), Function: fn, Mechanism: mech,
		Eps: plans[0].Eps, Delta: plans[0].Delta, Cost: ev, Charge: Charge{Accountant: plans[0].Accountant, Filter: plans[0].Filter},
		NoiseScale: fedNoiseScale(plans[0].NoiseScale, len(members)),
		Params:     map[string]any{},
		Note:       note}
	for k, v := range plans[0].Params {
		rcpt.Params[k] = v
	}
	rcpt.Params["providers"] = len(members)
	for i, m := range members {
		calls[i] = m.Call
		calls[i].ID = fmt.Sprintf("%s-%d", id, i)
	}
	// 2. Prepare every member: each reserves its cost in its own ledger;
	// nothing is charged or read. One that cannot (down, refusing) makes
	// the call end here with every reservation released.
	for i, m := range members {
		if _, err := m.Exec.FedPrepare(ctx, calls[i]); err != nil {
			// The failed member too, when it may have reserved (its
			// answer was lost): abort is idempotent.
			upto := i
			if unknownOutcome(err) {
				upto = i + 1
			}
			released := abortAll(ctx, members[:upto], calls[:upto])
			abort()
			return nil, nil, memberErr(m, err, "nothing was charged anywhere: "+released)
		}
	}
	// 3. Every member prepared: commit each (its reservation becomes its
	// charge; then it reads its data).
	for i, m := range members {
		rc, err := m.Exec.FedCommit(ctx, calls[i])
		if err != nil {
			released := abortAll(ctx, members[i:], calls[i:])
			if len(rcpt.Providers) == 0 && !unknownOutcome(err) {
				abort()
				return nil, nil, memberErr(m, err, "nothing was charged anywhere: "+released)
			}
			rcpt.Block = commit()
			return nil, nil, Errorf(NameProviderFailed, "%s: %s failed to commit the call: %v; %s; %s; nothing was released", fn, m.Label, err, chargesStand(rcpt.Providers, m, err), released)
		}
		rcpt.Charged = rcpt.Charged || rc.Charged
		rcpt.Providers = append(rcpt.Providers, chargeOf(m.Label, rc))
	}
	rcpt.Block = commit()
	return calls, rcpt, nil
}

// fedNoiseScale is a federated receipt's noise line from a member's.
func fedNoiseScale(member string, providers int) string {
	return strings.TrimSuffix(member, ", 1 provider(s)") + fmt.Sprintf(", added by each of the %d providers to its own statistics", providers)
}

// DryRunFederated plans a federated call (private_pca or private_fedrep)
// on every member, as the run's first phase does, and says what it would
// cost each member and leave there; nothing is charged or read anywhere.
func DryRunFederated(ctx context.Context, members []Member, gate Gate) (*Receipt, error) {
	if len(members) == 0 {
		return nil, Errorf(NameArgumentError, "a federation needs at least one dataset")
	}
	if _, err := fedRounds(members[0].Call); err != nil {
		return nil, err
	}
	var rcpt *Receipt
	for _, m := range members {
		rc, err := m.Exec.DryRun(ctx, m.Call, nil)
		if err != nil {
			return nil, memberErr(m, err, "nothing was charged")
		}
		if rcpt == nil {
			cp := *rc
			rcpt = &cp
			rcpt.Dataset, rcpt.LedgerID = Federation(members), 0
			rcpt.NoiseScale = fedNoiseScale(rc.NoiseScale, len(members))
		}
		pc := chargeOf(m.Label, rc)
		pc.Charged = false
		rcpt.Providers = append(rcpt.Providers, pc)
	}
	if gc, ok := gate.(GateChecker); ok {
		if err := gc.Check(rcpt.Cost, members[0].Call.Dataset); err != nil {
			return nil, err
		}
	}
	rcpt.DryRun, rcpt.Charged = true, false
	return rcpt, nil
}

// Federation is the name of a federation in receipts.
func Federation(members []Member) string {
	labels := make([]string, len(members))
	for i, m := range members {
		labels[i] = m.Label
	}
	return "federate(" + strings.Join(labels, ", ") + ")"
}

func chargeOf(label string, rc *Receipt) ProviderCharge {
	return ProviderCharge{Member: label, Charged: rc.Charged, LedgerID: rc.LedgerID, Cost: CostString(rc.Cost), Remaining: rc.Remaining}
}

// unknownOutcome reports an error after which a member may have charged.
func unknownOutcome(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Name == NameProviderFailed || e.Name == NameInterrupted)
}

func chargesList(ps []ProviderCharge) string {
	var parts []string
	for _, p := range ps {
		if p.Charged {
			parts = append(parts, fmt.Sprintf("%s (ledger record %d)", p.Member, p.LedgerID))
		}
	}
	if len(parts) == 0 {
		return "no member"
	}
	return strings.Join(parts, ", ")
}

func chargesStand(ps []ProviderCharge, failed Member, err error) string {
	s := "charges made at " + chargesList(ps) + " stand"
	if unknownOutcome(err) {
		s += fmt.Sprintf(" (whether %s charged is in its ledger)", failed.Label)
	}
	return s
}

// abortTimeout bounds each abort the coordinator sends after a failed
// prepare or commit; it is sent even when the call was interrupted.
const abortTimeout = 30 * time.Second

// abortAll releases the reservations of members' calls and says what it
// did: which reservations were released, and which members could not be
// reached (theirs, if any, lapse at their expiry without a charge).
func abortAll(ctx context.Context, members []Member, calls []Call) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	var released, stuck, charged []string
	for i, m := range members {
		if err := m.Exec.FedAbort(ctx, calls[i]); err != nil {
			if e, ok := err.(*Error); ok && strings.Contains(e.Msg, committedText) {
				charged = append(charged, m.Label)
			} else {
				stuck = append(stuck, m.Label)
			}
			continue
		}
		released = append(released, m.Label)
	}
	var parts []string
	if len(released) > 0 {
		parts = append(parts, "the reservations at "+strings.Join(released, ", ")+" were released")
	}
	if len(stuck) > 0 {
		parts = append(parts, fmt.Sprintf("%s could not be told to release the call's reservation, if it holds one; it lapses at its expiry (the server's --fed-reserve, %v by default) and cannot be charged", strings.Join(stuck, ", "), FedReserve))
	}
	if len(charged) > 0 {
		parts = append(parts, strings.Join(charged, ", ")+" had committed the call: its charge stands")
	}
	if len(parts) == 0 {
		return "no member had reserved anything"
	}
	return strings.Join(parts, "; ")
}

// memberErr prefixes a member's error with its label, keeping its name.
func memberErr(m Member, err error, what string) error {
	var be *BudgetError
	if errors.As(err, &be) {
		be.Scope = m.Label + ": " + be.Scope
		return be
	}
	var e *Error
	if errors.As(err, &e) {
		return Errorf(e.Name, "%s: %s (%s)", m.Label, e.Msg, what)
	}
	return Errorf(NameProviderFailed, "%s: %v (%s)", m.Label, err, what)
}

// fedTransport carries the rounds to the members, all at once.
type fedTransport struct {
	members []Member
	calls   []Call
}

func (t *fedTransport) Providers() int { return len(t.members) }

func (t *fedTransport) Round(ctx context.Context, req federated.PCARequest, recv func(int, federated.PCAReply) error) error {
	return roundAll(t.members, req.Round, func(i int) (func() error, error) {
		rep, err := t.members[i].Exec.FedRound(ctx, t.calls[i], req)
		return func() error { return recv(i, rep) }, err
	})
}

// roundAll asks every member for its answer to round at once (ask(i)
// returns the member's error and a function handing its answer to the
// coordinator), then, if all answered, hands the answers over in order.
func roundAll(members []Member, round int, ask func(i int) (func() error, error)) error {
	deliver := make([]func() error, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() { deliver[i], errs[i] = ask(i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return Errorf(e.Name, "%s, round %d: %s", members[i].Label, round, e.Msg)
			}
			return Errorf(NameProviderFailed, "%s, round %d: %v", members[i].Label, round, err)
		}
	}
	for i, d := range deliver {
		if err := d(); err != nil {
			return Errorf(NameProviderFailed, "%s sent a reply the coordinator cannot use: %v", members[i].Label, err)
		}
	}
	return nil
}

// providerLines lists a federated receipt's charges, one line per member.
func (r *Receipt) providerLines() string {
	var b strings.Builder
	for _, p := range r.Providers {
		switch {
		case r.DryRun:
			fmt.Fprintf(&b, "\n  %s: would be charged %s and leave ε=%.6g, δ=%.6g", p.Member, p.Cost, p.Remaining.Eps, p.Remaining.Delta)
		case p.Charged:
			fmt.Fprintf(&b, "\n  %s: charged %s, ledger record %d there; remaining ε=%.6g, δ=%.6g", p.Member, p.Cost, p.LedgerID, p.Remaining.Eps, p.Remaining.Delta)
		default:
			fmt.Fprintf(&b, "\n  %s: not charged (public data)", p.Member)
		}
	}
	return b.String()
}
