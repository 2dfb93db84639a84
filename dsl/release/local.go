package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// Plan is a validated private call: its exact cost, its public description
// and the run that may start once the cost is charged. Every field is
// public.
type Plan struct {
	Func   string
	Method string // the mechanism as the receipt names it
	Cost   accounting.Event
	Eps    float64
	Delta  float64
	Noise  string // the noise scale, in words (never a function of n)
	Note   string
	Params map[string]any
	// Columns are the column names the release refers to.
	Columns []string
	// HasValues is set when a PCA release carries eigenvalue estimates.
	HasValues bool
	// Memory is an upper bound on the memory the run needs, in bytes,
	// computed from public facts only (memory.go); the core refuses a
	// plan above the executor's limit before its charge. Every planner
	// sets it.
	Memory int64
	// RowBytes is what the run holds per privacy unit whose number is
	// private (0: nothing, the run streams): the part of its memory that
	// still grows with the private n after the charge. docs/mechanisms.md
	// lists it by mechanism; docs/threat-model.md says what it leaves.
	RowBytes int64
	// userWindow is the most users whose state the run holds at once on
	// user-level data (0: all), fixed from public facts by
	// setWindowedMemory; it changes the number of passes, never the
	// result.
	userWindow int
	// memoryFacts names the public facts the estimate was computed from,
	// and memoryAdvice what the caller can change to lower it.
	memoryFacts, memoryAdvice string

	run func(ctx context.Context, d *Data) (any, error)
	// sql is a private_sql plan's statement plan, which the engine of a
	// live table checks before the charge (engine.go).
	sql *sqlplan.Plan
	// tab is a column analysis's data pass (nil when it has none and
	// reads rows), which a live table prints and checks before the
	// charge (engine.go); rowSum is private_mean's row-vector sum, which
	// a live table computes in one statement, and moments private_pca's
	// second moment (gauss, npm), which a live table checks the length of.
	tab     *tabPass
	rowSum  *sqlplan.Moments
	moments *sqlplan.Moments
	// engine is what a live table's catalog check gave this plan before
	// its charge (engine.go; nil on other data): a re-plan of the same
	// call at another ε or δ reuses it (Local.plan).
	engine *engineFacts
	// progress relays the run's steps to the call's callback (WithProgress).
	progress progressRelay
}

// Event is the event a charge of p records: its cost with the
// calibration target and the mechanism's name filled in.
func (p *Plan) Event() accounting.Event {
	ev := p.Cost
	if !ev.HasTarget() {
		ev = ev.WithTarget(p.Eps, p.Delta)
	}
	if ev.Mechanism == "" {
		ev.Mechanism = p.Method
	}
	return ev
}

// Ticket is the proof of one charge for one plan. It is single use: the
// run consumes it, so a plan cannot run twice on one charge, and a ticket
// of another plan is refused.
type Ticket struct {
	plan     *Plan
	ledgerID int64
	used     atomic.Bool
}

// LedgerID is the ledger record of the charge (0 for public data).
func (t *Ticket) LedgerID() int64 { return t.ledgerID }

// errTicket is a programming error of the executor: it never reaches a
// cell with data-dependent text.
var errTicket = errors.New("release: a plan ran without its own unused ticket")

// runWith runs p on data, consuming t.
func (p *Plan) runWith(ctx context.Context, t *Ticket, data *Data, wrap RunWrapper) (any, error) {
	if t == nil || t.plan != p || !t.used.CompareAndSwap(false, true) {
		return nil, errTicket
	}
	run := p.run
	if wrap != nil {
		run = wrap(run)
	}
	return run(ctx, data)
}

// RunWrapper wraps a plan's run after its charge; tests use it to inject
// a mechanism that fails or panics. Cells cannot reach it.
type RunWrapper func(run func(context.Context, *Data) (any, error)) func(context.Context, *Data) (any, error)

// Local is the in-process Executor over a state directory's store.
type Local struct {
	// Store returns the ledger and registry; it is called only for
	// registered datasets.
	Store func() (*ledger.Store, error)
	// NewSampler returns the noise source of a call; nil means
	// noise.New, the crypto/rand sampler. Only tests set it, to make
	// statistical tests reproducible; nothing reachable from a cell can.
	NewSampler func() *noise.Sampler
	// Wrap, if set, returns the RunWrapper of a call (tests only).
	Wrap func() RunWrapper
	// MemoryLimit is the most memory one call's plan may estimate, in
	// bytes; 0 means the operator's PRIVNOTES_MEMORY_LIMIT, else
	// DefaultMemoryLimit (memory.go).
	MemoryLimit int64
	// Served marks the executor of a data service (service.NewServer
	// sets it): a client names the server's dataset in a private_sql
	// FROM as server.name, under the client's own name for the server,
	// so a FROM's server part names this executor's registry.
	Served bool

	// mu serializes charges: gate check, ledger charge and gate commit.
	mu sync.Mutex
}

