package rows

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// A Dense source yields its rows, labels and units in order for every
// batch capacity, and again on every scan.
func TestDenseScan(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	src, err := FromDense(x).WithLabels([]float64{10, 11, 12, 13, 14})
	if err != nil {
		t.Fatal(err)
	}
	if src, err = src.WithUnits([]int32{1, 0, 1, 2, 0}, 3); err != nil {
		t.Fatal(err)
	}
	for _, capacity := range []int{1, 2, 5, 9} {
		for pass := range 2 {
			var xs, ys []float64
			var us []int32
			err := ForEach(context.Background(), src, capacity, true, true, func(b *Batch) error {
				if b.N < 1 || b.N > capacity {
					t.Fatalf("a batch of %d rows at capacity %d", b.N, capacity)
				}
				xs = append(xs, b.X[:2*b.N]...)
				ys = append(ys, b.Label[:b.N]...)
				us = append(us, b.Unit[:b.N]...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(xs, x.RawMatrix().Data) || !reflect.DeepEqual(ys, []float64{10, 11, 12, 13, 14}) || !reflect.DeepEqual(us, []int32{1, 0, 1, 2, 0}) {
				t.Errorf("capacity %d pass %d: %v %v %v", capacity, pass, xs, ys, us)
			}
		}
	}
	if src.NumRows() != 5 || src.NumUnits() != 3 || !src.HasLabels() || src.Dim() != 2 {
		t.Errorf("Dense reports %d rows, %d units, labels %v, dim %d", src.NumRows(), src.NumUnits(), src.HasLabels(), src.Dim())
	}
	row := make([]float64, 2)
	src.ReadRow(3, row)
	if row[0] != 6 || row[1] != 7 {
		t.Errorf("ReadRow(3) = %v", row)
	}
}

func TestDenseRefusals(t *testing.T) {
	d := FromDense(mat.NewDense(2, 1, nil))
	if _, err := d.WithLabels([]float64{1}); err == nil {
		t.Error("labels of another length were accepted")
	}
	if _, err := d.WithUnits([]int32{0, 3}, 3); err == nil {
		t.Error("a unit index outside [0, n) was accepted")
	}
	cur, _ := d.Scan(context.Background())
	if err := cur.Next(&Batch{}); !errors.Is(err, ErrDim) {
		t.Errorf("Next into an empty batch: %v", err)
	}
	cur.Close()
	if err := cur.Next(NewBatch(1, 1, false, false)); err == nil || err == io.EOF {
		t.Errorf("Next after Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ForEach(ctx, d, 1, false, false, func(*Batch) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled scan: %v", err)
	}
	if err := ForEach(context.Background(), d, 0, false, false, nil); err == nil {
		t.Error("ForEach with batches of 0 rows was accepted")
	}
}

// Collect reads a streamed source into a Dense with its labels and units.
func TestCollect(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6})
	src, _ := FromDense(x).WithLabels([]float64{7, 8, 9})
	src, _ = src.WithUnits([]int32{0, 0, 1}, 2)
	got, err := Collect(context.Background(), streamed{src})
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(got.Matrix(), x) || !reflect.DeepEqual(got.Labels(), []float64{7, 8, 9}) || !reflect.DeepEqual(got.UnitIndex(), []int32{0, 0, 1}) || got.NumUnits() != 2 {
		t.Errorf("Collect gave %v %v %v", mat.Formatted(got.Matrix()), got.Labels(), got.UnitIndex())
	}
	if same, _ := Collect(context.Background(), src); same != src {
		t.Error("Collect copied a Dense source")
	}
}

// streamed hides a Dense's random access.
type streamed struct{ d *Dense }

func (s streamed) Dim() int                                 { return s.d.Dim() }
func (s streamed) Scan(ctx context.Context) (Cursor, error) { return s.d.Scan(ctx) }
func (s streamed) HasLabels() bool                          { return s.d.HasLabels() }
func (s streamed) NumUnits() int                            { return s.d.NumUnits() }
