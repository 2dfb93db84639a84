package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Receipt says what a release cost: the privacy receipt every result
// carries. All of it is public.
type Receipt struct {
	Dataset   string
	Function  string
	Mechanism string
	// Eps and Delta are the target the mechanism was calibrated to.
	Eps, Delta float64
	// Cost is the charged event in its native measure.
	Cost accounting.Event
	// Charge is the ledger's record of the charge (its fields are
	// promoted: r.LedgerID, r.Remaining, …).
	Charge
	NoiseScale string
	Note       string
	// Charged is false for public synthetic data (nothing was spent).
	Charged bool
	Params  map[string]any
	// DryRun is set for the receipt of a dry run (dry_run=true): nothing
	// was charged or read, and Remaining is what the call would leave.
	DryRun bool
	// Name is the call's name= ("" for an unnamed call).
	Name string
	// Replayed is set when a named call returned the release stored with
	// ledger record LedgerID: nothing was charged and no data were read
	// (Cost is what that record charged).
	Replayed bool
	// ReleaseHash is the hex SHA-256 of the release's canonical encoding
	// as the ledger stores it with record LedgerID ("" when not stored:
	// public data, dry runs).
	ReleaseHash string
	// Providers lists each member's charge of a federated call (whose
	// LedgerID and Remaining are then unset: every member has its own).
	Providers []ProviderCharge `json:",omitempty"`
}

// Charge is what a receipt shows of the ledger's record of its charge
// (ledger.Receipt): the dataset's accountant and the filter that priced
// the charge, the record's id, the budget block it ran in and the budget
// it left. A dry run's is what the charge would leave; a replay's names
// the record whose release it returns.
type Charge struct {
	Accountant string
	// Filter is the filter of the dataset's accountant that priced the
	// charge and its amount ("zCDP filter ρ=0.03056", "GDP filter
	// μ=0.2472"); "" on synthetic data.
	Filter   string
	LedgerID int64
	// Block is the budget block the call ran in ("" outside any).
	Block string
	// Remaining is the dataset's budget left after the charge.
	Remaining accounting.Budget
	// Fits is what one more call alone may spend after the charge, in the
	// analyst's terms (the largest pure, quantile and Gaussian ε the
	// accountant then admits); nil on receipts without a charge of their
	// own (dry runs, replays, public data, federated calls) and on
	// receipts made before it was recorded.
	Fits *accounting.Fits `json:",omitempty"`
}

// ledgerCharge is the receipt's view of the ledger's record rec.
func ledgerCharge(rec *ledger.Receipt) Charge {
	return Charge{Accountant: rec.Mode, Filter: rec.Filter, LedgerID: rec.ID, Remaining: rec.Remaining, Fits: rec.Fits}
}

// receiptKeys is the order of a receipt's JSON keys. It is the order the
// receipt's fields had before it embedded its Charge, whose fields
// encoding/json would otherwise write together: a receipt stays
// byte-identical in notebooks and downloads made before
// (testdata/receipt_*.json). A new field of Receipt or Charge goes here
// too: MarshalJSON refuses a key it does not know.
var receiptKeys = []string{"Dataset", "Function", "Mechanism", "Eps", "Delta", "Cost", "Accountant", "Filter",
	"NoiseScale", "Note", "Charged", "LedgerID", "Block", "Remaining", "Params", "DryRun", "Name", "Replayed",
	"ReleaseHash", "Providers", "Fits"}

