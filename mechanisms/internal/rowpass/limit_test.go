package rowpass

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/rows"
)

// A limited scan passes rows through until the count passes MaxRows, then
// fails with ErrTooManyRows and no rows: the count starts just below
// the limit instead of streaming 2^30 rows.
func TestLimit(t *testing.T) {
	src := Limit(rows.FromDense(mat.NewDense(10, 1, nil)))
	if _, ok := src.(rows.Units); ok {
		t.Errorf("a limited source claims a unit count")
	}
	cur, err := src.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := rows.NewBatch(4, 1, false, false)
	if err := cur.Next(b); err != nil || b.N != 4 {
		t.Fatalf("first batch: %d rows, %v", b.N, err)
	}
	cur.(*limitedCursor).n = MaxRows - 2
	err = cur.Next(b)
	if !errors.Is(err, ErrTooManyRows) || b.N != 0 {
		t.Errorf("past MaxRows: %v (%d rows)", err, b.N)
	}
}
