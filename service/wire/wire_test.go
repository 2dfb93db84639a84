package wire

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"
	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/syntax"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// validRequest is a private_pca request with every keyword.
func validRequest() *pb.CallRequest {
	f, _ := syntax.Lookup("private_pca")
	req := &pb.CallRequest{CallId: "c1", Function: "private_pca", Dataset: "tab", Cell: "[1]", Args: map[string]*pb.Value{}}
	for _, p := range f.Keywords {
		var v *pb.Value
		switch p.Type {
		case "int":
			v = &pb.Value{Kind: &pb.Value_Int{Int: 1}}
		case "float":
			v = &pb.Value{Kind: &pb.Value_Float{Float: 0.5}}
		case "string":
			s := ""
			if len(p.Choices) > 0 {
				s = p.Choices[0]
			}
			v = &pb.Value{Kind: &pb.Value_Str{Str: s}}
		case "bool":
			v = &pb.Value{Kind: &pb.Value_Bool{Bool: false}}
		}
		req.Args[p.Name] = v
	}
	req.Given = []string{"eps", "k"}
	return req
}

func TestDecodeCall(t *testing.T) {
	fn, ds, args, err := DecodeCall(validRequest())
	if err != nil || fn != "private_pca" || ds != "tab" || args.Int("k") != 1 || args.Float("eps") != 0.5 || !args.Given["eps"] {
		t.Fatalf("valid request: %s %s %+v %v", fn, ds, args, err)
	}
	cases := []struct {
		name string
		edit func(r *pb.CallRequest)
		want string
	}{
		{"not private", func(r *pb.CallRequest) { r.Function = "dataset" }, release.NameNotAvailable},
		{"unknown function", func(r *pb.CallRequest) { r.Function = "os_exec" }, release.NameNotAvailable},
		{"no dataset", func(r *pb.CallRequest) { r.Dataset = "" }, release.NameArgumentError},
		{"unknown keyword", func(r *pb.CallRequest) { r.Args["sigma"] = &pb.Value{Kind: &pb.Value_Float{Float: 1}} }, release.NameArgumentError},
		{"missing keyword", func(r *pb.CallRequest) { delete(r.Args, "eps") }, release.NameArgumentError},
		{"wrong type", func(r *pb.CallRequest) { r.Args["k"] = &pb.Value{Kind: &pb.Value_Float{Float: 2}} }, release.NameArgumentError},
		{"NaN", func(r *pb.CallRequest) { r.Args["eps"] = &pb.Value{Kind: &pb.Value_Float{Float: math.NaN()}} }, release.NameArgumentError},
		{"huge int", func(r *pb.CallRequest) { r.Args["k"] = &pb.Value{Kind: &pb.Value_Int{Int: 1 << 40}} }, release.NameArgumentError},
		{"bad choice", func(r *pb.CallRequest) { r.Args["method"] = &pb.Value{Kind: &pb.Value_Str{Str: "exact"}} }, release.NameArgumentError},
		{"empty value", func(r *pb.CallRequest) { r.Args["k"] = &pb.Value{} }, release.NameArgumentError},
		{"given unknown", func(r *pb.CallRequest) { r.Given = append(r.Given, "n") }, release.NameArgumentError},
	}
	for _, c := range cases {
		r := validRequest()
		c.edit(r)
		_, _, _, err := DecodeCall(r)
		var e *release.Error
		if !errors.As(err, &e) || e.Name != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}

// TestRoundTrip: a call and every release type survive encoding.
func TestRoundTrip(t *testing.T) {
	_, _, args, err := DecodeCall(validRequest())
	if err != nil {
		t.Fatal(err)
	}
	req, err := EncodeCall(release.Call{ID: "c1", Func: "private_pca", Dataset: release.Ref{Name: "tab"}, Args: args, Cell: "[1]"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, back, err := DecodeCall(req)
	if err != nil || !reflect.DeepEqual(back.Vals, args.Vals) || !reflect.DeepEqual(back.Given, args.Given) {
		t.Errorf("call round trip: %+v, %v; want %+v", back, err, args)
	}
	rc := &release.Receipt{Dataset: "tab", Function: "private_pca", Mechanism: "pca/gauss", Eps: 0.5, Delta: 1e-6,
		Cost: accounting.GaussianZcdpFor(0.5, 1e-6), NoiseScale: "σ = 1", Charged: true,
		Charge: release.Charge{Accountant: "gdp", Filter: "GDP filter μ=0.2472", LedgerID: 7, Remaining: accounting.Budget{Eps: 1, Delta: 1e-5}},
		Params: map[string]any{"k": 2.0, "method": "gauss"},
		Name:   "pcs", Replayed: true, ReleaseHash: "9bb7705a971a"}
	rc.Cost.Mechanism = "pca/gauss"
	values := []any{
		&release.PCA{Components: mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6}), Values: []float64{3, 1}, Support: []int{0, 2}},
		&release.PCA{Components: mat.NewDense(3, 1, []float64{0.6, 0.8, 0}), Values: []float64{2}, Right: mat.NewDense(2, 1, []float64{1, 0})},
		&release.PCA{Components: mat.NewDense(2, 1, []float64{0.6, 0.8}), Values: []float64{2}, Gap: 0.25},
		&release.PCA{Components: mat.NewDense(2, 1, []float64{0.6, 0.8}), Values: []float64{2}, Center: []float64{1.5, -0.25}, TotalVariance: 3},
		&release.LowRank{Components: mat.NewDense(3, 1, []float64{0.6, 0.8, 0}), Right: mat.NewDense(2, 1, []float64{0, 1}), Values: []float64{2},
			Matrix: mat.NewDense(3, 2, []float64{0, 1.2, 0, 1.6, 0, 0})},
		&release.LowRank{Components: mat.NewDense(2, 1, []float64{0.6, 0.8}), Values: []float64{2}, Matrix: mat.NewDense(2, 2, []float64{0.72, 0.96, 0.96, 1.28})},
		&release.FedRep{U: mat.NewDense(2, 1, []float64{0.6, 0.8})},
		&release.Count{Value: 41.5},
		&release.Mean{Values: []float64{1, -2}},
		&release.Sum{Value: 9},
		&release.Histogram{Keys: []string{"a", "other"}, Counts: []float64{3, 4}},
		&release.Quantile{Q: 0.5, Value: 2},
		&release.Groups{Stat: "mean", Column: "x", By: "g", Keys: []string{"a", "other"}, Values: []float64{1, 2}},
		// A mean's noisy parts travel with it (its interval needs them).
		&release.Mean{Values: []float64{1.5}, Sums: []float64{30.5}, Counts: []float64{20.25}},
		&release.Groups{Stat: "mean", Column: "x", By: "g", Keys: []string{"a", "other"}, Values: []float64{1, 2}, Sums: []float64{10, 2.5}, Counts: []float64{10, 1.25}},
		// A private_sql table: string, number and NULL keys, values as
		// released (non-finite ones too), and an AVG's noisy parts.
		&release.Table{Columns: []string{"region", "band", "n", "avg_income"}, Kinds: []string{"key", "key", "count", "avg"},
			Rows:  [][]any{{"north", 3.0, 12.5, 41000.0}, {nil, 4.0, -0.75, math.Inf(1)}},
			Parts: map[string][][]float64{"avg_income": {{12.25, -0.5}, {1500, 20}}}},
		&release.Table{Columns: []string{"n"}, Kinds: []string{"count"}, Rows: [][]any{{7.0}}},
	}
	for _, v := range values {
		rel := &release.Release{Value: v, Receipt: rc, Columns: []string{"x1", "x2", "x3"}}
		r, err := Release(rel)
		if err != nil {
			t.Fatal(err)
		}
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2 := &pb.ReleaseReply{}
		if err := proto.Unmarshal(b, r2); err != nil {
			t.Fatal(err)
		}
		got, err := ReleaseOf(r2)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, rel) {
			t.Errorf("%T: round trip\n got %+v\nwant %+v", v, got, rel)
		}
	}
}

