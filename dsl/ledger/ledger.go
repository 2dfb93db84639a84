package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// genesis is the prev_hash of the first record.
var genesis = strings.Repeat("0", 64)

// record is one ledger row as stored. Its hash is the SHA-256 of the JSON
// encoding of the record without the hash (fixed field order), which
// includes prev_hash: the records form a chain.
type record struct {
	ID        int64  `json:"id"`
	Kind      string `json:"kind"`
	Dataset   string `json:"dataset"`
	Mechanism string `json:"mechanism"`
	Params    string `json:"params"`
	Event     string `json:"event"`
	Cell      string `json:"cell"`
	Time      string `json:"time"`
	PrevHash  string `json:"prev_hash"`
	Hash      string `json:"-"`
}

func (r record) computeHash() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and an int: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// appendRecord chains r after the last record and inserts it; the caller
// holds the write transaction.
func appendRecord(ctx context.Context, tx execer, r record) (record, error) {
	lastID, prev, err := readHead(ctx, tx)
	if err != nil {
		return r, err
	}
	return appendAfter(ctx, tx, r, lastID, prev)
}

// readHead reads the id and hash of the last record (0 and genesis for an
// empty ledger).
func readHead(ctx context.Context, q queryer) (int64, string, error) {
	var lastID int64
	prev := genesis
	err := q.QueryRowContext(ctx, qHead).Scan(&lastID, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, "", dbErr("ledger: reading the chain head", err)
	}
	return lastID, prev, nil
}

// appendAfter is appendRecord with the head (lastID, prev) known.
func appendAfter(ctx context.Context, tx execer, r record, lastID int64, prev string) (record, error) {
	r.ID, r.PrevHash = lastID+1, prev
	r.Hash = r.computeHash()
	if _, err := tx.ExecContext(ctx, qAppend,
		r.ID, r.Kind, r.Dataset, r.Mechanism, r.Params, r.Event, r.Cell, r.Time, r.PrevHash, r.Hash); err != nil {
		return r, dbErr("ledger: appending a record", err)
	}
	return r, nil
}

// ChargeMeta describes a charge for the ledger.
type ChargeMeta struct {
	// Params are the mechanism's public parameters (k, method, iters,
	// clip, ...), stored as JSON. Nothing derived from the data.
	Params any
	// Cell identifies the cell (or script line) that spent.
	Cell string
	// Schema, when set, is the registered schema the charge was planned
	// from. The charge is refused (ErrRegistrationChanged) unless the
	// dataset's registration still has exactly this schema: a dataset
	// removed and registered again under the same name may have another
	// unit, bounds or clip, and a plan made from the old ones would be
	// calibrated wrongly for the data the call would read.
	Schema *Schema
	// Release, when set, reserves the release row of the charge (and its
	// name, refusing the charge with ErrNameTaken if another release of
	// the dataset has it); SealRelease stores the values after the run.
	Release *ReleaseMeta
}

// ErrRegistrationChanged refuses a charge planned from a schema the
// dataset no longer has (see ChargeMeta.Schema).
var ErrRegistrationChanged = errors.New("the dataset was removed and registered again with another schema since the call was planned")

// sameSchema reports whether a and b are the same registration's public
// facts. encoding/json writes struct fields in order and map keys sorted,
// so equal schemas encode to equal bytes.
func sameSchema(a, b Schema) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Receipt is a committed charge.
type Receipt struct {
	ID      int64            `json:"id"`
	Dataset string           `json:"dataset"`
	Event   accounting.Event `json:"event"`
	Mode    string           `json:"accountant"`
	// Filter names the filter that priced the charge and its amount, e.g.
	// "GDP filter μ=0.2472" (accounting.Mode.Pricing).
	Filter    string `json:"filter"`
	Budget    accounting.Budget
	Spent     accounting.Budget // after this charge
	Remaining accounting.Budget // after this charge (display value; see accounting.Accountant.Remaining)
	// Fits is what one more call alone may spend after this charge
	// (accounting.Accountant.FitsNow, other reservations not counted); nil
	// where the receipt is not the charge's own (a commit acknowledged
	// again).
	Fits *accounting.Fits `json:"fits,omitempty"`
	Hash string           `json:"hash"`
	Time time.Time        `json:"time"`
}

