// Package verify checks an executed Jupyter notebook against a privnotes
// ledger: every output that carries a privnotes receipt must name a charge
// record of a ledger whose hash chain verifies, the release stored with
// that record must have the receipt's release hash, the receipt must agree
// with the ledger (the stored call's function, dataset and name; the
// charge's cost, accountant, filter and the budget left after it), and
// every MIME type the output shows must be exactly what the kernel renders
// for the stored release: the release is decoded into the DSL's result
// type (runtime.Result) and rendered by interp.Render, the code the kernel
// displays results with. Receipts the ledger cannot back (dry runs, public
// synthetic data) must carry no stored release and read as such. Outputs
// without a receipt are public computations and are not checked; every
// private release carries one.
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

// Line is the verdict on one output.
type Line struct {
	Where   string // the cell
	OK      bool
	Dataset string
	What    string // what the output is, or why it fails
}

func (l Line) String() string {
	mark := "ok  "
	if !l.OK {
		mark = "FAIL"
	}
	return fmt.Sprintf("%s  %s: %s", mark, l.Where, l.What)
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

// OK reports whether every output and every total verified.
func (r *Report) OK() bool {
	for _, l := range r.Lines {
		if !l.OK {
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
			if !line.OK || st.ReleaseHash == "" || st.DryRun {
				continue // nothing released, or a failure
			}
			rec := led.Records[st.LedgerID]
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
		if msg := dryRun(o, st, led); msg != "" {
			return fail("%s: the receipt says dry run, but %s", what, msg)
		}
		return Line{Where: where, OK: true, Dataset: st.Dataset, What: what + ": dry run, nothing released"}
	case !st.Charged && !st.Replayed && st.LedgerID == 0 && strings.HasPrefix(st.Accountant, "none"):
		if !strings.HasPrefix(st.Dataset, "synthetic:") {
			return fail("%s: the receipt says public synthetic data, but names dataset %q", what, st.Dataset)
		}
		if msg := unreleased(o, st, "privacy receipt: "+what+",", false, "not charged: public synthetic data"); msg != "" {
			return fail("%s: the receipt says public synthetic data, but %s", what, msg)
		}
		return Line{Where: where, OK: true, Dataset: st.Dataset, What: what + ": public synthetic data, nothing charged"}
	case st.ReleaseHash == "":
		return fail("%s: the receipt (ledger record %d) carries no release hash: the release was not stored, or the receipt was edited", what, st.LedgerID)
	}
	rec, ok := led.Records[st.LedgerID]
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
	value, cols, err := release.Decode([]byte(rel.Value))
	if err != nil {
		return fail("%s: %v", what, err)
	}
	want, err := render(rc, value, cols)
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
	if msg != "" && matchesReceipt(o, rc) {
		msg, shown = "", len(o.mimes())
	}
	if msg != "" {
		return fail("%s: %s", what, msg)
	}
	how := "charged"
	if st.Replayed {
		how = "replayed"
	}
	if st.Name != "" {
		how += fmt.Sprintf(", name %q", st.Name)
	}
	return Line{Where: where, OK: true, Dataset: rec.Dataset,
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
	return "", shown
}

// matchesReceipt reports whether the output is exactly the kernel's
// rendering of the receipt alone.
func matchesReceipt(o Output, rc *release.Receipt) bool {
	msg, _ := matches(o, interp.Render(rc), 0)
	return msg == ""
}

// shownAs checks what the receipt says of the call (target ε and δ,
// mechanism, noise, parameters and the plan's note) against what the
// ledger stored with the release; "" when it agrees. The runtime may
// append to the note after the release is stored (a budget block's δ),
// so the stored note must begin the shown one. Releases stored before
// receipts were bound carry none, and pass.
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
	case !strings.HasPrefix(rc.Note, sh.Note):
		field = "note"
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
// the chain: the accountant of the dataset's registration and, for the
// charge itself (a replay names no filter and shows the budget left when
// it ran, which no record holds), the filter that priced it and the
// budget left after it, as the ledger computed them when it charged rec. "" when
// they match.
func pricedAs(rc *release.Receipt, rec ledger.ChainRecord, led *ledger.Verified) string {
	var acc *accounting.Accountant
	var sc ledger.Schema
	var filter string
	for id := int64(1); id <= rec.ID; id++ {
		r, ok := led.Records[id]
		if !ok {
			return fmt.Sprintf("ledger record %d is missing", id)
		}
		if r.Dataset != rec.Dataset {
			continue
		}
		switch r.Kind {
		case "register":
			var p struct {
				Schema ledger.Schema `json:"schema"`
			}
			if err := json.Unmarshal([]byte(r.Params), &p); err != nil {
				return fmt.Sprintf("ledger record %d: corrupt registration", id)
			}
			sc = p.Schema
			mode, err := sc.Mode()
			if err == nil && mode == accounting.ModeAdvanced {
				acc, err = accounting.LegacyAdvancedVerifier(sc.Budget)
			} else if err == nil {
				acc, err = accounting.NewAccountant(mode, sc.Budget)
			}
			if err != nil {
				return fmt.Sprintf("ledger record %d: %v", id, err)
			}
		case "charge":
			var ev accounting.Event
			if acc == nil || json.Unmarshal([]byte(r.Event), &ev) != nil || acc.Spend(ev) != nil {
				return fmt.Sprintf("ledger record %d cannot be replayed", id)
			}
			filter = acc.Mode().Pricing(ev)
		}
	}
	switch {
	case acc == nil:
		return fmt.Sprintf("dataset %q has no registration before ledger record %d", rec.Dataset, rec.ID)
	case rc.Accountant != sc.Accountant:
		return fmt.Sprintf("the receipt names accountant %q, dataset %q was registered with %q", rc.Accountant, rec.Dataset, sc.Accountant)
	case !rc.Replayed && rc.Filter != filter:
		return fmt.Sprintf("the receipt says priced by %q, ledger record %d was priced by %q", rc.Filter, rec.ID, filter)
	case !rc.Replayed && rc.Remaining != acc.Remaining():
		return fmt.Sprintf("the receipt says ε=%.6g, δ=%.6g remained, after ledger record %d ε=%.6g, δ=%.6g did",
			rc.Remaining.Eps, rc.Remaining.Delta, rec.ID, acc.Remaining().Eps, acc.Remaining().Delta)
	}
	return ""
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
