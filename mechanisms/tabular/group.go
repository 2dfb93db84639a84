package tabular

import (
	"context"
	"errors"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// GroupStat is what a grouped release computes per group.
type GroupStat int

const (
	// GroupCount counts the units of every group.
	GroupCount GroupStat = iota
	// GroupSum sums a bounded column per group.
	GroupSum
	// GroupMean divides a noisy GroupSum by a noisy GroupCount, per group.
	GroupMean
)

func (s GroupStat) String() string {
	switch s {
	case GroupCount:
		return "count"
	case GroupSum:
		return "sum"
	case GroupMean:
		return "mean"
	}
	return "unknown"
}

// MeanRoundDown is the factor by which a grouped mean's shares of ρ are
// lowered, so that the two shares, each computed with a few roundings and
// turned into a noise multiplier 1/√(2ρ) with a few more, never add up to
// more than the charged ρ (1 − 2^-48 leaves room for 2^5 roundings).
const MeanRoundDown = 1 - 0x1p-48

// Errors of the grouped plans. Their texts are fixed.
var (
	// ErrMaxGroups: a unit's group limit outside 1..the number of groups.
	ErrMaxGroups = errors.New("max_groups must be an integer from 1 to the number of keys (the categories and \"other\")")
	// ErrShare: the count's share of a mean's budget is not in (0, 1).
	ErrShare = errors.New("tabular: the count's share of the budget must lie strictly between 0 and 1")
	// ErrStat: an unknown GroupStat.
	ErrStat = errors.New("tabular: unknown grouped statistic")
	// ErrTotal: a total asked of other than a count or sum with
	// MaxGroups 1.
	ErrTotal = errors.New("tabular: a released total needs grouped counts or sums with one group per unit (max_groups=1)")
	// ErrGroupDim: the source does not hold the columns the plan reads.
	ErrGroupDim = errors.New("tabular: the source must hold the grouping column (counts), or the value column then the grouping column (sums, means)")
)

// GroupSpec describes a grouped release in public terms.
type GroupSpec struct {
	Stat GroupStat
	// Groups maps the grouping column's values to groups (CategoryBins of
	// the by column's public domain: its categories and "other"). Nil
	// means no grouping column: every unit is in the one group (the
	// bounded mean of one column).
	Groups Binning
	// Lo and Hi are the public bounds of the summed or averaged column
	// (GroupSum, GroupMean).
	Lo, Hi float64
	// MaxGroups is the most groups one unit contributes to: 1 on
	// row-level data (a row is in one group), the max_groups keyword on
	// user-level data.
	MaxGroups int
	// CountShare is the share of ρ a GroupMean spends on its counts; the
	// rest goes to its sums.
	CountShare float64
	// AddRemoveToo makes the sensitivities the larger of the relation's
	// and add-remove's: the data are a subset of registered replace-one
	// data, where replacing a unit may add it to the subset or remove it.
	AddRemoveToo bool
	// Total makes a GroupCount with MaxGroups 1 release the total of its
	// counts too, as one more coordinate of the same noisy vector, so
	// that post-processing can make the parts add up to it (consistent
	// counts). A unit then moves one count and the total by one each
	// (add-remove), or two counts and not the total (replace-one): ℓ1 = 2,
	// ℓ2 = √2 under both relations. A GroupSum with MaxGroups 1 releases
	// the total of its sums likewise (GroupSumTotalSensitivity).
	Total bool
}

// GroupPlan is a planned grouped release. Every field is public.
type GroupPlan struct {
	GroupSpec
	Eps, Delta float64
	Neighbour  accounting.Neighbour
	// CountL1 and CountL2 are the sensitivities of the vector of counts
	// (GroupCount, GroupMean).
	CountL1, CountL2 float64
	// SumL1 and SumL2 are the sensitivities of the exact vector of sums
	// (GroupSum, GroupMean); Excess is the rounding excess SumExcess(m),
	// added to both before calibration.
	SumL1, SumL2, Excess float64
	// Gaussian is set for δ > 0 (discrete Gaussian, ρ-zCDP with Rho, of
	// which a GroupMean spends CountRho on its counts and SumRho on its
	// sums); otherwise the noise is discrete Laplace (pure ε).
	Gaussian              bool
	Rho, CountRho, SumRho float64
	// CountEps and SumEps are a pure-ε GroupMean's shares of ε (δ = 0):
	// Laplace noise of ℓ1 sensitivity CountL1 on the counts and SumL1 +
	// Excess on the sums.
	CountEps, SumEps       float64
	CountScale, SumScale   float64 // the Laplace b or the Gaussian σ of every count, every sum
	Event                  accounting.Event
	count, sum             noisePlan
	countNoised, sumNoised bool
}

// oneGroup is the grouping of a spec without Groups.
type oneGroup struct{}

func (oneGroup) Len() int        { return 1 }
func (oneGroup) Bin(float64) int { return 0 }
func (oneGroup) Keys() []string  { return []string{"all"} }
func (s GroupSpec) groups() Binning {
	if s.Groups == nil {
		return oneGroup{}
	}
	return s.Groups
}

// mulUp returns a float64 no smaller than a·b (a, b ≥ 0, finite): the
// rounded product, one ulp higher when it rounded down.
func mulUp(a, b float64) float64 {
	r := a * b
	if math.FMA(a, b, -r) > 0 {
		r = up(r)
	}
	return r
}

// sqrtIntUp returns a float64 no smaller than √k.
func sqrtIntUp(k int) float64 {
	kf := float64(k) // exact: k ≤ 2^21
	r := math.Sqrt(kf)
	if math.FMA(r, r, -kf) < 0 {
		r = up(r)
	}
	return r
}

// GroupCountSensitivity returns the ℓ1 and ℓ2 sensitivities of the vector
// of per-group counts over groups groups when one unit counts, once each,
// in at most k of them. addRemoveToo changes nothing here: replace-one's
// are at least add-remove's (the parameter mirrors GroupSumSensitivity).
//
// Add-remove: a unit adds 1 to at most k counts: ℓ1 = k, ℓ2 = √k.
// Replace-one: the old unit leaves its groups A and the new one enters
// its groups B (|A|, |B| ≤ k); the counts of A ∩ B do not move and those
// of A △ B move by one each: ℓ1 ≤ |A| + |B| ≤ 2k, ℓ2 ≤ √(2k). With one
// group nothing moves under replace-one; the count is still noised at
// sensitivity 1, so that the number of units is never released exactly.
func GroupCountSensitivity(groups, k int, nb accounting.Neighbour, addRemoveToo bool) (l1, l2 float64) {
	l1, l2 = float64(k), sqrtIntUp(k)
	if nb == accounting.ReplaceOne && groups > 1 {
		l1, l2 = 2*float64(k), sqrtIntUp(2*k) // ≥ the add-remove ones
	}
	return l1, l2
}

// GroupSumSensitivity returns the ℓ1 and ℓ2 sensitivities of the exact
// vector of per-group sums over groups groups when one unit contributes a
// value in [lo, hi] to each of at most k of them (m = max(|lo|, |hi|)).
//
// Add-remove: at most k sums move, each by |v| ≤ m: ℓ1 = k·m, ℓ2 = √k·m.
// Replace-one: the old unit's values a_g on its groups A are replaced by
// the new one's b_g on B. A sum of A ∩ B moves by |b_g − a_g| ≤ hi − lo,
// a sum of A \ B or B \ A by |a_g| or |b_g| ≤ m. With c = |A ∩ B| ≤ k,
// |A \ B| and |B \ A| ≤ k − c:
//
//	ℓ1 ≤ c·(hi − lo) + 2(k − c)·m ≤ 2k·m            (hi − lo ≤ 2m)
//	ℓ2² ≤ c·(hi − lo)² + 2(k − c)·m² ≤ k·max((hi − lo)², 2m²)
//
// (both are linear in c, so their maximum over 0 ≤ c ≤ k is at an end):
// ℓ1 = 2k·m and ℓ2 = √k·max(hi − lo, √2·m). For k = 1 this is a row that
// stays in its group (hi − lo) or moves to another (|v| + |v′| ≤ 2m in
// ℓ1, √(v² + v′²) ≤ √2·m in ℓ2). With one group no unit can move between
// groups: replace-one gives hi − lo, as for private_sum. addRemoveToo
// takes the larger of the relation's and add-remove's.
func GroupSumSensitivity(lo, hi float64, groups, k int, nb accounting.Neighbour, addRemoveToo bool) (l1, l2 float64) {
	m := max(math.Abs(lo), math.Abs(hi))
	rk := sqrtIntUp(k)
	arL1, arL2 := mulUp(float64(k), m), mulUp(rk, m)
	if nb != accounting.ReplaceOne {
		return arL1, arL2
	}
	w := up(hi - lo)
	if groups == 1 {
		l1, l2 = w, w // k = 1: one value per unit
	} else {
		l1 = mulUp(2*float64(k), m)
		l2 = mulUp(rk, max(w, mulUp(sqrt2Up, m)))
	}
	if addRemoveToo {
		l1, l2 = max(l1, arL1), max(l2, arL2)
	}
	return l1, l2
}

// GroupSumTotalSensitivity returns the ℓ1 and ℓ2 sensitivities of the
// exact vector (S_1, …, S_G, T) of per-group sums and their total T when
// each row adds a value in [lo, hi] to one group or to none (MaxGroups 1,
// row-level data), m = max(|lo|, |hi|).
//
// Add-remove: a row v moves one S_g and T by v: ℓ1 = 2m, ℓ2 = √2·m.
// Replace-one: a row a in group g becomes b in group g′ (or in none).
// With g = g′ one sum and T move by b − a: ℓ1 = 2(hi − lo), ℓ2 =
// √2·(hi − lo). With g ≠ g′, S_g moves by a, S_g′ by b and T by b − a:
// ℓ1 = |a| + |b| + |b − a|, ℓ2² = a² + b² + (b − a)², both convex in
// (a, b), so largest at a corner of [lo, hi]²: ℓ1 = |lo| + |hi| + (hi − lo)
// (which is at least 2m and 2(hi − lo)), ℓ2² the largest of
// lo² + hi² + (hi − lo)², 2m² and 2(hi − lo)². A row leaving the groups
// is a corner too (b = 0 moves S_g and T by a). Either relation's values
// are at least add-remove's.
func GroupSumTotalSensitivity(lo, hi float64, nb accounting.Neighbour) (l1, l2 float64) {
	m := max(math.Abs(lo), math.Abs(hi))
	if nb != accounting.ReplaceOne {
		return mulUp(2, m), mulUp(sqrt2Up, m)
	}
	w := up(hi - lo)
	l1 = up(up(math.Abs(lo)+math.Abs(hi)) + w)
	sq := max(up(up(lo*lo+hi*hi)+w*w), 2*m*m, 2*w*w)
	l2 = up(math.Sqrt(up(sq)))
	return max(l1, mulUp(2, m)), max(l2, mulUp(sqrt2Up, m))
}

// PlanGroups plans a grouped release at (ε, δ) under nb. It reads no data;
// its errors have fixed texts. A GroupMean needs δ > 0: its counts and sums
// get discrete Gaussian noise with CountShare and 1 − CountShare of
// ρ = RhoForTarget(ε, δ) (each lowered by MeanRoundDown), charged together
// as one ρ-zCDP event.
//
// An optional trailing Calibration (default CalibrateZCDP) chooses how
// δ > 0 is calibrated; under CalibrateGDP ρ above is μ*²/2 (GaussianTarget)
// and the event is μ*-GDP.
func PlanGroups(spec GroupSpec, eps, delta float64, nb accounting.Neighbour, cal ...Calibration) (*GroupPlan, error) {
	g := spec.groups()
	G := g.Len()
	if spec.MaxGroups < 1 || spec.MaxGroups > G {
		return nil, ErrMaxGroups
	}
	p := &GroupPlan{GroupSpec: spec, Eps: eps, Delta: delta, Neighbour: nb}
	switch spec.Stat {
	case GroupCount:
		p.countNoised = true
	case GroupSum:
		p.sumNoised = true
	case GroupMean:
		p.countNoised, p.sumNoised = true, true
	default:
		return nil, ErrStat
	}
	if p.countNoised {
		p.CountL1, p.CountL2 = GroupCountSensitivity(G, spec.MaxGroups, nb, spec.AddRemoveToo)
	}
	coords := G
	if spec.Total {
		if spec.Stat == GroupMean || spec.MaxGroups != 1 {
			return nil, ErrTotal
		}
		coords = G + 1
		if spec.Stat == GroupCount {
			p.CountL1, p.CountL2 = 2, sqrt2Up
		}
	}
	var sumL1, sumL2 float64
	if p.sumNoised {
		if err := checkBounds(spec.Lo, spec.Hi); err != nil {
			return nil, err
		}
		p.SumL1, p.SumL2 = GroupSumSensitivity(spec.Lo, spec.Hi, G, spec.MaxGroups, nb, spec.AddRemoveToo)
		p.Excess = SumExcess(max(math.Abs(spec.Lo), math.Abs(spec.Hi)))
		if spec.Total {
			// The total is one more computed sum, with its own rounding:
			// its excess is charged on top of the parts'.
			p.SumL1, p.SumL2 = GroupSumTotalSensitivity(spec.Lo, spec.Hi, nb)
			p.Excess *= 2
		}
		sumL1, sumL2 = up(p.SumL1+p.Excess), up(p.SumL2+p.Excess)
	}
	if spec.Stat != GroupMean {
		l1, l2 := p.CountL1, p.CountL2
		if p.sumNoised {
			l1, l2 = sumL1, sumL2
		}
		np, err := planNoise(l1, l2, eps, delta, coords, calibration(cal))
		if err != nil {
			return nil, err
		}
		if p.countNoised {
			p.count, p.CountScale = np, np.Scale
		} else {
			p.sum, p.SumScale = np, np.Scale
		}
		p.Gaussian, p.Rho, p.Event = np.Gaussian, np.Rho, np.Event
		return p, nil
	}
	// The mean: two releases, composed in zCDP (Gaussian, δ > 0) or
	// under pure ε (Laplace, δ = 0).
	if !(spec.CountShare > 0 && spec.CountShare < 1) {
		return nil, ErrShare
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, ErrEps
	}
	if !(delta >= 0 && delta < 1) {
		return nil, ErrDelta
	}
	if delta == 0 {
		// Pure ε: Laplace noise on both, CountShare of ε on the counts and
		// the rest on the sums (sequential composition), each share
		// lowered by MeanRoundDown so that they never add up to more than
		// the charged ε.
		p.CountEps = spec.CountShare * eps * MeanRoundDown
		p.SumEps = (1 - spec.CountShare) * eps * MeanRoundDown
		var err error
		if p.count, err = planNoise(p.CountL1, p.CountL2, p.CountEps, 0, G, CalibrateZCDP); err != nil {
			return nil, err
		}
		if p.sum, err = planNoise(sumL1, sumL2, p.SumEps, 0, G, CalibrateZCDP); err != nil {
			return nil, err
		}
		p.CountScale, p.SumScale = p.count.Scale, p.sum.Scale
		p.Event = accounting.Pure(eps)
		return p, nil
	}
	rho, ev, ok := GaussianTarget(eps, delta, calibration(cal))
	if !ok {
		return nil, ErrCalibrate
	}
	p.Gaussian, p.Rho = true, rho
	p.CountRho = spec.CountShare * rho * MeanRoundDown
	p.SumRho = (1 - spec.CountShare) * rho * MeanRoundDown
	var err error
	if p.CountScale, err = noise.GaussianScaleChecked(p.CountL2, 1/math.Sqrt(2*p.CountRho), G); err != nil {
		return nil, err
	}
	if p.SumScale, err = noise.GaussianScaleChecked(sumL2, 1/math.Sqrt(2*p.SumRho), G); err != nil {
		return nil, err
	}
	p.count = noisePlan{Gaussian: true, Rho: p.CountRho, Scale: p.CountScale}
	p.sum = noisePlan{Gaussian: true, Rho: p.SumRho, Scale: p.SumScale}
	p.Event = ev
	return p, nil
}

// Keys names the groups, in the order of the released values.
func (p *GroupPlan) Keys() []string { return p.groups().Keys() }

// Run releases one value per group, in the order of Keys: noisy counts
// rounded to integers (GroupCount, then their noisy total when the spec
// asks for it), noisy sums (GroupSum), or noisy sum /
// max(noisy count, 1) (GroupMean; not clamped to the bounds: the ratio of
// two noisy values can leave them, and is released as it is).
//
// src holds the grouping column (GroupCount) or the value column then the
// grouping column (GroupSum, GroupMean); without Groups it holds only the
// value column, or for GroupCount any one column. With users set each user
// contributes to the first MaxGroups distinct groups of their rows in row
// order, once per group, with the mean of their clamped values there. It
// fails only with the source's or ctx's error, or on more than MaxRows
// rows (which the data registry refuses).
func (p *GroupPlan) Run(ctx context.Context, src rows.Source, users bool, s *noise.Sampler) ([]float64, error) {
	counts, sums, err := p.Totals(ctx, src, users)
	if err != nil {
		return nil, err
	}
	return p.Release(counts, sums, s), nil
}

// Release noises the exact per-group totals that Totals returns (or that
// the data engine computed by the same rules: counts of units, sums of
// clamped values whose rounding Excess covers) and returns Run's values.
// It overwrites counts and sums.
func (p *GroupPlan) Release(counts, sums []float64, s *noise.Sampler) []float64 {
	if p.Total && p.Stat == GroupCount {
		t := 0.0
		for _, c := range counts {
			t += c // exact: integers below 2^53
		}
		counts = append(counts, t)
	}
	if p.countNoised {
		p.count.add(s, counts)
	}
	if p.sumNoised {
		p.sum.add(s, sums)
	}
	switch p.Stat {
	case GroupCount:
		for i, v := range counts {
			counts[i] = math.Round(v) + 0 // + 0 turns a −0 into 0
		}
		return counts
	case GroupSum:
		return sums
	}
	out := make([]float64, len(sums))
	for i := range out {
		out[i] = sums[i] / max(counts[i], 1)
	}
	return out
}

// Totals returns the exact per-group counts of units and sums of the
// clamped values (nil when the plan does not release them) that Run
// noises. Row-level sums are accumulated in rowpass's fixed pairwise order
// over the rows, one accumulator of a sum and a count per group, so each
// sum's rounding is bounded as SumExcess assumes; user-level sums in the
// same order over the (user, group) terms in the order of their first
// row. Memory: a chunk of rows; on user-level data one int32 per user and
// about 40 bytes per (user, group) term.
func (p *GroupPlan) Totals(ctx context.Context, src rows.Source, users bool) (counts, sums []float64, err error) {
	g := p.groups()
	G := g.Len()
	width := 1
	if p.sumNoised && p.Groups != nil {
		width = 2
	}
	if src.Dim() != width {
		return nil, nil, ErrGroupDim
	}
	group := func(row []float64) int {
		if p.Groups == nil {
			return 0
		}
		return g.Bin(row[len(row)-1])
	}
	if users {
		if p.Total && p.sumNoised {
			// The users' terms are summed per group only: a total of them
			// with a sum's rounding bound is not implemented.
			return nil, nil, ErrTotal
		}
		return p.userTotals(ctx, src, width, group)
	}
	if !p.sumNoised {
		c, err := Counts(ctx, src, false, g, 1)
		if err != nil {
			return nil, nil, err
		}
		counts = make([]float64, G)
		for i, v := range c {
			counts[i] = float64(v) // exact: at most 2^30
		}
		return counts, nil, nil
	}
	lo, hi := p.Lo, p.Hi
	// With Total, coordinate 2G sums every grouped row's clamped value in
	// the same pass and order as the groups' sums, so its rounding is a
	// sum's (SumExcess).
	width2 := 2 * G
	if p.Total {
		width2++
	}
	acc, err := rowpass.SumVecScan(ctx, rowpass.Limit(src), width2, rowpass.Options{}, false, false, func(dst []float64, b *rows.Batch) {
		for i := range b.N {
			row := b.Row(i, width)
			j := group(row)
			if j < 0 {
				continue
			}
			v := Clamp(row[0], lo, hi)
			dst[j] += v
			dst[G+j]++ // exact: integers below 2^53
			if width2 > 2*G {
				dst[2*G] += v
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	sums, counts = acc[:G:G], acc[G:2*G]
	if p.Total {
		sums = append(sums, acc[2*G])
	}
	if !p.countNoised {
		counts = nil
	}
	return counts, sums, nil
}

// groupTerm is one user's contribution to one group: the sum and number of
// the user's clamped values there.
type groupTerm struct {
	group  int32
	next   int32 // the user's next term, −1 at the last
	sum, n float64
}

// linearLookup is the largest MaxGroups whose terms are found by walking
// a user's list; above it a map indexes them.
const linearLookup = 8

// userTotals is Totals on user-level data: each user's first MaxGroups
// distinct groups in row order (rows counted in no group are skipped),
// one count per group, and the mean of the user's clamped values there,
// clamped again.
func (p *GroupPlan) userTotals(ctx context.Context, src rows.Source, width int, group func(row []float64) int) (counts, sums []float64, err error) {
	nu, err := unitsOf(src)
	if err != nil {
		return nil, nil, err
	}
	G, k := p.groups().Len(), p.MaxGroups
	head := make([]int32, nu) // the user's first term + 1; 0 for none
	taken := make([]int32, nu)
	var terms []groupTerm
	var index map[int64]int32
	if k > linearLookup {
		index = map[int64]int32{}
	}
	lo, hi := p.Lo, p.Hi
	n := 0
	err = rows.ForEach(ctx, src, 4096, false, true, func(b *rows.Batch) error {
		if n += b.N; n > MaxRows {
			return ErrTooManyRows
		}
		for i := range b.N {
			u := b.Unit[i]
			if u < 0 || int(u) >= nu {
				continue
			}
			row := b.Row(i, width)
			j := group(row)
			if j < 0 {
				continue
			}
			t := int32(-1)
			if index != nil {
				if x, ok := index[int64(u)<<32|int64(j)]; ok {
					t = x
				}
			} else {
				for x := head[u] - 1; x >= 0; x = terms[x].next {
					if terms[x].group == int32(j) {
						t = x
						break
					}
				}
			}
			if t < 0 {
				if int(taken[u]) >= k {
					continue // the user has their groups: a public rule
				}
				t = int32(len(terms))
				terms = append(terms, groupTerm{group: int32(j), next: head[u] - 1})
				head[u] = t + 1
				taken[u]++
				if index != nil {
					index[int64(u)<<32|int64(j)] = t
				}
			}
			if p.sumNoised {
				terms[t].sum += Clamp(row[0], lo, hi)
			}
			terms[t].n++
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	counts = make([]float64, G)
	for _, t := range terms {
		counts[t.group]++
	}
	if p.sumNoised {
		sums = rowpass.SumVec(len(terms), G, rowpass.Options{}, func(dst []float64, a, b int) {
			for _, t := range terms[a:b] {
				dst[t.group] += Clamp(t.sum/t.n, lo, hi)
			}
		})
	}
	if !p.countNoised {
		counts = nil
	}
	return counts, sums, nil
}
