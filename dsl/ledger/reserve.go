package ledger

// Reservations: the first phase of a two-phase charge, for the members of
// a federated call (dsl/release/federate.go). Reserve sets a call's cost
// aside under its call id; CommitReserved turns it into a charge record,
// chained like every charge; AbortReserved releases it. Until it is
// committed, aborted or expired, a reservation counts against its
// dataset's remaining budget exactly like a charge: Charge, Reserve,
// CommitReserved, Precheck and WouldRemain all compose the live
// reservations with the stored totals, and the writers do so inside their
// BEGIN IMMEDIATE transaction, so two processes cannot together reserve
// and charge past a budget. A reservation reads no data and releases
// nothing; one that nobody commits or aborts (its coordinator went away)
// stops counting at its public expiry and can no longer be committed.
//
// The reservations live in their own table, created at open if missing;
// they are not ledger records (a reservation spends nothing) and do not
// change the schema version. Verify ignores them: the totals are those of
// the charge records alone.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// reserveSQL creates the reservations table (run with schemaSQL at open).
const reserveSQL = `
CREATE TABLE IF NOT EXISTS reservations (
	call_id TEXT PRIMARY KEY,
	dataset TEXT NOT NULL,
	event   TEXT NOT NULL,    -- accounting.Event as JSON
	params  TEXT NOT NULL,    -- the charge's public parameters, JSON
	cell    TEXT NOT NULL,
	schema  TEXT NOT NULL,    -- the registration the cost was planned from, JSON
	created TEXT NOT NULL,    -- RFC 3339, UTC
	expires INTEGER NOT NULL, -- unix nanoseconds
	state   TEXT NOT NULL,    -- held, committed or aborted
	record  INTEGER           -- the charge record, once committed
);
CREATE INDEX IF NOT EXISTS reservations_live ON reservations(dataset, state, expires);
`

// Reservation states.
const (
	Held      = "held"
	Committed = "committed"
	Aborted   = "aborted"
)

// Errors of the reservation operations, matched by errors.Is.
var (
	// ErrNoReservation: no reservation has this call id.
	ErrNoReservation = errors.New("no reservation has this call id")
	// ErrReservationExpired: the reservation passed its expiry before it
	// was committed; it no longer counts and nothing was charged.
	ErrReservationExpired = errors.New("the reservation expired before it was committed; nothing was charged")
	// ErrReservationCommitted: the reservation was committed (its charge
	// stands) and cannot be aborted.
	ErrReservationCommitted = errors.New("the reservation was committed: its charge stands and cannot be aborted")
	// ErrReservationAborted: the reservation was aborted and cannot be
	// committed.
	ErrReservationAborted = errors.New("the reservation was aborted and cannot be committed")
	// ErrReservationMismatch: a reservation's call id was reused with
	// another dataset or cost.
	ErrReservationMismatch = errors.New("this call id holds a reservation of another dataset or cost")
)

// Reservation is one call's reserved cost.
type Reservation struct {
	CallID  string
	Dataset string
	Event   accounting.Event
	Created time.Time
	Expires time.Time
	State   string
	// Record is the charge record of a committed reservation.
	Record int64
	// Remaining is the dataset's remaining budget with this reservation
	// and every other live one counted (a display value, as in Receipt).
	Remaining accounting.Budget
}

// live reports whether r counts against its dataset's budget at now.
func (r *Reservation) live(now time.Time) bool {
	return r.State == Held && now.Before(r.Expires)
}

// held is a dataset's live reservations (but one), as they count
// against its budget.
type held struct {
	events []accounting.Event
	ids    []string
	lapse  time.Time // when the earliest lapses
	last   time.Time // when the last lapses
}

