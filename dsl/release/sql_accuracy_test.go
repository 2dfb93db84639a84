package release

// The accuracy table of private_sql (issue 27, long tier): on a fixed
// data set, runs releases of COUNT, SUM, AVG, VARIANCE and a grouped AVG
// through the release planner (sqlReleases, runSQL) with seeded noise on
// the exact aggregates the engine would return (stubSQL, as the audits),
// and sets each RMSE against the exact clamped value beside the
// closed-form RMSE of the peers' mechanism at the same ε:
//
//	COUNT     a Laplace count, scale 1/ε
//	SUM       a Laplace sum, sensitivity max(|lo|, |hi|)
//	AVG       Google's BoundedMean: Laplace on the count and on the sum
//	          re-centred on the midpoint (sensitivity (hi − lo)/2), each
//	          at ε/2; RMSE to first order in the noise
//	VARIANCE  Google's BoundedVariance split: the count, the centred sum
//	          and the centred sum of squares, each at ε/3; first order
//	QUANTILE  Google's BoundedQuantiles (a tree of height 4 and branching
//	          16 of Laplace counts, ℓ1 = 4 per row), which has no closed
//	          form: quantileTreeRMSE simulates it with the same ε
//
// Run it with
//
//	go test -tags duckdb_arrow -run TestSQLAccuracyTable -v ./dsl/release
//
// The table it logs is the one in docs/sql.md ("Accuracy and speed").

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/privnotes/privnotes/dsl/sqlplan"
	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// accuracyRuns is the number of releases per row of the table. The RMSE
// of Laplace noise estimated from R draws has a relative standard error
// of about √5/(2√R) (Laplace's fourth moment is 24b⁴): 2.5 % at R = 2000.
const accuracyRuns = 2000

// accuracyTolerance is how far private_sql's estimated RMSE may exceed the
// peer's closed form: four standard errors of the estimate (10 %). The
// planner's own departures from the peer are far smaller: it rounds each
// share of ε down by 2⁻⁴⁸ and adds the sums' rounding excess (2⁻⁴⁰ of the
// bound or less) to their sensitivities.
const accuracyTolerance = 1.10

// accuracyData is the fixed data set: n rows in groups a, b, c (half, a
// third, a sixth), values skewed towards lo and 8 % of them above hi, so
// that clamping and an off-centre mean both matter.
func accuracyData(n int, hi float64) []auditRow {
	r := rand.New(rand.NewPCG(27, 2026))
	rows := make([]auditRow, n)
	for i := range rows {
		k := "a"
		switch {
		case i%6 == 3 || i%6 == 4:
			k = "b"
		case i%6 == 5:
			k = "c"
		}
		u := r.Float64()
		rows[i] = auditRow{k, math.Round(1.2*hi*u*u*100) / 100}
	}
	return rows
}

// clampedMoments are n, the mean and the population variance of the rows'
// values clamped to [lo, hi], and the centred moments the peers' closed
// forms take: μc = mean − m and q = mean of (c − m)², m the midpoint.
func clampedMoments(rows []auditRow, lo, hi float64) (n, mean, variance, mc, q float64) {
	m := (lo + hi) / 2
	var s, s2 float64
	for _, r := range rows {
		c := min(max(r.v, lo), hi) - m
		s += c
		s2 += c * c
	}
	n = float64(len(rows))
	mc, q = s/n, s2/n
	return n, m + mc, q - mc*mc, mc, q
}

// Peers' closed-form RMSEs at ε (Laplace of scale b has variance 2b²).
func peerCountRMSE(eps float64) float64 { return math.Sqrt2 / eps }

func peerSumRMSE(eps, lo, hi float64) float64 {
	return math.Sqrt2 * max(math.Abs(lo), math.Abs(hi)) / eps
}

// peerMeanRMSE is BoundedMean's: mean = m + S/N with S the centred sum;
// to first order its error is (dS − μc·dN)/n, with dN of scale 2/ε and dS
// of scale (hi − lo)/ε.
func peerMeanRMSE(eps, lo, hi, n, mc float64) float64 {
	bN, bS := 2/eps, (hi-lo)/eps
	return math.Sqrt(2*bS*bS+mc*mc*2*bN*bN) / n
}

