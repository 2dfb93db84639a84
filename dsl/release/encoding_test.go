package release

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// samples holds one value of every storable type, with numbers that are
// hard to round-trip: negative zero, the smallest subnormal, the largest
// float, values whose shortest form is long, and non-finite ones.
var samples = map[string]Value{
	"pca": &PCA{Components: mat.NewDense(3, 2, []float64{0.1, -0.2, 1.0 / 3, math.Copysign(0, -1), 5e-324, math.MaxFloat64}),
		Values: []float64{2.5e-7, 1e21}, Support: []int{0, 2}, Right: mat.NewDense(2, 2, []float64{1e-300, -1, 0.5, 2})},
	"lowrank": &LowRank{Matrix: mat.NewDense(2, 3, []float64{1, -2, 3e-9, 4, 5.5, -6}), Components: mat.NewDense(2, 1, []float64{0.6, 0.8}),
		Right: mat.NewDense(3, 1, []float64{1, 0, math.Copysign(0, -1)}), Values: []float64{9.25}},
	"fedrep":     &FedRep{U: mat.NewDense(2, 1, []float64{0.7071067811865476, -0.7071067811865475})},
	"count":      &Count{Value: -3},
	"mean":       &Mean{Values: []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0.30000000000000004}},
	"sum":        &Sum{Value: 123456789.123456789},
	"histogram":  &Histogram{Keys: []string{"[0, 10)", "<b>x</b>", "\"q\""}, Counts: []float64{1, 0, -2}},
	"quantile":   &Quantile{Q: 0.9, Value: 41.5},
	"regression": &Regression{Model: "logistic", Coef: []float64{1.5, math.Copysign(0, -1), 5e-324}, Intercept: -0.25, Ridge: 0},
	"groups":     &Groups{Stat: "mean", Column: "age", By: "region", Keys: []string{"north", "other"}, Values: []float64{40.25, -1}},
	"table": &Table{Columns: []string{"region", "band", "n", "m"}, Kinds: []string{"key", "key", "count", "avg"},
		Rows: [][]any{{"north", 3.0, 12.0, 0.1}, {nil, -0.0, -2.0, math.Inf(1)}, {"2", 1e300, 0.0, math.NaN()}}},
}

// sameBits compares two values of a type field by field, floats by their
// bits (so NaN equals NaN and -0 is not 0).
func sameBits(a, b any) bool {
	norm := func(v any) any {
		switch x := v.(type) {
		case *PCA:
			c := *x
			c.Components = nil
			return [4]any{c.Values, c.Support, x.Components.RawMatrix().Data, denseData(x.Right)}
		case *LowRank:
			return [4]any{denseData(x.Matrix), denseData(x.Components), denseData(x.Right), x.Values}
		case *FedRep:
			return x.U.RawMatrix().Data
		}
		return v
	}
	return reflect.DeepEqual(bitsOf(norm(a)), bitsOf(norm(b)))
}

// denseData is m's elements with its shape, or nil.
func denseData(m *mat.Dense) any {
	if m == nil {
		return nil
	}
	r, c := m.Dims()
	return [3]any{r, c, m.RawMatrix().Data}
}

// bitsOf replaces every float64 in v by its bits, through reflection.
func bitsOf(v any) any {
	var walk func(reflect.Value) any
	walk = func(rv reflect.Value) any {
		switch rv.Kind() {
		case reflect.Float64:
			return math.Float64bits(rv.Float())
		case reflect.Pointer, reflect.Interface:
			if rv.IsNil() {
				return nil
			}
			return walk(rv.Elem())
		case reflect.Slice, reflect.Array:
			out := make([]any, rv.Len())
			for i := range out {
				out[i] = walk(rv.Index(i))
			}
			return out
		case reflect.Struct:
			out := make([]any, rv.NumField())
			for i := range out {
				if rv.Type().Field(i).IsExported() {
					out[i] = walk(rv.Field(i))
				}
			}
			return out
		}
		return rv.Interface()
	}
	return walk(reflect.ValueOf(v))
}

