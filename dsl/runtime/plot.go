package runtime

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"image/color"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot is a rendered figure of a DP release (post-processing: no cost).
type Plot struct {
	png   []byte
	title string
}

// PNG is the encoded image (the engine shows it as image/png).
func (p *Plot) PNG() []byte { return p.png }

func (p *Plot) String() string { return fmt.Sprintf("<plot %q, %d bytes PNG>", p.title, len(p.png)) }

func asPCA(fn string, res any) *PCAResult {
	r, ok := res.(*PCAResult)
	if !ok || r == nil || r.Components == nil {
		panic(errorf(NameArgumentError, "%s: want a result of private_pca, got %s", fn, typeName(res)))
	}
	return r
}

// plotLoadings implements plot_loadings: one component's loadings as bars.
func plotLoadings(res any, kws ...KW) *Plot {
	const fn = "plot_loadings"
	a := mustArgs(fn, kws)
	r := asPCA(fn, res)
	vals := r.Component(a.int("component"))
	title := a.str("title")
	if title == "" {
		title = fmt.Sprintf("loadings of component %d (%s)", a.int("component"), r.Method)
	}
	iv, _ := res.(intervaled)
	return barChart(fn, barFigure{
		title: title, ylabel: "loading", labels: loadingLabels(r.Columns, len(vals)), vals: vals, iv: iv,
		barWidth: vg.Points(math.Max(2, math.Min(20, 400/float64(len(vals))))),
		width:    min(max(7*vg.Inch, vg.Length(len(vals))*0.18*vg.Inch), 20*vg.Inch),
	})
}

// maxLabel is the longest x label of plot_loadings, in characters.
const maxLabel = 16

// loadingLabels are the x labels of plot_loadings: the column names
// (shortened to maxLabel characters) for up to 60 columns, else the
// 1-based numbers of every fifth column, so labels never crowd.
func loadingLabels(cols []string, d int) []string {
	names := make([]string, d)
	for i := range names {
		switch {
		case d <= 60 && i < len(cols):
			names[i] = shorten(cols[i], maxLabel)
		case d <= 60 || i%5 == 0:
			names[i] = fmt.Sprint(i + 1)
		}
	}
	return names
}

// shorten cuts s to n characters, ending with an ellipsis when cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// plotEigenvalues implements plot_eigenvalues.
func plotEigenvalues(res any, kws ...KW) *Plot {
	const fn = "plot_eigenvalues"
	a := mustArgs(fn, kws)
	r := asPCA(fn, res)
	if len(r.Values) == 0 {
		panic(errorf(NameArgumentError, "%s: this result (method %s) carries no private eigenvalue estimates; methods npm, adaptive, gauss (and auto) release them", fn, r.Method))
	}
	title := a.str("title")
	if title == "" {
		title = fmt.Sprintf("private eigenvalue estimates (%s)", r.Method)
	}
	p := newPlot(title)
	p.X.Label.Text = "component"
	p.Y.Label.Text = "eigenvalue (DP estimate)"
	pts := make(plotter.XYs, len(r.Values))
	for i, v := range r.Values {
		pts[i].X, pts[i].Y = float64(i+1), v
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	p.Add(line, points, plotter.NewGrid())
	// Headroom on both sides: a point on the axis' end would have half
	// its marker outside the data area, over the title or the x axis.
	lo, hi := floats.Min(r.Values), floats.Max(r.Values)
	pad := headroom * math.Max(hi-lo, math.Max(math.Abs(hi), 1e-12))
	p.Y.Min, p.Y.Max = lo-pad, hi+pad
	// The x axis counts components: ticks on integers only.
	p.X.Min, p.X.Max = 0.5, float64(len(r.Values))+0.5
	p.X.Tick.Marker = integerTicks{}
	return render(p, title, 6*vg.Inch, 4*vg.Inch)
}

// integerTicks marks the integers of an axis, at most about 12 of them
// labelled (steps of 1, 2, 5, 10, …).
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Ceil(lo)), int(math.Floor(hi))
	step := 1
	for _, m := range []int{2, 5, 10} {
		if (last-first)/step <= 12 {
			break
		}
		step = m
	}
	for (last-first)/step > 12 {
		step *= 10
	}
	var ts []plot.Tick
	for v := first; v <= last; v++ {
		t := plot.Tick{Value: float64(v)}
		if (v-first)%step == 0 {
			t.Label = fmt.Sprint(v)
		} else if last-first > 100 {
			continue // no unlabelled tick per integer on a long axis
		}
		ts = append(ts, t)
	}
	return ts
}

