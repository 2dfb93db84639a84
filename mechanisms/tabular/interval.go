package tabular

import (
	"context"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// RunParts is Run, returning as well the noisy counts and sums a GroupMean
// divides (nil for GroupCount and GroupSum). Both are released by the
// mechanism already — the plan charges for the two releases composed
// (PlanGroups), and the mean is a function of them — so handing them out
// costs nothing more; a confidence interval for the mean is built from
// them (noise.RatioInterval): the mean alone does not say how many units
// it averages.
func (p *GroupPlan) RunParts(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) (vals, counts, sums []float64, err error) {
	if p.Stat != GroupMean || p.Total {
		vals, err = p.Run(ctx, src, users, s)
		return vals, nil, nil, err
	}
	counts, sums, err = p.Totals(ctx, src, users)
	if err != nil {
		return nil, nil, nil, err
	}
	vals, counts, sums = p.ReleaseParts(counts, sums, s)
	return vals, counts, sums, nil
}

// ReleaseParts is RunParts on exact totals computed elsewhere (see
// Release): the values, and for a GroupMean without Total its noisy
// counts and sums (nil otherwise). It overwrites counts and sums.
func (p *GroupPlan) ReleaseParts(counts, sums []float64, s *noise.Sampler) (vals, noisyCounts, noisySums []float64) {
	if p.Stat != GroupMean || p.Total {
		return p.Release(counts, sums, s), nil, nil
	}
	p.count.add(s, counts)
	p.sum.add(s, sums)
	vals = make([]float64, len(sums))
	for i := range vals {
		vals[i] = sums[i] / max(counts[i], 1)
	}
	return vals, counts, sums
}
