package ledger

// Releases stored with their charges.
//
// A release is differentially private output, so the ledger may keep it:
// the releases table holds, for each charge that produces one, the call's
// public parameters (canonical JSON), its name if the call gave one, the
// released values in their canonical encoding (dsl/release) and the
// SHA-256 of that encoding, the release hash that receipts carry.
//
// Why a row of its own rather than a field of the charge record: the charge
// must be on disk before the mechanism reads data, and the values exist
// only after the run, so they cannot be in the charge record, whose hash is
// fixed when it is appended. The row is therefore inserted with the charge,
// in the same transaction (which also reserves its name), and sealed once
// after the run; its hash covers the charge record's chained hash, the
// name, the parameters and the release hash, so a release cannot be moved
// to another charge without Verify noticing, and triggers make a sealed row
// immutable.
//
// Sealing also appends a "seal" record to the hash chain, in the same
// transaction (schema version 5): its parameters name the charge record,
// the release's name, the SHA-256 of its call parameters, its release hash
// and its row hash, and its chained hash covers them and the head before
// it. So the head after a seal commits to the values: a copy of the ledger
// whose values were edited, even with every row hash recomputed, no longer
// ends in the head its owner published, and a sealed release without its
// seal record in the chain fails verification. As for the chain itself, a
// writer who recomputes every record's hash is caught only against a head
// kept elsewhere: the receipts in a notebook, or the head the owner
// publishes.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// ReleaseMeta is what a charge that produces a release records about it.
type ReleaseMeta struct {
	// Name is the call's name= ("" for an unnamed call): unique per
	// dataset, reserved by the charge.
	Name string
	// Call is the canonical encoding of the call's public parameters
	// (release.PublicParams).
	Call string
}

// StoredRelease is a release as the ledger keeps it.
type StoredRelease struct {
	// Record is the id of the charge record.
	Record  int64  `json:"record"`
	Dataset string `json:"dataset"`
	Name    string `json:"name,omitempty"`
	// Call is the call's public parameters, canonical JSON.
	Call string `json:"call"`
	// Value is the canonical encoding of the released values; "" when the
	// run produced no release (it failed or was interrupted after the
	// charge).
	Value string `json:"value,omitempty"`
	// ValueHash is the hex SHA-256 of Value: the release hash.
	ValueHash string `json:"value_hash,omitempty"`
	// Hash chains the row to its charge record (releaseHash).
	Hash string `json:"hash,omitempty"`
}

// Sealed reports whether the release's values are stored.
func (r *StoredRelease) Sealed() bool { return r.ValueHash != "" }

// ErrNameTaken is wrapped by Charge's error when the call's name is already
// the name of a release of the dataset.
var ErrNameTaken = errors.New("the name is already taken by a release of this dataset")

// releaseHash is the hash of a sealed release row: SHA-256 of the JSON of
// the charge record's id and hash and the row's fields.
func releaseHash(recordHash string, r StoredRelease) string {
	b, err := json.Marshal(struct {
		Record     int64  `json:"record"`
		RecordHash string `json:"record_hash"`
		Dataset    string `json:"dataset"`
		Name       string `json:"name"`
		Call       string `json:"call"`
		ValueHash  string `json:"value_hash"`
	}{r.Record, recordHash, r.Dataset, r.Name, r.Call, r.ValueHash})
	if err != nil {
		panic(err) // strings and an int: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sealParams is the content of a seal record's params: what the chain
// commits to about a sealed release.
type sealParams struct {
	// Record is the charge record whose release was sealed.
	Record int64  `json:"record"`
	Name   string `json:"name"`
	// CallHash is the hex SHA-256 of the release's call parameters.
	CallHash string `json:"call_sha256"`
	// ValueHash is the release hash (the SHA-256 of the values).
	ValueHash string `json:"value_hash"`
	// RowHash is the release row's hash (releaseHash).
	RowHash string `json:"row_hash"`
}

// sealOf is the seal record content that commits to sealed release r.
func sealOf(r StoredRelease) sealParams {
	sum := sha256.Sum256([]byte(r.Call))
	return sealParams{Record: r.Record, Name: r.Name, CallHash: hex.EncodeToString(sum[:]), ValueHash: r.ValueHash, RowHash: r.Hash}
}

// sealRecord is the chain record that seals r (appendRecord chains it).
// cell says who sealed it: "" for the run that made the release.
func sealRecord(r StoredRelease, cell string) record {
	b, err := json.Marshal(sealOf(r))
	if err != nil {
		panic(err) // strings and an int: cannot fail
	}
	return record{Kind: "seal", Dataset: r.Dataset, Mechanism: "release/seal", Params: string(b), Event: "null", Cell: cell,
		Time: time.Now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)}
}

// upgradeSeals chains a seal record for every release sealed before
// schema version 5, in record order, in the upgrade's transaction. The
// records commit to the values as they are at the upgrade, not as they
// were when sealed (docs/shared-notebooks.md): their cell says so.
func upgradeSeals(ctx context.Context, tx *sql.Tx) error {
	rels, err := releaseRows(ctx, tx, `WHERE r.value_hash IS NOT NULL`)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if _, err := appendRecord(ctx, tx, sealRecord(r, UpgradeSealCell)); err != nil {
			return err
		}
	}
	return nil
}