// heldOf returns dataset's live reservations at now, except the one of
// call id except, in the caller's transaction (or connection).
func heldOf(ctx context.Context, q queryer, dataset string, now time.Time, except string) (held, error) {
	var h held
	rows, err := q.QueryContext(ctx, qHeld, dataset, now.UnixNano(), except)
	if err != nil {
		return h, dbErr("ledger: reading reservations", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, js string
		var exp int64
		if err := rows.Scan(&id, &js, &exp); err != nil {
			return h, dbErr("ledger: reading reservations", err)
		}
		var ev accounting.Event
		if err := json.Unmarshal([]byte(js), &ev); err != nil {
			return h, fmt.Errorf("ledger: reservation %s: corrupt cost: %w", id, err)
		}
		h.events, h.ids = append(h.events, ev), append(h.ids, id)
		if t := time.Unix(0, exp).UTC(); h.lapse.IsZero() || t.Before(h.lapse) {
			h.lapse = t
		}
		if t := time.Unix(0, exp).UTC(); t.After(h.last) {
			h.last = t
		}
	}
	if err := rows.Err(); err != nil {
		return h, dbErr("ledger: reading reservations", err)
	}
	return h, nil
}

// heldAccountant is a dataset's accountant with its live reservations
// spent, as if charged: what every spend and check is made against. It
// is never stored (putTotals): the totals are those of the charge records
// alone. Its Spend and Check explain a refusal the reservations (partly)
// caused as a *HeldError.
type heldAccountant struct {
	*accounting.Accountant                        // the charges and the live reservations
	charges                *accounting.Accountant // the charges alone (the caller's, unchanged)
	held                   held
}

// holdOn returns acc (a dataset's stored totals) with the dataset's live
// reservations but except's spent on a copy; acc is left unchanged
// (without live reservations the result shares acc: spend on one of them
// only). A
// ledger whose charges and live reservations together exceed the budget
// (which Reserve and Charge never let happen) fails here, refusing more.
func holdOn(ctx context.Context, q queryer, dataset string, acc *accounting.Accountant, except string) (*heldAccountant, error) {
	h, err := heldOf(ctx, q, dataset, time.Now(), except)
	if err != nil {
		return nil, err
	}
	if len(h.events) == 0 {
		// Nothing held: no copy. The caller then must not spend on both
		// (CommitReserved checks on the result and spends on acc).
		return &heldAccountant{Accountant: acc, charges: acc, held: h}, nil
	}
	both, err := accounting.Resume(acc.Mode(), acc.Budget(), acc.State())
	if err != nil {
		return nil, fmt.Errorf("ledger: dataset %q: %w", dataset, err)
	}
	if err := both.Spend(h.events...); err != nil {
		return nil, err
	}
	return &heldAccountant{Accountant: both, charges: acc, held: h}, nil
}

// checkHeld checks ev beside dataset's charges (acc, left unchanged) and
// its live reservations but except's: Charge calls it in its transaction.
func checkHeld(ctx context.Context, q queryer, dataset string, acc *accounting.Accountant, except string, ev accounting.Event) error {
	h, err := holdOn(ctx, q, dataset, acc, except)
	if err != nil {
		return err
	}
	return h.Check(ev)
}

// Spend spends events beside the charges and the live reservations.
func (a *heldAccountant) Spend(events ...accounting.Event) error {
	return a.explain(a.Accountant.Spend(events...), events)
}

// Check checks events beside the charges and the live reservations.
func (a *heldAccountant) Check(events ...accounting.Event) error {
	return a.explain(a.Accountant.Check(events...), events)
}

// heldCost is the composed cost of the live reservations alone.
func (a *heldAccountant) heldCost() accounting.Budget {
	alone, err := accounting.NewAccountant(a.charges.Mode(), a.charges.Budget())
	if err != nil {
		return accounting.Budget{}
	}
	c, _ := alone.Preview(a.held.events...)
	return c
}

// explain turns a refusal of events into a *HeldError when live
// reservations count in it: its Spent is then the charges' alone, its
// Remaining what is left with the reservations counted.
func (a *heldAccountant) explain(err error, events []accounting.Event) error {
	var ex *accounting.ExceededError
	if len(a.held.events) == 0 || !errors.As(err, &ex) {
		return err
	}
	e := *ex
	e.Spent = a.charges.Spent()
	return &HeldError{Exceeded: &e, Held: a.heldCost(), Count: len(a.held.events), Lapse: a.held.lapse,
		Fits: a.charges.Check(events...) == nil}
}

// HeldError is a budget refusal in which live reservations of federated
// calls in progress counted. Its Exceeded's Spent is what the charges
// spent, its Remaining what is left with the reservations counted. A
// reservation holds public plan facts only (a call id, a cost, an
// expiry), so all of it may be shown. errors.As finds the
// *accounting.ExceededError inside, errors.Is(err,
// accounting.ErrBudgetExceeded) holds.
type HeldError struct {
	Exceeded *accounting.ExceededError
	// Held is the cost of the live reservations alone, Count their
	// number, Lapse when the earliest of them lapses.
	Held  accounting.Budget
	Count int
	Lapse time.Time
	// Fits reports whether the refused spend would fit beside the
	// charges alone (then it is the reservations that refused it).
	Fits bool
}

func (e *HeldError) Error() string { return e.Exceeded.Error() + ". " + e.Note() }

// Unwrap returns the accounting refusal.
func (e *HeldError) Unwrap() error { return e.Exceeded }

// Note says what the reservations hold and what to do.
func (e *HeldError) Note() string {
	what := "it does not fit beside the charges alone either, so waiting will not help: ask for less"
	if e.Fits {
		what = "it fits beside the charges alone: wait until they commit or lapse and run it again (what a committed call spends stays spent; what a lapsed or aborted one held returns)"
	}
	return fmt.Sprintf("Besides what is spent, (ε=%.6g, δ=%.6g) is held by %d reservation(s) of federated calls in progress (the earliest lapses at %s): %s; "+
		"privnotes ledger show lists them", e.Held.Eps, e.Held.Delta, e.Count, e.Lapse.UTC().Format("2006-01-02 15:04:05 UTC"), what)
}

// accountantHeld is the dataset's accountant with its live reservations
// spent: what Precheck and WouldRemain check against. Never stored.
func (v *View) accountantHeld(name string) (*heldAccountant, error) {
	acc, _, err := readAccountant(v.ctx, v.q, name)
	if err != nil {
		return nil, err
	}
	return holdOn(v.ctx, v.q, name, acc, "")
}

// Reserve sets ev aside from dataset's budget for call id callID until
// ttl from now, in one BEGIN IMMEDIATE transaction: it fits with the
// dataset's charges and live reservations, or it is refused (an
// *accounting.ExceededError) and nothing is held. meta's Params, Cell and
// Schema are those of the charge CommitReserved will record (the schema
// is checked now and again at the commit); a reservation stores no
// release. Reserving an id again returns its reservation if it is the
// same dataset and cost and still live (a retry); otherwise it is refused.
func (s *Store) Reserve(ctx context.Context, callID, dataset string, ev accounting.Event, meta ChargeMeta, ttl time.Duration) (*Reservation, error) {
	if callID == "" {
		return nil, errors.New("ledger: a reservation needs a call id")
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("ledger: a reservation needs a positive lifetime, not %v", ttl)
	}
	if meta.Release != nil {
		return nil, errors.New("ledger: a reserved charge stores no release")
	}
	evJSON, params, err := encodeCharge("a reservation", ev, meta)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: serialised with every charge
	if err != nil {
		return nil, dbErr("ledger: starting the reservation", err)
	}
	defer tx.Rollback()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if r, err := reservation(ctx, tx, callID); err == nil {
		if r.Dataset != dataset || !sameEvent(r.Event, ev) {
			return nil, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationMismatch)
		}
		switch {
		case r.State == Committed:
			return nil, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationCommitted)
		case r.State == Aborted:
			return nil, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationAborted)
		case !r.live(now):
			return nil, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationExpired)
		}
		acc, _, err := s.accountant(ctx, tx, dataset)
		if err != nil {
			return nil, err
		}
		h, err := holdOn(ctx, tx, dataset, acc, "")
		if err != nil {
			return nil, err
		}
		r.Remaining = h.Remaining()
		return r, nil // a retry: the reservation made the first time
	} else if !errors.Is(err, ErrNoReservation) {
		return nil, err
	}
	acc, sc, err := s.accountant(ctx, tx, dataset)
	if err != nil {
		return nil, err
	}
	if meta.Schema != nil && !sameSchema(*meta.Schema, sc) {
		return nil, fmt.Errorf("ledger: dataset %q: %w", dataset, ErrRegistrationChanged)
	}
	scJSON, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("ledger: encoding the schema: %w", err)
	}
	// Every live reservation counts as if charged, then this one must fit.
	h, err := holdOn(ctx, tx, dataset, acc, "")
	if err != nil {
		return nil, err
	}
	if err := h.Spend(ev); err != nil {
		return nil, err
	}
	expires := now.Add(ttl)
	if _, err := tx.ExecContext(ctx, `INSERT INTO reservations(call_id, dataset, event, params, cell, schema, created, expires, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'held')`,
		callID, dataset, string(evJSON), params, meta.Cell, string(scJSON), now.Format(time.RFC3339Nano), expires.UnixNano()); err != nil {
		return nil, dbErr("ledger: recording the reservation", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, dbErr("ledger: committing the reservation", err)
	}
	return &Reservation{CallID: callID, Dataset: dataset, Event: ev, Created: now, Expires: time.Unix(0, expires.UnixNano()).UTC(),
		State: Held, Remaining: h.Remaining()}, nil
}