// MarshalJSON is encoding/json's encoding of r with its keys in
// receiptKeys' order.
func (r Receipt) MarshalJSON() ([]byte, error) {
	type fields Receipt // without this method
	b, err := json.Marshal(fields(r))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for _, k := range receiptKeys {
		v, ok := m[k]
		if !ok {
			continue // omitempty
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		fmt.Fprintf(&out, "%q:", k)
		out.Write(v)
		delete(m, k)
	}
	for k := range m {
		return nil, fmt.Errorf("release: receipt field %s has no place in receiptKeys", k)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

func newReceipt(ref Ref, p *Plan, ev accounting.Event, ch Charge) *Receipt {
	r := &Receipt{Dataset: ref.Name, Function: p.Func, Mechanism: p.Method, Eps: p.Eps, Delta: p.Delta, Cost: ev,
		NoiseScale: p.Noise, Note: strings.TrimSpace(p.Note), Charged: !ref.Synthetic(), Charge: ch, Params: p.Params}
	if ref.Synthetic() {
		r.Accountant = "none (public synthetic data: not charged)"
	}
	if ref.Derived != nil {
		r.Dataset = ref.Derived.Lineage
	}
	return r
}

// String is the receipt in one paragraph.
func (r *Receipt) String() string {
	if r == nil {
		return "no receipt"
	}
	var b strings.Builder
	if r.DryRun && r.Replayed {
		fmt.Fprintf(&b, "dry run (nothing charged, no data read): %s on %s, ε=%.6g, δ=%.6g, named %q, would be %s", r.Mechanism, r.Dataset, r.Eps, r.Delta, r.Name, r.replayed())
		return b.String()
	}
	if r.DryRun {
		fmt.Fprintf(&b, "dry run (nothing charged, no data read): %s on %s, ε=%.6g, δ=%.6g would cost %s (accountant %s%s)", r.Mechanism, r.Dataset, r.Eps, r.Delta, CostString(r.Cost), r.Accountant, r.pricedBy())
		if len(r.Providers) > 0 {
			b.WriteString(r.providerLines())
		} else if r.Accountant != "" && !strings.HasPrefix(r.Accountant, "none") {
			fmt.Fprintf(&b, " and leave ε=%.6g, δ=%.6g", r.Remaining.Eps, r.Remaining.Delta)
		}
		if r.Block != "" {
			fmt.Fprintf(&b, "; within budget block %s", r.Block)
		}
		fmt.Fprintf(&b, "\nnoise: %s", r.NoiseScale)
		if e := r.errorText(); e != "" {
			fmt.Fprintf(&b, "\nerror: %s", e)
		}
		fmt.Fprintf(&b, "\nnote: %s", r.Note)
		return b.String()
	}
	fmt.Fprintf(&b, "privacy receipt: %s on %s, ε=%.6g, δ=%.6g (cost %s; accountant %s%s)", r.Mechanism, r.Dataset, r.Eps, r.Delta, CostString(r.Cost), r.Accountant, r.pricedBy())
	if len(r.Providers) > 0 {
		b.WriteString("; charged by each provider:" + r.providerLines())
	} else if r.Replayed {
		fmt.Fprintf(&b, "; %s; remaining ε=%.6g, δ=%.6g", r.replayed(), r.Remaining.Eps, r.Remaining.Delta)
	} else if r.Charged {
		fmt.Fprintf(&b, "; ledger record %d; remaining ε=%.6g, δ=%.6g%s", r.LedgerID, r.Remaining.Eps, r.Remaining.Delta, r.fitsText(" (one more call alone: ", ")"))
	} else {
		b.WriteString("; not charged (public data)")
	}
	if r.Block != "" {
		fmt.Fprintf(&b, "; in budget block %s", r.Block)
	}
	// The release hash is in the metadata only: it is a function of the
	// released values, and a receipt's text is the same whatever the data.
	if r.Name != "" {
		fmt.Fprintf(&b, "; release %q", r.Name)
	}
	fmt.Fprintf(&b, "\nnoise: %s\nnote: %s", r.NoiseScale, r.Note)
	return b.String()
}

// fitsText is what still fits after the charge (FitsText) between
// before and after, or "" when the receipt records none.
func (r *Receipt) fitsText(before, after string) string {
	if r.Fits == nil {
		return ""
	}
	return before + FitsText(*r.Fits) + after
}

// replayed is what a replay's receipt says instead of its charge.
func (r *Receipt) replayed() string {
	return fmt.Sprintf("replayed from ledger record %d, no new charge", r.LedgerID)
}

// pricedBy is "; priced by <filter>", or "" without a filter.
func (r *Receipt) pricedBy() string {
	if r.Filter == "" {
		return ""
	}
	return "; priced by " + r.Filter
}

// CostString is an event without its mechanism name.
func CostString(e accounting.Event) string {
	e.Mechanism = ""
	return e.String()
}

// HTML renders the receipt as a small table.
func (r *Receipt) HTML() string {
	if r == nil {
		return ""
	}
	rows := [][2]string{
		{"dataset", r.Dataset}, {"mechanism", r.Mechanism},
		{"ε, δ", fmt.Sprintf("%.6g, %.6g", r.Eps, r.Delta)},
		{"cost", CostString(r.Cost)}, {"accountant", r.Accountant}, {"priced by", r.Filter},
		{"noise", r.NoiseScale}, {"note", r.Note},
	}
	if r.DryRun && r.Replayed {
		rows = append(rows, [2]string{"dry run", "nothing charged, no data read; would be " + r.replayed()})
	} else if r.DryRun {
		rows = append(rows, [2]string{"dry run", fmt.Sprintf("nothing charged, no data read; would leave ε=%.6g, δ=%.6g", r.Remaining.Eps, r.Remaining.Delta)})
		if e := r.errorText(); e != "" {
			rows = append(rows, [2]string{"error", e})
		}
	} else if r.Replayed {
		rows = append(rows, [2]string{"ledger record", r.replayed()},
			[2]string{"remaining", fmt.Sprintf("ε=%.6g, δ=%.6g", r.Remaining.Eps, r.Remaining.Delta)})
	} else if r.Charged {
		rows = append(rows, [2]string{"ledger record", fmt.Sprint(r.LedgerID)},
			[2]string{"remaining", fmt.Sprintf("ε=%.6g, δ=%.6g", r.Remaining.Eps, r.Remaining.Delta)})
		if f := r.fitsText("", ""); f != "" {
			rows = append(rows, [2]string{"still fits", "one more call alone: " + f})
		}
	} else {
		rows = append(rows, [2]string{"ledger", "not charged: public synthetic data"})
	}
	if r.Block != "" {
		rows = append(rows, [2]string{"budget block", r.Block})
	}
	if r.Name != "" {
		rows = append(rows, [2]string{"release name", r.Name})
	}
	var b strings.Builder
	b.WriteString("<table class=\"privnotes-receipt\"><caption>privacy receipt</caption>\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "<tr><th style=\"text-align:left\">%s</th><td style=\"text-align:left\">%s</td></tr>\n", html.EscapeString(row[0]), html.EscapeString(row[1]))
	}
	b.WriteString("</table>")
	return b.String()
}

// Metadata is the output metadata the kernel attaches (key "privnotes").
func (r *Receipt) Metadata() map[string]any {
	if r == nil {
		return nil
	}
	m := map[string]any{"eps": r.Eps, "delta": r.Delta, "dataset": r.Dataset, "mechanism": r.Mechanism,
		"ledger_id": r.LedgerID, "accountant": r.Accountant, "charged": r.Charged, "cost": CostString(r.Cost)}
	if r.Block != "" {
		m["block"] = r.Block
	}
	if r.Filter != "" {
		m["filter"] = r.Filter
	}
	if r.Name != "" {
		m["name"] = r.Name
	}
	if r.Replayed {
		m["replayed"] = true
	}
	if r.DryRun {
		m["dry_run"] = true
	}
	if r.ReleaseHash != "" {
		// What `privnotes notebook verify` checks the output against: the
		// ledger's stored release, and the whole receipt, so that the
		// output can be rendered again from the stored values.
		m["release_hash"] = r.ReleaseHash
	}
	if r.ReleaseHash != "" || r.DryRun {
		// A dry run's receipt is public (nothing read): verify renders it
		// again and compares exactly, so no number can hide in its text.
		m["receipt"] = r
	}
	return map[string]any{"privnotes": m}
}