func (env *Local) sampler() *noise.Sampler {
	if env != nil && env.NewSampler != nil {
		return env.NewSampler()
	}
	return noise.New()
}

// planner plans one private function's call from public facts.
type planner func(env *Local, src Ref, a *Args) (*Plan, error)

// planners are the private functions this executor plans, keyed by their
// catalog entry: the function's name is written only in dsl/catalog.
var planners = map[*catalog.Func]planner{
	catalog.PrivatePCA:    planPCA,
	catalog.PrivateFedRep: planFedRep,
	catalog.PrivateLowRank: func(env *Local, src Ref, a *Args) (*Plan, error) {
		return planEntry(env, fnLowRank, src, a)
	},
	catalog.PrivateClassifyJL: planClassifyJL, // classify.go
	catalog.PrivateCount:      planCount,
	catalog.PrivateMean:       planMean,

	// the column analyses (tabular.go)
	catalog.PrivateSum:       planSum,
	catalog.PrivateHistogram: planHistogram,
	catalog.PrivateQuantile:  planQuantile,

	// private SQL (sql.go)
	catalog.PrivateSQL: planSQL,

	// regression (regression.go)
	catalog.PrivateLinearRegression:   planLinearRegression,
	catalog.PrivateLogisticRegression: planLogisticRegression,

	// synthetic data (synthesize.go)
	catalog.PrivateSynthesize: planSynthesize,
}

// Plans reports whether this executor plans f's calls (the tests check
// that every private function of the catalog has a planner).
func Plans(f *catalog.Func) bool {
	_, ok := planners[f]
	return ok
}

// Plan validates call from public facts and plans it. It reads no data
// and charges nothing. Planners and their helpers refuse by returning an
// error (an *Error naming it: ArgumentError, DatasetError, NotAvailable),
// which Plan returns as is.
//
// The deferred recover below is the one recovery point of the planners,
// and dsl/release has no panic of its own on a plan's path: it is a
// safety net for a mechanism package's panic during planning (a noise
// package's check of a scale out of range, gonum's of a shape). Plans
// read public facts only, so such a panic holds no private value; but its
// text is the mechanism's internal wording, so it becomes an
// ArgumentError with a fixed text.
func (env *Local) Plan(call Call) (*Plan, error) { return env.plan(call, nil) }

// plan is Plan. A refusal's search for the largest ε that fits (fit.go)
// re-plans its call dozens of times at other ε and δ: it passes the
// call's own plan as checked, whose engine facts (a live table's
// dialect, table and statement limit, from a connection to its server)
// do not depend on ε or δ, so that the re-plans reuse them instead of
// connecting again; each re-plan's statement is still printed and
// checked against them. Every call that is charged is planned by Plan,
// with checked nil, and so checks the engine itself.
func (env *Local) plan(call Call, checked *Plan) (p *Plan, err error) {
	f, _ := catalog.Lookup(call.Func)
	plan, ok := planners[f]
	if !ok {
		return nil, Errorf(NameNotAvailable, "%s is not a private function of this build", call.Func)
	}
	if call.Args == nil {
		return nil, Errorf(NameArgumentError, "%s: no arguments", call.Func)
	}
	if err := checkKind(call); err != nil {
		return nil, err
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		p = nil
		err = Errorf(NameArgumentError, "%s: these parameters cannot be calibrated (a noise scale is out of the representable range); check eps, delta, clip, k and iters against %%help %s", call.Func, call.Func)
	}()
	// A dataset in a live table runs only what runs in its engine, and
	// only while its catalog matches the registration (engine.go).
	var eng *engineFacts
	if checked != nil {
		eng = checked.engine
	} else if eng, err = env.checkEngine(f, call.Dataset, call.Args); err != nil {
		return nil, err
	}
	if p, err = plan(env, call.Dataset, call.Args); err != nil {
		return nil, err
	}
	if err := eng.check(p); err != nil {
		return nil, err
	}
	p.engine = eng
	// One place for every planner: nothing is charged for a run that
	// might not fit.
	if err := env.checkMemory(p); err != nil {
		return nil, err
	}
	// An event the dataset's accountant can never compose (an (ε, δ) one
	// on a gdp or rdp dataset) is refused from the plan's public cost,
	// before any gate or charge.
	if err := composable(call.Dataset, p); err != nil {
		return nil, err
	}
	return p, nil
}