// FuzzDecodeCall: any bytes a client sends either fail to parse or decode
// to a call whose every keyword has its table type, or to an error;
// nothing panics.
func FuzzDecodeCall(f *testing.F) {
	b, _ := proto.Marshal(validRequest())
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("\x12\x0bprivate_pca\x1a\x03tab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &pb.CallRequest{}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		fn, _, args, err := DecodeCall(req)
		if err != nil {
			var e *release.Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without a DSL name: %v", err)
			}
			return
		}
		f, ok := syntax.Lookup(fn)
		if !ok || !f.Private {
			t.Fatalf("decoded a call of %q", fn)
		}
		for _, p := range f.Keywords {
			v, ok := args.Vals[p.Name]
			if !ok {
				t.Fatalf("keyword %s missing", p.Name)
			}
			var typed bool
			switch p.Type {
			case "int":
				_, typed = v.(int)
			case "float":
				x, isF := v.(float64)
				typed = isF && !math.IsNaN(x) && !math.IsInf(x, 0)
			case "string":
				_, typed = v.(string)
			case "bool":
				_, typed = v.(bool)
			case "[]string":
				_, typed = v.([]string)
			case "any": // private_sql's keys=, weights= and from=
				switch x := v.(type) {
				case nil:
					typed = true
				case []float64:
					typed = p.Name == "weights"
				case map[string]any:
					typed = p.Name == "keys"
					for _, l := range x {
						_, isList := l.([]any)
						typed = typed && isList
					}
				}
			}
			if !typed {
				t.Fatalf("keyword %s: %T for type %s", p.Name, v, p.Type)
			}
		}
	})
}

