package release

import (
	"context"
	"math"
	"testing"

	"github.com/privnotes/privnotes/dsl/ledger"
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
	all, err := collectRows(ctx, d.Rows)
	if err != nil {
		t.Fatal(err)
	}
	fu, err := fedrepUsers(all, users)
	if err != nil {
		t.Fatal(err)
	}
	if len(fu) != users {
		t.Errorf("private_fedrep has %d participants for %d users", len(fu), users)
	}
	seen := 0
	for p, rs := range userRows(data.Users, users) {
		seen += len(rs)
		for _, i := range rs {
			if int(data.Users[i]) != p {
				t.Errorf("private_fedrep's participant %d holds row %d of user %d", p, i, data.Users[i])
			}
		}
	}
	if seen != rows {
		t.Errorf("private_fedrep's participants hold %d of %d rows", seen, rows)
	}
}

var collectRows = rows.Collect
