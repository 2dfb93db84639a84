package release

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// consistent=true on a private_sql COUNT(*) or SUM grouped by public keys:
// the vector's sensitivities take the total (COUNT 2 and √2; SUM
// GroupSumTotalSensitivity and four more rounding excesses), the noise is
// calibrated over G + 1 coordinates, the parts shown add up to the total
// (exactly, as integers, for counts) and carry an interval around each
// part's least-squares fit (ErrFitted, the fits in Table.Parts); it is refused
// with partition selection, on user-level data, without groups and
// without a COUNT(*) or SUM.
func TestSQLConsistent(t *testing.T) {
	t.Parallel()
	keys := []string{"a", "b", "c"}
	rows := accuracyData(300, 10)
	args := mustArgs(FnSQL, map[string]any{"query": "q", "eps": 1.0, "consistent": true})
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		for _, kind := range []sqlplan.AggKind{sqlplan.Count, sqlplan.Sum} {
			sp := auditPlan(kind, 0, 10, keys)
			plain, err := sqlReleases(sp, 3, nb, []float64{1}, 1, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			rels, _ := sqlReleases(sp, 3, nb, []float64{1}, 1, 0, false)
			note, err := sqlConsistent(args, rels, false, false, 3, nb, 1, 0, false)
			if err != nil || !strings.Contains(note, "consistent=true") || !rels[0].total {
				t.Fatalf("%v %v: %q %v", nb, kind, note, err)
			}
			v := rels[0].vecs[0]
			wantL1, wantL2 := 2.0, math.Sqrt2
			if kind == sqlplan.Sum {
				wantL1, wantL2 = tabular.GroupSumTotalSensitivity(rels[0].grid.Low(), rels[0].grid.High(), nb)
				if v.excess != plain[0].vecs[0].excess+4*sqlplan.RoundingExcess(rels[0].grid.Magnitude()) {
					t.Errorf("%v %v: excess %v, plain %v", nb, kind, v.excess, plain[0].vecs[0].excess)
				}
			}
			if v.l1 != wantL1 || v.l2 < wantL2 || v.l2 > wantL2*(1+1e-15) || !(v.scale >= plain[0].vecs[0].scale) {
				t.Errorf("%v %v: ℓ1 %v ℓ2 %v scale %v (plain %v), want %v, %v", nb, kind, v.l1, v.l2, v.scale, plain[0].vecs[0].scale, wantL1, wantL2)
			}
			if nb == accounting.AddRemove && !(v.scale > 1.9*plain[0].vecs[0].scale) {
				t.Errorf("%v %v: scale %v, plain %v: the total doubles the sensitivity", nb, kind, v.scale, plain[0].vecs[0].scale)
			}
			cols, kinds := sqlOutputs(sp)
			if m, ok := sqlErrors(sp.Outputs, rels, cols)["a"]; !ok || m.Kind != ErrFitted || m.Parts != 3 || m.Scale != v.scale || m.Rounded != (kind == sqlplan.Count) || !m.Nonnegative {
				t.Errorf("%v %v: a fitted column's error model %+v, want ErrFitted over 3 parts of scale %v", nb, kind, m, v.scale)
			}
			// The exact total: 300 rows, or their clamped sum.
			exactTotal := 300.0
			if kind == sqlplan.Sum {
				exactTotal = 0
				for _, r := range rows {
					exactTotal += min(max(r.v, 0), 10)
				}
			}
			var sq float64
			realFits := 0
			const runs = 200
			for run := range runs {
				out, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, 3, noise.NewSeeded(uint64(77+run)))
				if err != nil {
					t.Fatal(err)
				}
				// The table keeps each group's least-squares fit (real
				// numbers, where the counts shown are integers).
				fits := out.(*Table).Parts["a"]
				if len(fits) != 1 || len(fits[0]) != 3 {
					t.Fatalf("%v %v: the fits %v", nb, kind, fits)
				}
				for _, f := range fits[0] {
					if f != math.Round(f) {
						realFits++
					}
				}
				total := 0.0
				for _, r := range out.(*Table).Rows {
					x := r[len(r)-1].(float64)
					total += x
					if x < 0 {
						t.Fatalf("%v %v: a negative part %v", nb, kind, x)
					}
					if kind == sqlplan.Count && x != math.Round(x) {
						t.Fatalf("%v %v: a count %v", nb, kind, x)
					}
				}
				sq += (total - exactTotal) * (total - exactTotal)
			}
			// The fitted total's error: Laplace of scale b on G+1 = 4
			// coordinates, (Σy + G·T)/(G+1) has variance 2b²·G/(G+1);
			// within a factor 2 of it over 200 runs.
			if realFits == 0 {
				t.Errorf("%v %v: every fit kept is an integer: the table keeps the values shown, not the fits", nb, kind)
			}
			want := 2 * v.scale * v.scale * 3 / 4
			if got := sq / runs; got > 2*want || got < want/2 {
				t.Errorf("%v %v: the total's MSE %v, want about %v", nb, kind, got, want)
			}
		}
	}
	count := func() []sqlRelease {
		rels, _ := sqlReleases(auditPlan(sqlplan.Count, 0, 10, keys), 3, accounting.AddRemove, []float64{1}, 1, 0, false)
		return rels
	}
	avg, _ := sqlReleases(auditPlan(sqlplan.Avg, 0, 10, keys), 3, accounting.AddRemove, []float64{1}, 1, 0, false)
	for _, c := range []struct {
		name      string
		rels      []sqlRelease
		selecting bool
		users     bool
		groups    int
		want      string
	}{
		{"partition selection", count(), true, false, 3, "partition selection"},
		{"user-level", count(), false, true, 3, "COUNT(DISTINCT"},
		{"one group", count(), false, false, 1, "at least two groups"},
		{"no COUNT or SUM", avg, false, false, 3, "has neither"},
	} {
		if _, err := sqlConsistent(args, c.rels, c.selecting, c.users, c.groups, accounting.AddRemove, 1, 0, false); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "consistent=true") {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
	if note, err := sqlConsistent(mustArgs(FnSQL, map[string]any{"query": "q", "eps": 1.0}), count(), true, false, 3, accounting.AddRemove, 1, 0, false); note != "" || err != nil {
		t.Errorf("without consistent: %q %v", note, err)
	}
}

// withTotal sums the float64s exactly and rounds once.
func TestWithTotal(t *testing.T) {
	t.Parallel()
	got := withTotal([]float64{0x1p60, 1, 1, -0x1p60})
	if len(got) != 5 || got[4] != 2 {
		t.Errorf("withTotal: %v, want a total of 2 (a float64 sum in order gives 0)", got)
	}
}
