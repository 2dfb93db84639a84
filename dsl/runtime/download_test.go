package runtime

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// fill sets every exported field of the struct v points to (and of the
// structs it holds) to a non-zero value, so that a marshalled field
// cannot hide behind omitempty.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	typ := v.Elem().Type()
	for _, f := range reflect.VisibleFields(typ) {
		// A field promoted through an exported embedded field is filled
		// with it; one promoted through an unexported one (the results'
		// releaseBase) only here.
		if !f.IsExported() || len(f.Index) > 1 && typ.Field(f.Index[0]).IsExported() {
			continue
		}
		fv := v.Elem().FieldByIndex(f.Index)
		switch {
		case f.Type == reflect.TypeOf(&mat.Dense{}):
			fv.Set(reflect.ValueOf(mat.NewDense(2, 1, []float64{0.6, 0.8})))
		case f.Type == reflect.TypeOf(accounting.Event{}):
			fv.Set(reflect.ValueOf(accounting.GaussianZcdpFor(1, 1e-6)))
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			p := reflect.New(f.Type.Elem())
			fill(t, p)
			fv.Set(p)
		case f.Type.Kind() == reflect.Struct:
			p := reflect.New(f.Type)
			fill(t, p)
			fv.Set(p.Elem())
		case f.Type.Kind() == reflect.Float64:
			fv.SetFloat(0.5)
		case f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Int64:
			fv.SetInt(2)
		case f.Type.Kind() == reflect.String:
			fv.SetString("x")
		case f.Type.Kind() == reflect.Bool:
			fv.SetBool(true)
		case f.Type == reflect.TypeOf([]float64{}):
			fv.Set(reflect.ValueOf([]float64{1, 2}))
		case f.Type == reflect.TypeOf([]string{}):
			fv.Set(reflect.ValueOf([]string{"a", "b"}))
		case f.Type == reflect.TypeOf([]int{}):
			fv.Set(reflect.ValueOf([]int{0, 1}))
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			p := reflect.New(f.Type.Elem())
			fill(t, p)
			fv.Set(reflect.Append(reflect.MakeSlice(f.Type, 0, 1), p.Elem()))
		case f.Type == reflect.TypeOf(map[string]any{}):
			fv.Set(reflect.ValueOf(map[string]any{"k": 2}))
		default:
			t.Fatalf("fill: field %s of %s has a type (%s) this test does not fill: extend it", f.Name, v.Elem().Type(), f.Type)
		}
	}
}

// missingFields lists the exported fields of t (promoted ones included)
// that the JSON object obj lacks, and recurses into struct-valued fields.
func missingFields(t reflect.Type, obj map[string]any, path string) []string {
	var miss []string
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous || f.Tag.Get("json") == "-" {
			continue
		}
		if t == reflect.TypeOf(accounting.Event{}) && f.Name == "BoundedRange" {
			continue // an event's marks exclude each other: fill's event is the Gaussian one
		}
		v, ok := obj[f.Name]
		if !ok {
			miss = append(miss, path+f.Name)
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sub, isObj := v.(map[string]any); isObj && ft.Kind() == reflect.Struct && ft.PkgPath() != "" && !strings.Contains(ft.PkgPath(), "gonum") {
			miss = append(miss, missingFields(ft, sub, path+f.Name+".")...)
		}
	}
	return miss
}

// Every result type marshals every released field (issue 11: before,
// json.Marshal of a PCAResult dropped its Components).
func TestResultsMarshalEveryField(t *testing.T) {
	for _, r := range []any{&PCAResult{}, &FedRepResult{}, &CountResult{}, &MeanResult{}, &SumResult{},
		&HistogramResult{}, &QuantileResult{}, &GroupResult{}, &Budget{}, &Receipt{}} {
		t.Run(reflect.TypeOf(r).Elem().Name(), func(t *testing.T) {
			fill(t, reflect.ValueOf(r))
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(b, &obj); err != nil {
				t.Fatal(err)
			}
			if miss := missingFields(reflect.TypeOf(r).Elem(), obj, ""); len(miss) > 0 {
				t.Errorf("JSON lacks %v:\n%s", miss, b)
			}
		})
	}
	// Matrices are rows of numbers, not gonum's {}.
	b, _ := json.Marshal(&PCAResult{Components: mat.NewDense(2, 1, []float64{0.6, 0.8}), releaseBase: releaseBase{&Receipt{}}})
	if !strings.Contains(string(b), `"Components":[[0.6],[0.8]]`) {
		t.Errorf("components: %s", b)
	}
}