// Status is a dataset's budget state.
type Status struct {
	Dataset   string
	Mode      string
	Filter    string // the accountant's filter and its running total (accounting.Accountant.Filter)
	Budget    accounting.Budget
	Spent     accounting.Budget // the charges'
	Remaining accounting.Budget // after the charges
	Charges   int
	// Reservations is the number of live reservations of federated calls
	// in progress (reserve.go), Held their cost alone, Available what is
	// left with them counted (what a spend is checked against) and Lapse
	// when the earliest lapses. Without reservations, Available is
	// Remaining.
	Reservations int
	Held         accounting.Budget
	Available    accounting.Budget
	Lapse        time.Time
}

// encodeCharge checks ev and encodes it and meta's parameters as a charge
// (or a reservation, what) stores them.
func encodeCharge(what string, ev accounting.Event, meta ChargeMeta) (evJSON []byte, params string, err error) {
	if ev.Mechanism == "" {
		return nil, "", fmt.Errorf("ledger: %s needs the event's Mechanism name", what)
	}
	if err := ev.Validate(); err != nil {
		return nil, "", err
	}
	if evJSON, err = json.Marshal(ev); err != nil {
		return nil, "", fmt.Errorf("ledger: encoding the cost: %w", err)
	}
	params = "{}"
	if meta.Params != nil {
		b, err := json.Marshal(meta.Params)
		if err != nil {
			return nil, "", fmt.Errorf("ledger: encoding the parameters: %w", err)
		}
		params = string(b)
	}
	return evJSON, params, nil
}

// Charge checks ev against the dataset's budget and, if it fits, records
// it, in one BEGIN IMMEDIATE transaction committed with synchronous=FULL
// before Charge returns: the record and the dataset's running totals change
// together or not at all. A refusal is an *accounting.ExceededError
// (errors.Is(err, accounting.ErrBudgetExceeded)) and records nothing.
// Call it before the mechanism reads data: a crash afterwards still counts.
// Its cost does not grow with the ledger: the accountant resumes from the
// stored totals instead of replaying earlier charges.
func (s *Store) Charge(ctx context.Context, datasetName string, ev accounting.Event, meta ChargeMeta) (*Receipt, error) {
	evJSON, params, err := encodeCharge("a charge", ev, meta)
	if err != nil {
		return nil, err
	}
	t, err := s.begin(ctx) // BEGIN IMMEDIATE: the write lock first (writer.go)
	if err != nil {
		return nil, dbErr("ledger: starting the charge", err)
	}
	done := false
	defer func() {
		if !done {
			t.finish(false, record{}, "", knownDataset{})
		}
	}()
	tx := t.q
	acc, sc, err := t.accountant(ctx, datasetName)
	if err != nil {
		return nil, err
	}
	if meta.Schema != nil && !sameSchema(*meta.Schema, sc) {
		return nil, fmt.Errorf("ledger: dataset %q: %w", datasetName, ErrRegistrationChanged)
	}
	if err := checkHeld(ctx, tx, datasetName, acc, "", ev); err != nil { // live reservations count (reserve.go)
		return nil, err
	}
	if err := acc.Spend(ev); err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	headID, headHash, err := t.head(ctx)
	if err != nil {
		return nil, err
	}
	r, err := appendAfter(ctx, tx, record{Kind: "charge", Dataset: datasetName, Mechanism: ev.Mechanism,
		Params: params, Event: string(evJSON), Cell: meta.Cell, Time: now.Format(time.RFC3339Nano)}, headID, headHash)
	if err != nil {
		return nil, err
	}
	if meta.Release != nil {
		if err := reserveRelease(ctx, tx, r.ID, datasetName, *meta.Release); err != nil {
			return nil, err
		}
	}
	st := acc.State()
	if err := putTotals(ctx, tx, datasetName, st); err != nil {
		return nil, err
	}
	done = true
	if err := t.finish(true, r, datasetName, knownDataset{schema: sc, state: st}); err != nil {
		return nil, dbErr("ledger: committing the charge", err)
	}
	// What fits is searched after the commit: it needs no lock.
	fits := acc.FitsNow()
	return &Receipt{ID: r.ID, Dataset: datasetName, Event: ev, Mode: sc.Accountant, Filter: acc.Pricing(ev), Budget: sc.Budget,
		Spent: acc.Spent(), Remaining: acc.Remaining(), Fits: &fits, Hash: r.Hash, Time: now}, nil
}

// accountant returns a dataset's accountant, resumed from its stored
// totals. A dataset without a totals row (one whose charges could not be
// replayed when an old database was upgraded) is rebuilt from its records,
// which then fails on the bad record.
func (s *Store) accountant(ctx context.Context, q queryer, name string) (*accounting.Accountant, Schema, error) {
	return readAccountant(ctx, q, name)
}

