package runtime

import (
	"bytes"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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
	names := make([]string, len(vals))
	for i := range names {
		if i < len(r.Columns) && len(vals) <= 40 {
			names[i] = r.Columns[i]
		} else if len(vals) <= 40 || i%5 == 0 {
			names[i] = fmt.Sprint(i + 1)
		}
	}
	p.NominalX(names...)
	if len(vals) > 8 {
		p.X.Tick.Label.Rotation = math.Pi / 3
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -0.9, -0.4 // draw.XRight, draw.YCenter
	}
	return render(p, title, 7*vg.Inch, 4*vg.Inch)
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
	return render(p, title, 6*vg.Inch, 4*vg.Inch)
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
