package synthdp

import (
	"context"
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// fairColumns bin Fair's affairs survey (statsmodels' datasets/fair/fair.csv,
// 6366 rows, every column numeric) over public bounds chosen from its
// documentation: the coded answers one bin each, affairs in [0, 10].
var fairColumns = []Column{
	{Lo: 0.5, Hi: 5.5, Bins: 5}, // rate_marriage 1..5
	{Lo: 15, Hi: 45, Bins: 6},   // age 17.5..42
	{Lo: 0, Hi: 24, Bins: 6},    // yrs_married 0.5..23
	{Lo: 0, Hi: 6, Bins: 6},     // children 0..5.5
	{Lo: 0.5, Hi: 4.5, Bins: 4}, // religious 1..4
	{Lo: 8, Hi: 20, Bins: 6},    // educ 9..20
	{Lo: 0.5, Hi: 6.5, Bins: 6}, // occupation 1..6
	{Lo: 0.5, Hi: 6.5, Bins: 6}, // occupation_husb 1..6
	{Lo: 0, Hi: 10, Bins: 5},    // affairs, clamped
}

// The real-table figure: MST on Fair's affairs at ε = 1,
// δ = 1e-6, five noise seeds, the average 2-way TV distance of 10⁵
// synthetic rows to the true table. The file comes from Debian's
// python3-statsmodels (`apt-get download python3-statsmodels`, then
// `dpkg-deb -x`); set PRIVNOTES_FAIR_CSV to its fair.csv, else the test
// is skipped. It reports the figure and checks only that the tree beats
// independent columns.
func TestFairAffairs(t *testing.T) {
	path := os.Getenv("PRIVNOTES_FAIR_CSV")
	if path == "" {
		t.Skip("set PRIVNOTES_FAIR_CSV to statsmodels' datasets/fair/fair.csv")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	recs = recs[1:]
	r := len(fairColumns)
	x := mat.NewDense(len(recs), r, nil)
	truth := make([][]int, len(recs))
	for i, rec := range recs {
		truth[i] = make([]int, r)
		for j := range r {
			v, err := strconv.ParseFloat(rec[j], 64)
			if err != nil {
				t.Fatal(err)
			}
			x.Set(i, j, v)
			truth[i][j] = fairColumns[j].Cell(v)
		}
	}
	p, err := NewPlan(fairColumns, 1, 1e-6, accounting.AddRemove, false)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		md, m, err := p.Run(context.Background(), rows.FromDense(x), noise.NewSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		d := tv2(truth, md.Sample(100000, seed), md.Sizes)
		ind := &Model{Sizes: md.Sizes, Parent: make([]int, r), Tables: make([][]float64, r)}
		for j := range r {
			ind.Parent[j], ind.Tables[j] = -1, normalised(m.One[j])
		}
		di := tv2(truth, ind.Sample(100000, seed), md.Sizes)
		t.Logf("seed %d: n=%d, average 2-way TV %.4f (independent columns %.4f); edges %v", seed, len(recs), d, di, m.Edges)
		if !(d < di) {
			t.Errorf("seed %d: the tree (%.4f) is not better than independence (%.4f)", seed, d, di)
		}
	}
}
