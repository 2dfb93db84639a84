package release

// The canonical encoding of releases and of calls' public parameters.
//
// A release is differentially private output, so it may be stored: the
// ledger keeps every release with its charge, and a named call replays it
// (Local.Execute). Storing, hashing, replaying and verifying a notebook all
// need one byte-exact form of a release: deterministic JSON with sorted
// keys (encoding/json sorts map keys) and every float64 written by
// strconv.FormatFloat(x, 'g', -1, 64), the shortest form that reads back
// to the same bits. Non-finite numbers, which JSON lacks, are the strings
// "NaN", "+Inf" and "-Inf".

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
)

// Value is a release value the ledger can store and a named call can
// replay. Every value type of the execution core implements it and has a
// kind in valueKinds; a new private function's value type must have both,
// or its releases are not stored and its calls cannot be named.
type Value interface {
	// EncodeRelease writes every released field into e.
	EncodeRelease(e *Encoder)
	// DecodeRelease reads them back from d into the zero value.
	DecodeRelease(d *Decoder) error
}

// valueKinds maps the encoding's "kind" to a new value of the type. It is
// a literal, so that a kind given twice is a compile error (duplicate
// constant keys) rather than a registration that panics.
var valueKinds = map[string]func() Value{
	"pca":        func() Value { return new(PCA) },
	"fedrep":     func() Value { return new(FedRep) },
	"count":      func() Value { return new(Count) },
	"mean":       func() Value { return new(Mean) },
	"sum":        func() Value { return new(Sum) },
	"histogram":  func() Value { return new(Histogram) },
	"quantile":   func() Value { return new(Quantile) },
	"groups":     func() Value { return new(Groups) },
	"lowrank":    func() Value { return new(LowRank) },
	"table":      func() Value { return new(Table) },
	"regression": func() Value { return new(Regression) },
	"synth":      func() Value { return new(Synth) },
}

// kindOf maps a value type's name (fmt %T) to its kind.
var kindOf = func() map[string]string {
	m := make(map[string]string, len(valueKinds))
	for kind, newValue := range valueKinds {
		m[fmt.Sprintf("%T", newValue())] = kind
	}
	return m
}()

// Float is a float64 in the canonical encoding.
type Float float64

// MarshalJSON writes the shortest form that reads back exactly.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsNaN(x):
		return []byte(`"NaN"`), nil
	case math.IsInf(x, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number or one of the non-finite strings.
func (f *Float) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = Float(math.NaN())
		return nil
	case `"+Inf"`:
		*f = Float(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = Float(math.Inf(-1))
		return nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("not a number: %.40s", b)
	}
	*f = Float(x)
	return nil
}

func floats(xs []float64) []Float {
	if xs == nil {
		return nil
	}
	out := make([]Float, len(xs))
	for i, x := range xs {
		out[i] = Float(x)
	}
	return out
}

