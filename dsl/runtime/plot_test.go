package runtime

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/vg"

	"github.com/privnotes/privnotes/dsl/release"
)

// Layout limits the figures keep, in pixels of the PNG (96 dpi).
const (
	frameClear = 4 // the outer frame is blank: nothing is cut at the image's edge
	titleClear = 8 // blank rows under the title: nothing runs into it
	edgeClear  = 2 // the most extreme bar or marker stays inside the axis' span
)

// pcaOf is a PCA result with one component of the given loadings and the
// given eigenvalue estimates.
func pcaOf(cols []string, load, values []float64) *PCAResult {
	return &PCAResult{Components: mat.NewDense(len(load), 1, load), Columns: cols, Method: "gauss", Values: values}
}

// names returns n column names: prefix1, prefix2, ...
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

func series(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// intervals is a synthetic release's intervals, as releases will carry
// them (none does yet): value i's is [lo[i], hi[i]], none when lo > hi.
type intervals struct{ lo, hi []float64 }

func (iv intervals) barInterval(i int) (float64, float64, bool) {
	return iv.lo[i], iv.hi[i], iv.lo[i] <= iv.hi[i]
}

// TestPlotLayout renders every plot function's PNG with short and long
// labels, one tall bar, negative values and many bars, and checks the
// margins on the decoded image: a blank outer frame (nothing cut at the
// edge), blank rows under the title (nothing runs into it), and the
// tallest and lowest bars or markers inside the value axis' span (not on
// its ends). Issue 29, item 11.
func TestPlotLayout(t *testing.T) {
	long := []string{"a rather long category name", "another long category name", "short", "the last long category name"}
	longCols := []string{"mean concave points", "worst fractal dimension", "x", "standard error of texture"}
	tall := []float64{3, 250, 7, 11}
	neg := []float64{40, -35, 12, -3}
	tests := []struct {
		name  string
		below bool // values below zero (or a line's markers)
		plot  func() *Plot
	}{
		{"histogram short labels", false, func() *Plot {
			return plotHistogram(&HistogramResult{Column: "c", Keys: []string{"a", "b", "c"}, Counts: []float64{5, 9, 4}})
		}},
		{"histogram long labels tall bar", false, func() *Plot {
			return plotHistogram(&HistogramResult{Column: "region", Keys: long, Counts: tall})
		}},
		{"histogram negative counts", true, func() *Plot {
			return plotHistogram(&HistogramResult{Column: "region", Keys: []string{"north", "south", "east", "other"}, Counts: neg})
		}},
		{"histogram many bars", true, func() *Plot {
			return plotHistogram(&HistogramResult{Column: "age", Keys: names("bin number ", 30), Counts: series(30, func(i int) float64 { return float64(i*i - 40) })})
		}},
		{"grouped mean", true, func() *Plot {
			return plotHistogram(&MeanResult{GroupResult: &GroupResult{Stat: "mean", Column: "income", By: "region", Keys: long, Values: neg}})
		}},
		{"loadings short labels", false, func() *Plot {
			return plotLoadings(pcaOf([]string{"a", "b", "c"}, []float64{0.2, 0.9, 0.4}, nil))
		}},
		{"loadings long labels negative", true, func() *Plot {
			return plotLoadings(pcaOf(longCols, []float64{0.9, -0.3, 0.1, -0.3}, nil))
		}},
		{"loadings many columns", true, func() *Plot {
			return plotLoadings(pcaOf(names("worst feature ", 30), series(30, func(i int) float64 { return float64(i%7-3) / 10 }), nil))
		}},
		{"eigenvalues tall first", true, func() *Plot {
			return plotEigenvalues(pcaOf([]string{"a", "b", "c"}, []float64{1, 0, 0}, []float64{900, 12, 3}))
		}},
		{"eigenvalues negative", true, func() *Plot {
			return plotEigenvalues(pcaOf(names("c", 12), series(12, func(int) float64 { return 0.1 }), series(12, func(i int) float64 { return 30 - 6*float64(i) })))
		}},
		{"error bars", true, func() *Plot {
			return barChart("test", barFigure{title: "error bars", labels: long, vals: tall, barWidth: 24, width: 6 * vg.Inch,
				iv: intervals{[]float64{-5, 200, 1, 12}, []float64{9, 290, 13, 10}}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.plot().PNG()
			if dir := os.Getenv("PRIVNOTES_PLOT_DIR"); dir != "" { // to look at them
				os.WriteFile(filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".png"), b, 0o644)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range checkLayout(img, tc.below) {
				t.Error(msg)
			}
		})
	}
}

// checkLayout returns what is wrong with a figure's margins.
// Bars stand on zero, the axis' end when no value is negative: below says
// that some are, and the lowest must then keep room too.
func checkLayout(img image.Image, below bool) []string {
	r := img.Bounds()
	var bad []string
	// The outer frame.
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			inFrame := x < r.Min.X+frameClear || x >= r.Max.X-frameClear || y < r.Min.Y+frameClear || y >= r.Max.Y-frameClear
			if inFrame && !isBackground(img.At(x, y)) {
				bad = append(bad, fmt.Sprintf("pixel (%d, %d) of the outer %d-pixel frame is not background: the figure is cut at the image's edge", x, y, frameClear))
				y, x = r.Max.Y, r.Max.X // one is enough
			}
		}
	}
	// The title: the first rows with ink, down to the first blank row.
	top := r.Min.Y
	for top < r.Max.Y && blankRow(img, top) {
		top++
	}
	end := top
	for end < r.Max.Y && !blankRow(img, end) {
		end++
	}
	for y := end; y < end+titleClear && y < r.Max.Y; y++ {
		if !blankRow(img, y) {
			bad = append(bad, fmt.Sprintf("row %d, %d pixels under the title (rows %d-%d), is not blank: the plot runs into the title", y, y-end+1, top, end-1))
			break
		}
	}
	ax, axTop, axBot, ok := valueAxis(img)
	if !ok {
		return append(bad, "no value axis found")
	}
	// Bars and markers: dark or coloured pixels right of the axis, from
	// under the title down to the axis' end. The most extreme ones keep
	// edgeClear pixels inside the axis' span.
	hi, lo := r.Max.Y, r.Min.Y
	for y := end; y <= axBot; y++ {
		for x := ax + 3; x < r.Max.X; x++ {
			if data(img.At(x, y)) {
				hi, lo = min(hi, y), max(lo, y)
			}
		}
	}
	if hi < axTop+edgeClear {
		bad = append(bad, fmt.Sprintf("the highest bar or marker reaches row %d, the value axis ends at row %d: no headroom", hi, axTop))
	}
	if below && lo > axBot-edgeClear {
		bad = append(bad, fmt.Sprintf("the lowest bar or marker reaches row %d, the value axis ends at row %d: no room below", lo, axBot))
	}
	return bad
}

func blankRow(img image.Image, y int) bool {
	for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
		if !isBackground(img.At(x, y)) {
			return false
		}
	}
	return true
}

