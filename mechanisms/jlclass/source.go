package jlclass

// Algorithm 3 line 2 (seed 004, 004:L283; federated.md §3.2): the users'
// records seen through the JL matrix, (S_i)_M = {(Mx, y)}, as a rows.Source
// that both variants read, and the pool's grouping of its rows by user.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// projected is a source whose rows are M·clip(x, r), labels ±1 and the
// underlying unit indices.
type projected struct {
	src  rows.Source
	m    *mat.Dense
	clip float64
}

// Project returns src seen through the k′×d JL matrix m: row x becomes
// M·x′ with x′ = x·min{1, r/‖x‖} (the paper's ‖x‖ ≤ r, 004:L251; a row with
// a NaN or an infinity becomes zero), its label y becomes +1 when y > 0
// and −1 otherwise (also when the source has no labels), and its unit
// index is kept (a source without unit indices has rows of no user, as a
// subset without users has). These are public per-record rules, so a run
// never fails on the data it reads.
func Project(src rows.Source, m *mat.Dense, clip float64) (rows.Source, error) {
	if src == nil {
		return nil, errors.New("jlclass: no data source")
	}
	if _, d := m.Dims(); d != src.Dim() {
		return nil, fmt.Errorf("jlclass: the JL matrix has %d columns, the data %d features", d, src.Dim())
	}
	return &projected{src: src, m: m, clip: clip}, nil
}

func (p *projected) Dim() int        { r, _ := p.m.Dims(); return r }
func (p *projected) HasLabels() bool { return true }
func (p *projected) NumUnits() int   { return p.src.(rows.Units).NumUnits() }
func (p *projected) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := p.src.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &projCursor{p: p, cur: cur}, nil
}

type projCursor struct {
	p   *projected
	cur rows.Cursor
	in  *rows.Batch
}

func (c *projCursor) Close() error { return c.cur.Close() }

func (c *projCursor) Next(dst *rows.Batch) error {
	kp, d := c.p.m.Dims()
	n := dst.Cap(kp)
	if n == 0 {
		return rows.ErrDim
	}
	if c.in == nil || c.in.Cap(d) < n {
		c.in = rows.NewBatch(d, n, true, true)
	} else {
		c.in.X = c.in.X[:n*d]
		c.in.Label, c.in.Unit = c.in.Label[:n], c.in.Unit[:n]
	}
	for i := range c.in.Unit {
		c.in.Unit[i] = -1
		c.in.Label[i] = 0
	}
	if err := c.cur.Next(c.in); err != nil {
		dst.N = 0
		return err
	}
	x := make([]float64, d)
	for i := range c.in.N {
		copy(x, c.in.Row(i, d))
		clipRow(x, c.p.clip)
		mat.NewVecDense(kp, dst.X[i*kp:(i+1)*kp]).MulVec(c.p.m, mat.NewVecDense(d, x))
		if i < len(dst.Label) {
			dst.Label[i] = classOf(c.in.Label[i])
		}
		if i < len(dst.Unit) {
			dst.Unit[i] = c.in.Unit[i]
		}
	}
	dst.N = c.in.N
	return nil
}

// clipRow scales x to norm ≤ r in place; a row with a NaN or an infinity
// becomes zero.
func clipRow(x []float64, r float64) {
	big, rel, ok := rows.ScaledNorm(x)
	if !ok {
		clear(x)
		return
	}
	if big == 0 {
		return
	}
	// ‖x‖ = big·rel; scale by r/‖x‖ computed without overflow, shrunk by
	// one part in 10^15 so that rounding never leaves the norm above r.
	if big*rel <= r && !math.IsInf(big*rel, 0) {
		return
	}
	f := (r / big) / rel * (1 - 1e-15)
	for i := range x {
		x[i] *= f
	}
}

func classOf(y float64) float64 {
	if y > 0 {
		return 1
	}
	return -1
}

// UsersFromSource groups the rows of a projected source (Project) by unit
// index in one pass and returns one User per unit index that holds at
// least one row, in increasing index order; rows without a unit index
// (negative) belong to no user. It needs no count of users: a unit index
// that holds no row is no user. Nothing derived from the rows enters an
// error.
func UsersFromSource(ctx context.Context, src rows.Source) ([]*User, error) {
	kp := src.Dim()
	type recs struct {
		z, y []float64
	}
	by := map[int32]*recs{}
	err := rows.ForEach(ctx, src, 1024, true, true, func(b *rows.Batch) error {
		for i := range b.N {
			u := b.Unit[i]
			if u < 0 {
				continue
			}
			r := by[u]
			if r == nil {
				r = &recs{}
				by[u] = r
			}
			r.z = append(r.z, b.Row(i, kp)...)
			r.y = append(r.y, b.Label[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jlclass: reading the users' records: %w", err)
	}
	ids := make([]int32, 0, len(by))
	for u := range by {
		ids = append(ids, u)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	users := make([]*User, len(ids))
	for i, id := range ids {
		r := by[id]
		u, err := NewUser(mat.NewDense(len(r.y), kp, r.z), r.y)
		if err != nil {
			return nil, err
		}
		users[i] = u
	}
	return users, nil
}
