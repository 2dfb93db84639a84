package ledger

// The exported ledger: one JSON document with no private data, which a
// repository can commit next to an executed notebook, and which can be
// verified without the state directory (VerifyExport): the hash chain, the
// stored releases and each dataset's charges against its registered budget.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// ChainRecord is a ledger record exactly as stored and hashed: its hash is
// the SHA-256 of the JSON of the other fields, in this order.
type ChainRecord struct {
	ID        int64  `json:"id"`
	Kind      string `json:"kind"`
	Dataset   string `json:"dataset"`
	Mechanism string `json:"mechanism"`
	Params    string `json:"params"`
	Event     string `json:"event"`
	Cell      string `json:"cell"`
	Time      string `json:"time"`
	PrevHash  string `json:"prev_hash"`
	Hash      string `json:"hash"`
}

func (c ChainRecord) record() record {
	return record{ID: c.ID, Kind: c.Kind, Dataset: c.Dataset, Mechanism: c.Mechanism, Params: c.Params, Event: c.Event,
		Cell: c.Cell, Time: c.Time, PrevHash: c.PrevHash, Hash: c.Hash}
}

// DatasetBudget is a dataset's registered budget and what its charges
// spent.
type DatasetBudget struct {
	Dataset    string            `json:"dataset"`
	Accountant string            `json:"accountant"`
	Budget     accounting.Budget `json:"budget"`
	Spent      accounting.Budget `json:"spent"`
	Charges    int               `json:"charges"`
}

// ExportDoc is the document Export writes with asJSON. Records are the
// registrations, charges and removals in readable form (Entries); Chain
// every record as stored, seal records included, to recompute their
// hashes.
type ExportDoc struct {
	SchemaVersion int             `json:"schema_version"`
	Records       []Entry         `json:"records"`
	Chain         []ChainRecord   `json:"chain"`
	Releases      []StoredRelease `json:"releases"`
	Budgets       []DatasetBudget `json:"budgets"`
	HeadID        int64           `json:"head_id"`
	HeadHash      string          `json:"head_hash"`
}

// ExportDoc collects the exported ledger, from one snapshot (View): a
// document exported while others charge and seal verifies on its own.
func (s *Store) ExportDoc() (doc *ExportDoc, err error) {
	err = s.view(func(v *View) error { doc, err = v.ExportDoc(); return err })
	return doc, err
}

// ExportDoc is Store.ExportDoc of v's snapshot.
func (v *View) ExportDoc() (*ExportDoc, error) {
	entries, err := v.Entries("")
	if err != nil {
		return nil, err
	}
	recs, err := v.records("")
	if err != nil {
		return nil, err
	}
	rels, err := releaseRows(v.ctx, v.q, "")
	if err != nil {
		return nil, err
	}
	doc := &ExportDoc{SchemaVersion: ExportVersion, Records: entries, Chain: []ChainRecord{}, Releases: rels, Budgets: []DatasetBudget{}}
	if doc.Records == nil {
		doc.Records = []Entry{}
	}
	if doc.Releases == nil {
		doc.Releases = []StoredRelease{}
	}
	for _, r := range recs {
		doc.Chain = append(doc.Chain, ChainRecord{ID: r.ID, Kind: r.Kind, Dataset: r.Dataset, Mechanism: r.Mechanism, Params: r.Params,
			Event: r.Event, Cell: r.Cell, Time: r.Time, PrevHash: r.PrevHash, Hash: r.Hash})
	}
	scs, err := v.Datasets()
	if err != nil {
		return nil, err
	}
	for _, sc := range scs {
		st, err := v.Status(sc.Name)
		if err != nil {
			return nil, err
		}
		doc.Budgets = append(doc.Budgets, DatasetBudget{Dataset: sc.Name, Accountant: sc.Accountant, Budget: st.Budget, Spent: st.Spent, Charges: st.Charges})
	}
	if doc.HeadID, doc.HeadHash, err = v.Head(); err != nil {
		return nil, err
	}
	return doc, nil
}

