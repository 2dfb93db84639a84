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
	"maps"
	"slices"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// ExportVersion is the version of the document Export writes. Version 2
// adds the chain as stored, the releases and the registered budgets;
// version 3 chains have seal records, which every stored release needs;
// version 4 adds partial exports (ExportDoc.Datasets), whose chain holds
// redacted links for the records of the datasets left out.
const ExportVersion = 4

// ChainRecord is a ledger record exactly as stored and hashed: its hash is
// the SHA-256 of the JSON of the other fields, in this order. In a partial
// export (ExportDoc.Datasets) a record of a dataset left out is a redacted
// link: its id, prev_hash and hash only.
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
	// Redacted marks a redacted link: every field but ID, PrevHash and
	// Hash is empty, and the hash cannot be recomputed from what the
	// export holds.
	Redacted bool `json:"redacted,omitempty"`
}

// redactedLink is how a redacted link is written: without the empty
// content fields, so that a reader does not take them for a record's.
type redactedLink struct {
	ID       int64  `json:"id"`
	Redacted bool   `json:"redacted"`
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// MarshalJSON writes a redacted link as its id, prev_hash and hash only,
// and any other record with all its fields.
func (c ChainRecord) MarshalJSON() ([]byte, error) {
	if c.Redacted {
		return json.Marshal(redactedLink{ID: c.ID, Redacted: true, PrevHash: c.PrevHash, Hash: c.Hash})
	}
	type plain ChainRecord // without the method, so no recursion
	return json.Marshal(plain(c))
}

// redact is c's redacted link.
func (c ChainRecord) redact() ChainRecord {
	return ChainRecord{ID: c.ID, PrevHash: c.PrevHash, Hash: c.Hash, Redacted: true}
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
// registrations, charges, removals and seals in readable form (Rows);
// Chain every record as stored, to recompute their hashes.
//
// A partial export, of the datasets named in Datasets only, holds their
// records, releases and budgets, and for every other record of the chain
// its redacted link (ChainRecord.Redacted): the chain still runs from the
// genesis to the real head, so that the head pins the export as it pins a
// whole one, while the other datasets' names, schemas, costs, cells,
// times and releases stay out. What the links do show (how many records
// other datasets have, and where they fall between the exported ones) and
// what a verifier cannot check (that a link is not a record of an
// exported dataset) are in docs/threat-model.md.
type ExportDoc struct {
	SchemaVersion int `json:"schema_version"`
	// Datasets are the datasets of a partial export, sorted; empty for
	// the whole ledger.
	Datasets []string        `json:"datasets,omitempty"`
	Records  []Entry         `json:"records"`
	Chain    []ChainRecord   `json:"chain"`
	Releases []StoredRelease `json:"releases"`
	Budgets  []DatasetBudget `json:"budgets"`
	HeadID   int64           `json:"head_id"`
	HeadHash string          `json:"head_hash"`
}

// ExportDoc collects the exported ledger, from one snapshot (View): a
// document exported while others charge and seal verifies on its own.
// With datasets, it is a partial export of those datasets only (see
// ExportDoc).
func (s *Store) ExportDoc(datasets ...string) (doc *ExportDoc, err error) {
	err = s.view(func(v *View) error { doc, err = v.ExportDoc(datasets...); return err })
	return doc, err
}

// ExportDoc is Store.ExportDoc of v's snapshot.
func (v *View) ExportDoc(datasets ...string) (*ExportDoc, error) {
	recs, err := v.records("")
	if err != nil {
		return nil, err
	}
	keep, names, err := exportSet(recs, datasets)
	if err != nil {
		return nil, err
	}
	entries, err := v.Rows("")
	if err != nil {
		return nil, err
	}
	rels, err := releaseRows(v.ctx, v.q, "")
	if err != nil {
		return nil, err
	}
	doc := &ExportDoc{SchemaVersion: ExportVersion, Datasets: names, Records: []Entry{}, Chain: []ChainRecord{}, Releases: []StoredRelease{}, Budgets: []DatasetBudget{}}
	for _, e := range entries {
		if keep(e.Dataset) {
			doc.Records = append(doc.Records, e)
		}
	}
	for _, r := range rels {
		if keep(r.Dataset) {
			doc.Releases = append(doc.Releases, r)
		}
	}
	for _, r := range recs {
		c := ChainRecord{ID: r.ID, Kind: r.Kind, Dataset: r.Dataset, Mechanism: r.Mechanism, Params: r.Params,
			Event: r.Event, Cell: r.Cell, Time: r.Time, PrevHash: r.PrevHash, Hash: r.Hash}
		if !keep(r.Dataset) {
			c = c.redact()
		}
		doc.Chain = append(doc.Chain, c)
	}
	scs, err := v.Datasets()
	if err != nil {
		return nil, err
	}
	for _, sc := range scs {
		if !keep(sc.Name) {
			continue
		}
		st, err := v.Status(sc.Name)
		if err != nil {
			return nil, err
		}
		doc.Budgets = append(doc.Budgets, DatasetBudget{Dataset: sc.Name, Accountant: sc.Accountant, Budget: st.Budget, Spent: st.Spent, Charges: st.Charges})
	}
	// The head of the same snapshot: the real head, whichever dataset its
	// record belongs to (a redacted link's hash when another's).
	if doc.HeadID, doc.HeadHash, err = v.Head(); err != nil {
		return nil, err
	}
	return doc, nil
}

// exportSet is which datasets' records an export holds: every one when
// datasets is empty, else those named, each of which must have records
// in the chain (a removed dataset's remain). names is the sorted set
// named.
func exportSet(recs []record, datasets []string) (keep func(string) bool, names []string, err error) {
	if len(datasets) == 0 {
		return func(string) bool { return true }, nil, nil
	}
	inChain := map[string]bool{}
	for _, r := range recs {
		inChain[r.Dataset] = true
	}
	set := map[string]bool{}
	for _, n := range datasets {
		if !inChain[n] {
			return nil, nil, fmt.Errorf("no dataset %q in the ledger (privnotes ledger show lists its records; privnotes dataset list the registered datasets)", n)
		}
		if !set[n] {
			set[n] = true
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return func(n string) bool { return set[n] }, names, nil
}

// Export writes the ledger: as one JSON document, an ExportDoc
// (schema_version ExportVersion), when asJSON, else as a table; with
// datasets, of those datasets only (for JSON a partial export, ExportDoc).
// It reads one snapshot (View).
func (s *Store) Export(w io.Writer, asJSON bool, datasets ...string) error {
	return s.view(func(v *View) error { return v.Export(w, asJSON, datasets...) })
}

// Export is Store.Export of v's snapshot.
func (v *View) Export(w io.Writer, asJSON bool, datasets ...string) error {
	doc, err := v.ExportDoc(datasets...)
	if err != nil {
		return err
	}
	if !asJSON {
		return WriteTable(w, doc.Records)
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
	// Records are the records the export holds in full: every one, or
	// in a partial export those of Datasets.
	Records  map[int64]ChainRecord
	Releases map[int64]StoredRelease
	// Totals are each registered dataset's budget and spend, replayed
	// from its charges.
	Totals map[string]DatasetBudget
	// Datasets are a partial export's datasets (nil: the whole ledger),
	// and Redacted the ids of its redacted links, records of other
	// datasets.
	Datasets []string
	Redacted map[int64]bool
}

// VerifyExport checks an exported ledger on its own: the hash chain and
// each record's hash, that replaying the charges never exceeds a dataset's
// registered budget (from its register record), the stored releases
// against their records and hashes, the head, and that the budgets the
// document states are those of the register records and the charges.
//
// A partial export (doc.Datasets) verifies the same way from the genesis
// to the head, its redacted links checked for their place in the chain
// only (their id, and that the next record's prev_hash is their hash): a
// record of a named dataset must be in full, every record in full must be
// of a named dataset, and each named dataset must have its register
// record, so that its totals are replayed from its registration on. That
// a redacted link is not a record of a named dataset cannot be checked
// without its content (docs/threat-model.md).
func VerifyExport(doc *ExportDoc) (*Verified, error) {
	w := newChainWalk()
	out := &Verified{Records: map[int64]ChainRecord{}, Releases: map[int64]StoredRelease{}, Totals: map[string]DatasetBudget{}, Redacted: map[int64]bool{}}
	named := map[string]bool{}
	for _, n := range doc.Datasets {
		if n == "" || named[n] {
			return nil, &ChainError{Reason: fmt.Sprintf("the export's dataset list %q names a dataset twice or an empty name", doc.Datasets)}
		}
		named[n] = true
	}
	if len(named) > 0 {
		out.Datasets = slices.Sorted(maps.Keys(named))
	}
	w.partial = len(named) > 0
	registered := map[string]bool{}
	for i, c := range doc.Chain {
		if c.Redacted {
			if len(named) == 0 {
				return nil, &ChainError{ID: c.ID, Reason: "a redacted link in an export of the whole ledger (it names no datasets)"}
			}
			if c.Kind != "" || c.Dataset != "" || c.Mechanism != "" || c.Params != "" || c.Event != "" || c.Cell != "" || c.Time != "" {
				return nil, &ChainError{ID: c.ID, Reason: "a redacted link with content (it holds an id, a prev_hash and a hash only)"}
			}
			if err := w.link(i, c.ID, c.PrevHash, c.Hash); err != nil {
				return nil, err
			}
			out.Redacted[c.ID] = true
			continue
		}
		if len(named) > 0 && !named[c.Dataset] {
			return nil, &ChainError{ID: c.ID, Dataset: c.Dataset, Reason: fmt.Sprintf("a record of dataset %q, which this partial export does not name (%q)", c.Dataset, doc.Datasets)}
		}
		if err := w.step(i, c.record()); err != nil {
			return nil, err
		}
		if c.Kind == "register" {
			registered[c.Dataset] = true
		}
		out.Records[c.ID] = c
	}
	for _, n := range out.Datasets {
		if !registered[n] {
			return nil, &ChainError{Dataset: n, Reason: fmt.Sprintf("the export names dataset %q but holds no register record of it (its records were redacted?)", n)}
		}
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
