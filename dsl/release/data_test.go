package release

import (
	"context"
	"gonum.org/v1/gonum/mat"
	"math"
	"reflect"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// On user-level data the privacy unit is the user: private_count counts
// users, the row mechanisms (private_pca, private_mean) see one row per
// user (the mean of the user's rows, so that one user moves one row), and
// private_fedrep takes each user, with all their rows, as one participant.
func TestTeethUserLevel(t *testing.T) {
	const users, rows = 7, 60
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b"}, D: 2, Clip: 1, Unit: "user", UserColumn: "u", Label: "y",
		Neighbour: "replace-one", Accountant: "zcdp", Center: "none"}
	data := &ledger.Data{Schema: sc, X: denseOf(rows, 2, make([]float64, rows*2)), NumUsers: users}
	for i := range rows {
		u := (i * 5) % users
		data.Users = append(data.Users, int32(u))
		data.Y = append(data.Y, float64(i%3))
		data.X.Set(i, 0, float64(u))
		data.X.Set(i, 1, float64(i))
	}
	ctx := context.Background()
	d, err := dataOf(data)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := unitCount(ctx, d); err != nil || got != users {
		t.Errorf("private_count counts %d units on %d users (%d rows)", got, users, rows)
	}
	ur, err := unitMatrix(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := ur.Dims(); r != users {
		t.Fatalf("the row mechanisms see %d rows for %d users", r, users)
	}
	for u := range users {
		var sum, cnt float64
		for i, v := range data.Users {
			if int(v) == u {
				sum += data.X.At(i, 1)
				cnt++
			}
		}
		if got := ur.RawRowView(u); got[0] != float64(u) || math.Abs(got[1]-sum/cnt) > 1e-12 {
			t.Errorf("user %d's row is %v, want the mean of the user's rows [%d %v]", u, got, u, sum/cnt)
		}
	}
	// private_fedrep takes each user as one participant (which rows each
	// participant holds is fedrep's TestUsersFromSourceMatchesRuntimeRule).
	fu, err := fedrep.UsersFromSource(ctx, d.Rows, users, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fu) != users {
		t.Errorf("private_fedrep has %d participants for %d users", len(fu), users)
	}
}

// Data.Columns projects, reorders and clamps columns and keeps the unit
// indices, for every batch size.
func TestColumnsProjectAndClamp(t *testing.T) {
	sc := ledger.Schema{Name: "x", Columns: []string{"a", "b", "c"}, D: 3, Unit: "user",
		Bounds: map[string][2]float64{"c": {0, 10}}}
	x := []float64{1, 2, 30, 4, 5, -6, 7, 8, 9}
	d, err := dataOf(&ledger.Data{Schema: sc, X: mat.NewDense(3, 3, x), Users: []int32{2, 0, 1}, NumUsers: 3})
	if err != nil {
		t.Fatal(err)
	}
	src, err := d.Columns([]string{"c", "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cap := range []int{1, 2, 5} {
		var got []float64
		var units []int32
		err := rows.ForEach(context.Background(), src, cap, false, true, func(b *rows.Batch) error {
			got = append(got, b.X[:2*b.N]...)
			units = append(units, b.Unit[:b.N]...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []float64{10, 1, 0, 4, 9, 7}; !reflect.DeepEqual(got, want) {
			t.Errorf("batch %d: rows %v, want %v (c clamped to [0, 10], then a)", cap, got, want)
		}
		if want := []int32{2, 0, 1}; !reflect.DeepEqual(units, want) {
			t.Errorf("batch %d: units %v, want %v", cap, units, want)
		}
	}
	if _, err := d.Columns([]string{"zz"}); err == nil {
		t.Error("an unknown column was accepted")
	}
}

// counted is a source of n rows that knows n (a snapshot's, from its
// metadata), counting its passes.
type counted struct {
	rows.Source
	n      int64
	passes *int
}

func (c counted) NumRows() int64 { return c.n }

func (c counted) Scan(ctx context.Context) (rows.Cursor, error) {
	*c.passes++
	return c.Source.Scan(ctx)
}

// An unfiltered count of rows takes n from a source that knows it,
// without a pass; a subset's count never does.
func TestUnitCountFromMetadata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		derived    bool
		want       int
		wantPasses int
	}{
		{"whole dataset", false, 1000, 0},
		// The metadata says 1000, the rows are 4: a subset is counted.
		{"subset", true, 4, 1},
	} {
		passes := 0
		src := counted{Source: rows.FromDense(mat.NewDense(4, 1, nil)), n: 1000, passes: &passes}
		d := &Data{Schema: ledger.Schema{Unit: "row"}, Rows: src, derived: tc.derived}
		got, err := unitCount(ctx, d)
		if err != nil || got != tc.want || passes != tc.wantPasses {
			t.Errorf("%s: count %d after %d passes (%v), want %d after %d", tc.name, got, passes, err, tc.want, tc.wantPasses)
		}
	}
}