// Canonical is v in the canonical encoding: maps with sorted keys, floats
// (also inside slices and maps) as Float. v may hold maps with string
// keys, slices, strings, bools, ints and floats.
func Canonical(v any) ([]byte, error) {
	c, err := canonical(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

func canonical(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int, int64, int32, Float:
		return x, nil
	case float64:
		return Float(x), nil
	case float32:
		return Float(x), nil
	case []float64:
		return floats(x), nil
	case []string, []int, []Float:
		return x, nil
	case [][]float64:
		out := make([][]Float, len(x))
		for i, r := range x {
			out[i] = floats(r)
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := canonical(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := canonical(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %T has no canonical encoding", v)
}

// Encoder collects a release's fields.
type Encoder struct{ fields map[string]any }

// Float sets a number.
func (e *Encoder) Float(key string, x float64) { e.fields[key] = Float(x) }

// Floats sets a list of numbers (nil is left out).
func (e *Encoder) Floats(key string, xs []float64) {
	if xs != nil {
		e.fields[key] = floats(xs)
	}
}

// Ints sets a list of integers (nil is left out).
func (e *Encoder) Ints(key string, xs []int) {
	if xs != nil {
		e.fields[key] = xs
	}
}

// String sets a string.
func (e *Encoder) String(key, s string) { e.fields[key] = s }

// Strings sets a list of strings (nil is left out).
func (e *Encoder) Strings(key string, ss []string) {
	if ss != nil {
		e.fields[key] = ss
	}
}

// Matrix sets a matrix as its rows (nil is left out; an empty matrix is
// an empty list).
func (e *Encoder) Matrix(key string, m *mat.Dense) {
	if m == nil {
		return
	}
	rows := [][]Float{}
	if !m.IsEmpty() {
		r, _ := m.Dims()
		for i := range r {
			rows = append(rows, floats(mat.Row(nil, i, m)))
		}
	}
	e.fields[key] = rows
}

// Decoder reads a release's fields back. Its first error sticks: a value
// type's DecodeRelease reads every field and returns d.Err().
type Decoder struct {
	fields map[string]json.RawMessage
	err    error
}

// Err is the first error of the reads.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) read(key string, into any, optional bool) bool {
	raw, ok := d.fields[key]
	if !ok {
		if !optional && d.err == nil {
			d.err = fmt.Errorf("field %q is missing", key)
		}
		return false
	}
	if err := json.Unmarshal(raw, into); err != nil && d.err == nil {
		d.err = fmt.Errorf("field %q: %v", key, err)
	}
	return true
}

// Float reads a number.
func (d *Decoder) Float(key string) float64 {
	var f Float
	d.read(key, &f, false)
	return float64(f)
}

// Floats reads a list of numbers; nil when it was left out.
func (d *Decoder) Floats(key string) []float64 {
	var fs []Float
	if !d.read(key, &fs, true) {
		return nil
	}
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = float64(f)
	}
	return out
}

// Ints reads a list of integers; nil when it was left out.
func (d *Decoder) Ints(key string) []int {
	var xs []int
	d.read(key, &xs, true)
	return xs
}

// String reads a string.
func (d *Decoder) String(key string) string {
	var s string
	d.read(key, &s, false)
	return s
}

// Strings reads a list of strings; nil when it was left out.
func (d *Decoder) Strings(key string) []string {
	var ss []string
	d.read(key, &ss, true)
	return ss
}

// Matrix reads a matrix; nil when it was left out.
func (d *Decoder) Matrix(key string) *mat.Dense {
	var rows [][]Float
	if !d.read(key, &rows, true) {
		return nil
	}
	if len(rows) == 0 || len(rows[0]) == 0 {
		return &mat.Dense{}
	}
	c := len(rows[0])
	data := make([]float64, 0, len(rows)*c)
	for i, r := range rows {
		if len(r) != c {
			if d.err == nil {
				d.err = fmt.Errorf("field %q: row %d has %d values, row 1 has %d", key, i+1, len(r), c)
			}
			return nil
		}
		for _, f := range r {
			data = append(data, float64(f))
		}
	}
	return mat.NewDense(len(rows), c, data)
}

// storedRelease is the document the ledger stores: the value's kind, the
// public column names it refers to and its fields.
type storedRelease struct {
	Kind    string                     `json:"kind"`
	Columns []string                   `json:"columns"`
	Fields  map[string]json.RawMessage `json:"fields"`
}

// Encode is the canonical encoding of a release's values and columns and
// the hex SHA-256 of those bytes. It fails for a value whose type is not
// registered (RegisterValue).
func Encode(value any, columns []string) (enc []byte, hash string, err error) {
	return EncodeShown(value, columns, nil)
}

// ShownReceipt is what a stored release binds of the receipt shown with
// it: the fields a reader takes at face value (the target ε and δ, the
// mechanism, its noise and parameters, the plan's note, and the budget
// block the charge ran in), so that `privnotes notebook verify` can
// redraw a notebook's receipt from the ledger alone and not only its
// numbers. The runtime may extend the note only by runtime.BlockDeltaNote.
type ShownReceipt struct {
	Mechanism string          `json:"mechanism"`
	Eps       Float           `json:"eps"`
	Delta     Float           `json:"delta"`
	Noise     string          `json:"noise"`
	Note      string          `json:"note"`
	Params    json.RawMessage `json:"params"`
	// Block is the budget block's label (Receipt.Block), "" outside any:
	// it is set before the seal by the caller's gate. Left out when empty,
	// so a release made outside a block encodes as before blocks were
	// bound. A remote server's gate is the client's, so releases stored
	// by a data service record none.
	Block string `json:"block,omitempty"`
}

// EncodeShown is Encode with the receipt shown with the release (nil:
// none) bound into the encoding, and so into its hash.
func EncodeShown(value any, columns []string, rc *Receipt) (enc []byte, hash string, err error) {
	v, ok := value.(Value)
	kind := kindOf[fmt.Sprintf("%T", value)]
	if !ok || kind == "" {
		return nil, "", fmt.Errorf("release: a %T cannot be stored (its type implements no release.Value or is not registered)", value)
	}
	e := &Encoder{fields: map[string]any{}}
	v.EncodeRelease(e)
	cols := columns
	if cols == nil {
		cols = []string{}
	}
	doc := map[string]any{"kind": kind, "columns": cols, "fields": e.fields}
	if rc != nil {
		params, err := json.Marshal(rc.Params)
		if err != nil {
			return nil, "", fmt.Errorf("release: encoding a %s release's parameters: %w", kind, err)
		}
		doc["receipt"] = ShownReceipt{Mechanism: rc.Mechanism, Eps: Float(rc.Eps), Delta: Float(rc.Delta), Noise: rc.NoiseScale, Note: rc.Note, Params: params, Block: rc.Block}
	}
	enc, err = json.Marshal(doc)
	if err != nil {
		return nil, "", fmt.Errorf("release: encoding a %s release: %w", kind, err)
	}
	return enc, Hash(enc), nil
}

// Hash is the hex SHA-256 of an encoding.
func Hash(enc []byte) string {
	sum := sha256.Sum256(enc)
	return hex.EncodeToString(sum[:])
}

// Shown is the receipt EncodeShown bound into enc; nil when none was.
func Shown(enc []byte) (*ShownReceipt, error) {
	var doc struct {
		Receipt *ShownReceipt `json:"receipt"`
	}
	if err := json.Unmarshal(enc, &doc); err != nil {
		return nil, fmt.Errorf("release: a stored release is not valid: %w", err)
	}
	return doc.Receipt, nil
}

// Decode rebuilds a release's value and columns from Encode's bytes.
func Decode(enc []byte) (value any, columns []string, err error) {
	var doc storedRelease
	if err := json.Unmarshal(enc, &doc); err != nil {
		return nil, nil, fmt.Errorf("release: a stored release is not valid: %w", err)
	}
	newValue, ok := valueKinds[doc.Kind]
	if !ok {
		return nil, nil, fmt.Errorf("release: a stored release of kind %q, which this build does not know", doc.Kind)
	}
	v := newValue()
	if err := v.DecodeRelease(&Decoder{fields: doc.Fields}); err != nil {
		return nil, nil, fmt.Errorf("release: a stored %s release: %w", doc.Kind, err)
	}
	return v, doc.Columns, nil
}

// PublicParams is the canonical encoding of a call's public parameters:
// the function, the dataset (and a subset's lineage) and every keyword,
// given or defaulted, except name and dry_run, which say how to run the
// call rather than what it releases. Two calls with equal PublicParams
// ask for the same release; a named call replays only on equality.
func PublicParams(call Call) (string, error) {
	m := map[string]any{"function": call.Func, "dataset": call.Dataset.Name}
	if call.Dataset.Derived != nil {
		m["lineage"] = call.Dataset.Derived.Lineage
	}
	args := map[string]any{}
	f, _ := catalog.Lookup(call.Func)
	if call.Args != nil {
		for k, v := range call.Args.Vals {
			if k == NameKeyword || k == "dry_run" || f != nil && lateDefault(f, k, v) {
				continue
			}
			args[k] = v
		}
	}
	m["args"] = args
	b, err := Canonical(m)
	if err != nil {
		return "", fmt.Errorf("release: %s: %w", call.Func, err)
	}
	return string(b), nil
}

// lateDefault reports whether keyword k of f was added after releases
// were stored (catalog.Param.Late) and v is its default: the parameters
// stored with a named call leave it out, so that a call named before the
// keyword existed still matches them.
func lateDefault(f *catalog.Func, k string, v any) bool {
	p, ok := f.Keyword(k)
	if !ok || !p.Late {
		return false
	}
	def, err := p.DefaultValue()
	return err == nil && reflect.DeepEqual(def, v)
}

// NameKeyword is the keyword that names a private call's release.
const NameKeyword = "name"

// The value types' encodings: one pair of methods per type.

// EncodeRelease implements Value.
func (v *PCA) EncodeRelease(e *Encoder) {
	e.Matrix("components", v.Components)
	e.Floats("values", v.Values)
	e.Ints("support", v.Support)
	e.Matrix("right", v.Right)
	if v.Gap != 0 { // only gap="auto" selects one; other releases encode as before
		e.Float("gap", v.Gap)
	}
	if v.Center != nil { // center=true only
		e.Floats("center", v.Center)
	}
	if v.CenterSums != nil { // center=true, since the mean carries its error
		e.Floats("center_sums", v.CenterSums)
		e.Float("center_count", v.CenterCount)
	}
	if v.TotalVariance != 0 { // gauss only
		e.Float("total_variance", v.TotalVariance)
	}
}

// DecodeRelease implements Value.
func (v *PCA) DecodeRelease(d *Decoder) error {
	v.Components, v.Values, v.Support = d.Matrix("components"), d.Floats("values"), d.Ints("support")
	v.Right = d.Matrix("right")
	var gap, total, count Float
	d.read("gap", &gap, true)
	v.Gap = float64(gap)
	v.Center = d.Floats("center")
	v.CenterSums = d.Floats("center_sums")
	d.read("center_count", &count, true)
	v.CenterCount = float64(count)
	d.read("total_variance", &total, true)
	v.TotalVariance = float64(total)
	return d.Err()
}

// EncodeRelease implements Value.
func (v *LowRank) EncodeRelease(e *Encoder) {
	e.Matrix("matrix", v.Matrix)
	e.Matrix("components", v.Components)
	e.Matrix("right", v.Right)
	e.Floats("values", v.Values)
}

// DecodeRelease implements Value.
func (v *LowRank) DecodeRelease(d *Decoder) error {
	v.Matrix, v.Components, v.Right, v.Values = d.Matrix("matrix"), d.Matrix("components"), d.Matrix("right"), d.Floats("values")
	return d.Err()
}

// EncodeRelease implements Value.
func (v *FedRep) EncodeRelease(e *Encoder) { e.Matrix("u", v.U) }

// DecodeRelease implements Value.
func (v *FedRep) DecodeRelease(d *Decoder) error { v.U = d.Matrix("u"); return d.Err() }

// EncodeRelease implements Value.
func (v *Count) EncodeRelease(e *Encoder) { e.Float("value", v.Value) }

// DecodeRelease implements Value.
func (v *Count) DecodeRelease(d *Decoder) error { v.Value = d.Float("value"); return d.Err() }

// EncodeRelease implements Value.
func (v *Mean) EncodeRelease(e *Encoder) {
	e.Floats("values", v.Values)
	e.Floats("sums", v.Sums)
	e.Floats("counts", v.Counts)
}

// DecodeRelease implements Value.
func (v *Mean) DecodeRelease(d *Decoder) error {
	v.Values, v.Sums, v.Counts = d.Floats("values"), d.Floats("sums"), d.Floats("counts")
	return d.Err()
}

// EncodeRelease implements Value.
func (v *Sum) EncodeRelease(e *Encoder) { e.Float("value", v.Value) }

// DecodeRelease implements Value.
func (v *Sum) DecodeRelease(d *Decoder) error { v.Value = d.Float("value"); return d.Err() }

// EncodeRelease implements Value.
func (v *Histogram) EncodeRelease(e *Encoder) {
	e.Strings("keys", v.Keys)
	e.Floats("counts", v.Counts)
}

// DecodeRelease implements Value.
func (v *Histogram) DecodeRelease(d *Decoder) error {
	v.Keys, v.Counts = d.Strings("keys"), d.Floats("counts")
	return d.Err()
}

// EncodeRelease implements Value.
func (v *Quantile) EncodeRelease(e *Encoder) {
	e.Float("q", v.Q)
	e.Float("value", v.Value)
}

// DecodeRelease implements Value.
func (v *Quantile) DecodeRelease(d *Decoder) error {
	v.Q, v.Value = d.Float("q"), d.Float("value")
	return d.Err()
}

// EncodeRelease implements Value.
func (v *Groups) EncodeRelease(e *Encoder) {
	e.String("stat", v.Stat)
	e.String("column", v.Column)
	e.String("by", v.By)
	e.Strings("keys", v.Keys)
	e.Floats("values", v.Values)
	e.Floats("sums", v.Sums)
	e.Floats("counts", v.Counts)
	e.Floats("fitted", v.Fitted)
}

// DecodeRelease implements Value.
func (v *Groups) DecodeRelease(d *Decoder) error {
	v.Stat, v.Column, v.By = d.String("stat"), d.String("column"), d.String("by")
	v.Keys, v.Values = d.Strings("keys"), d.Floats("values")
	v.Sums, v.Counts, v.Fitted = d.Floats("sums"), d.Floats("counts"), d.Floats("fitted")
	return d.Err()
}
