package interp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/ast"
	"html"
	"image"
	"image/png"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/engine"
)

// Interfaces a value may implement to choose its renderings. Any subset
// works; text/plain is always added (from String or fmt's %v).
type (
	// HTMLer renders as text/html.
	HTMLer interface{ HTML() string }
	// Markdowner renders as text/markdown.
	Markdowner interface{ Markdown() string }
	// SVGer renders as image/svg+xml.
	SVGer interface{ SVG() string }
	// PNGer renders as image/png (the encoded bytes).
	PNGer interface{ PNG() []byte }
	// JSONer renders as application/json (any JSON-marshallable value).
	JSONer interface{ JSON() any }
	// MIMEBundler gives its own bundle; it wins over the other methods.
	MIMEBundler interface{ MIMEBundle() map[string]any }
	// Metadataer adds output metadata, such as the DSL's privacy receipt
	// under "privnotes".
	Metadataer interface{ Metadata() map[string]any }
)

// Limits of the table and list renderings; larger values are elided in
// the middle.
const (
	maxTableRows = 40
	maxTableCols = 20
	maxListItems = 40
)

// Render builds the display of v: text/plain always, plus the MIME types
// its methods provide; gonum matrices as HTML tables, images as PNG.
// The DSL runtime may use it to render its own outputs the same way.
func Render(v any) engine.Display {
	d := engine.Display{Data: engine.MIMEBundle{}, Metadata: map[string]any{}}
	if v == nil {
		d.Data["text/plain"] = "<nil>"
		return d
	}
	if m, ok := v.(MIMEBundler); ok {
		for k, x := range m.MIMEBundle() {
			d.Data[k] = x
		}
	}
	set := func(k string, x any) {
		if _, ok := d.Data[k]; !ok {
			d.Data[k] = x
		}
	}
	if h, ok := v.(HTMLer); ok {
		set("text/html", h.HTML())
	}
	if m, ok := v.(Markdowner); ok {
		set("text/markdown", m.Markdown())
	}
	if s, ok := v.(SVGer); ok {
		set("image/svg+xml", s.SVG())
	}
	if p, ok := v.(PNGer); ok {
		set("image/png", base64.StdEncoding.EncodeToString(p.PNG()))
	}
	if j, ok := v.(JSONer); ok {
		set("application/json", j.JSON())
	}
	switch x := v.(type) {
	case mat.Matrix:
		set("text/html", matrixHTML(x))
		set("text/plain", matrixText(x))
	case image.Image:
		if b, err := encodePNG(x); err == nil {
			set("image/png", b)
			r := x.Bounds()
			d.Metadata["image/png"] = map[string]any{"width": r.Dx(), "height": r.Dy()}
		}
		set("text/plain", fmt.Sprintf("<image %dx%d>", x.Bounds().Dx(), x.Bounds().Dy()))
	case []float64:
		set("text/plain", floatList(x))
	}
	set("text/plain", plainText(v))
	if m, ok := v.(Metadataer); ok {
		for k, x := range m.Metadata() {
			d.Metadata[k] = x
		}
	}
	return d
}

// renderTuple shows the values of a multi-value call, such as
// strconv.Atoi("3"), as "(3, <nil>)".
func renderTuple(vs []any) engine.Display {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = plainText(v)
	}
	return engine.Display{Data: engine.MIMEBundle{"text/plain": "(" + strings.Join(parts, ", ") + ")"}, Metadata: map[string]any{}}
}

func plainText(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprintf("%v", v)
}

func encodePNG(img image.Image) (string, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func floatList(xs []float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if len(xs) > maxListItems && i == maxListItems/2 {
			fmt.Fprintf(&b, " … (%d more) …", len(xs)-maxListItems)
		}
		if len(xs) > maxListItems && i >= maxListItems/2 && i < len(xs)-maxListItems/2 {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fmtFloat(x))
	}
	b.WriteByte(']')
	if len(xs) > maxListItems {
		fmt.Fprintf(&b, " (len %d)", len(xs))
	}
	return b.String()
}

// shown returns the indexes to show of n items with at most max, and the
// position after which an ellipsis goes (-1 for none).
func shown(n, max int) (idx []int, gap int) {
	if n <= max {
		for i := 0; i < n; i++ {
			idx = append(idx, i)
		}
		return idx, -1
	}
	h := max / 2
	for i := 0; i < h; i++ {
		idx = append(idx, i)
	}
	for i := n - h; i < n; i++ {
		idx = append(idx, i)
	}
	return idx, h - 1
}

func matrixHTML(m mat.Matrix) string {
	r, c := m.Dims()
	rows, rgap := shown(r, maxTableRows)
	cols, cgap := shown(c, maxTableCols)
	var b strings.Builder
	fmt.Fprintf(&b, "<table class=\"privnotes-matrix\"><caption>%d×%d matrix</caption>\n<thead><tr><th></th>", r, c)
	for k, j := range cols {
		fmt.Fprintf(&b, "<th>%d</th>", j)
		if k == cgap {
			b.WriteString("<th>…</th>")
		}
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for k, i := range rows {
		fmt.Fprintf(&b, "<tr><th>%d</th>", i)
		for kk, j := range cols {
			fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(fmtFloat(m.At(i, j))))
			if kk == cgap {
				b.WriteString("<td>…</td>")
			}
		}
		b.WriteString("</tr>\n")
		if k == rgap {
			b.WriteString("<tr><th>⋮</th></tr>\n")
		}
	}
	b.WriteString("</tbody></table>")
	return b.String()
}

