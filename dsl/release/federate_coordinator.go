package release

// The coordinator side of a federated call (federate.go): it plans every
// member, asks the gate once, prepares then commits every member (or
// aborts them all), runs the rounds and writes the receipt that lists
// every member's charge.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

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
