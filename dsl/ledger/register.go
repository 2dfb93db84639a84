package ledger

// Registration: the public schema, the owner's facts, and storing a new
// dataset with its "register" record.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/privnotes/privnotes/dsl/dataset"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Schema is a dataset's public description: what a notebook may see.
type Schema struct {
	Name       string            `json:"name"`
	Columns    []string          `json:"columns"`
	D          int               `json:"d"`
	Clip       float64           `json:"clip"`                  // L2 norm rows (feature vectors) are clipped to
	Unit       string            `json:"unit"`                  // "row" or "user"
	UserColumn string            `json:"user_column,omitempty"` // unit=user
	Label      string            `json:"label,omitempty"`       // label column, if any
	LabelClip  float64           `json:"label_clip,omitempty"`  // |y| bound, if a label
	Center     string            `json:"center"`                // "none" or "public-mean"
	Mean       []float64         `json:"mean,omitempty"`        // the public mean subtracted at registration
	Neighbour  string            `json:"neighbour"`             // default relation: "replace-one" or "add-remove"
	Accountant string            `json:"accountant"`            // "zcdp" or "basic"; "advanced" (basic since; see accounting.ModeAdvanced) in old registrations
	Budget     accounting.Budget `json:"budget"`
	BadRows    string            `json:"bad_rows"` // the public rule: "reject" or "drop"
	// PublicN is the number of privacy units (rows for unit "row", users for
	// unit "user") when the owner declared it public at registration
	// (privnotes dataset add --public-n), and 0 when it is private, the
	// default. Mechanisms that need n may run only when it is public.
	PublicN int `json:"public_n,omitempty"`
	// Bounds are the public bounds [lo, hi] of numeric columns, by name,
	// declared by the data owner (--bounds): values are clamped to them
	// when an analysis reads the column.
	Bounds map[string][2]float64 `json:"bounds,omitempty"`
	// Categorical lists the categorical columns, by name, with their
	// public domains (--categories). A value outside its domain falls
	// into the bucket "other". Categorical columns are not among Columns,
	// the numeric features the matrix mechanisms use.
	Categorical map[string][]string `json:"categorical,omitempty"`
	// Kind is KindMatrix for a matrix dataset (matrix.go), empty for rows;
	// Matrix is then its public shape and Neighbour is NeighbourEntry.
	Kind   string       `json:"kind,omitempty"`
	Matrix *MatrixShape `json:"matrix,omitempty"`
	// Synthetic is set for a PUBLIC dataset: synthetic rows sampled from a
	// stored private_synthesize release (privnotes dataset add
	// --from-synth). Its rows are public, so calls on it charge nothing,
	// like synth_* data; it says which release they came from.
	Synthetic *SynthOrigin `json:"synthetic,omitempty"`
}

// SynthOrigin is the provenance of a public synthetic dataset: the
// release its rows were sampled from. All of it is public.
type SynthOrigin struct {
	// Dataset and Release name the private_synthesize release (its
	// dataset and name=).
	Dataset string `json:"dataset"`
	Release string `json:"release"`
	// Record is the ledger record that charged it, ValueHash the SHA-256
	// of its stored encoding.
	Record    int64  `json:"record"`
	ValueHash string `json:"value_hash"`
}

// Public reports whether the dataset's rows are public (Synthetic).
func (s Schema) Public() bool { return s.Synthetic != nil }

// OtherCategory names the bucket of a categorical column's values that
// lie outside its registered domain.
const OtherCategory = "other"

// Mode returns the dataset's accountant mode.
func (s Schema) Mode() (accounting.Mode, error) { return accounting.ParseMode(s.Accountant) }

// Registration is what the owner registers.
type Registration struct {
	Name       string
	Table      *dataset.Table
	Budget     accounting.Budget
	Accountant accounting.Mode
	Neighbour  accounting.Neighbour
	Clip       float64
	LabelClip  float64
	BadRows    string
	Source     string // the CSV path, for the owner's records
	// PublicN declares the number of privacy units (rows, or users for a
	// user-level table) public: Register records the count in
	// Schema.PublicN, where notebooks may read it. Leave it false unless
	// the count is already public (published with the data, say).
	PublicN bool
	// Bounds declares public bounds [lo, hi] of numeric columns, by name
	// (--bounds): analyses of a column's values (sums, histograms,
	// quantiles) need them.
	Bounds map[string][2]float64
	// Snapshot, instead of Table, registers data already written as an
	// immutable snapshot file in SnapshotDir (dsl/snapshot builds it).
	Snapshot *SnapshotRef
	// Matrix registers the snapshot as a matrix dataset (matrix.go).
	Matrix *MatrixShape
	// Synthetic registers the snapshot as a public synthetic dataset
	// (Schema.Synthetic); its origin must be a stored release.
	Synthetic *SynthOrigin
	// Engine, instead of Table or Snapshot, registers a table in a live
	// database (engine.go) with the columns EngineColumns; EngineSecret
	// is its password ("" for none), stored apart from the registry.
	Engine        *EngineRef
	EngineColumns EngineColumns
	EngineSecret  string
}

