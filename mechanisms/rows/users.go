package rows

import (
	"context"
	"fmt"
	"io"
)

// UserMeans is a Source with one row per user of a source whose rows carry
// unit indices (Units): the mean of the user's rows, each the sum of the
// user's rows in row order divided by their number, for the users in
// index order, users without rows left out. It is the state per user of
// user-level data (issue 25.5): the number of users is private, so holding
// every user's sum at once would let the memory a run needs after its
// charge grow with it. A scan holds the sums of at most Window users: it
// reads its parent once per window of the index, [lo, lo+Window), skipping
// the rows of users outside it, and moves to the next window only when a
// pass saw a user at or past the window's end. A user's sum depends on
// that user's rows alone, read in the same order in every pass, so the
// rows are bit identical for every window size; only the number of passes
// (a timing, like every pass over rows) depends on the number of users.
type UserMeans struct {
	src    Source
	nu     int
	window int
	in     func(row []float64)
	out    func(row []float64)
}

// NewUserMeans returns the user means of src, window users at a time
// (window ≤ 0: every user in one window). in, if not nil, is applied to
// each row (a copy the scan owns) before it is summed; out, if not nil, to
// each mean. Rows whose unit index lies outside [0, NumUnits) are skipped.
func NewUserMeans(src Source, window int, in, out func(row []float64)) (*UserMeans, error) {
	u, ok := src.(Units)
	if !ok {
		return nil, fmt.Errorf("rows: user means of a source without unit indices")
	}
	nu := u.NumUnits()
	if window <= 0 || window > nu {
		window = nu
	}
	return &UserMeans{src: src, nu: nu, window: max(window, 1), in: in, out: out}, nil
}

// Dim returns the parent's number of columns.
func (m *UserMeans) Dim() int { return m.src.Dim() }

// Window returns the most users a scan holds at once.
func (m *UserMeans) Window() int { return m.window }

// Scan starts a pass over the users' means in index order.
func (m *UserMeans) Scan(ctx context.Context) (Cursor, error) {
	return &userMeansCursor{m: m, ctx: ctx}, nil
}

type userMeansCursor struct {
	m   *UserMeans
	ctx context.Context
	// lo is the current window's first user; sums and counts hold its
	// users' state (at most m.window users); next is the next of them to
	// emit; more is set when the window's pass saw a later user.
	lo                   int
	sums                 []float64
	counts               []float64
	next, w              int
	started, more, ended bool
}

// fill reads the parent once for the users of the window starting at lo.
func (c *userMeansCursor) fill() error {
	m, dim := c.m, c.m.src.Dim()
	c.w = min(m.window, m.nu-c.lo)
	if c.sums == nil {
		c.sums, c.counts = make([]float64, m.window*dim), make([]float64, m.window)
	}
	clear(c.sums)
	clear(c.counts)
	c.next, c.more = 0, false
	hi := c.lo + c.w
	return ForEach(c.ctx, m.src, 1024, false, true, func(b *Batch) error {
		for i := range b.N {
			u := int(b.Unit[i])
			if u < 0 || u >= m.nu || u < c.lo {
				continue
			}
			if u >= hi {
				c.more = true
				continue
			}
			row := b.Row(i, dim)
			if m.in != nil {
				m.in(row)
			}
			acc := c.sums[(u-c.lo)*dim : (u-c.lo+1)*dim]
			for j, v := range row {
				acc[j] += v
			}
			c.counts[u-c.lo]++
		}
		return nil
	})
}

func (c *userMeansCursor) Next(dst *Batch) error {
	dst.N = 0
	if c.ended {
		return io.EOF
	}
	dim := c.m.src.Dim()
	room := dst.Cap(dim)
	if room < 1 {
		return ErrDim
	}
	for dst.N < room {
		if c.next >= c.w {
			if c.started && (!c.more || c.lo+c.w >= c.m.nu) || c.m.nu == 0 {
				c.ended = true
				break
			}
			if c.started {
				c.lo += c.w
			}
			c.started = true
			if err := c.fill(); err != nil {
				dst.N = 0
				return err
			}
			continue
		}
		u := c.next
		c.next++
		if c.counts[u] == 0 {
			continue
		}
		row := dst.Row(dst.N, dim)
		for j, v := range c.sums[u*dim : (u+1)*dim] {
			row[j] = v / c.counts[u]
		}
		if c.m.out != nil {
			c.m.out(row)
		}
		dst.N++
	}
	if dst.N == 0 {
		return io.EOF
	}
	return nil
}

func (c *userMeansCursor) Close() error {
	c.ended, c.sums, c.counts = true, nil, nil
	return nil
}