// CommitReserved charges the reservation of callID: in one BEGIN
// IMMEDIATE transaction it appends the charge record (chained like every
// charge, with the reserved parameters and cell), updates the dataset's
// totals and marks the reservation committed. ev must be the reserved
// cost (the caller re-plans the call). An expired or aborted reservation
// is refused and nothing is charged. Committing a committed reservation
// again returns its charge (a retry), not a second one; first reports
// whether this commit made the charge (only then may the caller read the
// data: a retry must not run the call a second time on one charge).
func (s *Store) CommitReserved(ctx context.Context, callID string, ev accounting.Event) (rc *Receipt, first bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return nil, false, dbErr("ledger: starting the commit", err)
	}
	defer tx.Rollback()
	r, err := reservation(ctx, tx, callID)
	if err != nil {
		return nil, false, err
	}
	if !sameEvent(r.Event, ev) {
		return nil, false, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationMismatch)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	switch {
	case r.State == Committed:
		rc, err := s.committedReceipt(ctx, tx, r)
		return rc, false, err
	case r.State == Aborted:
		return nil, false, fmt.Errorf("ledger: reservation %s: %w", callID, ErrReservationAborted)
	case !r.live(now):
		return nil, false, fmt.Errorf("ledger: reservation %s (expired %s): %w", callID, r.Expires.Format(time.RFC3339), ErrReservationExpired)
	}
	var params, cell, scJSON string
	if err := tx.QueryRowContext(ctx, `SELECT params, cell, schema FROM reservations WHERE call_id = ?`, callID).Scan(&params, &cell, &scJSON); err != nil {
		return nil, false, dbErr("ledger: reading the reservation", err)
	}
	dr, err := s.datasetRow(ctx, tx, r.Dataset)
	if err != nil {
		return nil, false, err
	}
	acc, sc, err := s.accountant(ctx, tx, r.Dataset)
	if err != nil {
		return nil, false, err
	}
	// The registration the call was planned from, not a later one of the
	// same name and schema: Remove refuses a dataset with live
	// reservations, and this holds even if that were bypassed.
	if reg, _ := time.Parse(time.RFC3339Nano, dr.created); reg.After(r.Created) {
		return nil, false, fmt.Errorf("ledger: dataset %q was registered again after call %s was reserved: %w", r.Dataset, callID, ErrRegistrationChanged)
	}
	if cur, _ := json.Marshal(sc); string(cur) != scJSON {
		return nil, false, fmt.Errorf("ledger: dataset %q: %w", r.Dataset, ErrRegistrationChanged)
	}
	// Charge and every other live reservation fit together (they were
	// checked against this one); checked again all the same.
	if err := checkHeld(ctx, tx, r.Dataset, acc, callID, ev); err != nil {
		return nil, false, err
	}
	if err := acc.Spend(ev); err != nil {
		return nil, false, err
	}
	evJSON, _ := json.Marshal(ev)
	rec, err := appendRecord(ctx, tx, record{Kind: "charge", Dataset: r.Dataset, Mechanism: ev.Mechanism,
		Params: params, Event: string(evJSON), Cell: cell, Time: now.Format(time.RFC3339Nano)})
	if err != nil {
		return nil, false, err
	}
	if err := putTotals(ctx, tx, r.Dataset, acc.State()); err != nil {
		return nil, false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE reservations SET state = 'committed', record = ? WHERE call_id = ?`, rec.ID, callID); err != nil {
		return nil, false, dbErr("ledger: marking the reservation committed", err)
	}
	h, err := holdOn(ctx, tx, r.Dataset, acc, callID)
	if err != nil {
		return nil, false, err
	}
	if err := tx.Commit(); err != nil {
		return nil, false, dbErr("ledger: committing the charge", err)
	}
	// Spent is the charges'; Remaining counts the other live reservations,
	// Fits does not (it is derived from the ledger alone).
	fits := acc.FitsNow()
	return &Receipt{ID: rec.ID, Dataset: r.Dataset, Event: ev, Mode: sc.Accountant, Filter: acc.Pricing(ev), Budget: sc.Budget,
		Spent: acc.Spent(), Remaining: h.Remaining(), Fits: &fits, Hash: rec.Hash, Time: now}, true, nil
}

// committedReceipt is the receipt of a committed reservation's charge,
// with the dataset's budget as it is now.
func (s *Store) committedReceipt(ctx context.Context, q queryer, r *Reservation) (*Receipt, error) {
	var hash, at string
	if err := q.QueryRowContext(ctx, `SELECT hash, time FROM ledger WHERE id = ?`, r.Record).Scan(&hash, &at); err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: reading charge record %d", r.Record), err)
	}
	acc, sc, err := s.accountant(ctx, q, r.Dataset)
	if err != nil {
		return nil, err
	}
	h, err := holdOn(ctx, q, r.Dataset, acc, "")
	if err != nil {
		return nil, err
	}
	t, _ := time.Parse(time.RFC3339Nano, at)
	return &Receipt{ID: r.Record, Dataset: r.Dataset, Event: r.Event, Mode: sc.Accountant, Filter: acc.Pricing(r.Event), Budget: sc.Budget,
		Spent: acc.Spent(), Remaining: h.Remaining(), Hash: hash, Time: t}, nil
}

// AbortReserved releases the reservation of callID. It is idempotent: a
// reservation already aborted or expired, or none at all (a prepare that
// never arrived), reports false and nil. A committed reservation is
// refused with ErrReservationCommitted: its charge stands.
func (s *Store) AbortReserved(ctx context.Context, callID string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return false, dbErr("ledger: starting the abort", err)
	}
	defer tx.Rollback()
	r, err := reservation(ctx, tx, callID)
	switch {
	case errors.Is(err, ErrNoReservation):
		return false, nil
	case err != nil:
		return false, err
	case r.State == Committed:
		return false, fmt.Errorf("ledger: reservation %s (charge record %d): %w", callID, r.Record, ErrReservationCommitted)
	case r.State == Aborted:
		return false, nil
	}
	wasLive := r.live(time.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE reservations SET state = 'aborted' WHERE call_id = ?`, callID); err != nil {
		return false, dbErr("ledger: marking the reservation aborted", err)
	}
	if err := tx.Commit(); err != nil {
		return false, dbErr("ledger: committing the abort", err)
	}
	return wasLive, nil
}