// Export writes the whole ledger: as one JSON document, an ExportDoc
// (schema_version ExportVersion), when asJSON, else as a table. It reads
// one snapshot (View).
func (s *Store) Export(w io.Writer, asJSON bool) error {
	return s.view(func(v *View) error { return v.Export(w, asJSON) })
}

// Export is Store.Export of v's snapshot.
func (v *View) Export(w io.Writer, asJSON bool) error {
	if !asJSON {
		entries, err := v.Entries("")
		if err != nil {
			return err
		}
		return WriteTable(w, entries)
	}
	doc, err := v.ExportDoc()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// ReadExport reads a document written by Export with asJSON.
func ReadExport(r io.Reader) (*ExportDoc, error) {
	var doc ExportDoc
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("not an exported privnotes ledger (privnotes ledger export --json): %w", err)
	}
	if doc.SchemaVersion == 0 {
		return nil, errors.New("not an exported privnotes ledger (it has no schema_version; write one with privnotes ledger export --json)")
	}
	if doc.SchemaVersion != ExportVersion {
		return nil, fmt.Errorf("an exported ledger of version %d; this privnotes reads version %d (export it again with privnotes ledger export --json)", doc.SchemaVersion, ExportVersion)
	}
	return &doc, nil
}

// Verified is an exported ledger that verified: its records, releases and
// each dataset's totals, re-derived from the chain.
type Verified struct {
	Records  map[int64]ChainRecord
	Releases map[int64]StoredRelease
	// Totals are each registered dataset's budget and spend, replayed
	// from its charges.
	Totals map[string]DatasetBudget
}

// VerifyExport checks an exported ledger on its own: the hash chain and
// each record's hash, that replaying the charges never exceeds a dataset's
// registered budget (from its register record), the stored releases
// against their records and hashes, the head, and that the budgets the
// document states are those of the register records and the charges.
func VerifyExport(doc *ExportDoc) (*Verified, error) {
	w := newChainWalk()
	out := &Verified{Records: map[int64]ChainRecord{}, Releases: map[int64]StoredRelease{}, Totals: map[string]DatasetBudget{}}
	for i, c := range doc.Chain {
		if err := w.step(i, c.record()); err != nil {
			return nil, err
		}
		out.Records[c.ID] = c
	}
	if err := checkReleases(w.byID, w.seals, doc.Releases); err != nil {
		return nil, err
	}
	for _, r := range doc.Releases {
		out.Releases[r.Record] = r
	}
	var headID int64
	if n := len(doc.Chain); n > 0 {
		headID = doc.Chain[n-1].ID
	}
	if headID != doc.HeadID || w.prev != doc.HeadHash {
		return nil, &ChainError{Reason: fmt.Sprintf("the stated head (record %d, hash %s) is not the chain's (record %d, hash %s)", doc.HeadID, ShortHash(doc.HeadHash), headID, ShortHash(w.prev))}
	}
	for name, acc := range w.accs {
		sc := w.schemas[name]
		out.Totals[name] = DatasetBudget{Dataset: name, Accountant: sc.Accountant, Budget: sc.Budget, Spent: acc.Spent(), Charges: int(acc.State().Events())}
	}
	for _, b := range doc.Budgets {
		t, ok := out.Totals[b.Dataset]
		if !ok {
			return nil, &ChainError{Dataset: b.Dataset, Reason: fmt.Sprintf("dataset %q has a stated budget but no register record", b.Dataset)}
		}
		if b.Budget != t.Budget || b.Accountant != t.Accountant || b.Charges != t.Charges {
			return nil, &ChainError{Dataset: b.Dataset, Reason: fmt.Sprintf("dataset %q: the stated budget (%v, %s, %d charges) is not its registration's and charges' (%v, %s, %d charges)",
				b.Dataset, b.Budget, b.Accountant, b.Charges, t.Budget, t.Accountant, t.Charges)}
		}
	}
	return out, nil
}
