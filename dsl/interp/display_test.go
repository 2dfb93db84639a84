package interp

import (
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/engine"
)

// receipt is a compiled result type like the DSL's: rich renderings and
// output metadata.
type receipt struct{ eps float64 }

func (r receipt) String() string { return "receipt" }
func (r receipt) HTML() string   { return "<b>receipt</b>" }
func (r receipt) Markdown() string {
	return "**receipt**"
}
func (r receipt) JSON() any { return map[string]any{"eps": r.eps} }
func (r receipt) Metadata() map[string]any {
	return map[string]any{"privnotes": map[string]any{"eps": r.eps}}
}
func (r receipt) SVG() string                  { return "<svg/>" }
func (r receipt) PNG() []byte                  { return []byte{0x89, 'P', 'N', 'G'} }
func (r receipt) MIMEBundle() map[string]any   { return map[string]any{"text/latex": "$\\epsilon$"} }
func (r receipt) unexported(x int) (int, bool) { return x, true }

func TestRender(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.White)
	long := make([]float64, 100)
	tests := []struct {
		name string
		v    any
		want map[string]string // MIME type -> substring ("" = present)
		meta string            // key that must be in the metadata
	}{
		{"int", 42, map[string]string{"text/plain": "42"}, ""},
		{"string quoted", "hi", map[string]string{"text/plain": `"hi"`}, ""},
		{"error", errors.New("bad"), map[string]string{"text/plain": "bad"}, ""},
		{"nil", nil, map[string]string{"text/plain": "<nil>"}, ""},
		{"rich value", receipt{0.5}, map[string]string{"text/plain": "receipt", "text/html": "<b>receipt</b>",
			"text/markdown": "**receipt**", "image/svg+xml": "<svg/>", "image/png": base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G'}),
			"application/json": "", "text/latex": "epsilon"}, "privnotes"},
		{"matrix", mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6.5}), map[string]string{"text/html": "<td>6.5</td>", "text/plain": "2×3"}, ""},
		{"big matrix elided", mat.NewDense(100, 100, nil), map[string]string{"text/html": "⋮", "text/plain": "100×100"}, ""},
		{"float list", []float64{1, 2.5, 1e-9}, map[string]string{"text/plain": "[1 2.5 1e-09]"}, ""},
		{"long float list", long, map[string]string{"text/plain": "(60 more)"}, ""},
		{"image", img, map[string]string{"image/png": "iVBOR", "text/plain": "<image 3x2>"}, "image/png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Render(tt.v)
			for mime, sub := range tt.want {
				got, ok := d.Data[mime]
				if !ok {
					t.Fatalf("no %s in %v", mime, d.Data)
				}
				if s, isStr := got.(string); sub != "" && (!isStr || !strings.Contains(s, sub)) {
					t.Errorf("%s = %v, want it to contain %q", mime, got, sub)
				}
			}
			if tt.meta != "" {
				if _, ok := d.Metadata[tt.meta]; !ok {
					t.Errorf("metadata %v lacks %q", d.Metadata, tt.meta)
				}
			}
		})
	}
}

func TestDisplayAPIFromCells(t *testing.T) {
	e := newEngine(t)
	out := &recOutput{}
	code := `fmt.Println("before")
show(1, "two")
html("<i>x</i>")
markdown("# t")
svg("<svg/>")
show_json(map[string]int{"a": 1})
img := image.NewRGBA(image.Rect(0, 0, 2, 2))
png(img)
d := new_display("0%")
d.Update("50%")
update_display(d, "100%")
clear_output(true)
fmt.Println("after")
mat.NewDense(1, 2, []float64{3, 4})`
	r := e.Execute(context.Background(), engineReq(code), out)
	if r.Error != nil {
		t.Fatalf("%s: %s", r.Error.Name, strings.Join(r.Error.Traceback, "\n"))
	}
	var kinds []string
	for _, it := range out.items {
		kinds = append(kinds, strings.SplitN(it, ":", 2)[0])
	}
	want := "stdout display(,update=false) display(,update=false) display(,update=false) display(,update=false) display(,update=false) display(,update=false) display(,update=false)"
	if got := strings.Join(kinds[:8], " "); got != want {
		t.Fatalf("order of outputs:\n got %s\nwant %s", got, want)
	}
	mimes := []string{"text/plain", "text/plain", "text/html", "text/markdown", "image/svg+xml", "application/json", "image/png"}
	for i, m := range mimes {
		if _, ok := out.disp[i].Data[m]; !ok {
			t.Errorf("display %d lacks %s: %v", i, m, out.disp[i].Data)
		}
	}
	// the updatable display: created, then updated twice with the same id
	created, up1, up2 := out.disp[7], out.disp[8], out.disp[9]
	if created.DisplayID == "" || created.Update || !up1.Update || !up2.Update ||
		up1.DisplayID != created.DisplayID || up2.DisplayID != created.DisplayID {
		t.Fatalf("display ids/updates wrong: %+v %+v %+v", created, up1, up2)
	}
	if up2.Data["text/plain"] != `"100%"` {
		t.Errorf("last update = %v", up2.Data["text/plain"])
	}
	if tail := strings.Join(out.items[len(out.items)-2:], " "); tail != "clear(true) stdout:after\n" {
		t.Errorf("tail of outputs = %q", tail)
	}
	if r.Value == nil || !strings.Contains(r.Value.Data["text/html"].(string), "<table") {
		t.Errorf("final matrix value should be an HTML table: %+v", r.Value)
	}
}

