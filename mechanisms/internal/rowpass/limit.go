package rowpass

import (
	"context"
	"errors"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// ErrTooManyRows is the failure of a pass over more than MaxRows rows;
// the mechanism packages export it under their own names.
var ErrTooManyRows = errors.New("the data have more than MaxRows = 2^30 rows, the most the privacy accounting covers")

// Limit returns src whose scans fail with ErrTooManyRows once they pass
// MaxRows rows, before a pass would panic on them: the mechanisms' error
// bounds are stated for n ≤ MaxRows. It has only rows.Source's methods:
// a caller that needs src's unit count wraps it again.
func Limit(src rows.Source) rows.Source {
	return limited{Source: src}
}

type limited struct{ rows.Source }

func (l limited) Scan(ctx context.Context) (rows.Cursor, error) {
	cur, err := l.Source.Scan(ctx)
	if err != nil {
		return nil, err
	}
	return &limitedCursor{Cursor: cur}, nil
}

type limitedCursor struct {
	rows.Cursor
	n int
}

func (c *limitedCursor) Next(dst *rows.Batch) error {
	err := c.Cursor.Next(dst)
	if c.n += dst.N; c.n > MaxRows {
		dst.N = 0
		return ErrTooManyRows
	}
	return err
}
