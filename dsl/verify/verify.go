// Package verify checks an executed Jupyter notebook against a privnotes
// ledger: every output that carries a privnotes receipt must name a charge
// record of a ledger whose hash chain verifies, and the release stored
// with that record must have the receipt's release hash. Then the output
// is redrawn from the ledger alone, never from what the notebook carries:
// the receipt is rebuilt from the ledger's data (fromLedger: the stored
// call's function, dataset and name; the stored receipt's mechanism, ε, δ,
// noise, parameters, note and budget block; the charge's cost; the
// accountant, filter and budget left as the chain computes them), the
// stored release is decoded into the DSL's result type (runtime.Result)
// with that receipt and rendered by interp.Render, the code the kernel
// displays results with, and the output must be exactly that: its full
// receipt, every MIME type it shows and its metadata. A field the
// notebook's receipt holds and the ledger does not (one added to
// release.Receipt later, say) is a difference like any other.
//
// An output the ledger cannot back is listed as unverified, never as ok:
// a dry run or a call on public synthetic data (nothing was released or
// stored; its output must still be exactly the rendering of its own
// receipt, so that no released number hides in it), a budget block the
// ledger does not record, a release stored before receipts were bound.
// Outputs without a receipt are public computations and printed text and
// are not checked; every private release carries one.
//
// It also reads what a notebook spent from its receipts alone (Receipts).
// `privnotes notebook verify` and `privnotes notebook receipts` are its
// command-line front ends.
package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/privnotes/privnotes/dsl/engine"
	"github.com/privnotes/privnotes/dsl/interp"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/runtime"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Notebook is the part of an nbformat 4 notebook this package reads.
type Notebook struct {
	Cells []Cell `json:"cells"`
}

// Cell is a notebook cell.
type Cell struct {
	Type           string   `json:"cell_type"`
	ID             string   `json:"id"`
	ExecutionCount *int     `json:"execution_count"`
	Outputs        []Output `json:"outputs"`
}