// readAccountant is accountant through q (a write transaction, or a
// View's).
func readAccountant(ctx context.Context, q queryer, name string) (*accounting.Accountant, Schema, error) {
	r, err := readDatasetRow(ctx, q, name)
	if err != nil {
		return nil, Schema{}, err
	}
	mode, err := r.schema.Mode()
	if err != nil {
		return nil, Schema{}, fmt.Errorf("ledger: dataset %q: %w", name, err)
	}
	st, err := getTotals(ctx, q, name)
	if errors.Is(err, sql.ErrNoRows) {
		st, err = replayState(ctx, q, name, mode, r.schema.Budget)
	}
	if err != nil {
		return nil, Schema{}, err
	}
	acc, err := accounting.Resume(mode, r.schema.Budget, st)
	if err != nil {
		return nil, Schema{}, fmt.Errorf("ledger: dataset %q: %w", name, err)
	}
	return acc, r.schema, nil
}

// getTotals reads a dataset's stored totals; sql.ErrNoRows if it has none.
func getTotals(ctx context.Context, q queryer, name string) (accounting.State, error) {
	var text string
	if err := q.QueryRowContext(ctx, qTotals, name).Scan(&text); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return accounting.State{}, err
		}
		return accounting.State{}, dbErr(fmt.Sprintf("ledger: reading the totals of dataset %q", name), err)
	}
	var st accounting.State
	if err := st.UnmarshalText([]byte(text)); err != nil {
		return accounting.State{}, fmt.Errorf("ledger: dataset %q: corrupt totals (run `privnotes ledger verify`): %w", name, err)
	}
	return st, nil
}

// putTotals stores a dataset's totals, in the caller's transaction. It
// inserts the row if it is missing (a new dataset, or one rebuilt from its
// records by accountant).
func putTotals(ctx context.Context, tx execer, name string, st accounting.State) error {
	text, err := st.MarshalText()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, qPutTotals, name, string(text)); err != nil {
		return dbErr(fmt.Sprintf("ledger: storing the totals of dataset %q", name), err)
	}
	return nil
}