func matrixText(m mat.Matrix) string {
	r, c := m.Dims()
	opts := []mat.FormatOption{mat.Squeeze()}
	if r > maxTableRows || c > maxTableCols {
		opts = append(opts, mat.Excerpt(maxTableRows/2))
	}
	return fmt.Sprintf("%d×%d\n%v", r, c, mat.Formatted(m, opts...))
}

// DisplayHandle is an updatable display created by new_display in a cell;
// d.Update(x) (or update_display(d, x)) replaces its content in place.
type DisplayHandle struct {
	id string
	e  *Engine
}

// Update replaces the display's content with the rendering of v.
func (h *DisplayHandle) Update(v any) {
	d := Render(v)
	d.DisplayID, d.Update = h.id, true
	h.e.router.display(d)
}

// String identifies the handle.
func (h *DisplayHandle) String() string { return "display " + h.id }

var displayCount atomic.Uint64

// displayExports are the display functions callable bare from cells.
func (e *Engine) displayExports() map[string]reflect.Value {
	emit := func(d engine.Display) { e.router.display(d) }
	text := func(mime, s string) {
		emit(engine.Display{Data: engine.MIMEBundle{mime: s, "text/plain": s}, Metadata: map[string]any{}})
	}
	return map[string]reflect.Value{
		"show": reflect.ValueOf(func(vs ...any) {
			for _, v := range vs {
				emit(Render(v))
			}
		}),
		"html":     reflect.ValueOf(func(s string) { text("text/html", s) }),
		"markdown": reflect.ValueOf(func(s string) { text("text/markdown", s) }),
		"svg":      reflect.ValueOf(func(s string) { text("image/svg+xml", s) }),
		"png": reflect.ValueOf(func(img image.Image) error {
			b, err := encodePNG(img)
			if err != nil {
				return fmt.Errorf("png: %w", err)
			}
			r := img.Bounds()
			emit(engine.Display{
				Data:     engine.MIMEBundle{"image/png": b, "text/plain": fmt.Sprintf("<image %dx%d>", r.Dx(), r.Dy())},
				Metadata: map[string]any{"image/png": map[string]any{"width": r.Dx(), "height": r.Dy()}},
			})
			return nil
		}),
		"show_json": reflect.ValueOf(func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("show_json: %w", err)
			}
			var x any
			_ = json.Unmarshal(b, &x)
			ind, _ := json.MarshalIndent(x, "", "  ")
			emit(engine.Display{Data: engine.MIMEBundle{"application/json": x, "text/plain": string(ind)}, Metadata: map[string]any{}})
			return nil
		}),
		"new_display": reflect.ValueOf(func(v any) *DisplayHandle {
			h := &DisplayHandle{id: fmt.Sprintf("privnotes-%s-%d", e.label, displayCount.Add(1)), e: e}
			d := Render(v)
			d.DisplayID = h.id
			emit(d)
			return h
		}),
		"update_display": reflect.ValueOf(func(h *DisplayHandle, v any) { h.Update(v) }),
		"clear_output": reflect.ValueOf(func(wait ...bool) {
			e.router.clear(len(wait) > 0 && wait[0])
		}),
		"DisplayHandle": reflect.ValueOf((*DisplayHandle)(nil)),
	}
}

// displayCall reports whether x calls a display function bare: its
// values are what the display did (png and show_json return an error),
// so as a cell's final expression a nil error is not shown as Out: <nil>
// (ipykernel shows no None either); an error still is.
func displayCall(x ast.Expr) bool {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return false
	}
	_, isDisplay := displayDocs[id.Name]
	return isDisplay
}

// allNil reports whether every value is nil (a nil error).
func allNil(vs []any) bool {
	for _, v := range vs {
		if v != nil {
			return false
		}
	}
	return true
}

// displayDocs documents the display API for completion, inspect and %help.
var displayDocs = map[string]string{
	"show":           "show(values ...any)\n\nDisplays each value as a rich output: HTML tables for matrices, PNG for images, and whatever the value's HTML/Markdown/SVG/PNG/JSON/MIMEBundle methods give; text/plain always.",
	"html":           "html(s string)\n\nDisplays s as HTML.",
	"markdown":       "markdown(s string)\n\nDisplays s as Markdown.",
	"svg":            "svg(s string)\n\nDisplays s as an SVG image.",
	"png":            "png(img image.Image) error\n\nDisplays img as a PNG image.",
	"show_json":      "show_json(v any) error\n\nDisplays v as JSON (a front end that renders application/json shows a tree).",
	"new_display":    "new_display(v any) *DisplayHandle\n\nDisplays v and returns a handle; d.Update(x) or update_display(d, x) replaces the display in place (progress).",
	"update_display": "update_display(d *DisplayHandle, v any)\n\nReplaces the content of the display d with v.",
	"clear_output":   "clear_output(wait ...bool)\n\nClears the cell's output; with true, when the next output arrives (no flicker).",
}