// Layout of every figure (issue 29: the tallest bar ran into the title,
// the title and the outer bars touched the image's edge). Lengths in
// points.
const (
	// plotMargin is the blank frame around a figure: gonum draws up to
	// the canvas' edge, where a front end's own frame cuts a glyph.
	plotMargin vg.Length = 12
	// titleGap separates the title from the data area and the axes'
	// top labels.
	titleGap = 10
	// headroom is the share of the value range added beyond the most
	// extreme value (and interval end), so that no bar or marker ends on
	// the data area's edge.
	headroom = 0.08
)

// barColor fills bars: not black, so that bars stay apart from text and
// error bars (and the layout test tells them from labels).
var barColor = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}

// newPlot is plot.New with the figures' title spacing.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = titleGap
	p.Y.Tick.Marker = shortTicks{}
	return p
}

// shortTicks are gonum's default ticks labelled in %g's shortest form: its
// own labels keep as many decimals as the finest tick needs ("250.00").
type shortTicks struct{}

func (shortTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// intervaled is implemented by a release whose values carry intervals
// (the 95 % confidence interval of the noise, interval.go): bar charts
// draw them as error bars. Plots never invent an interval.
type intervaled interface {
	// barInterval returns the interval [lo, hi] of value i; ok is false
	// when value i has none.
	barInterval(i int) (lo, hi float64, ok bool)
}

// barFigure is what barChart draws: one bar per label.
type barFigure struct {
	title, ylabel string
	labels        []string
	vals          []float64
	iv            intervaled // nil: no error bars
	barWidth      vg.Length
	width         vg.Length
}

// barChart draws the bar plots (plot_histogram, plot_loadings).
func barChart(fn string, f barFigure) *Plot {
	p := newPlot(f.title)
	p.Y.Label.Text = f.ylabel
	n := len(f.vals)
	bars, err := plotter.NewBarChart(plotter.Values(f.vals), f.barWidth)
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	bars.LineStyle.Width = 0
	bars.Color = barColor
	p.Add(plotter.NewGrid(), bars)
	lo, hi := math.Min(0, floats.Min(f.vals)), math.Max(0, floats.Max(f.vals))
	if f.iv != nil {
		var pts plotter.XYs
		var errs plotter.YErrors
		for i, v := range f.vals {
			l, h, ok := f.iv.barInterval(i)
			if !ok || math.IsNaN(l) || math.IsNaN(h) || math.IsInf(l, 0) || math.IsInf(h, 0) {
				continue
			}
			// YErrors are distances from the value; an interval that does
			// not hold its value (possible for a shifted estimate) is
			// drawn from its value to its far end.
			l, h = math.Min(l, v), math.Max(h, v)
			pts = append(pts, plotter.XY{X: float64(i), Y: v})
			errs = append(errs, struct{ Low, High float64 }{v - l, h - v})
			lo, hi = math.Min(lo, l), math.Max(hi, h)
		}
		if len(pts) > 0 {
			eb, err := plotter.NewYErrorBars(errorBars{pts, errs})
			if err != nil {
				panic(errorf(NameArgumentError, "%s: %v", fn, err))
			}
			eb.CapWidth = max(3, min(f.barWidth/2, 8))
			p.Add(eb)
		}
	}
	p.NominalX(f.labels...)
	// Half a slot beyond the first and last bars: gonum's range ends at
	// their centres, which cut them at the frame.
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	pad := headroom * math.Max(hi-lo, 1e-12)
	p.Y.Min, p.Y.Max = lo, hi
	if lo < 0 {
		p.Y.Min = lo - pad
	}
	if hi > 0 || lo == 0 {
		p.Y.Max = hi + pad
	}
	// Labels wider than their slot would overlap their neighbours (and
	// the first and last would leave the image): they stand vertical,
	// right-aligned under their bars, and the axis reserves their height.
	slot := (f.width - 2*plotMargin - 60) / vg.Length(n)
	for _, l := range f.labels {
		if p.X.Tick.Label.Width(l) > 0.9*slot {
			p.X.Tick.Label.Rotation = math.Pi / 2
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = text.XRight, text.YCenter
			// NominalX pads the y axis by half the first label's width,
			// for a horizontal label; a vertical one needs none.
			p.Y.Padding = 0
			break
		}
	}
	return render(p, f.title, f.width, 4.5*vg.Inch)
}

// errorBars is the plotter.XYer and YErrorer of the error bars.
type errorBars struct {
	plotter.XYs
	plotter.YErrors
}

// render draws p inside the blank frame of plotMargin and encodes it.
func render(p *plot.Plot, title string, w, h vg.Length) *Plot {
	c := vgimg.PngCanvas{Canvas: vgimg.New(w, h)} // white: the frame's colour
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, plotMargin, -plotMargin, plotMargin, -plotMargin))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		panic(errorf(NameArgumentError, "rendering the plot: %v", err))
	}
	return &Plot{png: buf.Bytes(), title: title}
}