// composable refuses a plan whose event the accountant of src's dataset
// cannot compose, naming the accountant that can.
func composable(src Ref, p *Plan) error {
	mode := src.Schema.Accountant
	if src.Derived != nil {
		mode = src.Derived.ParentSchema.Accountant
	}
	m, err := accounting.ParseMode(mode)
	if err != nil || src.Synthetic() {
		return nil
	}
	if err := m.Composes(p.Event()); err != nil {
		return Errorf(NameArgumentError, "%s on dataset %q: %v (nothing was charged)", p.Func, src.Name, strings.TrimPrefix(err.Error(), "accounting: "))
	}
	return nil
}

// Execute plans call, charges it (gate first, then the ledger), loads the
// data and runs the mechanism. Errors after the charge carry fixed
// messages: whether and why a mechanism failed may depend on the data.
func (env *Local) Execute(ctx context.Context, call Call, gate Gate) (*Release, error) {
	p, err := env.Plan(call)
	if err != nil {
		return nil, err
	}
	ev := p.Event()
	if err := ev.Validate(); err != nil {
		return nil, Errorf(NameArgumentError, "%s: %v", p.Func, err)
	}
	src := call.Dataset
	named, err := env.named(call, p)
	if err != nil || named.replay != nil {
		return named.replay, err
	}
	t, ch, err := env.charge(ctx, call, p, ev, gate, named.meta)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) && !src.Synthetic() {
			env.explainRefusal(be, call, p, ev, gate)
		}
		return nil, err
	}
	rcpt := newReceipt(src, p, ev, ch)
	data, err, pv := guarded(func() (*Data, error) { return env.load(src) })
	if err != nil || pv != nil {
		why := loadFailure
		if pv == nil {
			why = loadError(err)
		}
		return nil, Errorf(NameLedgerError, "%s: the data of %q could not be read after the charge (ledger record %d stands): %s", p.Func, src.Name, ch.LedgerID, why)
	}
	defer data.Close()
	var wrap RunWrapper
	if env.Wrap != nil {
		wrap = env.Wrap()
	}
	p.progress.start(ctx)
	out, err, pv := guarded(func() (any, error) { return p.runWith(ctx, t, data, wrap) })
	failed := err != nil || pv != nil
	interrupted := failed && (ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	p.progress.finish(interrupted)
	if !failed {
		if named.meta != nil {
			env.seal(ctx, ch.LedgerID, named.meta, out, p.Columns, rcpt)
		}
		return &Release{Value: out, Receipt: rcpt, Columns: p.Columns}, nil
	}
	if interrupted {
		return nil, Errorf(NameInterrupted, "%s was interrupted; its charge (ledger record %d) stands", p.Func, ch.LedgerID)
	}
	if src.Synthetic() { // public data: the reason may be shown
		if pv != nil {
			err = fmt.Errorf("panic: %v", pv)
		}
		return nil, Errorf(NameMechanismFailed, "%s (%s) could not produce a release on %s: %v", p.Func, p.Method, src.Name, err)
	}
	// One message for an error and a panic alike, so that the message
	// tells no more than the fact of failure (see docs/threat-model.md).
	return nil, Errorf(NameMechanismFailed, "%s (%s) could not produce a release on %q with these parameters; its charge (ledger record %d) stands. The reason is not shown because it may depend on the data; check the parameters against %%help %s", p.Func, p.Method, src.Name, ch.LedgerID, p.Func)
}