// UpgradeSealCell is the cell of the seal records that the upgrade to
// schema version 5 chained for releases sealed before it.
const UpgradeSealCell = "upgrade to ledger schema 5"

// reserveRelease inserts the unsealed release row of charge record id, in
// the charge's transaction; a taken name refuses the charge.
func reserveRelease(ctx context.Context, tx execer, id int64, dataset string, m ReleaseMeta) error {
	if m.Name != "" {
		var other int64
		switch err := tx.QueryRowContext(ctx, qReleaseName, dataset, m.Name).Scan(&other); {
		case err == nil:
			return fmt.Errorf("ledger: dataset %q: name %q (ledger record %d): %w", dataset, m.Name, other, ErrNameTaken)
		case !errors.Is(err, sql.ErrNoRows):
			return dbErr("ledger: looking up a release name", err)
		}
	}
	if _, err := tx.ExecContext(ctx, qReserveRel, id, dataset, m.Name, m.Call); err != nil {
		return dbErr("ledger: reserving the release", err)
	}
	return nil
}

// SealRelease stores the released values of charge record id (value is
// their canonical encoding) and returns the release hash. A release is
// sealed once: sealing it again fails.
func (s *Store) SealRelease(ctx context.Context, id int64, value []byte) (string, error) {
	t, err := s.begin(ctx) // BEGIN IMMEDIATE (writer.go)
	if err != nil {
		return "", dbErr("ledger: storing a release", err)
	}
	done := false
	defer func() {
		if !done {
			t.finish(false, record{}, "", knownDataset{})
		}
	}()
	tx := t.q
	r, err := releaseRow(ctx, tx, `WHERE r.record = ?`, id)
	if err != nil {
		return "", err
	}
	if r == nil {
		return "", fmt.Errorf("ledger: record %d reserved no release", id)
	}
	if r.Sealed() {
		return "", fmt.Errorf("ledger: the release of record %d is already stored", id)
	}
	headID, headHash, err := t.head(ctx)
	if err != nil {
		return "", err
	}
	recHash := headHash // the charge is the last record, as when a call seals its own release
	if id != headID {
		if err := tx.QueryRowContext(ctx, qRecordHash, id).Scan(&recHash); err != nil {
			return "", dbErr("ledger: storing a release", err)
		}
	}
	sum := sha256.Sum256(value)
	r.Value, r.ValueHash = string(value), hex.EncodeToString(sum[:])
	r.Hash = releaseHash(recHash, *r)
	if _, err := tx.ExecContext(ctx, qSeal, r.Value, r.ValueHash, r.Hash, id); err != nil {
		return "", dbErr("ledger: storing a release", err)
	}
	// The seal record, under the same write lock as the row: sealing
	// serialises with charges (BEGIN IMMEDIATE), so no other record can be
	// chained between reading the head and appending.
	seal, err := appendAfter(ctx, tx, sealRecord(*r, ""), headID, headHash)
	if err != nil {
		return "", err
	}
	done = true
	if err := t.finish(true, seal, "", knownDataset{}); err != nil {
		return "", dbErr("ledger: storing a release", err)
	}
	return r.ValueHash, nil
}

// NamedRelease is a named release with its charge.
type NamedRelease struct {
	StoredRelease
	// Event is what the charge cost.
	Event accounting.Event
	// Cell is the cell that made the charge.
	Cell string
}

// Named returns the release of dataset called name, or nil if there is
// none. It reads public facts only.
func (s *Store) Named(dataset, name string) (nr *NamedRelease, err error) {
	err = s.view(func(v *View) error { nr, err = v.named(dataset, name); return err })
	return nr, err
}

// named is Named in v's snapshot.
func (v *View) named(dataset, name string) (*NamedRelease, error) {
	ctx := v.ctx
	r, err := releaseRow(ctx, v.q, `WHERE r.dataset = ? AND r.name = ?`, dataset, name)
	if err != nil || r == nil {
		return nil, err
	}
	var evJSON, cell string
	if err := v.q.QueryRowContext(ctx, `SELECT event, cell FROM ledger WHERE id = ?`, r.Record).Scan(&evJSON, &cell); err != nil {
		return nil, dbErr("ledger: reading a release's charge", err)
	}
	out := &NamedRelease{StoredRelease: *r, Cell: cell}
	if err := json.Unmarshal([]byte(evJSON), &out.Event); err != nil {
		return nil, fmt.Errorf("ledger: record %d: corrupt cost: %w", r.Record, err)
	}
	return out, nil
}

