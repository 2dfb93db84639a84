package ledger

// A dataset's stored data: its encoding in data chunks, its salted hash,
// and Load, which reads it back for a mechanism.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/privnotes/privnotes/dsl/dataset"
	"gonum.org/v1/gonum/mat"
)

func floatBytes(xs []float64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func bytesFloat(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, errors.New("corrupt data chunk")
	}
	xs := make([]float64, len(b)/8)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return xs, nil
}

func int32Bytes(xs []int32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// hashData hashes the data with a random salt kept in the owner-only
// column data_salt. The hash goes into the ledger, which notebooks may
// read (%ledger): unsalted, it would let an analyst who knows all rows but
// one test guesses of the last row.
func hashData(salt string, t *dataset.Table) string {
	h := sha256.New()
	h.Write([]byte(salt))
	var hdr [24]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(t.Rows))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(len(t.Columns)))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(t.NumUsers))
	h.Write(hdr[:])
	h.Write(floatBytes(t.X))
	h.Write(int32Bytes(t.Users))
	h.Write(floatBytes(t.Y))
	return hex.EncodeToString(h.Sum(nil))
}

// Data is a dataset's content for a mechanism. It is returned by Load to
// compiled mechanism code only and must never reach a cell.
type Data struct {
	Schema Schema
	X      *mat.Dense // rows × d, centred by the public mean if the schema says so; not clipped
	// Users maps each row to its user (0..NumUsers-1) when Schema.Unit is
	// "user"; nil otherwise.
	Users    []int32
	NumUsers int
	Y        []float64 // the label column, if any
	// Hash is the registration hash Load checked the data against (a
	// salted SHA-256 of the rows, users and labels, hashData): a name for
	// this registration's content, so that a reader who caches by content
	// need not hash the data again. A new registration draws a new salt,
	// so its hash differs even for the same rows. Empty for data that did
	// not come from Load (public synthetic data).
	Hash string
}

// Load reads a dataset's data and checks it against the hash recorded at
// registration.
func (s *Store) Load(name string) (d *Data, err error) {
	err = s.view(func(v *View) error { d, err = v.load(name); return err })
	return d, err
}

// load is Load in v's snapshot.
func (v *View) load(name string) (*Data, error) {
	ctx := v.ctx
	r, err := readDatasetRow(ctx, v.q, name)
	if err != nil {
		return nil, err
	}
	if _, _, ok, err := v.snapshot(name); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%w: dataset %q", ErrSnapshot, name)
	}
	if ok, err := v.isEngine(name); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("ledger: dataset %q lives in a database table; only its engine reads it", name)
	}
	d := r.schema.D
	rows, err := v.q.QueryContext(ctx, `SELECT rows, x, users, y FROM data_chunks WHERE dataset = ? ORDER BY seq`, name)
	if err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
	}
	defer rows.Close()
	x := make([]float64, 0, r.rows*d)
	var users []int32
	var y []float64
	for rows.Next() {
		var n int
		var xb, ub, yb []byte
		if err := rows.Scan(&n, &xb, &ub, &yb); err != nil {
			return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
		}
		xs, err := bytesFloat(xb)
		if err != nil || len(xs) != n*d {
			return nil, fmt.Errorf("ledger: dataset %q: corrupt data chunk", name)
		}
		x = append(x, xs...)
		if ub != nil {
			if len(ub) != 4*n {
				return nil, fmt.Errorf("ledger: dataset %q: corrupt user chunk", name)
			}
			for i := 0; i < n; i++ {
				users = append(users, int32(binary.LittleEndian.Uint32(ub[4*i:])))
			}
		}
		if yb != nil {
			ys, err := bytesFloat(yb)
			if err != nil || len(ys) != n {
				return nil, fmt.Errorf("ledger: dataset %q: corrupt label chunk", name)
			}
			y = append(y, ys...)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(fmt.Sprintf("ledger: loading %q", name), err)
	}
	if len(x) != r.rows*d {
		return nil, fmt.Errorf("ledger: dataset %q: stored data is incomplete", name)
	}
	t := &dataset.Table{Columns: r.schema.Columns, X: x, Rows: r.rows, Users: users, NumUsers: r.users, Y: y}
	if hashData(r.salt, t) != r.hash {
		return nil, fmt.Errorf("ledger: dataset %q: stored data does not match its registration hash", name)
	}
	return &Data{Schema: r.schema, X: mat.NewDense(r.rows, d, x), Users: users, NumUsers: r.users, Y: y, Hash: r.hash}, nil
}