// ReservationOf returns the reservation of callID (ErrNoReservation if
// there is none), with its dataset's remaining budget as it is now.
func (s *Store) ReservationOf(callID string) (r *Reservation, err error) {
	err = s.view(func(v *View) error {
		if r, err = reservation(v.ctx, v.q, callID); err != nil {
			return err
		}
		acc, err := v.accountantHeld(r.Dataset)
		if err != nil {
			return err
		}
		r.Remaining = acc.Remaining()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Held returns dataset's live reservations ("": every dataset's), oldest
// first.
func (s *Store) Held(dataset string) (rs []Reservation, err error) {
	err = s.view(func(v *View) error { rs, err = v.Held(dataset); return err })
	return rs, err
}

// Held is Store.Held in v's snapshot.
func (v *View) Held(dataset string) ([]Reservation, error) {
	rows, err := v.q.QueryContext(v.ctx, `SELECT call_id FROM reservations
		WHERE (? = '' OR dataset = ?) AND state = 'held' AND expires > ? ORDER BY created, call_id`, dataset, dataset, time.Now().UnixNano())
	if err != nil {
		return nil, dbErr("ledger: reading reservations", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, dbErr("ledger: reading reservations", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr("ledger: reading reservations", err)
	}
	out := make([]Reservation, 0, len(ids))
	for _, id := range ids {
		r, err := reservation(v.ctx, v.q, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// reservation reads the reservation of callID.
func reservation(ctx context.Context, q queryer, callID string) (*Reservation, error) {
	var r Reservation
	var ev, created string
	var expires int64
	var rec sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT call_id, dataset, event, created, expires, state, record FROM reservations WHERE call_id = ?`, callID).
		Scan(&r.CallID, &r.Dataset, &ev, &created, &expires, &r.State, &rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("ledger: call %s: %w", callID, ErrNoReservation)
	}
	if err != nil {
		return nil, dbErr("ledger: reading a reservation", err)
	}
	if err := json.Unmarshal([]byte(ev), &r.Event); err != nil {
		return nil, fmt.Errorf("ledger: reservation %s: corrupt cost: %w", callID, err)
	}
	r.Created, _ = time.Parse(time.RFC3339Nano, created)
	r.Expires = time.Unix(0, expires).UTC()
	r.Record = rec.Int64
	return &r, nil
}

// sameEvent reports whether a and b are the same cost.
func sameEvent(a, b accounting.Event) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// HeldHeader names the columns of WriteHeld's table.
var HeldHeader = []string{"DATASET", "CALL", "MECHANISM", "COST", "RESERVED (UTC)", "LAPSES (UTC)"}

// WriteHeld writes live reservations (Held's) as an aligned text table:
// public plan facts only.
func WriteHeld(w io.Writer, rs []Reservation) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(HeldHeader, "\t"))
	for _, r := range rs {
		ev := r.Event
		ev.Mechanism = ""
		fmt.Fprintln(tw, strings.Join([]string{r.Dataset, r.CallID, r.Event.Mechanism, ev.String(),
			r.Created.UTC().Format("2006-01-02 15:04:05"), r.Expires.UTC().Format("2006-01-02 15:04:05")}, "\t"))
	}
	return tw.Flush()
}

// HeldSummary is one line on what dataset's live reservations hold
// beside its charges ("" without any), from its Status.
func HeldSummary(s *Status) string {
	if s.Reservations == 0 {
		return ""
	}
	return fmt.Sprintf("dataset %q: spent ε=%.6g, δ=%.6g by %d charge(s); held ε=%.6g, δ=%.6g by %d reservation(s) of federated calls in progress (the earliest lapses at %s); available ε=%.6g, δ=%.6g of ε=%.6g, δ=%.6g",
		s.Dataset, s.Spent.Eps, s.Spent.Delta, s.Charges, s.Held.Eps, s.Held.Delta, s.Reservations, s.Lapse.UTC().Format("2006-01-02 15:04:05 UTC"),
		s.Available.Eps, s.Available.Delta, s.Budget.Eps, s.Budget.Delta)
}