// DryRun plans call and says what it would cost and leave, as a receipt
// (Receipt.DryRun), without charging anything or reading data. A call
// that would be refused is refused as Execute would refuse it, with what
// would fit.
func (env *Local) DryRun(ctx context.Context, call Call, gate Gate) (*Receipt, error) {
	p, err := env.Plan(call)
	if err != nil {
		return nil, err
	}
	ev := p.Event()
	if err := ev.Validate(); err != nil {
		return nil, Errorf(NameArgumentError, "%s: %v", p.Func, err)
	}
	src := call.Dataset
	if named, err := env.named(call, p); err != nil {
		return nil, err
	} else if named.replay != nil {
		r := named.replay.Receipt
		r.DryRun = true
		return r, nil
	}
	var ch Charge
	if gc, ok := gate.(GateChecker); ok {
		if err := gc.Check(ev, src); err != nil {
			var be *BudgetError
			if errors.As(err, &be) && !src.Synthetic() {
				env.explainRefusal(be, call, p, ev, gate)
			}
			return nil, err
		}
	}
	if !src.Synthetic() {
		st, err := env.store()
		if err != nil {
			return nil, err
		}
		left, err := st.WouldRemain(src.Name, ev)
		if err != nil {
			if be, ok := AsBudgetError(fmt.Sprintf("dataset %q", src.Name), err, false); ok {
				if n := ApproxNote(ev, src.Schema.Accountant); n != "" {
					be.Notes = append(be.Notes, n)
				}
				env.explainRefusal(be, call, p, ev, gate)
				return nil, be
			}
			return nil, Errorf(NameLedgerError, "dataset %q: %v", src.Name, err)
		}
		ch.Remaining, ch.Accountant = left, src.Schema.Accountant
		ch.Filter = pricing(st, src.Name, src.Schema.Accountant, ev)
	}
	r := newReceipt(src, p, ev, ch)
	r.DryRun, r.Charged = true, false
	return r, nil
}

// fitsFunc reports whether a cost would pass the gate (when it can tell)
// and the dataset's remaining budget, without recording anything.
// explainRefusal says, in a refusal of call on its dataset, what the call
// asked and how the accountant priced it, the largest ε of the same call
// that fits, and what else still fits on the dataset (accounting.Fits):
// everything in the terms an analyst asks in, from public values only.
func (env *Local) explainRefusal(be *BudgetError, call Call, p *Plan, ev accounting.Event, gate Gate) {
	src := call.Dataset
	st, err := env.store()
	pr := ""
	if err == nil && be.Scope == fmt.Sprintf("dataset %q", src.Name) {
		pr = pricing(st, src.Name, src.Schema.Accountant, ev)
	}
	be.Asked = AskedWords(p.Eps, p.Delta, pr)
	be.Notes = append(be.Notes, env.fitNote(call, p, env.fitsFunc(src, gate), true))
	if err != nil {
		return
	}
	if f, err := st.Fits(src.Name); err == nil {
		be.Notes = append(be.Notes, FitsWords(src.Name, f))
	}
}

// AskedWords is a refused call's cost in the terms the analyst asked
// (its eps and delta) and, when known, the accountant's price of it.
func AskedWords(eps, delta float64, pricing string) string {
	s := fmt.Sprintf("eps=%v", eps)
	if delta > 0 {
		s += fmt.Sprintf(", delta=%v", delta)
	}
	if pricing != "" {
		s += ", priced by the " + pricing
	}
	return s
}

// FitsWords says what still fits on a dataset, for a refusal.
func FitsWords(name string, f accounting.Fits) string {
	return fmt.Sprintf("What still fits on dataset %q, one call alone: %s (remaining(ds) shows it)", name, FitsText(f))
}

func (env *Local) fitsFunc(src Ref, gate Gate) func(accounting.Event) bool {
	return func(ev accounting.Event) bool {
		if gc, ok := gate.(GateChecker); ok && gc.Check(ev, src) != nil {
			return false
		}
		st, err := env.store()
		if err != nil {
			return false
		}
		return st.Precheck(src.Name, ev) == nil
	}
}

