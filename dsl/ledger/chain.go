package ledger

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// chainWalk checks ledger records in order, as Verify and the
// verification of an exported ledger (VerifyExport) both need: ids are
// consecutive, each prev_hash is the hash of the record before, each hash
// matches its content, replaying the charges under each dataset's
// registered budget never exceeds it, and each seal record follows the
// charge it seals (checkReleases then matches it with the release). What
// only a state directory can show (the registry, the stored data) is
// onRegister's.
type chainWalk struct {
	prev       string
	accs       map[string]*accounting.Accountant
	last       map[string]int64 // each dataset's last record
	registered map[string]bool
	hashes     map[string]string // each dataset's registered data hash
	schemas    map[string]Schema
	byID       map[int64]record
	seals      map[int64]sealSeen // by the charge record they seal
	// onRegister, if set, checks a register record's schema and data hash
	// against the registry.
	onRegister func(r record, sc Schema, dataHash string) error
	// partial is set for a partial export, whose public datasets' origins
	// may be redacted.
	partial bool
}

func newChainWalk() *chainWalk {
	return &chainWalk{prev: genesis, accs: map[string]*accounting.Accountant{}, last: map[string]int64{},
		registered: map[string]bool{}, hashes: map[string]string{}, schemas: map[string]Schema{}, byID: map[int64]record{},
		seals: map[int64]sealSeen{}}
}

// link checks the place of the i-th record (from 0) in the chain: its id
// follows the one before and its prev_hash is the hash of the record
// before. It is all that can be checked of a redacted link of a partial
// export (ExportDoc.Datasets), whose content is left out; step checks the
// rest of a full record.
func (w *chainWalk) link(i int, id int64, prevHash, hash string) error {
	bad := func(format string, args ...any) error {
		return &ChainError{ID: id, Reason: fmt.Sprintf(format, args...)}
	}
	if id != int64(i+1) {
		return bad("expected id %d: records are missing or reordered", i+1)
	}
	if prevHash != w.prev {
		return bad("prev_hash does not match the hash of record %d", id-1)
	}
	if !isHash(hash) {
		return bad("its hash %q is not a SHA-256 in hex", hash)
	}
	w.prev = hash
	return nil
}

// isHash reports whether h is a SHA-256 as the ledger writes it: 64
// lowercase hex digits.
func isHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// step checks r, the i-th record (from 0).
func (w *chainWalk) step(i int, r record) error {
	bad := func(format string, args ...any) error {
		return &ChainError{ID: r.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if r.ID != int64(i+1) {
		return bad("expected id %d: records are missing or reordered", i+1)
	}
	if r.PrevHash != w.prev {
		return bad("prev_hash does not match the hash of record %d", r.ID-1)
	}
	if h := r.computeHash(); h != r.Hash {
		return bad("content does not match its hash (the record was altered)")
	}
	w.prev = r.Hash
	w.byID[r.ID] = r
	switch r.Kind {
	case "register":
		if w.registered[r.Dataset] {
			return bad("dataset %q registered twice", r.Dataset)
		}
		w.registered[r.Dataset] = true
		var p struct {
			Schema json.RawMessage `json:"schema"`
			Hash   string          `json:"data_hash"`
		}
		if err := json.Unmarshal([]byte(r.Params), &p); err != nil {
			return bad("corrupt register parameters")
		}
		var sc Schema
		if err := json.Unmarshal(p.Schema, &sc); err != nil {
			return bad("corrupt registered schema")
		}
		if w.onRegister != nil {
			if err := w.onRegister(r, sc, p.Hash); err != nil {
				return bad("%v", err)
			}
		}
		if err := w.synthOrigin(sc.Synthetic); err != nil {
			return bad("public dataset %q: %v", r.Dataset, err)
		}
		mode, err := sc.Mode()
		if err != nil {
			return bad("%v", err)
		}
		var acc *accounting.Accountant
		if mode == accounting.ModeAdvanced {
			acc, err = accounting.LegacyAdvancedVerifier(sc.Budget)
		} else {
			acc, err = accounting.NewAccountant(mode, sc.Budget)
		}
		if err != nil {
			return bad("%v", err)
		}
		w.accs[r.Dataset] = acc
		w.last[r.Dataset] = r.ID
		w.hashes[r.Dataset] = p.Hash
		w.schemas[r.Dataset] = sc
	case "remove":
		if err := verifyRemoval(r, w.registered, w.accs, w.last, w.hashes); err != nil {
			return bad("%v", err)
		}
		delete(w.schemas, r.Dataset)
	case "charge":
		acc := w.accs[r.Dataset]
		if acc == nil {
			return bad("charge to dataset %q before its registration", r.Dataset)
		}
		if w.schemas[r.Dataset].Public() {
			// Calls on public synthetic rows are never charged: a
			// charge here is a private dataset's taken for a public one.
			return bad("charge to public dataset %q", r.Dataset)
		}
		var ev accounting.Event
		if err := json.Unmarshal([]byte(r.Event), &ev); err != nil {
			return bad("corrupt cost: %v", err)
		}
		if err := acc.Spend(ev); errors.Is(err, accounting.ErrBudgetExceeded) {
			return bad("this charge exceeds the dataset's budget: %v", err)
		} else if err != nil {
			return bad("invalid cost: %v", err)
		}
		w.last[r.Dataset] = r.ID
	case "seal":
		// It carries no cost: the accountants are untouched. What it
		// commits to is checked against the stored release by
		// checkReleases, once every record is known.
		var p sealParams
		if err := json.Unmarshal([]byte(r.Params), &p); err != nil {
			return bad("corrupt seal parameters")
		}
		if c, ok := w.byID[p.Record]; !ok || c.Kind != "charge" || c.Dataset != r.Dataset {
			return bad("seal of record %d, which is not an earlier charge of dataset %q", p.Record, r.Dataset)
		}
		if other, dup := w.seals[p.Record]; dup {
			return bad("the release of record %d was already sealed by record %d", p.Record, other.id)
		}
		w.seals[p.Record] = sealSeen{id: r.ID, p: p}
	default:
		return bad("unknown record kind %q", r.Kind)
	}
	return nil
}

// sealSeen is a seal record met by the chain walk.
type sealSeen struct {
	id int64 // the seal record's id
	p  sealParams
}

// synthOrigin checks a public dataset's origin (nil: a private dataset)
// against the chain so far: a sealed release, of the value hash recorded,
// of a private dataset registered before it.
func (w *chainWalk) synthOrigin(o *SynthOrigin) error {
	if o == nil {
		return nil
	}
	c, ok := w.byID[o.Record]
	if !ok && w.partial {
		return nil // the origin's records are not in this export
	}
	switch {
	case !ok || c.Kind != "charge" || c.Dataset != o.Dataset:
		return fmt.Errorf("its origin, record %d, is not an earlier charge of dataset %q", o.Record, o.Dataset)
	case w.schemas[o.Dataset].Public():
		return fmt.Errorf("its origin %q is public itself", o.Dataset)
	}
	if seal, ok := w.seals[o.Record]; !ok || seal.p.ValueHash != o.ValueHash || seal.p.Name != o.Release {
		return fmt.Errorf("its origin, release %q of record %d, is not sealed with the value hash recorded", o.Release, o.Record)
	}
	return nil
}