// EngineColumns are the columns of an engine registration: numeric ones,
// categorical ones with their public domains, and the user column ("" for
// row-level data).
type EngineColumns struct {
	Numeric     []string
	Categorical map[string][]string
	User        string
}

// OwnerInfo is what the owner's CLI shows: the public schema plus facts
// that must never reach a notebook.
type OwnerInfo struct {
	Schema   Schema
	Rows     int
	Users    int
	Dropped  int
	Source   string
	DataHash string
	Created  time.Time
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ErrNoDataset is returned (wrapped) for an unknown dataset name.
var ErrNoDataset = errors.New("no such dataset")

const chunkRows = 4096

// MaxRows is the largest number of rows a dataset may have. The mechanisms
// charge the worst-case rounding error of their sums for this many rows
// (mechanisms/pca.MaxRows), so the limit must be enforced here, where the
// data owner sees the row count, and never inside a mechanism, where a
// refusal would depend on private data.
const MaxRows = 1 << 30

// Register stores a new dataset and appends its "register" record to the
// ledger. It refuses an existing name.
func (s *Store) Register(ctx context.Context, r Registration) (*OwnerInfo, error) {
	if r.Snapshot != nil {
		return s.registerSnapshot(ctx, r)
	}
	if r.Engine != nil {
		c := r.EngineColumns
		return s.registerEngine(ctx, r, c.Numeric, c.Categorical, c.User)
	}
	t := r.Table
	switch {
	case !nameRE.MatchString(r.Name):
		return nil, fmt.Errorf("dataset name %q: use a letter followed by letters, digits, '_', '.' or '-' (at most 64)", r.Name)
	case t == nil || t.Rows == 0:
		return nil, errors.New("no data rows to register")
	case t.Rows > MaxRows:
		return nil, fmt.Errorf("%d data rows: privnotes registers at most %d rows per dataset (split the data into several datasets)", t.Rows, MaxRows)
	}
	if err := checkRegistration(r, t.Label != ""); err != nil {
		return nil, err
	}
	if err := checkNames(t); err != nil {
		return nil, err
	}
	if err := checkBounds(r.Bounds, t.Columns); err != nil {
		return nil, err
	}
	sc := registeredSchema(r, t.Columns, t.Label, t.UserColumn, t.Rows, t.NumUsers, r.Bounds)
	if t.Mean != nil {
		sc.Center, sc.Mean = "public-mean", t.Mean
	}
	var saltBytes [32]byte
	if _, err := rand.Read(saltBytes[:]); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	salt := hex.EncodeToString(saltBytes[:])
	dataHash := hashData(salt, t)
	d := len(t.Columns)
	now, err := s.commitRegistration(ctx, r, sc, [3]int{t.Rows, t.NumUsers, t.Dropped}, salt, dataHash, func(tx *sql.Tx) error {
		for seq, lo := 0, 0; lo < t.Rows; seq, lo = seq+1, lo+chunkRows {
			hi := min(lo+chunkRows, t.Rows)
			var users, y []byte
			if t.Users != nil {
				users = int32Bytes(t.Users[lo:hi])
			}
			if t.Y != nil {
				y = floatBytes(t.Y[lo:hi])
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO data_chunks(dataset, seq, rows, x, users, y) VALUES (?, ?, ?, ?, ?, ?)`,
				r.Name, seq, hi-lo, floatBytes(t.X[lo*d:hi*d]), users, y); err != nil {
				return dbErr("ledger: storing data", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &OwnerInfo{Schema: sc, Rows: t.Rows, Users: t.NumUsers, Dropped: t.Dropped, Source: r.Source, DataHash: dataHash, Created: now}, nil
}

// registeredSchema is the public schema of registration r of data with
// these numeric columns, label and user column ("" for none), row and user
// counts, and public bounds.
func registeredSchema(r Registration, columns []string, label, userColumn string, rows, users int, bounds map[string][2]float64) Schema {
	sc := Schema{
		Name: r.Name, Columns: columns, D: len(columns), Clip: r.Clip, Unit: "row",
		Label: label, Center: "none", Neighbour: r.Neighbour.String(), Accountant: r.Accountant.String(),
		Budget: r.Budget, BadRows: r.BadRows,
	}
	if len(bounds) > 0 {
		sc.Bounds = bounds
	}
	if r.PublicN {
		sc.PublicN = rows
		if userColumn != "" {
			sc.PublicN = users
		}
	}
	if sc.BadRows == "" {
		sc.BadRows = "reject"
	}
	if label != "" {
		sc.LabelClip = r.LabelClip
	}
	if userColumn != "" {
		sc.Unit, sc.UserColumn = "user", userColumn
	}
	if r.Matrix != nil {
		applyMatrix(&sc, r.Matrix)
	}
	if r.Synthetic != nil {
		o := *r.Synthetic
		sc.Synthetic = &o
	}
	return sc
}

// commitRegistration stores a new dataset in one transaction: its
// registry row (counts are rows, users and dropped rows, owner-only), its
// data (storeData, in the same transaction), its register record and its
// zero running totals. It refuses a name already registered.
func (s *Store) commitRegistration(ctx context.Context, r Registration, sc Schema, counts [3]int, salt, dataHash string, storeData func(tx *sql.Tx) error) (time.Time, error) {
	schemaJSON, err := json.Marshal(sc)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return now, dbErr("ledger: starting the registration", err)
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM datasets WHERE name = ?`, r.Name).Scan(&exists); err != nil {
		return now, dbErr("ledger: reading the registry", err)
	}
	if exists > 0 {
		return now, fmt.Errorf("dataset %q is already registered; registrations are final (choose another name)", r.Name)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO datasets(name, schema, eps, delta, accountant, rows, users, dropped, source, data_salt, data_hash, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Name, string(schemaJSON), r.Budget.Eps, r.Budget.Delta, r.Accountant.String(), counts[0], counts[1], counts[2],
		r.Source, salt, dataHash, now.Format(time.RFC3339Nano)); err != nil {
		return now, dbErr("ledger: storing dataset", err)
	}
	if err := storeData(tx); err != nil {
		return now, err
	}
	params, _ := json.Marshal(map[string]any{"schema": json.RawMessage(schemaJSON), "data_hash": dataHash})
	if _, err := appendRecord(ctx, tx, record{Kind: "register", Dataset: r.Name, Mechanism: "dataset/register",
		Params: string(params), Event: "null", Cell: "owner", Time: now.Format(time.RFC3339Nano)}); err != nil {
		return now, err
	}
	if err := putTotals(ctx, tx, r.Name, accounting.State{}); err != nil {
		return now, err
	}
	if err := tx.Commit(); err != nil {
		return now, dbErr("ledger: committing registration", err)
	}
	return now, nil
}

// checkRegistration checks the budget, accountant and clips of a
// registration.
func checkRegistration(r Registration, hasLabel bool) error {
	switch {
	case !(r.Budget.Eps > 0) || math.IsInf(r.Budget.Eps, 0):
		return fmt.Errorf("--eps %v: the budget's ε must be a finite number > 0", r.Budget.Eps)
	case !(r.Budget.Delta >= 0 && r.Budget.Delta < 1):
		return fmt.Errorf("--delta %v: the budget's δ must be in [0, 1)", r.Budget.Delta)
	case !(r.Clip >= 0) || math.IsInf(r.Clip, 0): // 0: registered without --clip (the matrix methods refuse it)
		return fmt.Errorf("--clip %v: the clip norm must be a finite number > 0", r.Clip)
	case hasLabel && (!(r.LabelClip > 0) || math.IsInf(r.LabelClip, 0)):
		return fmt.Errorf("--label-clip %v: a dataset with a label needs a finite bound > 0 on |label|", r.LabelClip)
	}
	if r.Accountant == accounting.ModeAdvanced {
		return errors.New(`accountant "advanced" is not offered for new datasets: it applied a composition theorem that assumes every call's ε is fixed in advance, which interactive analysis does not do; use zcdp (tight, sound for adaptive choices) or basic (sums of ε and δ)`)
	}
	if _, err := accounting.NewAccountant(r.Accountant, r.Budget); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// checkBounds refuses bounds of a column the data do not have, and
// bounds that are not finite with lo < hi.
func checkBounds(bounds map[string][2]float64, columns []string) error {
	has := map[string]bool{}
	for _, c := range columns {
		has[c] = true
	}
	for name, b := range bounds {
		if !has[name] {
			return fmt.Errorf("--bounds %s=...: the data have no numeric column %q (columns: %s)", name, name, strings.Join(columns, ", "))
		}
		if !(b[0] < b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) {
			return fmt.Errorf("--bounds %s=%v:%v: give finite bounds lo:hi with lo < hi", name, b[0], b[1])
		}
	}
	return nil
}

// checkNames refuses column, label and user-column names holding control
// characters (line breaks, tabs, escape sequences, DEL, ...) or invalid
// UTF-8. The names are public schema that notebooks, tables and the ledger
// print; a name that moves the cursor or breaks a line could forge what an
// analyst or the owner reads.
func checkNames(t *dataset.Table) error {
	const fix = "rename it in the CSV file's header line and register again"
	for i, c := range t.Columns {
		if err := checkName(c); err != nil {
			return fmt.Errorf("feature column %d (%q): %v; %s", i+1, c, err, fix)
		}
	}
	if err := checkName(t.Label); err != nil {
		return fmt.Errorf("label column %q: %v; %s", t.Label, err, fix)
	}
	if err := checkName(t.UserColumn); err != nil {
		return fmt.Errorf("user column %q: %v; %s", t.UserColumn, err, fix)
	}
	return nil
}

func checkName(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("its name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("its name contains the control character %U", r)
		}
	}
	return nil
}
