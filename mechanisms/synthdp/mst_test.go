package synthdp

import (
	"context"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

func cats(r, k int) []Column {
	cols := make([]Column, r)
	for i := range cols {
		cols[i] = Column{Categories: k}
	}
	return cols
}

// planted returns n rows of r categorical columns of k categories: column
// 0 uniform, column j a copy of column (j−1)/2's value with probability
// 0.7 (else uniform), so that the true pairwise structure is a tree.
func planted(s *noise.Sampler, n, r, k int) *mat.Dense {
	x := mat.NewDense(n, r, nil)
	for i := range n {
		x.Set(i, 0, float64(int(s.Uniform()*float64(k))))
		for j := 1; j < r; j++ {
			v := float64(int(s.Uniform() * float64(k)))
			if s.Uniform() < 0.7 {
				v = x.At(i, (j-1)/2)
			}
			x.Set(i, j, v)
		}
	}
	return x
}

func TestPlanSensitivitiesAndShares(t *testing.T) {
	for _, tc := range []struct {
		nb       accounting.Neighbour
		r        int
		one, two float64
		sens     int64
	}{
		{accounting.AddRemove, 2, math.Sqrt(2), 1, 1},
		{accounting.AddRemove, 8, math.Sqrt(8), math.Sqrt(7), 1},
		{accounting.ReplaceOne, 8, 4, math.Sqrt(14), 2},
		{accounting.ReplaceOne, 3, math.Sqrt(6), 2, 2},
	} {
		for _, gdp := range []bool{false, true} {
			p, err := NewPlan(cats(tc.r, 3), 1, 1e-6, tc.nb, gdp)
			if err != nil {
				t.Fatal(err)
			}
			near := func(got, want float64) bool { return got >= want && got <= want*(1+1e-12) }
			if !near(p.One.Sens, tc.one) || !near(p.Two.Sens, tc.two) || p.SelectSens != tc.sens {
				t.Errorf("%v r=%d: sensitivities %v %v %d, want %v %v %d", tc.nb, tc.r, p.One.Sens, p.Two.Sens, p.SelectSens, tc.one, tc.two, tc.sens)
			}
			if p.One.Rho != p.Rho/3 || p.Two.Rho != p.Rho/3 {
				t.Errorf("%v r=%d: shares %v %v of %v", tc.nb, tc.r, p.One.Rho, p.Two.Rho, p.Rho)
			}
			// The r−1 selections spend the last third, and no more.
			var sel float64
			if gdp {
				mu := accounting.PureToMu(p.SelectEps)
				sel = float64(tc.r-1) * mu * mu / 2
			} else {
				sel = float64(tc.r-1) * p.SelectEps * p.SelectEps / 8
			}
			if sel > p.Rho/3 || sel < p.Rho/3*(1-1e-9) {
				t.Errorf("%v r=%d gdp=%v: selection spends %v, want %v", tc.nb, tc.r, gdp, sel, p.Rho/3)
			}
			if z := p.One.Sens / math.Sqrt(2*p.One.Rho); p.One.Sigma < z || p.One.Sigma > z*1.01 {
				t.Errorf("one-way sigma %v, want about %v", p.One.Sigma, z)
			}
			if z := p.Two.Sens / math.Sqrt(2*p.Two.Rho); p.Two.Sigma < z || p.Two.Sigma > z*1.01 {
				t.Errorf("two-way sigma %v, want about %v", p.Two.Sigma, z)
			}
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cols  []Column
		eps   float64
		delta float64
		want  error
	}{
		{"one column", cats(1, 3), 1, 1e-6, ErrColumns},
		{"too many columns", cats(65, 2), 1, 1e-6, ErrColumns},
		{"no bins", []Column{{Categories: 2}, {Lo: 0, Hi: 1}}, 1, 1e-6, ErrColumn},
		{"bad bounds", []Column{{Categories: 2}, {Lo: 1, Hi: 1, Bins: 3}}, 1, 1e-6, ErrColumn},
		{"infinite bounds", []Column{{Categories: 2}, {Lo: 0, Hi: math.Inf(1), Bins: 3}}, 1, 1e-6, ErrColumn},
		{"too many cells", cats(3, 2000), 1, 1e-6, ErrCells},
		{"delta 0", cats(2, 3), 1, 0, ErrDelta},
		{"eps 0", cats(2, 3), 0, 1e-6, ErrEps},
		{"eps inf", cats(2, 3), math.Inf(1), 1e-6, ErrEps},
	} {
		if _, err := NewPlan(tc.cols, tc.eps, tc.delta, accounting.AddRemove, false); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCell(t *testing.T) {
	c := Column{Categories: 3}
	n := Column{Lo: -1, Hi: 1, Bins: 4}
	for _, tc := range []struct {
		col  Column
		v    float64
		want int
	}{
		{c, 0, 0}, {c, 2, 2}, {c, 3, 3}, {c, -1, 3}, {c, 1.5, 3}, {c, math.NaN(), 3},
		{n, -1, 0}, {n, -5, 0}, {n, -0.4, 1}, {n, 0, 2}, {n, 0.99, 3}, {n, 1, 3}, {n, 7, 3}, {n, math.NaN(), 2},
	} {
		if got := tc.col.Cell(tc.v); got != tc.want {
			t.Errorf("%+v.Cell(%v) = %d, want %d", tc.col, tc.v, got, tc.want)
		}
	}
	if got := n.Midpoint(1); got != -0.25 {
		t.Errorf("Midpoint(1) = %v, want -0.25", got)
	}
}

// The marginals' ℓ2 sensitivities hold on worst-case neighbours: a row
// added, and a row replaced by one that differs in every column.
func TestCountSensitivity(t *testing.T) {
	s := noise.NewSeeded(1)
	const r, k = 5, 3
	x := planted(s, 200, r, k)
	for _, nb := range []accounting.Neighbour{accounting.AddRemove, accounting.ReplaceOne} {
		p, err := NewPlan(cats(r, k), 1, 1e-6, nb, false)
		if err != nil {
			t.Fatal(err)
		}
		y := mat.DenseCopyOf(x)
		if nb == accounting.AddRemove {
			y = mat.NewDense(201, r, nil)
			y.Slice(0, 200, 0, r).(*mat.Dense).Copy(x)
		} else {
			for j := range r {
				y.Set(0, j, float64((int(x.At(0, j))+1)%k))
			}
		}
		a, err := p.count(context.Background(), rows.FromDense(x))
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.count(context.Background(), rows.FromDense(y))
		if err != nil {
			t.Fatal(err)
		}
		var one, two float64
		for i := range r {
			for c := range a.one[i] {
				d := float64(a.one[i][c] - b.one[i][c])
				one += d * d
			}
		}
		// every set of r−1 pairs: the worst is any, each pair moves alike
		for i := range r - 1 {
			for c := range a.pair[i][0] {
				d := float64(a.pair[i][0][c] - b.pair[i][0][c])
				two += d * d
			}
		}
		if math.Sqrt(one) != p.One.Sens && math.Abs(math.Sqrt(one)-p.One.Sens) > 1e-12 {
			t.Errorf("%v: one-way change %v, sensitivity %v (tight)", nb, math.Sqrt(one), p.One.Sens)
		}
		if math.Abs(math.Sqrt(two)-p.Two.Sens) > 1e-12 {
			t.Errorf("%v: two-way change %v, sensitivity %v (tight)", nb, math.Sqrt(two), p.Two.Sens)
		}
	}
}

// A pair's loss moves by at most 1 on neighbours, for the plan's divisor;
// under replace-one, the add-remove divisor would let it move by 2.
func TestPairLossSensitivity(t *testing.T) {
	s := noise.NewSeeded(2)
	const ka, kb = 3, 4
	worst := map[int64]int64{}
	for trial := range 2000 {
		m := make([]int64, ka*kb)
		var n int64
		for c := range m {
			m[c] = int64(s.Uniform() * 30)
			n += m[c]
		}
		pa, pb := normalised([]float64{1, 2, 3}), normalised([]float64{4, 1, 1, 2})
		nHat := n + int64(s.Uniform()*20) - 10
		nHat = max(nHat, 1)
		for _, sens := range []int64{1, 2} {
			l0, bound := pairLoss(m, pa, pb, nHat, n, sens)
			if l0 < 0 || l0 > bound {
				t.Fatalf("loss %d outside [0, %d]", l0, bound)
			}
			add := append([]int64(nil), m...)
			c := trial % (ka * kb)
			add[c]++
			l1, _ := pairLoss(add, pa, pb, nHat, n+1, sens)
			worst[sens] = max(worst[sens], abs(l1-l0))
			if sens == 1 && abs(l1-l0) > 1 {
				t.Fatalf("add-remove: loss moved %d → %d", l0, l1)
			}
			if m[(c+5)%(ka*kb)] > 0 {
				rep := append([]int64(nil), add...)
				rep[(c+5)%(ka*kb)]--
				l2, _ := pairLoss(rep, pa, pb, nHat, n, sens)
				worst[sens+10] = max(worst[sens+10], abs(l2-l0))
				if sens == 2 && abs(l2-l0) > 1 {
					t.Fatalf("replace-one: loss moved %d → %d", l0, l2)
				}
			}
		}
	}
	if worst[11] < 2 {
		t.Errorf("replace-one with divisor 1 moved the loss by at most %d: the test cannot tell the divisors apart", worst[11])
	}
}

func abs(x int64) int64 { return max(x, -x) }

// Fit's marginals agree: each edge's joint has its columns' marginals as
// margins, and every conditional row is a distribution.
func TestFitConsistent(t *testing.T) {
	s := noise.NewSeeded(3)
	cols := []Column{{Categories: 2}, {Lo: 0, Hi: 1, Bins: 4}, {Categories: 4}, {Lo: -3, Hi: 3, Bins: 2}}
	p, err := NewPlan(cols, 0.5, 1e-6, accounting.AddRemove, false)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(300, 4, nil)
	for i := range 300 {
		x.Set(i, 0, float64(i%2))
		x.Set(i, 1, s.Uniform())
		x.Set(i, 2, float64(i%5))
		x.Set(i, 3, s.StdNormal())
	}
	c, err := p.count(context.Background(), rows.FromDense(x))
	if err != nil {
		t.Fatal(err)
	}
	m := p.measure(c, s)
	if len(m.Edges) != 3 {
		t.Fatalf("%d edges, want 3", len(m.Edges))
	}
	md := p.Fit(m)
	if md.Parent[0] != -1 {
		t.Errorf("root's parent %d", md.Parent[0])
	}
	// The marginal of every column implied by the tree, from the root down.
	marg := make([][]float64, 4)
	for _, j := range md.order() {
		k := md.Sizes[j]
		if md.Parent[j] < 0 {
			marg[j] = md.Tables[j]
			continue
		}
		pm := marg[md.Parent[j]]
		marg[j] = make([]float64, k)
		for a, pa := range pm {
			row := md.Tables[j][a*k : (a+1)*k]
			sum := 0.0
			for b, v := range row {
				if v < 0 {
					t.Fatalf("negative probability %v", v)
				}
				marg[j][b] += pa * v
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("column %d: conditional row %d sums to %v", j, a, sum)
			}
		}
	}
	// With consistent edges, the marginals implied through the tree are
	// the nodes' own (which Fit normalised).
	for j := range 4 {
		sum := 0.0
		for _, v := range marg[j] {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("column %d: marginal sums to %v", j, sum)
		}
	}
	for e, edge := range m.Edges {
		j := fitEdge(m.Two[e], marg[edge.A], marg[edge.B])
		ra := margin(j, md.Sizes[edge.A], md.Sizes[edge.B], true)
		rb := margin(j, md.Sizes[edge.A], md.Sizes[edge.B], false)
		for a := range ra {
			if math.Abs(ra[a]-marg[edge.A][a]) > 1e-6 {
				t.Errorf("edge %v: row margin %v, node %v", edge, ra, marg[edge.A])
				break
			}
		}
		for b := range rb {
			if math.Abs(rb[b]-marg[edge.B][b]) > 1e-6 {
				t.Errorf("edge %v: column margin %v, node %v", edge, rb, marg[edge.B])
				break
			}
		}
	}
}

// Sample draws from the model: the root's marginal and the conditionals.
func TestSample(t *testing.T) {
	md := &Model{Sizes: []int{2, 3}, Parent: []int{-1, 0}, Tables: [][]float64{{0.25, 0.75}, {1, 0, 0, 0, 0.5, 0.5}}}
	const n = 40000
	got := map[[2]int]int{}
	for _, row := range md.Sample(n, 7) {
		got[[2]int{row[0], row[1]}]++
	}
	want := map[[2]int]float64{{0, 0}: 0.25, {1, 1}: 0.375, {1, 2}: 0.375}
	for k, c := range got {
		if want[k] == 0 {
			t.Errorf("cell %v drawn %d times, probability 0", k, c)
		}
	}
	for k, p := range want {
		if f := float64(got[k]) / n; math.Abs(f-p) > 0.01 {
			t.Errorf("cell %v: frequency %v, want %v", k, f, p)
		}
	}
	a, b := md.Sample(10, 1), md.Sample(10, 1)
	for i := range a {
		if a[i][0] != b[i][0] || a[i][1] != b[i][1] {
			t.Fatal("the same seed gave different rows")
		}
	}
}

// tv2 is the average total-variation distance between the two-way
// marginals of all pairs of columns of two tables of cells.
func tv2(a, b [][]int, sizes []int) float64 {
	r := len(sizes)
	total, pairs := 0.0, 0
	for i := range r {
		for j := i + 1; j < r; j++ {
			fa := make([]float64, sizes[i]*sizes[j])
			fb := make([]float64, sizes[i]*sizes[j])
			for _, row := range a {
				fa[row[i]*sizes[j]+row[j]] += 1 / float64(len(a))
			}
			for _, row := range b {
				fb[row[i]*sizes[j]+row[j]] += 1 / float64(len(b))
			}
			d := 0.0
			for c := range fa {
				d += math.Abs(fa[c] - fb[c])
			}
			total += d / 2
			pairs++
		}
	}
	return total / float64(pairs)
}

// The accuracy target: 8 categorical columns with planted
// pairwise dependence, ε = 1, δ = 1e-6, n = 1e5 (2e4 under -short): the
// average TV distance of all 2-way marginals of 1e5 synthetic rows to the
// true ones is at most 0.05.
func TestAccuracyPlantedTree(t *testing.T) {
	n := 20000
	if !testing.Short() {
		testtier.Long(t)
		n = 100000
	}
	const r, k = 8, 4
	s := noise.NewSeeded(11)
	x := planted(s, n, r, k)
	cols := cats(r, k)
	p, err := NewPlan(cols, 1, 1e-6, accounting.AddRemove, false)
	if err != nil {
		t.Fatal(err)
	}
	md, m, err := p.Run(context.Background(), rows.FromDense(x), s)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([][]int, n)
	for i := range truth {
		truth[i] = make([]int, r)
		for j := range r {
			truth[i][j] = cols[j].Cell(x.At(i, j))
		}
	}
	sizes := md.Sizes
	syn := md.Sample(100000, 1)
	d := tv2(truth, syn, sizes)
	// Independent columns with the true marginals, for scale.
	ind := &Model{Sizes: sizes, Parent: make([]int, r), Tables: make([][]float64, r)}
	for j := range r {
		ind.Parent[j] = -1
		ind.Tables[j] = normalised(m.One[j])
	}
	di := tv2(truth, ind.Sample(100000, 1), sizes)
	t.Logf("n=%d: average 2-way TV %.4f (independent model %.4f); edges %v", n, d, di, m.Edges)
	if d > 0.05 {
		t.Errorf("average 2-way TV %.4f > 0.05", d)
	}
	if !(d < di/2) {
		t.Errorf("the tree (%.4f) is not much better than independence (%.4f)", d, di)
	}
}