func TestStreamsAreBufferedAndOrdered(t *testing.T) {
	e := newEngine(t)
	out := &recOutput{}
	run := e.Execute(context.Background(), engineReq("for i := 0; i < 1000; i++ {\n\tfmt.Println(i)\n}\nshow(\"mid\")\nprintln(\"x\")"), out)
	if run.Error != nil {
		t.Fatal(run.Error)
	}
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		b.WriteString(strings.TrimSpace(strings.Repeat(" ", 0)) + itoa(i) + "\n")
	}
	if got := out.stdout(); !strings.HasPrefix(got, b.String()) {
		t.Fatalf("stdout lost or reordered text (%d bytes)", len(got))
	}
	if len(out.items) > 10 {
		t.Errorf("1000 Println calls became %d stream messages; want them batched", len(out.items))
	}
	if d := out.items[len(out.items)-2]; !strings.HasPrefix(d, "display") {
		t.Errorf("display not between the two prints: %q", out.items)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// TestValueDisplayRules: what becomes execute_result.
func TestValueDisplayRules(t *testing.T) {
	e := newEngine(t)
	run(t, e, "func noResult() {}\nfunc two() (int, error) { return 2, nil }\ntype P struct{ A int; b string }")
	for _, tt := range []struct{ code, want string }{
		{"1 + 1", "2"},
		{"x := 5", ""},
		{"x", "5"},
		{"noResult()", ""},
		{`fmt.Println("p")`, ""},
		{`fmt.Sprint("s")`, `"s"`},
		{"two()", "(2, <nil>)"},
		{"strconv.Atoi(\"7\")", "(7, <nil>)"},
		{"P{A: 1, b: \"z\"}", "{1 z}"},
		{"func() int { return 9 }()", "9"},
		{"[]string{\"a\"}", "[a]"},
		{"// only a comment", ""},
		{"var y = 3", ""},
		// A display call shows its display, not its nil error (issue 11).
		{`show_json(map[string]int{"a": 1})`, ""},
		{"png(image.NewGray(image.Rect(0, 0, 1, 1)))", ""},
		{"(show_json(1))", ""},
		{"html(\"<b>x</b>\")", ""},
		{"show_json(make(chan int))", "show_json: json: unsupported type: chan int"},
	} {
		r := e.Execute(context.Background(), engineReq(tt.code), &recOutput{})
		if r.Error != nil {
			t.Fatalf("%q: %v", tt.code, r.Error)
		}
		got := ""
		if r.Value != nil {
			got = r.Value.Data["text/plain"].(string)
		}
		if got != tt.want {
			t.Errorf("%q: value %q, want %q", tt.code, got, tt.want)
		}
	}
	// Silent cells produce no value.
	r := e.Execute(context.Background(), engine.ExecuteRequest{Code: "1", Silent: true}, &recOutput{})
	if r.Value != nil {
		t.Errorf("silent cell produced a value")
	}
}

// TestTranscript: with Transcript (privnotes run), every top-level bare
// expression's value is displayed in order with what the script prints,
// a tuple as one display; prints and calls without a value show nothing
// of their own. Without it (a cell) only the last value is the cell's
// Value, as before.
func TestTranscript(t *testing.T) {
	const script = "import \"sort\"\nx := 1\nx\nfmt.Println(\"printed\")\nx + 1\nvar s []int\nsort.Ints(s)\ns = append(s, 3)\nfunc f() (int, error) { return 4, nil }\nf()\nx + 4"
	tests := []struct {
		name       string
		transcript bool
		items      []string
		value      string
	}{
		{"script", true, []string{
			"display(,update=false):1", "stdout:printed\n", "display(,update=false):2",
			"display(,update=false):(4, <nil>)", "display(,update=false):5",
		}, ""},
		{"cell", false, []string{"stdout:printed\n"}, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			out := &recOutput{}
			req := engineReq(script)
			req.Transcript = tt.transcript
			r := e.Execute(context.Background(), req, out)
			if r.Error != nil {
				t.Fatalf("error: %v", r.Error)
			}
			if strings.Join(out.items, "|") != strings.Join(tt.items, "|") {
				t.Errorf("outputs\n%q\nwant\n%q", out.items, tt.items)
			}
			value := ""
			if r.Value != nil {
				value, _ = r.Value.Data["text/plain"].(string)
			}
			if value != tt.value {
				t.Errorf("value %q, want %q", value, tt.value)
			}
		})
	}
}