// Output is one output of a code cell.
type Output struct {
	Type     string                     `json:"output_type"`
	Data     map[string]json.RawMessage `json:"data"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// ReadNotebook reads an .ipynb file.
func ReadNotebook(path string) (*Notebook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nb Notebook
	if err := json.Unmarshal(b, &nb); err != nil {
		return nil, fmt.Errorf("%s is not a Jupyter notebook: %v", path, err)
	}
	return &nb, nil
}

// Where names an output's cell as a reader finds it: "cell 4 [3]" is the
// notebook's fourth cell, shown with execution count 3.
func Where(cellIndex int, c Cell) string {
	s := fmt.Sprintf("cell %d", cellIndex+1)
	if c.ExecutionCount != nil {
		s += fmt.Sprintf(" [%d]", *c.ExecutionCount)
	}
	return s
}

// Stamp is a privnotes receipt as an output's metadata carries it.
type Stamp struct {
	Dataset     string           `json:"dataset"`
	Mechanism   string           `json:"mechanism"`
	LedgerID    int64            `json:"ledger_id"`
	Charged     bool             `json:"charged"`
	Replayed    bool             `json:"replayed"`
	DryRun      bool             `json:"dry_run"`
	Accountant  string           `json:"accountant"`
	Cost        string           `json:"cost"`
	Name        string           `json:"name"`
	ReleaseHash string           `json:"release_hash"`
	Receipt     *release.Receipt `json:"receipt"`
}

// showsReceipt reports whether a displayed output reads like a privnotes
// receipt, which the kernel always sends with its metadata. Printed text
// (a stream) may quote a receipt legitimately and is not looked at.
func (o Output) showsReceipt() bool {
	if o.Type != "execute_result" && o.Type != "display_data" {
		return false
	}
	plain, _ := text(o.Data["text/plain"])
	html, _ := text(o.Data["text/html"])
	return strings.Contains(plain, "privacy receipt:") || strings.Contains(plain, "dry run (nothing charged") ||
		strings.Contains(html, "privnotes-receipt")
}

// stamp is the output's receipt; nil when it carries none.
func (o Output) stamp() (*Stamp, error) {
	raw, ok := o.Metadata["privnotes"]
	if !ok {
		return nil, nil
	}
	var s Stamp
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("its privnotes receipt cannot be read: %v", err)
	}
	return &s, nil
}

// mimes are the MIME types the output shows, sorted, so that a verdict
// names the same one on every run.
func (o Output) mimes() []string {
	ms := make([]string, 0, len(o.Data))
	for m := range o.Data {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}

// Line is the verdict on one output: verified (OK), unverified, or a
// failure (neither).
type Line struct {
	Where string // the cell
	// OK: the output is exactly what the ledger's stored release and
	// receipt render.
	OK bool
	// Unverified: not a failure, but what the output shows is not backed
	// by the ledger (What says why): a dry run, public synthetic data, a
	// budget block or a receipt the ledger does not record.
	Unverified bool
	Dataset    string
	What       string // what the output is, or why it fails
	// Record is the charge record whose stored release the output shows,
	// once checked (0 otherwise); the dataset totals count it.
	Record int64
}

func (l Line) String() string {
	mark := "FAIL  "
	switch {
	case l.OK:
		mark = "ok    "
	case l.Unverified:
		mark = "UNVERIFIED  "
	}
	return fmt.Sprintf("%s%s: %s", mark, l.Where, l.What)
}

// Total is what a notebook's outputs charged one dataset.
type Total struct {
	Dataset string
	Outputs int
	// Records are the distinct charge records the outputs show.
	Records []int64
	Replays int
	// Spent is what those records cost together under the dataset's
	// accountant; Ledger is the dataset's registration and its whole
	// spend in the ledger.
	Spent  accounting.Budget
	Ledger ledger.DatasetBudget
	Err    string // why the totals fail, if they do
}

func (t Total) String() string {
	s := fmt.Sprintf("dataset %s: %d output(s) from %d charge(s) (records %s), %d replay(s); notebook spent %s; ledger spent %s of budget %s (%s)",
		t.Dataset, t.Outputs, len(t.Records), ids(t.Records), t.Replays, t.Spent, t.Ledger.Spent, t.Ledger.Budget, t.Ledger.Accountant)
	if t.Err != "" {
		return "FAIL  " + s + ": " + t.Err
	}
	return "ok    " + s + ": within budget"
}

func ids(xs []int64) string {
	if len(xs) == 0 {
		return "none"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// Report is the verdict on a notebook.
type Report struct {
	Lines  []Line
	Totals []Total
	// Unchecked counts the outputs without a receipt: public
	// computations and printed text, which the ledger cannot back.
	Unchecked int
}

// OK reports whether no output and no total failed; unverified outputs
// do not fail the report (Count says how many there are).
func (r *Report) OK() bool {
	for _, l := range r.Lines {
		if !l.OK && !l.Unverified {
			return false
		}
	}
	for _, t := range r.Totals {
		if t.Err != "" {
			return false
		}
	}
	return true
}

// Count returns how many outputs verified and how many are unverified.
func (r *Report) Count() (verified, unverified int) {
	for _, l := range r.Lines {
		switch {
		case l.OK:
			verified++
		case l.Unverified:
			unverified++
		}
	}
	return verified, unverified
}

// Check checks nb against a ledger that VerifyExport accepted.
func Check(nb *Notebook, led *ledger.Verified) *Report {
	rep := &Report{}
	type acc struct {
		t       *Total
		records map[int64]bool
	}
	totals := map[string]*acc{}
	for ci, c := range nb.Cells {
		for _, o := range c.Outputs {
			st, err := o.stamp()
			where := Where(ci, c)
			if st == nil && err == nil {
				if o.showsReceipt() {
					rep.Lines = append(rep.Lines, Line{Where: where, What: "the output shows a privnotes receipt but its metadata carries none, so what it shows cannot be checked (was the metadata removed?)"})
				} else {
					rep.Unchecked++ // a public computation, or printed text
				}
				continue
			}
			if err != nil {
				rep.Lines = append(rep.Lines, Line{Where: where, What: err.Error()})
				continue
			}
			line := checkOutput(where, o, st, led)
			rep.Lines = append(rep.Lines, line)
			if line.Record == 0 {
				continue // nothing released, or a failure
			}
			rec := led.Records[line.Record]
			a := totals[rec.Dataset]
			if a == nil {
				a = &acc{t: &Total{Dataset: rec.Dataset, Ledger: led.Totals[rec.Dataset]}, records: map[int64]bool{}}
				totals[rec.Dataset] = a
			}
			a.t.Outputs++
			if st.Replayed {
				a.t.Replays++
			}
			if !a.records[rec.ID] {
				a.records[rec.ID] = true
				a.t.Records = append(a.t.Records, rec.ID)
			}
		}
	}
	names := make([]string, 0, len(totals))
	for n := range totals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := totals[n].t
		sort.Slice(t.Records, func(i, j int) bool { return t.Records[i] < t.Records[j] })
		spent, err := spend(t.Ledger, t.Records, led)
		t.Spent = spent
		if err != nil {
			t.Err = err.Error()
		}
		rep.Totals = append(rep.Totals, *t)
	}
	return rep
}

// spend composes the records' costs under the dataset's registered
// accountant and budget.
func spend(b ledger.DatasetBudget, records []int64, led *ledger.Verified) (accounting.Budget, error) {
	mode, err := accounting.ParseMode(b.Accountant)
	if err != nil {
		return accounting.Budget{}, fmt.Errorf("the dataset's accountant: %v", err)
	}
	if mode == accounting.ModeAdvanced {
		mode = accounting.ModeBasic
	}
	a, err := accounting.NewAccountant(mode, b.Budget)
	if err != nil {
		return accounting.Budget{}, err
	}
	for _, id := range records {
		var ev accounting.Event
		if err := json.Unmarshal([]byte(led.Records[id].Event), &ev); err != nil {
			return a.Spent(), fmt.Errorf("record %d: corrupt cost", id)
		}
		if err := a.Spend(ev); err != nil {
			return a.Spent(), fmt.Errorf("the notebook's charges exceed the registered budget at record %d: %v", id, err)
		}
	}
	return a.Spent(), nil
}

// checkOutput checks one output carrying a receipt.
func checkOutput(where string, o Output, st *Stamp, led *ledger.Verified) Line {
	fail := func(format string, args ...any) Line {
		return Line{Where: where, Dataset: st.Dataset, What: fmt.Sprintf(format, args...)}
	}
	what := fmt.Sprintf("%s on %s", st.Mechanism, st.Dataset)
	switch {
	case st.DryRun:
		// Its receipt is the notebook's own: the ledger holds nothing of
		// a dry run, so none of its text (a note, a noise scale) can be
		// checked, only that the output is nothing but that receipt.
		if msg := dryRun(o, st, led); msg != "" {
			return fail("%s: the receipt says dry run, but %s", what, msg)
		}
		return Line{Where: where, Unverified: true, Dataset: st.Dataset,
			What: what + ": unverified (dry run: nothing was released or charged; the receipt it shows is the notebook's, the ledger holds none)"}
	case !st.Charged && !st.Replayed && st.LedgerID == 0 && strings.HasPrefix(st.Accountant, "none"):
		if !strings.HasPrefix(st.Dataset, "synthetic:") {
			return fail("%s: the receipt says public synthetic data, but names dataset %q", what, st.Dataset)
		}
		if msg := unreleased(o, st, "privacy receipt: "+what+",", false, "not charged: public synthetic data"); msg != "" {
			return fail("%s: the receipt says public synthetic data, but %s", what, msg)
		}
		return Line{Where: where, Unverified: true, Dataset: st.Dataset,
			What: what + ": unverified (public synthetic data: nothing was charged or stored in the ledger; its values are public)"}
	case st.ReleaseHash == "":
		return fail("%s: the receipt (ledger record %d) carries no release hash: the release was not stored, or the receipt was edited", what, st.LedgerID)
	}
	rec, ok := led.Records[st.LedgerID]
	if !ok && led.Redacted[st.LedgerID] {
		return fail("%s: ledger record %d is not in this partial export of %s: export the notebook's datasets (privnotes ledger export --json --dataset NAME, once per dataset)", what, st.LedgerID, strings.Join(led.Datasets, ", "))
	}
	if !ok || rec.Kind != "charge" {
		return fail("%s: ledger record %d is not a charge of this ledger", what, st.LedgerID)
	}
	rel, ok := led.Releases[st.LedgerID]
	if !ok || !rel.Sealed() {
		return fail("%s: ledger record %d stores no release", what, st.LedgerID)
	}
	if rel.ValueHash != st.ReleaseHash {
		return fail("%s: release hash %s differs from the one stored with ledger record %d (%s)", what, ledger.ShortHash(st.ReleaseHash), rec.ID, ledger.ShortHash(rel.ValueHash))
	}
	rc := st.Receipt
	if rc == nil {
		return fail("%s: the output's metadata lacks the full receipt", what)
	}
	if rc.LedgerID != st.LedgerID || rc.ReleaseHash != st.ReleaseHash || rc.Replayed != st.Replayed {
		return fail("%s: the receipt's parts disagree (ledger record, release hash or replay)", what)
	}
	if ev, err := json.Marshal(rc.Cost); err != nil || string(ev) != rec.Event {
		return fail("%s: the receipt's cost %s is not what ledger record %d charged", what, release.CostString(rc.Cost), rec.ID)
	}
	if msg := sameStamp(o, rc); msg != "" {
		return fail("%s: %s", what, msg)
	}
	if msg := boundTo(rc, rel); msg != "" {
		return fail("%s: %s", what, msg)
	}
	if msg := pricedAs(rc, rec, led); msg != "" {
		return fail("%s: %s", what, msg)
	}
	if msg := shownAs(rc, rel); msg != "" {
		return fail("%s: %s", what, msg)
	}
	// The checks above name the usual edits; what follows is the rule:
	// the receipt is rebuilt from the ledger alone and the notebook's must
	// be that receipt, field for field, and the output exactly its
	// rendering. Nothing the notebook carries reaches the expected output.
	lrc, gap, err := fromLedger(rc, rec, rel, led)
	if err != nil {
		return fail("%s: %v", what, err)
	}
	if msg := receiptDiff(rc, lrc, rec.ID); msg != "" {
		return fail("%s: %s", what, msg)
	}
	value, cols, err := release.Decode([]byte(rel.Value))
	if err != nil {
		return fail("%s: %v", what, err)
	}
	want, err := render(lrc, value, cols)
	if err != nil {
		return fail("%s: %v", what, err)
	}
	// Every MIME type the output shows is compared, not only the three a
	// release renders: a front end displays the richest type it knows, so
	// an unchecked text/markdown or image/png next to a genuine
	// text/plain would be what the reader sees.
	// A cell may also show the receipt alone (`r.Receipt`): then the
	// output is exactly the receipt's own rendering, with no value.
	msg, shown := matches(o, want, rec.ID)
	if msg != "" {
		if alone, n := matches(o, interp.Render(lrc), rec.ID); alone == "" {
			msg, shown = "", n
		}
	}
	if msg != "" {
		return fail("%s: %s", what, msg)
	}
	if gap != "" {
		return Line{Where: where, Unverified: true, Dataset: rec.Dataset, Record: rec.ID,
			What: fmt.Sprintf("%s: record %d: %s; the release and the rest of the receipt match the ledger", what, rec.ID, gap)}
	}
	how := "charged"
	if st.Replayed {
		how = "replayed"
	}
	if st.Name != "" {
		how += fmt.Sprintf(", name %q", st.Name)
	}
	return Line{Where: where, OK: true, Dataset: rec.Dataset, Record: rec.ID,
		What: fmt.Sprintf("%s: record %d (%s), release %s, %d rendering(s) match", what, rec.ID, how, ledger.ShortHash(rel.ValueHash), shown)}
}

// unreleased checks an output whose receipt says nothing of a registered
// dataset was released (a call on public synthetic data), which the
// ledger cannot back: it must carry no stored release, and what it shows
// must read as such a receipt (text/plain beginning with plain, or
// holding it after the values when atStart is false; text/html holding
// html; nothing else), so that a released number cannot be passed off
// under a receipt that escapes the check. Its values are not checked:
// synthetic data are public. "" when it does.
func unreleased(o Output, st *Stamp, plain string, atStart bool, html string) string {
	if st.ReleaseHash != "" || st.Receipt != nil || st.Replayed {
		return "it carries a stored release"
	}
	if st.Charged {
		return "it says charged"
	}
	if st.LedgerID != 0 {
		return fmt.Sprintf("it names ledger record %d", st.LedgerID)
	}
	if len(o.Data) == 0 {
		return "it shows nothing"
	}
	for _, mime := range o.mimes() {
		got, err := text(o.Data[mime])
		switch {
		case err != nil:
			return fmt.Sprintf("its %s is not text", mime)
		case mime == "text/plain" && atStart && !strings.HasPrefix(got, plain):
			return fmt.Sprintf("its text/plain does not begin %q", plain)
		case mime == "text/plain" && !atStart && !strings.Contains(got, plain):
			return fmt.Sprintf("its text/plain does not say %q", plain)
		case mime == "text/html" && !strings.Contains(got, html):
			return fmt.Sprintf("its text/html does not say %q", html)
		case mime != "text/plain" && mime != "text/html":
			return fmt.Sprintf("it shows %s, which such a receipt does not render", mime)
		}
	}
	return ""
}

// matches compares every MIME type the output shows with want, the
// rendering of the stored release; "" and how many matched when all do.
func matches(o Output, want engine.Display, record int64) (string, int) {
	shown := 0
	for _, mime := range o.mimes() {
		exp, ok := want.Data[mime]
		if !ok {
			return fmt.Sprintf("the output shows %s, which the stored release does not render", mime), 0
		}
		shown++
		if msg := compare(mime, o.Data[mime], exp); msg != "" {
			return fmt.Sprintf("%s is not the rendering of the release stored with ledger record %d: %s", mime, record, msg), 0
		}
	}
	if shown == 0 {
		return "the output shows nothing this check can compare (text/plain, text/html, application/json)", 0
	}
	// The metadata too: a front end may show it, and `notebook receipts`
	// reads it.
	keys := map[string]bool{}
	for k := range o.Metadata {
		keys[k] = true
	}
	for k := range want.Metadata {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		wb, err := json.Marshal(want.Metadata[k])
		if _, ok := want.Metadata[k]; !ok || err != nil || !sameJSON(o.Metadata[k], wb) {
			return fmt.Sprintf("the output's metadata %q is not what the kernel attaches to the release stored with ledger record %d", k, record), 0
		}
	}
	return "", shown
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// shownAs checks what the receipt says of the call (target ε and δ,
// mechanism, noise and parameters) against what the ledger stored with
// the release, to name the field in the usual edits; "" when it agrees.
// The note and the block are compared exactly by fromLedger. Releases
// stored before receipts were bound carry none, and pass here
// (fromLedger marks them unverified).
func shownAs(rc *release.Receipt, rel ledger.StoredRelease) string {
	sh, err := release.Shown([]byte(rel.Value))
	if err != nil {
		return err.Error()
	}
	if sh == nil {
		return ""
	}
	params, err := json.Marshal(rc.Params)
	if err != nil {
		return "the receipt's parameters cannot be encoded"
	}
	field := ""
	switch {
	case rc.Mechanism != sh.Mechanism:
		field = "mechanism"
	case math.Float64bits(rc.Eps) != math.Float64bits(float64(sh.Eps)) || math.Float64bits(rc.Delta) != math.Float64bits(float64(sh.Delta)):
		field = "ε or δ"
	case rc.NoiseScale != sh.Noise:
		field = "noise"
	case !sameJSON(params, sh.Params):
		field = "parameters"
	}
	if field != "" {
		return fmt.Sprintf("the receipt's %s: not what ledger record %d stored with the release", field, rel.Record)
	}
	return ""
}

// dryRun checks the output of a dry run. A dry run reads no data and
// charges nothing, so its whole receipt is public and travels in the
// metadata: the output must be exactly the kernel's rendering of it (no
// room for a released number in its text), and a dry run of a stored name
// must point at a release the ledger stores. "" when it verifies.
func dryRun(o Output, st *Stamp, led *ledger.Verified) string {
	rc := st.Receipt
	if rc == nil {
		return "the output's metadata lacks the full receipt"
	}
	if !rc.DryRun || rc.Charged || st.Charged {
		return "its full receipt is not a dry run's"
	}
	if msg := sameStamp(o, rc); msg != "" {
		return msg
	}
	if rc.Replayed {
		if rel, ok := led.Releases[rc.LedgerID]; !ok || rel.ValueHash != rc.ReleaseHash {
			return fmt.Sprintf("the release it would replay (ledger record %d, hash %s) is not stored in the ledger", rc.LedgerID, ledger.ShortHash(rc.ReleaseHash))
		}
	} else if rc.ReleaseHash != "" || rc.LedgerID != 0 {
		return "it carries a stored release"
	}
	want, err := render(rc, nil, nil)
	if err != nil {
		return err.Error()
	}
	if len(o.Data) == 0 {
		return "it shows nothing"
	}
	for _, mime := range o.mimes() {
		exp, ok := want.Data[mime]
		if !ok {
			return fmt.Sprintf("it shows %s, which a dry run does not render", mime)
		}
		if msg := compare(mime, o.Data[mime], exp); msg != "" {
			return fmt.Sprintf("its %s is not the rendering of its receipt: %s", mime, msg)
		}
	}
	return ""
}

// render is the kernel's display of a stored release with its receipt.
// The conversions into result types assume the value has the function's
// type; boundTo checks the function against the ledger first, and a
// conversion that panics anyway fails this output rather than the whole
// check.
func render(rc *release.Receipt, value any, cols []string) (d engine.Display, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the stored release cannot be shown as a result of %s", rc.Function)
		}
	}()
	res, err := runtime.Result(rc.Function, &release.Release{Value: value, Receipt: rc, Columns: cols})
	if err != nil {
		return engine.Display{}, err
	}
	return interp.Render(res), nil
}

// sameStamp checks that the metadata's summary of the receipt (what
// `notebook receipts` and the verdict lines read: dataset, mechanism, cost,
// name, …) is the one the kernel derives from the full receipt, which the
// rest of the check binds to the ledger; "" when it is.
func sameStamp(o Output, rc *release.Receipt) string {
	want, err := json.Marshal(rc.Metadata()["privnotes"])
	if err != nil {
		return "the receipt cannot be encoded again"
	}
	if !sameJSON(o.Metadata["privnotes"], want) {
		return "the metadata's receipt summary (dataset, mechanism, cost, name, …) is not the full receipt's"
	}
	return ""
}

// boundTo checks the parts of the receipt that the rendering shows and
// the ledger stores with the release: the function whose result type
// renders it, the dataset (or derived lineage) it was called on, its
// name, and whether it was charged or replayed; "" when they match.
func boundTo(rc *release.Receipt, rel ledger.StoredRelease) string {
	var call struct {
		Function string `json:"function"`
		Dataset  string `json:"dataset"`
		Lineage  string `json:"lineage"`
	}
	if err := json.Unmarshal([]byte(rel.Call), &call); err != nil {
		return fmt.Sprintf("the call stored with ledger record %d cannot be read", rel.Record)
	}
	on := call.Dataset
	if call.Lineage != "" {
		on = call.Lineage
	}
	switch {
	case rc.Function != call.Function:
		return fmt.Sprintf("the receipt names function %s, ledger record %d stores a release of %s", rc.Function, rel.Record, call.Function)
	case rc.Dataset != on:
		return fmt.Sprintf("the receipt names dataset %q, ledger record %d stores a release on %q", rc.Dataset, rel.Record, on)
	case rc.Name != rel.Name:
		return fmt.Sprintf("the receipt names the release %q, ledger record %d stores it as %q", rc.Name, rel.Record, rel.Name)
	case rc.Replayed && (rel.Name == "" || rc.Charged):
		return fmt.Sprintf("the receipt says replayed, but only a named release is replayed, and a replay charges nothing (ledger record %d)", rel.Record)
	case !rc.Replayed && !rc.Charged:
		return fmt.Sprintf("the receipt says not charged, but ledger record %d is a charge", rel.Record)
	case rc.DryRun:
		return fmt.Sprintf("the receipt says dry run, but ledger record %d is a charge", rel.Record)
	}
	return ""
}

// pricedAs checks what the receipt says of the dataset's budget against
// the chain (chainPrice), to name the field in the usual edits; "" when
// it matches. A replay names the filter of the charge it replays (none,
// from earlier versions) and shows the budget left when it ran, which
// fromLedger checks.
func pricedAs(rc *release.Receipt, rec ledger.ChainRecord, led *ledger.Verified) string {
	p, err := chainPrice(rec, led)
	switch {
	case err != nil:
		return err.Error()
	case rc.Accountant != p.accountant:
		return fmt.Sprintf("the receipt names accountant %q, dataset %q was registered with %q", rc.Accountant, rec.Dataset, p.accountant)
	case (!rc.Replayed || rc.Filter != "") && rc.Filter != p.filter:
		return fmt.Sprintf("the receipt says priced by %q, ledger record %d was priced by %q", rc.Filter, rec.ID, p.filter)
	case !rc.Replayed && rc.Remaining != p.after:
		return fmt.Sprintf("the receipt says ε=%.6g, δ=%.6g remained, after ledger record %d ε=%.6g, δ=%.6g did",
			rc.Remaining.Eps, rc.Remaining.Delta, rec.ID, p.after.Eps, p.after.Delta)
	}
	return ""
}

// price is what the chain says of a charge's budget: the accountant of
// the dataset's registration, the filter that priced the charge, the
// budget left after it, and the budget left after each later change of
// the dataset's spend (what a replay of the charge's release can show:
// the budget left when it ran, which no record holds).
type price struct {
	accountant string
	filter     string
	after      accounting.Budget
	fits       accounting.Fits // what one more call alone may spend after the charge
	later      []accounting.Budget
}

// chainPrice replays the chain's registrations and charges of rec's
// dataset, as the ledger did when it charged.
func chainPrice(rec ledger.ChainRecord, led *ledger.Verified) (price, error) {
	var p price
	var acc *accounting.Accountant
	var last int64
	for id := range led.Records {
		last = max(last, id)
	}
	for id := int64(1); id <= last; id++ {
		r, ok := led.Records[id]
		if !ok && led.Redacted[id] {
			// A record of another dataset in a partial export:
			// VerifyExport checked that rec's dataset's are in full.
			continue
		}
		if !ok {
			return p, fmt.Errorf("ledger record %d is missing", id)
		}
		if r.Dataset != rec.Dataset {
			continue
		}
		switch r.Kind {
		case "register":
			var reg struct {
				Schema ledger.Schema `json:"schema"`
			}
			if err := json.Unmarshal([]byte(r.Params), &reg); err != nil {
				return p, fmt.Errorf("ledger record %d: corrupt registration", id)
			}
			mode, err := reg.Schema.Mode()
			if err == nil && mode == accounting.ModeAdvanced {
				acc, err = accounting.LegacyAdvancedVerifier(reg.Schema.Budget)
			} else if err == nil {
				acc, err = accounting.NewAccountant(mode, reg.Schema.Budget)
			}
			if err != nil {
				return p, fmt.Errorf("ledger record %d: %v", id, err)
			}
			if id <= rec.ID {
				p.accountant = reg.Schema.Accountant
			} else if p.later != nil {
				// Registered again after a removal: a replay may show
				// the fresh budget.
				p.later = append(p.later, acc.Remaining())
			}
		case "charge":
			var ev accounting.Event
			if acc == nil || json.Unmarshal([]byte(r.Event), &ev) != nil || acc.Spend(ev) != nil {
				return p, fmt.Errorf("ledger record %d cannot be replayed", id)
			}
			switch {
			case id < rec.ID:
			case id == rec.ID:
				p.filter, p.after, p.fits = acc.Pricing(ev), acc.Remaining(), acc.FitsNow()
				p.later = append(p.later, p.after)
			default:
				p.later = append(p.later, acc.Remaining())
			}
		}
		if id == rec.ID && acc == nil {
			return p, fmt.Errorf("dataset %q has no registration before ledger record %d", rec.Dataset, rec.ID)
		}
	}
	if p.later == nil {
		return p, fmt.Errorf("ledger record %d is not a charge of dataset %q", rec.ID, rec.Dataset)
	}
	return p, nil
}

// fromLedger is the receipt of rc's release rebuilt from the ledger
// alone: the stored call (function, dataset or lineage), the stored
// release (name, release hash, and the receipt bound into its encoding:
// mechanism, ε, δ, noise, parameters, note and budget block), the charge
// record's cost, and the accountant, filter and budget left that the
// chain computes. Only what says how the notebook reached the release is
// taken from rc, and only where the ledger allows it: charged or replayed
// (boundTo checked it against the stored name), which of the budgets left
// after the charge a replay shows, and whether the note ends with the
// runtime's sentence about a block's δ (runtime.BlockDeltaNote, with the
// stored call's δ). A field of release.Receipt this function does not set
// stays zero, so a notebook that shows one fails: a field added to
// receipts is bound to the ledger or visibly unverifiable, never trusted.
//
// gap, when not "", is why the output cannot be verified although nothing
// contradicts the ledger: a budget block the ledger does not record, or a
// release stored before receipts were bound to it. The receipt returned
// then holds rc's unrecorded fields, so that the rest can still be
// checked.
func fromLedger(rc *release.Receipt, rec ledger.ChainRecord, rel ledger.StoredRelease, led *ledger.Verified) (lrc *release.Receipt, gap string, err error) {
	var call struct {
		Function string                     `json:"function"`
		Dataset  string                     `json:"dataset"`
		Lineage  string                     `json:"lineage"`
		Args     map[string]json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal([]byte(rel.Call), &call); err != nil {
		return nil, "", fmt.Errorf("the call stored with ledger record %d cannot be read", rel.Record)
	}
	var ev accounting.Event
	if err := json.Unmarshal([]byte(rec.Event), &ev); err != nil {
		return nil, "", fmt.Errorf("ledger record %d: corrupt cost", rec.ID)
	}
	p, err := chainPrice(rec, led)
	if err != nil {
		return nil, "", err
	}
	lrc = &release.Receipt{Function: call.Function, Dataset: call.Dataset, Cost: ev,
		Charge: release.Charge{Accountant: p.accountant, LedgerID: rec.ID}, Name: rel.Name, ReleaseHash: rel.ValueHash, Replayed: rc.Replayed, Charged: !rc.Replayed}
	if call.Lineage != "" {
		lrc.Dataset = call.Lineage
	}
	if rc.Replayed {
		// A replay prices nothing and shows the budget left when it ran:
		// one of those after the charge, or the ledger's last.
		lrc.Remaining = p.later[len(p.later)-1]
		for _, b := range p.later {
			if b == rc.Remaining {
				lrc.Remaining = b
			}
		}
		if rc.Filter != "" {
			// It names the filter that priced the charge (replays of
			// earlier versions named none).
			lrc.Filter = p.filter
		}
	} else {
		lrc.Filter, lrc.Remaining = p.filter, p.after
		if rc.Fits != nil {
			// What still fits after the charge (receipts before it was
			// recorded have none).
			lrc.Fits = &p.fits
		}
	}
	sh, err := release.Shown([]byte(rel.Value))
	if err != nil {
		return nil, "", err
	}
	if sh == nil {
		lrc.Mechanism, lrc.Eps, lrc.Delta, lrc.NoiseScale, lrc.Note, lrc.Params, lrc.Block = rc.Mechanism, rc.Eps, rc.Delta, rc.NoiseScale, rc.Note, rc.Params, rc.Block
		return lrc, fmt.Sprintf("the release stored with it carries no receipt (stored before receipts were bound to releases), so its mechanism, ε, δ, noise, note and budget block cannot be checked"), nil
	}
	lrc.Mechanism, lrc.Eps, lrc.Delta, lrc.NoiseScale, lrc.Note = sh.Mechanism, float64(sh.Eps), float64(sh.Delta), sh.Noise, sh.Note
	if err := json.Unmarshal(sh.Params, &lrc.Params); err != nil {
		return nil, "", fmt.Errorf("the parameters stored with ledger record %d cannot be read", rec.ID)
	}
	var delta float64
	if d, ok := call.Args["delta"]; ok && json.Unmarshal(d, &delta) == nil && rc.Note == runtime.BlockDeltaNote(sh.Note, delta) {
		lrc.Note = rc.Note
	}
	switch {
	case rc.Replayed:
		// A replay is decided before any budget block is asked: it has
		// none, whatever block the charge ran in.
	case sh.Block != "":
		lrc.Block = sh.Block
	case rc.Block != "":
		// The ledger records no block for this charge (a call on a
		// remote dataset, whose block is the client's, or a release
		// stored before blocks were bound): the label cannot be checked.
		lrc.Block = rc.Block
		gap = fmt.Sprintf("the budget block the receipt names (%q) is not recorded in the ledger (a call on a remote dataset, or a release stored before budget blocks were bound), so this output is not verified", clip(rc.Block))
	}
	return lrc, gap, nil
}

// receiptDiff compares the notebook's full receipt with the one rebuilt
// from the ledger, field by field as JSON, so that every field counts,
// including fields added to release.Receipt later; "" when they are the
// same, else the differing fields.
func receiptDiff(got, want *release.Receipt, record int64) string {
	gb, err1 := json.Marshal(got)
	wb, err2 := json.Marshal(want)
	var gm, wm map[string]json.RawMessage
	if err1 != nil || err2 != nil || json.Unmarshal(gb, &gm) != nil || json.Unmarshal(wb, &wm) != nil {
		return "the receipt cannot be encoded again"
	}
	keys := map[string]bool{}
	for k := range gm {
		keys[k] = true
	}
	for k := range wm {
		keys[k] = true
	}
	var diff []string
	for _, k := range sortedKeys(keys) {
		if !sameJSON(orNull(gm[k]), orNull(wm[k])) {
			diff = append(diff, k)
		}
	}
	switch len(diff) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("the receipt's %s is not what ledger record %d holds (the ledger's: %s; the output shows %s)", diff[0], record, clip(string(orNull(wm[diff[0]]))), clip(string(orNull(gm[diff[0]]))))
	}
	return fmt.Sprintf("the receipt's %s are not what ledger record %d holds", strings.Join(diff, ", "), record)
}

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// sameJSON reports whether two JSON texts hold the same value (numbers
// compared as the float64 they decode to, as every privnotes number is).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	jx, err1 := json.Marshal(x)
	jy, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && string(jx) == string(jy)
}

// compare compares what an output shows with the rendering; "" when
// equal, else where they first differ. Text types are compared as text;
// anything else the rendering holds as a JSON value (application/json) is
// compared as JSON.
func compare(mime string, shown json.RawMessage, want any) string {
	if _, isText := want.(string); !isText || mime == "application/json" {
		wb, err := json.Marshal(want)
		if err != nil {
			return "the rendering cannot be encoded"
		}
		if !sameJSON(shown, wb) {
			return "the JSON differs"
		}
		return ""
	}
	got, err := text(shown)
	if err != nil {
		return err.Error()
	}
	exp, _ := want.(string)
	if got == exp {
		return ""
	}
	gl, el := strings.Split(got, "\n"), strings.Split(exp, "\n")
	for i := range max(len(gl), len(el)) {
		switch {
		case i >= len(el):
			return fmt.Sprintf("line %d shows %q, the stored release renders no line %d", i+1, clip(gl[i]), i+1)
		case i >= len(gl):
			return fmt.Sprintf("the output has no line %d, the stored release renders %q", i+1, clip(el[i]))
		case gl[i] != el[i]:
			return fmt.Sprintf("line %d shows %q, the stored release renders %q", i+1, clip(gl[i]), clip(el[i]))
		}
	}
	return "they differ"
}

// text is a notebook string: one string or a list of lines.
func text(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("not text")
	}
	return strings.Join(parts, ""), nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:117]) + "..."
	}
	return s
}
