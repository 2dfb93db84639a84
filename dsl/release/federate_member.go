package release

// The member side of a federated call (federate.go): a Local that
// prepares, commits or aborts its part and answers the coordinator's
// rounds with the noise of its own plan.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
)

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
