package fedrep

// The users of Private FedRep built from a data set (seed 004: each user i
// holds its own m records (x_ij, y_ij), Algorithm 1 input; federated.md
// §2.1–2.2 with the public grouping rule below).

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// usersBatchRows is the batch size of the pass that groups the rows.
const usersBatchRows = 1024

// UsersFromSource builds the n users of a data set, n being the public
// number of users, from ONE pass over src, whose rows carry a label (the
// response y, rows.Labeled) and a unit index (the user, rows.Units and
// Batch.Unit). User j gets the rows of unit index j, in row order, with
// these public rules, applied to one user's records at a time (which
// user-level clipping covers):
//
//   - a user with fewer than MinRecords records has them repeated
//     cyclically up to MinRecords (records 0, 1, …, m−1, 0, 1, …);
//   - a user index without records gets MinRecords zero records (zero
//     features, zero response);
//   - a row whose unit index is outside [0, n), or that the source gives
//     no unit index (its cursor leaves Batch.Unit unfilled), belongs to no
//     user and is ignored.
//
// newUser makes user j from its records x (m×d, m ≥ MinRecords) and
// responses y, which it may keep; nil means NewUser (batch draws from
// crypto/rand). Tests and experiments pass NewUserSeeded with a seed per j.
//
// Memory: every user holds its own records (a user is a device holding
// its data), so the users together hold every row that belongs to one;
// while they are built, the pass's copy of those rows is held as well.
// Nothing derived from the rows enters an error: the refusals before the
// pass name only public facts (n, the schema), and a failure during it is
// the source's or ctx's.
func UsersFromSource(ctx context.Context, src rows.Source, n int, newUser func(j int, x *mat.Dense, y []float64) (*User, error)) ([]*User, error) {
	return UsersFromSourceMax(ctx, src, n, 0, newUser)
}

// UsersFromSourceMax is UsersFromSource keeping at most maxRecords records
// per user (0: all): each user's first maxRecords rows in row order, the
// rest ignored. It bounds the memory by n·maxRecords rows whatever the
// private number of rows, and it is a rule applied to one user's records
// at a time, like the padding, so user-level neighbours (one user's
// records changed) stay neighbours: the privacy analysis is unchanged.
func UsersFromSourceMax(ctx context.Context, src rows.Source, n, maxRecords int, newUser func(j int, x *mat.Dense, y []float64) (*User, error)) ([]*User, error) {
	if src == nil {
		return nil, errors.New("fedrep: no data source")
	}
	if n < 0 || n > MaxUsers {
		return nil, fmt.Errorf("fedrep: the number of users must be in 0..fedrep.MaxUsers = 2^30, got %d", n)
	}
	d := src.Dim()
	if d < 1 {
		return nil, errors.New("fedrep: the data have no feature column")
	}
	if l, ok := src.(rows.Labeled); !ok || !l.HasLabels() {
		return nil, errors.New("fedrep: the data have no label column (the regression target)")
	}
	if _, ok := src.(rows.Units); !ok {
		return nil, errors.New("fedrep: the data carry no user index (rows.Units)")
	}
	if newUser == nil {
		newUser = func(_ int, x *mat.Dense, y []float64) (*User, error) { return NewUser(x, y) }
	}
	if n == 0 {
		return []*User{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fedrep: reading the users' records: %w", err)
	}
	var recs *userRecords
	if m, ok := src.(*rows.Dense); ok {
		recs = denseRecords(m, n, maxRecords)
	} else {
		var err error
		if recs, err = groupRows(ctx, src, d, n, maxRecords); err != nil {
			return nil, err
		}
	}
	users := make([]*User, n)
	for j, rs := range recs.of {
		m := max(len(rs), MinRecords)
		x, y := make([]float64, m*d), make([]float64, m)
		for r := 0; len(rs) > 0 && r < m; r++ {
			recs.read(rs[r%len(rs)], x[r*d:(r+1)*d], &y[r])
		}
		recs.of[j] = nil
		u, err := newUser(j, mat.NewDense(m, d, x), y)
		if err != nil {
			return nil, err
		}
		users[j] = u
	}
	return users, nil
}

// userRecords are the rows that belong to a user, with the positions of
// each user's rows in row order, from which a user's records are copied
// once into a matrix of their exact size. A pass stores the rows in fixed
// chunks of about 1 MiB (no copy as they grow); the rows of a *rows.Dense
// are already in memory and are read where they are.
type userRecords struct {
	d, chunk int
	x, y     [][]float64
	count    int
	of       [][]int // of[j]: positions of user j's rows
	dense    *rows.Dense
}

func (s *userRecords) add(u int, row []float64, label float64) {
	c, i := s.count/s.chunk, s.count%s.chunk
	if i == 0 {
		s.x = append(s.x, make([]float64, s.chunk*s.d))
		s.y = append(s.y, make([]float64, s.chunk))
	}
	copy(s.x[c][i*s.d:(i+1)*s.d], row)
	s.y[c][i] = label
	s.of[u] = append(s.of[u], s.count)
	s.count++
}

func (s *userRecords) read(p int, x []float64, y *float64) {
	if s.dense != nil {
		s.dense.ReadRow(p, x)
		*y = s.dense.Labels()[p]
		return
	}
	c, i := p/s.chunk, p%s.chunk
	copy(x, s.x[c][i*s.d:(i+1)*s.d])
	*y = s.y[c][i]
}

// denseRecords groups the rows of an in-memory matrix by its unit indices
// (none: no row is a user's), with the rule of groupRows.
func denseRecords(m *rows.Dense, n, maxRecords int) *userRecords {
	recs := &userRecords{d: m.Dim(), of: make([][]int, n), dense: m}
	for i, u := range m.UnitIndex() {
		if int(u) >= 0 && int(u) < n && (maxRecords <= 0 || len(recs.of[u]) < maxRecords) {
			recs.of[u] = append(recs.of[u], i)
		}
	}
	return recs
}

// groupRows reads src once and keeps the rows of each unit index in
// [0, n), in row order, at most maxRecords of each (0: all).
func groupRows(ctx context.Context, src rows.Source, d, n, maxRecords int) (*userRecords, error) {
	fail := func(err error) (*userRecords, error) {
		return nil, fmt.Errorf("fedrep: reading the users' records: %w", err)
	}
	cur, err := src.Scan(ctx)
	if err != nil {
		return fail(err)
	}
	defer cur.Close()
	recs := &userRecords{d: d, chunk: max(1, (1<<17)/d), of: make([][]int, n)}
	b := rows.NewBatch(d, usersBatchRows, true, true)
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		// A row the cursor gives no unit index keeps −1: no user's.
		for i := range b.Unit {
			b.Unit[i] = -1
		}
		err := cur.Next(b)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		for i := range b.N {
			if u := int(b.Unit[i]); u >= 0 && u < n && (maxRecords <= 0 || len(recs.of[u]) < maxRecords) {
				recs.add(u, b.Row(i, d), b.Label[i])
			}
		}
	}
	if err := cur.Close(); err != nil {
		return fail(err)
	}
	return recs, nil
}