// sqlRequest is a private_sql request with every keyword, as a client
// sends it for `FROM srv.people`.
func sqlRequest(t *testing.T) (*pb.CallRequest, *release.Args) {
	t.Helper()
	f, _ := syntax.Lookup("private_sql")
	args := release.NewArgs(nil)
	for _, p := range f.Keywords {
		switch p.Type {
		case "int":
			args.Vals[p.Name] = 1
		case "float":
			args.Vals[p.Name] = 0.5
		case "string":
			args.Vals[p.Name] = ""
		case "bool":
			args.Vals[p.Name] = false
		case "any":
			args.Vals[p.Name] = nil
		}
	}
	args.Vals["query"] = "SELECT region, COUNT(*) FROM srv.people GROUP BY region"
	args.Vals["keys"] = map[string]any{"region": []any{"north", 2.0, nil}}
	args.Vals["weights"] = []float64{1, 3}
	args.Given["eps"], args.Given["keys"] = true, true
	req, err := EncodeCall(release.Call{ID: "c1", Func: "private_sql", Dataset: release.Ref{Name: "people"}, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return req, args
}

// TestSQLCall: a private_sql call's query, keys= (strings, numbers and
// NULL), weights= and unset keywords survive encoding in the canonical
// forms the planner reads; what a request may not carry is refused.
func TestSQLCall(t *testing.T) {
	req, args := sqlRequest(t)
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	req2 := &pb.CallRequest{}
	if err := proto.Unmarshal(b, req2); err != nil {
		t.Fatal(err)
	}
	fn, ds, back, err := DecodeCall(req2)
	if err != nil || fn != "private_sql" || ds != "people" || !reflect.DeepEqual(back.Vals, args.Vals) || !reflect.DeepEqual(back.Given, args.Given) {
		t.Fatalf("round trip: %s %s %+v %v\nwant %+v", fn, ds, back, err, args)
	}
	cases := []struct {
		name string
		edit func(r *pb.CallRequest)
	}{
		{"no query", func(r *pb.CallRequest) { delete(r.Args, "query") }},
		{"query not a string", func(r *pb.CallRequest) { r.Args["query"] = &pb.Value{Kind: &pb.Value_Int{Int: 1}} }},
		{"query too long", func(r *pb.CallRequest) {
			r.Args["query"] = &pb.Value{Kind: &pb.Value_Str{Str: string(make([]byte, MaxQuery+1))}}
		}},
		{"from a table", func(r *pb.CallRequest) { r.Args["from"] = &pb.Value{Kind: &pb.Value_Strs{Strs: &pb.Strings{}}} }},
		{"keys as floats", func(r *pb.CallRequest) { r.Args["keys"] = &pb.Value{Kind: &pb.Value_Floats{Floats: &pb.Floats{}}} }},
		{"weights as keys", func(r *pb.CallRequest) { r.Args["weights"] = &pb.Value{Kind: &pb.Value_Keys{Keys: &pb.Keys{}}} }},
		{"NaN weight", func(r *pb.CallRequest) {
			r.Args["weights"] = &pb.Value{Kind: &pb.Value_Floats{Floats: &pb.Floats{Values: []float64{math.NaN()}}}}
		}},
		{"empty key value", func(r *pb.CallRequest) {
			r.Args["keys"] = &pb.Value{Kind: &pb.Value_Keys{Keys: &pb.Keys{Keys: map[string]*pb.Cells{"region": {Values: []*pb.Cell{{}}}}}}}
		}},
		{"query on another function", func(r *pb.CallRequest) {
			r.Function = "private_count"
		}},
	}
	for _, c := range cases {
		r, _ := sqlRequest(t)
		c.edit(r)
		_, _, _, err := DecodeCall(r)
		var e *release.Error
		if !errors.As(err, &e) || e.Name != release.NameArgumentError {
			t.Errorf("%s: %v, want an ArgumentError", c.name, err)
		}
	}
	// keys= of a form the runtime did not canonicalize is refused on the
	// client, naming the keyword.
	_, args = sqlRequest(t)
	args.Vals["keys"] = map[string]any{"region": []int{1}}
	if _, err := EncodeCall(release.Call{Func: "private_sql", Dataset: release.Ref{Name: "people"}, Args: args}); err == nil {
		t.Error("keys of []int encoded")
	}
}

// TestTableShape: a table whose rows or kinds do not match its columns
// is refused on the client.
func TestTableShape(t *testing.T) {
	bad := []*pb.Table{
		{Columns: []string{"a", "b"}, Kinds: []string{"key"}},
		{Columns: []string{"a"}, Kinds: []string{"count"}, Rows: []*pb.Cells{{Values: []*pb.Cell{{Kind: &pb.Cell_Num{Num: 1}}, {Kind: &pb.Cell_Num{Num: 2}}}}}},
		{Columns: []string{"a"}, Kinds: []string{"count"}, Rows: []*pb.Cells{{Values: []*pb.Cell{{}}}}},
	}
	for i, tb := range bad {
		if _, err := tableOf(tb); err == nil {
			t.Errorf("table %d decoded", i)
		}
	}
}
