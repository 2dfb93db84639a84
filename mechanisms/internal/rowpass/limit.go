package rowpass

import (
	"context"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// Limit returns src whose scans fail with tooMany once they pass MaxRows
// rows, before a pass would panic on them: the mechanisms' error bounds
// are stated for n ≤ MaxRows. It has only rows.Source's methods: a
// caller that needs src's unit count wraps it again.
func Limit(src rows.Source, tooMany error) rows.Source {
	return limited{Source: src, tooMany: tooMany}
}

type limited struct {
	rows.Source
	tooMany error
}

func (l limited) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := l.Source.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &limitedCursor{Cursor: cur, tooMany: l.tooMany}, nil
}

type limitedCursor struct {
	rows.Cursor
	n       int
	tooMany error
}

func (c *limitedCursor) Next(dst *rows.Batch) error {
	err := c.Cursor.Next(dst)
	if c.n += dst.N; c.n > MaxRows {
		dst.N = 0
		return c.tooMany
	}
	return err
}