// peerVarianceRMSE is BoundedVariance's split: var = Q/N − (S/N)²; to
// first order its error is (dQ − 2μc·dS + (2μc² − q)·dN)/n, each noise at
// ε/3 with sensitivities 1, (hi − lo)/2 and ((hi − lo)/2)².
func peerVarianceRMSE(eps, lo, hi, n, mc, q float64) float64 {
	w := (hi - lo) / 2
	bN, bS, bQ := 3/eps, 3*w/eps, 3*w*w/eps
	cN := 2*mc*mc - q
	return math.Sqrt(2*bQ*bQ+4*mc*mc*2*bS*bS+cN*cN*2*bN*bN) / n
}

// sqlRMSE runs runs releases of sp on rows with seeded noise and returns
// per group key the RMSE of the released value against want[key].
func sqlRMSE(t *testing.T, sp *sqlplan.Plan, groups int, rows []auditRow, eps float64, want map[string]float64, runs int) map[string]float64 {
	t.Helper()
	rels, err := sqlReleases(sp, groups, accounting.AddRemove, []float64{1}, eps, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	cols, kinds := sqlOutputs(sp)
	sq := map[string]float64{}
	for run := range runs {
		v, err := runSQL(context.Background(), &Data{SQL: stubSQL{sp, rows}}, sp, rels, cols, kinds, groups, noise.NewSeeded(uint64(1000+run)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range v.(*Table).Rows {
			k := ""
			if len(r) > 1 {
				k = r[0].(string)
			}
			w, ok := want[k]
			if !ok {
				t.Fatalf("released group %q has no exact value", k)
			}
			d := r[len(r)-1].(float64) - w
			sq[k] += d * d
		}
	}
	out := map[string]float64{}
	for k, s := range sq {
		out[k] = math.Sqrt(s / float64(runs))
	}
	if len(out) != len(want) {
		t.Fatalf("released groups %v, want %v", out, want)
	}
	return out
}

func TestSQLAccuracyTable(t *testing.T) {
	testtier.Long(t)
	const (
		n       = 1200
		eps     = 1.0
		lo, hi  = 0.0, 10.0
		peerTol = accuracyTolerance
	)
	rows := accuracyData(n, hi)
	cn, mean, variance, mc, q := clampedMoments(rows, lo, hi)
	var sum float64
	for _, r := range rows {
		sum += min(max(r.v, lo), hi)
	}
	type line struct {
		stat, group   string
		exact         float64
		got, peer     float64
		assert        bool
		peerMechanism string
	}
	var table []line
	one := func(kind sqlplan.AggKind, exact float64) float64 {
		return sqlRMSE(t, auditPlan(kind, lo, hi, nil), 1, rows, eps, map[string]float64{"": exact}, accuracyRuns)[""]
	}
	table = append(table,
		line{"COUNT", "", cn, one(sqlplan.Count, cn), peerCountRMSE(eps), true, "Laplace count"},
		line{"SUM", "", sum, one(sqlplan.Sum, sum), peerSumRMSE(eps, lo, hi), true, "Laplace sum, Δ = max(|lo|, |hi|)"},
		line{"AVG", "", mean, one(sqlplan.Avg, mean), peerMeanRMSE(eps, lo, hi, cn, mc), true, "BoundedMean (ε/2 + ε/2)"},
		line{"VARIANCE", "", variance, one(sqlplan.Variance, variance), peerVarianceRMSE(eps, lo, hi, cn, mc, q), false, "BoundedVariance split (3 × ε/3)"},
	)
	// The median: private_sql's exponential mechanism against the
	// quantile tree, both at ε; the exact value is the clamped data's
	// median (mean of the two middle values).
	clamped := make([]float64, len(rows))
	for i, r := range rows {
		clamped[i] = min(max(r.v, lo), hi)
	}
	slices.Sort(clamped)
	median := (clamped[n/2-1] + clamped[n/2]) / 2
	// The simulated peer must be right before it is compared with: with
	// no noise to speak of it lands in the median's leaf (values are
	// multiples of 0.01, leaves 10/65536 wide).
	if e := quantileTreeRMSE(clamped, 0.5, lo, hi, 1e12, median, 10); !(e <= 0.01) {
		t.Fatalf("the simulated quantile tree without noise is %v from the median %v", e, median)
	}
	table = append(table, line{"MEDIAN", "", median, one(sqlplan.Quantile, median),
		quantileTreeRMSE(clamped, 0.5, lo, hi, eps, median, accuracyRuns), true, "BoundedQuantiles tree (simulated)"})
	// The grouped AVG: each row is in one group, so every group's count
	// and sum get the whole ε/2 each, as a per-group BoundedMean would.
	keys := []string{"a", "b", "c"}
	byKey := map[string][]auditRow{}
	want := map[string]float64{}
	for _, r := range rows {
		byKey[r.key] = append(byKey[r.key], r)
	}
	for _, k := range keys {
		_, want[k], _, _, _ = clampedMoments(byKey[k], lo, hi)
	}
	got := sqlRMSE(t, auditPlan(sqlplan.Avg, lo, hi, keys), len(keys), rows, eps, want, accuracyRuns)
	for _, k := range keys {
		gn, _, _, gmc, _ := clampedMoments(byKey[k], lo, hi)
		table = append(table, line{"AVG GROUP BY g", fmt.Sprintf("%s (n=%d)", k, len(byKey[k])), want[k], got[k],
			peerMeanRMSE(eps, lo, hi, gn, gmc), true, "BoundedMean per group"})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "n=%d, x clamped to [%g, %g], ε=%g (δ=0), %d releases each\n", n, lo, hi, eps, accuracyRuns)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| statistic\t| group\t| exact\t| private_sql RMSE\t| peer RMSE\t| ratio\t| peer mechanism\t|")
	for _, l := range table {
		fmt.Fprintf(tw, "| %s\t| %s\t| %.4g\t| %.4g\t| %.4g\t| %.3f\t| %s\t|\n", l.stat, l.group, l.exact, l.got, l.peer, l.got/l.peer, l.peerMechanism)
	}
	tw.Flush()
	t.Log("\n" + b.String())

	for _, l := range table {
		if !(l.got > 0) || !(l.peer > 0) {
			t.Errorf("%s %s: RMSE %v, peer %v: both must be positive", l.stat, l.group, l.got, l.peer)
			continue
		}
		// Counts, sums and means use the peer's own mechanism (the mean
		// re-centred on the midpoint), so private_sql must not be worse.
		if l.assert && l.got > peerTol*l.peer {
			t.Errorf("%s %s: private_sql RMSE %.4g exceeds %.2f × the peer's %.4g", l.stat, l.group, l.got, peerTol, l.peer)
		}
	}
}

// quantileTreeRMSE simulates the quantile tree of Google's BoundedQuantiles
// with its default shape (height 4, branching 16: 65 536 leaves over
// [lo, hi]) on the sorted clamped values: every node's count gets Laplace
// noise of scale height/ε (a row is counted in one node per level), a
// negative noisy count counts as 0, and the search walks down from the
// root into the child where the running noisy count passes q of its
// parent's total, interpolating linearly inside the last leaf. It returns
// the RMSE of runs such releases against want. It is the peer's mechanism
// as documented, written here from that description, for the accuracy
// table only.
func quantileTreeRMSE(sorted []float64, q, lo, hi, eps, want float64, runs int) float64 {
	const height, branch = 4, 16
	leaves := 1
	for range height {
		leaves *= branch
	}
	leafOf := func(v float64) int {
		return min(int((v-lo)/(hi-lo)*float64(leaves)), leaves-1)
	}
	// count[l] is the number of values in leaves [0, l): a node's count
	// is a difference of two entries.
	count := make([]int, leaves+1)
	for _, v := range sorted {
		count[leafOf(v)+1]++
	}
	for l := 1; l <= leaves; l++ {
		count[l] += count[l-1]
	}
	r := rand.New(rand.NewPCG(28, 2026))
	laplace := func(b float64) float64 {
		u := r.Float64() - 0.5
		return -b * math.Copysign(math.Log(1-2*math.Abs(u)), u)
	}
	scale := float64(height) / eps
	var sq float64
	for range runs {
		first, width := 0, leaves // the current node's leaves
		rank := q                 // the quantile within the current node
		for range height {
			width /= branch
			noisy := make([]float64, branch)
			total := 0.0
			for c := range branch {
				a := first + c*width
				noisy[c] = max(float64(count[a+width]-count[a])+laplace(scale), 0)
				total += noisy[c]
			}
			target, c := rank*total, 0
			for ; c < branch-1 && target > noisy[c]; c++ {
				target -= noisy[c]
			}
			rank = 0.5
			if noisy[c] > 0 {
				rank = min(target/noisy[c], 1)
			}
			first += c * width
		}
		v := lo + (float64(first)+rank)*(hi-lo)/float64(leaves)
		sq += (v - want) * (v - want)
	}
	return math.Sqrt(sq / float64(runs))
}