// Every registered value type round-trips exactly through its canonical
// encoding, and encoding the decoded value gives the same bytes (so the
// release hash is a function of the values).
func TestEncodingRoundTrip(t *testing.T) {
	if len(kindOf) != len(valueKinds) {
		t.Errorf("%d value kinds but %d value types: two kinds share a type", len(valueKinds), len(kindOf))
	}
	for kind := range valueKinds {
		if _, ok := samples[kind]; !ok {
			t.Errorf("value kind %q has no sample in this test: add one", kind)
		}
	}
	for kind, v := range samples {
		cols := []string{"a", "b"}
		enc, hash, err := Encode(v, cols)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if hash != Hash(enc) || len(hash) != 64 {
			t.Errorf("%s: hash %q is not the SHA-256 of the encoding", kind, hash)
		}
		back, gotCols, err := Decode(enc)
		if err != nil {
			t.Fatalf("%s: decode: %v\n%s", kind, err, enc)
		}
		if reflect.TypeOf(back) != reflect.TypeOf(v) {
			t.Fatalf("%s: decoded a %T, want %T", kind, back, v)
		}
		if !sameBits(v, back) {
			t.Errorf("%s: round trip changed the values:\n have %#v\n want %#v\n%s", kind, back, v, enc)
		}
		if !reflect.DeepEqual(gotCols, cols) {
			t.Errorf("%s: columns %v, want %v", kind, gotCols, cols)
		}
		again, _, err := Encode(back, gotCols)
		if err != nil || string(again) != string(enc) {
			t.Errorf("%s: re-encoding differs:\n%s\n%s", kind, again, enc)
		}
	}
}

// The encoding is canonical: sorted keys, floats in strconv's shortest 'g'
// form, non-finite numbers as strings.
func TestEncodingIsCanonical(t *testing.T) {
	enc, _, err := Encode(&Mean{Values: []float64{0.1, 1e21, 2.5e-7, math.Copysign(0, -1), math.NaN(), math.Inf(-1)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"columns":[],"fields":{"values":[0.1,1e+21,2.5e-07,-0,"NaN","-Inf"]},"kind":"mean"}`
	if string(enc) != want {
		t.Errorf("encoding\n %s\nwant\n %s", enc, want)
	}
	for _, bad := range []string{`{`, `{"kind":"nosuch","fields":{}}`, `{"kind":"count","fields":{}}`, `{"kind":"count","fields":{"value":"x"}}`,
		`{"kind":"pca","fields":{"components":[[1,2],[3]]}}`} {
		if _, _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		}
	}
	if _, _, err := Encode(struct{}{}, nil); err == nil || !strings.Contains(err.Error(), "cannot be stored") {
		t.Errorf("an unregistered type: %v", err)
	}
}

// PublicParams is the same for the same call whatever the keyword order,
// leaves out name and dry_run, and changes with any parameter.
func TestPublicParams(t *testing.T) {
	call := func(vals map[string]any) Call {
		return Call{Func: "private_count", Dataset: Ref{Name: "people"}, Args: NewArgs(vals)}
	}
	a, err := PublicParams(call(map[string]any{"eps": 0.5, "delta": 0.0, "by": "", "name": "x", "dry_run": false}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PublicParams(call(map[string]any{"by": "", "delta": 0.0, "eps": 0.5, "name": "y", "dry_run": true}))
	if a != b {
		t.Errorf("same parameters, different encodings:\n%s\n%s", a, b)
	}
	want := `{"args":{"by":"","delta":0,"eps":0.5},"dataset":"people","function":"private_count"}`
	if a != want {
		t.Errorf("PublicParams = %s, want %s", a, want)
	}
	for _, other := range []Call{
		call(map[string]any{"eps": 0.5000000000000001, "delta": 0.0, "by": ""}),
		{Func: "private_sum", Dataset: Ref{Name: "people"}, Args: NewArgs(map[string]any{"eps": 0.5, "delta": 0.0, "by": ""})},
		{Func: "private_count", Dataset: Ref{Name: "people", Derived: &Derivation{Lineage: "people | age >= 30"}}, Args: NewArgs(map[string]any{"eps": 0.5, "delta": 0.0, "by": ""})},
	} {
		if p, _ := PublicParams(other); p == a {
			t.Errorf("%+v has the same PublicParams as the first call", other)
		}
	}
	if got := DescribeParams(a); got != `private_count on people: by="", delta=0, eps=0.5` {
		t.Errorf("DescribeParams = %q", got)
	}
}