func isBackground(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r == 0xffff && g == 0xffff && b == 0xffff
}

func lum(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	return (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 0xffff
}

// data is a bar's, a marker's or a line's (an axis') pixel: darker than
// the grid (light grey) and the anti-aliased rims of text.
func data(c color.Color) bool { return lum(c) < 0.6 }

// valueAxis finds the value axis: the leftmost column holding a vertical
// line over a third of the height (the axis' label and the ticks' are
// shorter). It returns its column and its first and last rows.
func valueAxis(img image.Image) (ax, top, bot int, ok bool) {
	r := img.Bounds()
	for x := r.Min.X; x < r.Max.X; x++ {
		for y := r.Min.Y; y < r.Max.Y; {
			if isBackground(img.At(x, y)) {
				y++
				continue
			}
			y0 := y
			for y < r.Max.Y && !isBackground(img.At(x, y)) {
				y++
			}
			if y-y0 > r.Dy()/3 && (!ok || y-y0 > bot-top) {
				ax, top, bot, ok = x, y0, y-1, true
			}
		}
		if ok {
			return ax, top, bot, ok
		}
	}
	return 0, 0, 0, false
}

// TestPlotErrorBars: a value with an interval gets an error bar (black,
// over the blue bars); a value without gets none, and today's releases,
// which carry no intervals, get none; a histogram's receipt's error model
// draws them.
func TestPlotErrorBars(t *testing.T) {
	keys, vals := []string{"a", "b", "c"}, []float64{10, 250, 40}
	fig := func(iv intervaled) *Plot {
		return barChart("test", barFigure{title: "t", labels: keys, vals: vals, iv: iv, barWidth: 24, width: 6 * vg.Inch})
	}
	tests := []struct {
		name string
		plot *Plot
		want bool
	}{
		{"intervals", fig(intervals{[]float64{5, 200, 30}, []float64{15, 300, 50}}), true},
		{"one interval", fig(intervals{[]float64{1, 1, 30}, []float64{0, 0, 50}}), true},
		{"no interval", fig(intervals{[]float64{1, 1, 1}, []float64{0, 0, 0}}), false},
		{"none", fig(nil), false},
		{"histogram without an error model", plotHistogram(&HistogramResult{Column: "c", Keys: keys, Counts: vals}), false},
		{"histogram with its error", plotHistogram(&HistogramResult{Column: "c", Keys: keys, Counts: vals,
			releaseBase: releaseBase{&Receipt{Params: map[string]any{release.ErrorParam: map[string]any{"kind": "laplace", "scale": 10.0}}}}}), true},
	}
	for _, tc := range tests {
		img, err := png.Decode(bytes.NewReader(tc.plot.PNG()))
		if err != nil {
			t.Fatal(err)
		}
		ax, top, bot, ok := valueAxis(img)
		if !ok {
			t.Fatalf("%s: no value axis", tc.name)
		}
		// Black pixels right of the axis, within its span: only error
		// bars are black there (bars are blue, the grid light grey, the
		// labels outside).
		n := 0
		for y := top; y <= bot; y++ {
			for x := ax + 3; x < img.Bounds().Max.X; x++ {
				if lum(img.At(x, y)) < 0.25 {
					n++
				}
			}
		}
		if got := n > 0; got != tc.want {
			t.Errorf("%s: %d black pixels in the data area; want error bars: %v", tc.name, n, tc.want)
		}
	}
}
