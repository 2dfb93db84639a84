package notebooks_test

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// referencePCA checks a private component a notebook printed (the text of
// a PCAResult: one "column  loading..." line per column) against the exact,
// non-private component of the same data, which only the test — standing
// in for the data owner — may compute. Rows are clipped to Clip as the
// mechanisms clip them.
type referencePCA struct {
	CSV       string  `json:"csv"`       // relative to notebooks/, with a header line
	Clip      float64 `json:"clip"`      // the registered clip norm
	Component int     `json:"component"` // 1-based
	MaxSin2   float64 `json:"max_sin2"`  // documented bound on sin² of the angle
	// Center: the component of private_pca(center=true), whose estimand
	// is the rows clipped, centred on the mean of the clipped rows and
	// clipped again.
	Center bool `json:"center"`
}

func (r *referencePCA) apply(text string) error {
	names, rows, err := readCSV(r.CSV)
	if err != nil {
		return err
	}
	if r.Center {
		rows = centredRows(rows, r.Clip)
	}
	want, err := exactComponent(rows, len(names), r.Clip, r.Component)
	if err != nil {
		return err
	}
	got, err := printedComponent(text, names, r.Component)
	if err != nil {
		return err
	}
	dot, norm := 0.0, 0.0
	for i := range got {
		dot += got[i] * want[i]
		norm += got[i] * got[i]
	}
	sin2 := 1 - dot*dot/norm
	if !(sin2 <= r.MaxSin2) {
		return fmt.Errorf("private component %d is at sin² = %.4f from the exact one; documented bound %v", r.Component, sin2, r.MaxSin2)
	}
	return nil
}

func readCSV(path string) ([]string, [][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(bufio.NewReader(f)).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(recs) < 2 {
		return nil, nil, fmt.Errorf("%s: no rows", path)
	}
	rows := make([][]float64, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		row := make([]float64, len(rec))
		for j, s := range rec {
			if row[j], err = strconv.ParseFloat(s, 64); err != nil {
				return nil, nil, fmt.Errorf("%s line %d: %v", path, i+2, err)
			}
		}
		rows = append(rows, row)
	}
	return recs[0], rows, nil
}

// centredRows returns the rows minus the exact mean of the rows clipped
// to norm clip: the rows a centred private_pca clips again (the private
// mean is an estimate of this one).
func centredRows(rows [][]float64, clip float64) [][]float64 {
	if len(rows) == 0 {
		return nil
	}
	mu := make([]float64, len(rows[0]))
	for _, a := range rows {
		norm := 0.0
		for _, v := range a {
			norm += v * v
		}
		s := math.Min(1, clip/math.Sqrt(norm))
		for j, v := range a {
			mu[j] += s * v / float64(len(rows))
		}
	}
	out := make([][]float64, len(rows))
	for i, a := range rows {
		out[i] = make([]float64, len(a))
		for j, v := range a {
			out[i][j] = v - mu[j]
		}
	}
	return out
}

// exactComponent is the j-th eigenvector of Σ aaᵀ over the rows clipped to
// norm clip (the estimand of private_pca).
func exactComponent(rows [][]float64, d int, clip float64, j int) ([]float64, error) {
	c := mat.NewSymDense(d, nil)
	for _, a := range rows {
		norm := 0.0
		for _, v := range a {
			norm += v * v
		}
		s := math.Min(1, clip/math.Sqrt(norm))
		v := mat.NewVecDense(d, append([]float64(nil), a...))
		v.ScaleVec(s, v)
		c.SymRankOne(c, 1, v)
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		return nil, fmt.Errorf("eigendecomposition failed")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	// Eigenvalues ascend: the j-th largest is column d−j.
	return mat.Col(nil, d-j, &vecs), nil
}

// printedComponent reads column j of the loadings a PCAResult printed,
// ordered as names.
func printedComponent(text string, names []string, j int) ([]float64, error) {
	loading := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 1+j {
			continue
		}
		v, err := strconv.ParseFloat(f[j], 64)
		if err != nil {
			continue
		}
		loading[f[0]] = v
	}
	out := make([]float64, len(names))
	for i, n := range names {
		v, ok := loading[n]
		if !ok {
			return nil, fmt.Errorf("the output has no loading for column %s", n)
		}
		out[i] = v
	}
	return out, nil
}

// TestReferencePCA checks the checker: the exact component passes, and a
// component orthogonal-ish to it fails.
func TestReferencePCA(t *testing.T) {
	r := &referencePCA{CSV: "data/breast_cancer_scaled.csv", Clip: 2.5, Component: 1, MaxSin2: 0.1}
	names, rows, err := readCSV(r.CSV)
	if err != nil {
		t.Fatal(err)
	}
	u, err := exactComponent(rows, len(names), r.Clip, 1)
	if err != nil {
		t.Fatal(err)
	}
	render := func(v []float64) string {
		var b strings.Builder
		b.WriteString("PCAResult(pca/gauss): 1 component(s) over 30 columns\n")
		for i, n := range names {
			fmt.Fprintf(&b, "  %-12s % .4f\n", n, v[i])
		}
		return b.String()
	}
	if err := r.apply(render(u)); err != nil {
		t.Errorf("the exact component fails its own check: %v", err)
	}
	bad := make([]float64, len(u))
	bad[0], bad[1] = u[1], -u[0] // orthogonal to u in the first two coordinates only
	if err := r.apply(render(bad)); err == nil {
		t.Errorf("a component far from the exact one passed")
	}
	if err := r.apply("no loadings here"); err == nil {
		t.Errorf("an output without loadings passed")
	}
	// The centred reference is another component: the uncentred one fails
	// the centred check, the centred one passes it.
	c := &referencePCA{CSV: r.CSV, Clip: 1, Center: true, Component: 1, MaxSin2: 0.05}
	uc, err := exactComponent(centredRows(rows, 1), len(names), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.apply(render(uc)); err != nil {
		t.Errorf("the exact centred component fails its own check: %v", err)
	}
	if err := c.apply(render(u)); err == nil {
		t.Errorf("the uncentred component passed the centred check")
	}
}
