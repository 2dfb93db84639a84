package release

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// countingSQL answers every statement with one row of 4s, one per column,
// and counts the statements it ran.
type countingSQL struct{ runs *int }

func (countingSQL) Table() string { return "T" }

func (s countingSQL) Query(_ context.Context, stmt string) ([][]any, error) {
	*s.runs++
	return [][]any{{int64(4)}}, nil
}

// An unfiltered, ungrouped COUNT(*) of a whole row-level snapshot takes n
// from the snapshot's metadata, running no statement; a subset, user-level
// data, a filter, a group or another aggregate run the statement.
func TestSQLCountFromMetadata(t *testing.T) {
	count := auditPlan(sqlplan.Count, 0, 1, nil)
	filtered := auditPlan(sqlplan.Count, 0, 1, nil)
	filtered.Where = &sqlplan.Expr{Op: sqlplan.OpIsNotNull, Type: sqlplan.TypeBool,
		Args: []*sqlplan.Expr{{Op: sqlplan.OpColumn, Column: "x", Type: sqlplan.TypeNumber}}}
	grouped := auditPlan(sqlplan.Count, 0, 1, []string{"a"})
	avg := auditPlan(sqlplan.Avg, 0, 1, nil)
	for _, tc := range []struct {
		name     string
		sp       *sqlplan.Plan
		unit     string
		derived  bool
		want     int64 // the first value of the first row
		wantRuns int
	}{
		{"whole dataset", count, "row", false, 1000, 0},
		{"subset", count, "row", true, 4, 1},
		{"user-level", count, "user", false, 4, 1},
		{"filtered", filtered, "row", false, 4, 1},
		{"grouped", grouped, "row", false, 4, 1},
		{"other aggregate", avg, "row", false, 4, 1},
	} {
		runs, passes := 0, 0
		d := &Data{Schema: ledger.Schema{Unit: tc.unit}, derived: tc.derived, SQL: countingSQL{&runs},
			Rows: counted{Source: rows.FromDense(mat.NewDense(4, 1, nil)), n: 1000, passes: &passes}}
		got, err := querySQL(context.Background(), d, tc.sp)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != 1 || len(got[0]) < 1 || got[0][0] != tc.want || runs != tc.wantRuns || passes != 0 {
			t.Errorf("%s: rows %v after %d statements and %d passes, want first value %d after %d statements and no pass",
				tc.name, got, runs, passes, tc.want, tc.wantRuns)
		}
	}
}
