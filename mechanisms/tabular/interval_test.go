package tabular

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// RunParts releases what Run releases (the same values from the same
// noise), and a mean's values are its parts' quotients.
func TestRunPartsMatchesRun(t *testing.T) {
	t.Parallel()
	x := mat.NewDense(6, 2, []float64{1, 0, 5, 1, 9, 0, 2, 1, 7, 2, 3, 0})
	groups, err := NewCategoryBins([]string{"a", "b"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, stat := range []GroupStat{GroupCount, GroupSum, GroupMean} {
		for _, delta := range []float64{0, 1e-6} {
			p, err := PlanGroups(GroupSpec{Stat: stat, Groups: groups, Lo: 0, Hi: 10, MaxGroups: 1, CountShare: 0.2}, 1, delta, accounting.AddRemove)
			if err != nil {
				t.Fatal(err)
			}
			src := rows.FromDense(x)
			if stat == GroupCount {
				src = rows.FromDense(mat.NewDense(6, 1, []float64{0, 1, 0, 1, 2, 0}))
			}
			want, err := p.Run(context.Background(), src, false, noise.NewSeeded(9))
			if err != nil {
				t.Fatal(err)
			}
			got, counts, sums, err := p.RunParts(context.Background(), src, false, noise.NewSeeded(9))
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%v δ=%v: value %d = %v, Run gave %v", stat, delta, i, got[i], want[i])
				}
			}
			if stat != GroupMean {
				if counts != nil || sums != nil {
					t.Errorf("%v: parts %v %v, want none", stat, counts, sums)
				}
				continue
			}
			for i := range got {
				if got[i] != sums[i]/max(counts[i], 1) {
					t.Errorf("mean δ=%v: %v is not %v / max(%v, 1)", delta, got[i], sums[i], counts[i])
				}
			}
		}
	}
}