// Releases returns the stored releases of one dataset, or of all when
// dataset is empty, by record.
func (s *Store) Releases(dataset string) (rels []StoredRelease, err error) {
	err = s.view(func(v *View) error { rels, err = v.Releases(dataset); return err })
	return rels, err
}

// Releases is Store.Releases in v's snapshot.
func (v *View) Releases(dataset string) ([]StoredRelease, error) {
	where, args := ``, []any{}
	if dataset != "" {
		where, args = `WHERE r.dataset = ?`, []any{dataset}
	}
	return releaseRows(v.ctx, v.q, where, args...)
}

const releaseCols = `SELECT r.record, r.dataset, r.name, r.call, COALESCE(r.value, ''), COALESCE(r.value_hash, ''), COALESCE(r.hash, '') FROM releases r `

func releaseRows(ctx context.Context, q queryer, where string, args ...any) ([]StoredRelease, error) {
	rows, err := q.QueryContext(ctx, releaseCols+where+` ORDER BY r.record`, args...)
	if err != nil {
		return nil, dbErr("ledger: reading releases", err)
	}
	defer rows.Close()
	var out []StoredRelease
	for rows.Next() {
		var r StoredRelease
		if err := rows.Scan(&r.Record, &r.Dataset, &r.Name, &r.Call, &r.Value, &r.ValueHash, &r.Hash); err != nil {
			return nil, dbErr("ledger: reading releases", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("ledger: reading releases", err)
	}
	return out, nil
}

func releaseRow(ctx context.Context, q queryer, where string, args ...any) (*StoredRelease, error) {
	rs, err := releaseRows(ctx, q, where, args...)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// checkReleases checks stored releases against the records they belong
// to: each belongs to a charge record of its dataset, a sealed one's
// values hash to its release hash, its row hash chains it to the record,
// and its seal record (seals, from the chain walk) commits to exactly its
// name, parameters, release hash and row hash; every seal record seals a
// stored release.
func checkReleases(recs map[int64]record, seals map[int64]sealSeen, rels []StoredRelease) error {
	names := map[string]int64{}
	stored := map[int64]bool{}
	for _, r := range rels {
		bad := func(format string, args ...any) error {
			return &ChainError{ID: r.Record, Dataset: r.Dataset, Reason: "release: " + fmt.Sprintf(format, args...)}
		}
		rec, ok := recs[r.Record]
		if !ok || rec.Kind != "charge" || rec.Dataset != r.Dataset {
			return bad("no charge record %d of dataset %q for the stored release", r.Record, r.Dataset)
		}
		if r.Name != "" {
			key := r.Dataset + "\x00" + r.Name
			if other, dup := names[key]; dup {
				return bad("name %q was already given to the release of record %d", r.Name, other)
			}
			names[key] = r.Record
		}
		if !json.Valid([]byte(r.Call)) {
			return bad("corrupt call parameters")
		}
		seal, hasSeal := seals[r.Record]
		if !r.Sealed() {
			if r.Value != "" || r.Hash != "" {
				return bad("values without a release hash")
			}
			if hasSeal {
				return bad("seal record %d seals a release that is not stored", seal.id)
			}
			continue
		}
		stored[r.Record] = true
		sum := sha256.Sum256([]byte(r.Value))
		if hex.EncodeToString(sum[:]) != r.ValueHash {
			return bad("the stored values do not match their release hash (the release was altered)")
		}
		if releaseHash(rec.Hash, r) != r.Hash {
			return bad("the release row does not match its hash (its name, parameters or release hash were altered)")
		}
		if !hasSeal {
			return bad("no seal record in the chain: the head does not cover the stored values (the seal was deleted)")
		}
		if seal.p != sealOf(r) {
			return bad("the release does not match its seal record %d (its values, name or parameters were altered)", seal.id)
		}
	}
	for _, rec := range slices.Sorted(maps.Keys(seals)) {
		if seal := seals[rec]; !stored[rec] {
			return &ChainError{ID: seal.id, Reason: fmt.Sprintf("seal record for the release of record %d, which is not stored", rec)}
		}
	}
	return nil
}

// ShortHash is the first 12 hex digits of a hash, as tables show it.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// releaseNames maps record ids to their release's name, for tables.
func releaseNames(rels []StoredRelease) map[int64]string {
	out := map[int64]string{}
	for _, r := range rels {
		if r.Name != "" {
			out[r.Record] = r.Name
		}
	}
	return out
}