var dataURI = regexp.MustCompile(`<a download="([^"]+)" href="data:([^;]+);base64,([^"]+)">`)

// download(result, "name.csv") displays a link holding the file as a data
// URI: CSV for tables and matrices, JSON for .json; clear errors for other
// names and values.
func TestDownload(t *testing.T) {
	dir := t.TempDir()
	register(t, dir, "d", table(60, 3, 1, 0.3), accounting.Budget{Eps: 10, Delta: 1e-5}, accounting.ModeZCDP)
	s := newSession(t, dir)
	s.ok(`ds := dataset("d")
pca := private_pca(ds, k=2, eps=1, delta=1e-6)
n := private_count(ds, eps=0.5)`)
	link := func(cell string) (name, mime, body string) {
		t.Helper()
		res, out := s.run(cell)
		if res.Error != nil {
			t.Fatalf("%s: %s: %s", cell, res.Error.Name, res.Error.Value)
		}
		if res.Value != nil {
			t.Errorf("%s: an Out value %v (want only the link)", cell, res.Value.Data)
		}
		if len(out.disp) != 1 {
			t.Fatalf("%s: %d displays", cell, len(out.disp))
		}
		h, _ := out.disp[0].Data["text/html"].(string)
		m := dataURI.FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("%s: no data-URI link in %q", cell, h)
		}
		raw, err := base64.StdEncoding.DecodeString(m[3])
		if err != nil {
			t.Fatal(err)
		}
		return m[1], m[2], string(raw)
	}
	name, mime, body := link(`download(pca, "pca.csv")`)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	// The loadings, then the eigenvalues (auto picks gauss here) with
	// their 95 % intervals, and the ratios with theirs when the noisy
	// total is positive (TestPCACSV).
	if name != "pca.csv" || mime != "text/csv" || lines[0] != "column,component_1,component_2" || len(lines) != 7 && len(lines) != 10 ||
		!strings.HasPrefix(lines[4], "eigenvalue,") || !strings.HasPrefix(lines[6], "eigenvalue_hi95,") ||
		len(lines) == 10 && !strings.HasPrefix(lines[9], "explained_variance_ratio_hi95,") {
		t.Errorf("pca.csv: %s %s\n%s", name, mime, body)
	}
	name, mime, body = link(`download(pca, "pca.json")`)
	var obj map[string]any
	if err := json.Unmarshal([]byte(body), &obj); err != nil || mime != "application/json" || name != "pca.json" {
		t.Fatalf("pca.json: %s %v\n%s", mime, err, body)
	}
	if comps, _ := obj["Components"].([]any); len(comps) != 3 || obj["Receipt"] == nil {
		t.Errorf("pca.json lacks the components or the receipt: %s", body)
	}
	// A count's CSV carries its 95 % half-width.
	if _, _, body = link(`download(n, "n.csv")`); !strings.HasPrefix(body, "count,±95%\n") {
		t.Errorf("n.csv: %q", body)
	}
	// Completion, inspect and %help know it like the other DSL functions.
	if c := s.eng.Complete("downl", 5); !slicesContains(c.Matches, "download") {
		t.Errorf("completion of downl: %v", c.Matches)
	}
	if in := s.eng.Inspect(`download(pca, "x.csv")`, 3, 0); !in.Found || !strings.Contains(fmt.Sprint(in.Data["text/plain"]), "data URI") {
		t.Errorf("inspect download: %v", in.Data)
	}
	// %help answers in a pager display (dsl/engine's Page), not on stdout.
	if res, o := s.run("%help download"); res.Error != nil || !strings.Contains(o.all(res), "download(res, name)") {
		t.Errorf("%%help download: %q", o.all(res))
	}
	for _, tc := range []struct{ cell, want string }{
		{`download(pca, "pca.txt")`, "end it in .csv"},
		{`download(pca, "../pca.csv")`, "no directories"},
		{`download(3, "x.csv")`, "want a result of a DSL function"},
		{`download(ds, "x.csv")`, "got Dataset"},
		{"var p *PCAResult\ndownload(p, \"p.csv\")", "no result to save"},
		{`download(private_count(ds, eps=0.1, dry_run=true), "d.csv")`, "dry run"},
	} {
		res, o := s.run(tc.cell)
		if res.Error == nil || res.Error.Name != NameArgumentError || !strings.Contains(res.Error.Value, tc.want) {
			t.Errorf("%s: want an ArgumentError containing %q, got %s", tc.cell, tc.want, o.all(res))
		}
	}
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
