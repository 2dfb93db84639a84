package runtime

import (
	"bytes"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
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
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "loading"
	bars, err := plotter.NewBarChart(plotter.Values(vals), vg.Points(math.Max(2, math.Min(20, 400/float64(len(vals))))))
	if err != nil {
		panic(errorf(NameArgumentError, "%s: %v", fn, err))
	}
	bars.LineStyle.Width = 0
	p.Add(bars, plotter.NewGrid())
	p.NominalX(loadingLabels(r.Columns, len(vals))...)
	if len(vals) > 8 {
		// Vertical labels, right-aligned under their bars, never overlap
		// their neighbours; the axis reserves their rotated height.
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = text.XRight, text.YCenter
	}
	width := max(7*vg.Inch, vg.Length(len(vals))*0.18*vg.Inch)
	return render(p, title, min(width, 20*vg.Inch), 4.5*vg.Inch)
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
	p := plot.New()
	p.Title.Text = title
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

func render(p *plot.Plot, title string, w, h vg.Length) *Plot {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		panic(errorf(NameArgumentError, "rendering the plot: %v", err))
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		panic(errorf(NameArgumentError, "rendering the plot: %v", err))
	}
	return &Plot{png: buf.Bytes(), title: title}
}