// replayState derives a dataset's totals from its charge records, replayed
// under the dataset's mode and budget (Replay does not enforce the budget;
// the State does not depend on either).
func replayState(ctx context.Context, q queryer, name string, mode accounting.Mode, budget accounting.Budget) (accounting.State, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, event FROM ledger WHERE dataset = ? AND kind = 'charge' ORDER BY id`, name)
	if err != nil {
		return accounting.State{}, dbErr("ledger: reading charges", err)
	}
	defer rows.Close()
	var events []accounting.Event
	for rows.Next() {
		var id int64
		var js string
		if err := rows.Scan(&id, &js); err != nil {
			return accounting.State{}, dbErr("ledger: reading charges", err)
		}
		var ev accounting.Event
		if err := json.Unmarshal([]byte(js), &ev); err != nil {
			return accounting.State{}, fmt.Errorf("ledger: record %d: corrupt cost: %w", id, err)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return accounting.State{}, dbErr("ledger: reading charges", err)
	}
	acc, err := accounting.Replay(mode, budget, events)
	if err != nil {
		return accounting.State{}, fmt.Errorf("ledger: dataset %q: replaying its charges: %w", name, err)
	}
	return acc.State(), nil
}

// Precheck reports whether events would fit in the dataset's remaining
// budget, without recording anything: nil, or an *accounting.ExceededError.
// It serves the static pre-check of a cell; Charge stays authoritative.
func (s *Store) Precheck(datasetName string, events ...accounting.Event) error {
	return s.view(func(v *View) error {
		acc, err := v.accountantHeld(datasetName) // live reservations count (reserve.go)
		if err != nil {
			return err
		}
		return acc.Check(events...)
	})
}

// WouldRemain returns what the dataset's budget would have left after
// events, recording nothing: nil error, or an *accounting.ExceededError
// when they do not fit. It serves dry runs; Charge stays authoritative.
func (s *Store) WouldRemain(datasetName string, events ...accounting.Event) (remaining accounting.Budget, err error) {
	err = s.view(func(v *View) error {
		acc, err := v.accountantHeld(datasetName) // live reservations count (reserve.go)
		if err != nil {
			return err
		}
		if err := acc.Spend(events...); err != nil {
			return err
		}
		remaining = acc.Remaining()
		return nil
	})
	return remaining, err
}

// Pricing names the filter of the dataset's accountant that prices ev and
// what it charges, as the receipt of a charge of ev says
// (accounting.Accountant.Pricing: the rdp accountant's amount depends on
// the order its dataset's state records, which the mode alone does not
// know).
func (s *Store) Pricing(datasetName string, ev accounting.Event) (p string, err error) {
	err = s.view(func(v *View) error {
		acc, _, err := readAccountant(v.ctx, v.q, datasetName)
		if err != nil {
			return err
		}
		p = acc.Pricing(ev)
		return nil
	})
	return p, err
}

// Status returns a dataset's budget, spent and remaining, and what its
// live reservations hold.
func (s *Store) Status(datasetName string) (st *Status, err error) {
	err = s.view(func(v *View) error { st, err = v.Status(datasetName); return err })
	return st, err
}

// Status is a dataset's budget state in v's snapshot: its totals and its
// live reservations as of one moment.
func (v *View) Status(datasetName string) (*Status, error) {
	acc, sc, err := readAccountant(v.ctx, v.q, datasetName)
	if err != nil {
		return nil, err
	}
	h, err := holdOn(v.ctx, v.q, datasetName, acc, "")
	if err != nil {
		return nil, err
	}
	return &Status{Dataset: datasetName, Mode: sc.Accountant, Filter: acc.Filter(), Budget: sc.Budget, Spent: acc.Spent(),
		Remaining: acc.Remaining(), Charges: int(acc.State().Events()),
		Reservations: len(h.held.events), Held: h.heldCost(), Available: h.Remaining(), Lapse: h.held.lapse}, nil
}

// Fits is what one more call on the dataset may spend, with its live
// reservations counted: the largest pure, bounded-range and Gaussian ε its
// accountant admits now (the Gaussian one calibrated to the budget's δ, or
// under basic composition to the δ that is left). It searches, so it is
// for remaining() and %budget, not for every receipt.
func (s *Store) Fits(datasetName string) (f accounting.Fits, err error) {
	err = s.view(func(v *View) error {
		acc, sc, err := readAccountant(v.ctx, v.q, datasetName)
		if err != nil {
			return err
		}
		h, err := holdOn(v.ctx, v.q, datasetName, acc, "")
		if err != nil {
			return err
		}
		delta := sc.Budget.Delta
		if acc.Mode() == accounting.ModeBasic || acc.Mode() == accounting.ModeAdvanced {
			delta = h.Remaining().Delta
		}
		f = h.Fits(delta)
		return nil
	})
	return f, err
}

// Remaining returns a dataset's remaining budget (a display value: under
// zCDP, check a spend with Precheck rather than comparing to it).
func (s *Store) Remaining(datasetName string) (accounting.Budget, error) {
	st, err := s.Status(datasetName)
	if err != nil {
		return accounting.Budget{}, err
	}
	return st.Remaining, nil
}

// Entry is a ledger record as read back.
type Entry struct {
	ID        int64             `json:"id"`
	Kind      string            `json:"kind"` // "register", "charge", "remove" or "seal"
	Dataset   string            `json:"dataset"`
	Mechanism string            `json:"mechanism"`
	Params    json.RawMessage   `json:"params"`
	Event     *accounting.Event `json:"event"` // nil but for "charge"
	Cell      string            `json:"cell"`
	Time      time.Time         `json:"time"`
	PrevHash  string            `json:"prev_hash"`
	Hash      string            `json:"hash"`
}

// Entries returns the ledger records of one dataset, or of all when name
// is empty, in order: registrations, charges and removals, the records
// that spend or set a budget. Seal records, which cost nothing and commit
// the chain to the stored releases (release.go), are left out; Rows has
// them.
func (s *Store) Entries(name string) (es []Entry, err error) {
	err = s.view(func(v *View) error { es, err = v.Entries(name); return err })
	return es, err
}

// Entries is Store.Entries in v's snapshot.
func (v *View) Entries(name string) ([]Entry, error) {
	return v.entries(name, false)
}

// Rows returns every ledger record of one dataset, or of all when name is
// empty, seal records included, in order: what the ledger's tables show
// (ledger show, %ledger, the exports), so that their ids are the chain's,
// without the gaps that hidden seal records would leave.
func (v *View) Rows(name string) ([]Entry, error) {
	return v.entries(name, true)
}

func (v *View) entries(name string, seals bool) ([]Entry, error) {
	recs, err := v.records(name)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(recs))
	for _, r := range recs {
		if r.Kind == "seal" && !seals {
			continue
		}
		e := Entry{ID: r.ID, Kind: r.Kind, Dataset: r.Dataset, Mechanism: r.Mechanism, Params: json.RawMessage(r.Params),
			Cell: r.Cell, PrevHash: r.PrevHash, Hash: r.Hash}
		e.Time, _ = time.Parse(time.RFC3339Nano, r.Time)
		if r.Kind == "charge" {
			var ev accounting.Event
			if err := json.Unmarshal([]byte(r.Event), &ev); err != nil {
				return nil, fmt.Errorf("ledger: record %d: corrupt cost: %w", r.ID, err)
			}
			e.Event = &ev
		}
		if !json.Valid(e.Params) {
			return nil, fmt.Errorf("ledger: record %d: corrupt parameters", r.ID)
		}
		out = append(out, e)
	}
	return out, nil
}

// records returns the chain's records of dataset name ("": every record),
// in order.
func (v *View) records(name string) ([]record, error) {
	q := `SELECT id, kind, dataset, mechanism, params, event, cell, time, prev_hash, hash FROM ledger`
	var args []any
	if name != "" {
		q += ` WHERE dataset = ?`
		args = append(args, name)
	}
	rows, err := v.q.QueryContext(v.ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, dbErr("ledger: reading records", err)
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.ID, &r.Kind, &r.Dataset, &r.Mechanism, &r.Params, &r.Event, &r.Cell, &r.Time, &r.PrevHash, &r.Hash); err != nil {
			return nil, dbErr("ledger: reading records", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("ledger: reading records", err)
	}
	return out, nil
}

// ChainError is a ledger that fails verification: the first bad record,
// or (ID 0, Dataset set) a dataset whose registry entry or stored totals do
// not follow from the records.
type ChainError struct {
	ID      int64
	Reason  string
	Dataset string // the dataset concerned, when there is one
}

func (e *ChainError) Error() string {
	if e.ID == 0 {
		return fmt.Sprintf("ledger verification failed: %s", e.Reason)
	}
	return fmt.Sprintf("ledger verification failed at record %d: %s", e.ID, e.Reason)
}

// Verify recomputes the hash chain and checks that every record follows
// from the ones before: ids are consecutive, each prev_hash is the hash of
// the record before, each hash matches its content, each dataset's stored
// schema, budget and data match its register record, replaying the charges
// in order never exceeds a budget, each dataset's stored running totals
// equal the totals of its charges, and each dataset's stored data still
// hash to their registered value. It returns a *ChainError for the first
// bad record (or dataset). (A chain cannot show that records were cut off
// its end; compare the head hash, `privnotes ledger show`, with a copy kept
// elsewhere.)
//
// Charges to a dataset registered with the former "advanced" accountant are
// checked against the rule in force when they were made
// (accounting.LegacyAdvancedVerifier), which every charge made since, under
// basic composition, also satisfies.
//
// It reads one snapshot (View): charges, seals and registrations committed
// while it runs are not part of what it checks, and cannot make a live
// ledger look tampered with.
func (s *Store) Verify() error {
	return s.view(func(v *View) error { return v.Verify() })
}

// Verify is Store.Verify of v's snapshot: what it checks is the ledger up
// to v.Head.
func (v *View) Verify() error {
	ctx := v.ctx
	// Page-level damage first: a damaged page that the checks below never
	// read (an index, free space) would otherwise pass unnoticed until a
	// charge needs it.
	if err := v.integrity(); err != nil {
		return err
	}
	recs, err := v.records("")
	if err != nil {
		return err
	}
	live := liveRegistrations(recs) // remove.go
	w := newChainWalk()
	w.onRegister = func(r record, sc Schema, dataHash string) error {
		dr, err := v.registeredRow(ctx, r, live)
		if errors.Is(err, ErrNoDataset) {
			return fmt.Errorf("dataset %q is registered in the ledger but missing from the registry", r.Dataset)
		} else if err != nil {
			return err
		}
		a, _ := json.Marshal(sc)
		b, _ := json.Marshal(dr.schema)
		if string(a) != string(b) || dataHash != dr.hash {
			return fmt.Errorf("dataset %q's stored schema, budget or data differ from its registration", r.Dataset)
		}
		return nil
	}
	for i, r := range recs {
		if err := w.step(i, r); err != nil {
			return err
		}
	}
	rels, err := releaseRows(ctx, v.q, "")
	if err != nil {
		return err
	}
	if err := checkReleases(w.byID, w.seals, rels); err != nil {
		return err
	}
	registered, accs, last := w.registered, w.accs, w.last
	// every registered dataset must have its register record
	names, err := v.Datasets()
	if err != nil {
		return err
	}
	for _, sc := range names {
		if !registered[sc.Name] {
			return &ChainError{ID: 0, Dataset: sc.Name, Reason: fmt.Sprintf("dataset %q is in the registry without a register record", sc.Name)}
		}
	}
	// the stored running totals must be those of the records
	for _, sc := range names {
		want := accs[sc.Name].State()
		got, err := getTotals(ctx, v.q, sc.Name)
		bad := func(format string, args ...any) error {
			return &ChainError{ID: last[sc.Name], Dataset: sc.Name, Reason: fmt.Sprintf("dataset %q: ", sc.Name) + fmt.Sprintf(format, args...)}
		}
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return bad("no stored running totals (the next charge rebuilds them from the records)")
		case err != nil:
			return bad("%v", err)
		case got != want:
			return bad("stored running totals (%v) differ from the totals of its charges (%v)", got, want)
		}
	}
	// the stored data must still be what was registered
	for _, r := range recs {
		if r.Kind != "register" || !live[r.ID] {
			continue
		}
		if path, hash, ok, err := v.snapshot(r.Dataset); err != nil {
			return &ChainError{ID: r.ID, Reason: err.Error()}
		} else if ok {
			if err := VerifySnapshot(path, hash); err != nil {
				return &ChainError{ID: r.ID, Reason: err.Error()}
			}
			continue
		}
		if ok, err := v.isEngine(r.Dataset); err != nil {
			return &ChainError{ID: r.ID, Reason: err.Error()}
		} else if ok {
			continue // a live table: nothing stored here to check (engine.go)
		}
		if _, err := v.load(r.Dataset); err != nil {
			return &ChainError{ID: r.ID, Reason: err.Error()}
		}
	}
	return nil
}

// integrity runs SQLite's integrity check over the whole database: every
// page, index and constraint. Its failure wraps ErrCorrupt.
func (v *View) integrity() error {
	rows, err := v.q.QueryContext(v.ctx, `PRAGMA integrity_check(5)`)
	if err != nil {
		return dbErr("ledger: checking the database's integrity", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return dbErr("ledger: checking the database's integrity", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return dbErr("ledger: checking the database's integrity", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("ledger: %w: SQLite's integrity check: %s", ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// Head returns the id and hash of the last record (0 and the genesis hash
// for an empty ledger).
func (s *Store) Head() (id int64, hash string, err error) {
	err = s.view(func(v *View) error { id, hash, err = v.Head(); return err })
	return id, hash, err
}

// Head is the last record of v's snapshot: the head of what v.Verify
// checks and v.ExportDoc exports.
func (v *View) Head() (int64, string, error) {
	var id int64
	h := genesis
	err := v.q.QueryRowContext(v.ctx, `SELECT id, hash FROM ledger ORDER BY id DESC LIMIT 1`).Scan(&id, &h)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, "", dbErr("ledger: reading the chain head", err)
	}
	return id, h, nil
}

// TableHeader names the columns of TableRow, for callers that render the
// ledger in their own format (the %ledger magic renders text and HTML).
var TableHeader = []string{"ID", "TIME (UTC)", "DATASET", "MECHANISM", "COST", "CELL", "HASH"}

// TableRow returns the cells of e's row in the ledger table, in TableHeader
// order. The cost omits the mechanism (it has its own column) and the hash is
// shortened to 12 hex digits.
// A seal record's row names the charge whose release it seals in the
// mechanism column ("seal of record 3") and costs nothing ("-").
func (e Entry) TableRow() []string {
	cost := "-"
	if e.Event != nil {
		ev := *e.Event
		ev.Mechanism = ""
		cost = ev.String()
	}
	mech := e.Mechanism
	if e.Kind == "seal" {
		var p sealParams
		if json.Unmarshal(e.Params, &p) == nil {
			mech = fmt.Sprintf("seal of record %d", p.Record)
		}
	}
	return []string{fmt.Sprint(e.ID), e.Time.Format("2006-01-02 15:04:05"), e.Dataset, mech, cost, e.Cell, ShortHash(e.Hash)}
}

// WriteTable writes entries as an aligned text table.
func WriteTable(w io.Writer, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(TableHeader, "\t"))
	for _, e := range entries {
		fmt.Fprintln(tw, strings.Join(e.TableRow(), "\t"))
	}
	return tw.Flush()
}