// charge asks the gate, then, for a registered dataset, charges the ledger
// durably; the gate records the spend only when the ledger accepted it.
// Charges are serialized in-process; the ledger transaction serializes
// processes.
func (env *Local) charge(ctx context.Context, call Call, p *Plan, ev accounting.Event, gate Gate, rel *ledger.ReleaseMeta) (*Ticket, Charge, error) {
	env.mu.Lock()
	defer env.mu.Unlock()
	commit, abort := func() string { return "" }, func() {}
	if gate != nil {
		var err error
		if commit, abort, err = gate.Admit(ctx, ev, call.Dataset); err != nil {
			return nil, Charge{}, err
		}
	}
	var ch Charge
	src := call.Dataset
	if !src.Synthetic() {
		st, err := env.store()
		if err != nil {
			abort()
			return nil, Charge{}, err
		}
		rec, err := st.Charge(ctx, src.Name, ev, chargeMeta(call, p, rel))
		if err != nil {
			abort()
			if errors.Is(err, ledger.ErrNameTaken) {
				return nil, Charge{}, Errorf(NameArgumentError, "%s: name %q was just given to another release of dataset %q (%v); run the call again to replay that release, or give it another name (nothing was spent)", p.Func, rel.Name, src.Name, err)
			}
			if errors.Is(err, ledger.ErrRegistrationChanged) {
				return nil, Charge{}, Errorf(NameDatasetError, "dataset %q was removed and registered again with another schema since this handle was opened; open it again with dataset(%q) (nothing was spent)", src.Name, src.Name)
			}
			if be, ok := AsBudgetError(fmt.Sprintf("dataset %q", src.Name), err, false); ok {
				if n := ApproxNote(ev, src.Schema.Accountant); n != "" {
					be.Notes = append(be.Notes, n)
				}
				return nil, Charge{}, be
			}
			if ctx.Err() != nil {
				return nil, Charge{}, Errorf(NameInterrupted, "interrupted before the charge: nothing was spent")
			}
			return nil, Charge{}, Errorf(NameLedgerError, "charging dataset %q: %v (nothing was spent)", src.Name, err)
		}
		ch = ledgerCharge(rec)
	}
	ch.Block = commit()
	return &Ticket{plan: p, ledgerID: ch.LedgerID}, ch, nil
}

// CallIDParam is the ledger parameter that records a call's ID.
const CallIDParam = "call_id"

// chargeMeta is what the ledger records with call's charge (or its
// reservation, federate_member.go): the plan's public parameters, the lineage of a
// derived source, the call id, the cell and the registration planned from.
func chargeMeta(call Call, p *Plan, rel *ledger.ReleaseMeta) ledger.ChargeMeta {
	src := call.Dataset
	params := p.Params
	if src.Derived != nil || call.ID != "" {
		params = map[string]any{}
		if src.Derived != nil {
			params["lineage"] = src.Derived.Lineage
		}
		for k, v := range p.Params {
			params[k] = v
		}
		if call.ID != "" {
			params[CallIDParam] = call.ID
		}
	}
	registered := src.Schema
	if src.Derived != nil {
		registered = src.Derived.ParentSchema
	}
	return ledger.ChargeMeta{Params: params, Cell: call.Cell, Schema: &registered, Release: rel}
}

func (env *Local) store() (*ledger.Store, error) {
	if env.Store == nil {
		return nil, Errorf(NameLedgerError, "no state directory is configured")
	}
	st, err := env.Store()
	if err != nil {
		if e, ok := err.(*Error); ok {
			return nil, e
		}
		return nil, Errorf(NameLedgerError, "%v", err)
	}
	return st, nil
}

// load opens the data of a source. Call it only after the charge.
func (env *Local) load(src Ref) (*Data, error) {
	if src.Public != nil {
		return memoryData(src.Name, src.Public)
	}
	if dv := src.Derived; dv != nil {
		parent := src
		parent.Schema, parent.Derived = dv.ParentSchema, nil
		d, err := env.load(parent)
		if err != nil {
			return nil, err
		}
		return derive(d, src.Schema, dv)
	}
	st, err := env.store()
	if err != nil {
		return nil, err
	}
	// One read of the registry says where the rows are.
	engine, snap, err := st.Storage(src.Name)
	switch {
	case err != nil:
		return nil, err
	case engine != nil:
		return engineData(st, src, engine)
	case snap != nil:
		return snapshotData(src.Schema, snap.Path, snap.Hash)
	}
	d, err := st.Load(src.Name)
	if err != nil {
		return nil, err
	}
	return memoryData(src.Name, d)
}

// guarded calls f and returns its panic value instead of panicking. After
// a charge, a panic's value (an index out of range, a shard number, a value
// in a message) may depend on the data: it must reach neither the cell,
// where the engine would show it, nor the worker's crash report, which an
// unrecovered panic would write to the process's stderr. Callers drop it
// for registered data.
func guarded[T any](f func() (T, error)) (v T, err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err, panicked = zero, nil, r
		}
	}()
	v, err = f()
	return v, err, nil
}

// loadFailure is the fixed reason of a load that failed without a public
// explanation.
const loadFailure = "the stored data failed its integrity check or the database could not be read (run `privnotes ledger verify`)"

// loadError keeps only data-independent load failures.
func loadError(err error) string {
	var le *Error
	if errors.As(err, &le) {
		return le.Msg
	}
	return loadFailure
}

func denseOf(r, c int, data []float64) *mat.Dense {
	if r == 0 || c == 0 {
		return &mat.Dense{}
	}
	return mat.NewDense(r, c, data)
}
