// Package wire converts between the execution core's types (dsl/release)
// and the data service's protobuf messages (api/privnotes/v1), in both
// directions: the server decodes calls and encodes releases, a client
// encodes calls and decodes releases.
//
// Decoding a request checks it against the DSL's function table
// (dsl/syntax): every keyword present with its table type, in range, no
// other keyword. A request is untrusted input; it can fail only with an
// ArgumentError naming what is wrong.
package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Limits of a request: the DSL's own values are far below them.
const (
	MaxName   = 256  // function, dataset and call id lengths
	MaxString = 4096 // one string argument
	MaxCell   = 1 << 16
	MaxStrs   = 1024    // elements of a []string argument
	MaxQuery  = 1 << 16 // a private_sql query's text
	MaxFloats = 1024    // elements of a list of numbers (weights=)
	MaxKeys   = 64      // group keys of a keys= map
	MaxCells  = 1 << 16 // values of one key in keys=
)

// queryArg is the argument under which a function that names its dataset
// in its query (private_sql) carries the query text: the positional
// argument, which the runtime records among the call's arguments.
const queryArg = "query"

// anyKinds says what each keyword of type any that a request may carry
// holds on the wire (private_sql's): keys= a Keys map, weights= a list of
// numbers, and from= nothing, since a public table never leaves the
// client. Each may also be unset (nil).
var anyKinds = map[string]string{"keys": "keys", "weights": "floats", "from": "none"}

// EncodeCall is a call as a request. Synthetic and derived data never
// leave the client (the caller refuses them first).
func EncodeCall(c release.Call) (*pb.CallRequest, error) {
	req := &pb.CallRequest{CallId: c.ID, Function: c.Func, Dataset: c.Dataset.Name, Cell: c.Cell, Args: map[string]*pb.Value{}}
	if c.Args == nil {
		return nil, release.Errorf(release.NameArgumentError, "%s: no arguments", c.Func)
	}
	for k, v := range c.Args.Vals {
		var pv *pb.Value
		switch x := v.(type) {
		case int:
			pv = &pb.Value{Kind: &pb.Value_Int{Int: int64(x)}}
		case float64:
			pv = &pb.Value{Kind: &pb.Value_Float{Float: x}}
		case string:
			pv = &pb.Value{Kind: &pb.Value_Str{Str: x}}
		case bool:
			pv = &pb.Value{Kind: &pb.Value_Bool{Bool: x}}
		case []string:
			pv = &pb.Value{Kind: &pb.Value_Strs{Strs: &pb.Strings{Values: x}}}
		case nil:
			pv = &pb.Value{Kind: &pb.Value_None{None: true}}
		case []float64:
			pv = &pb.Value{Kind: &pb.Value_Floats{Floats: &pb.Floats{Values: x}}}
		case map[string]any:
			ks, err := encodeKeys(x)
			if err != nil {
				return nil, release.Errorf(release.NameArgumentError, "%s: keyword %s: %v", c.Func, k, err)
			}
			pv = &pb.Value{Kind: &pb.Value_Keys{Keys: ks}}
		default:
			return nil, release.Errorf(release.NameArgumentError, "%s: keyword %s: a %T cannot be sent to a data service", c.Func, k, v)
		}
		req.Args[k] = pv
	}
	for k, g := range c.Args.Given {
		if g {
			req.Given = append(req.Given, k)
		}
	}
	sort.Strings(req.Given)
	return req, nil
}

// DecodeCall checks a request against the function table and returns its
// function, dataset name and arguments. The caller resolves the dataset in
// its own registry.
func DecodeCall(req *pb.CallRequest) (fn, dataset string, args *release.Args, err error) {
	bad := func(format string, a ...any) error {
		return release.Errorf(release.NameArgumentError, "request: "+format, a...)
	}
	if req == nil {
		return "", "", nil, bad("empty")
	}
	fn, dataset = req.GetFunction(), req.GetDataset()
	switch {
	case len(fn) > MaxName || len(dataset) > MaxName || len(req.GetCallId()) > MaxName:
		return "", "", nil, bad("a name is longer than %d bytes", MaxName)
	case len(req.GetCell()) > MaxCell:
		return "", "", nil, bad("cell label longer than %d bytes", MaxCell)
	case dataset == "":
		return "", "", nil, bad("no dataset")
	}
	f, ok := catalog.Lookup(fn)
	if !ok || !f.Private {
		return "", "", nil, release.Errorf(release.NameNotAvailable, "%q is not a private function of this server's build", fn)
	}
	args = release.NewArgs(nil) // filled below: every keyword is sent, and which were given
	for k, v := range req.GetArgs() {
		if k == queryArg && f.DatasetFrom == catalog.DatasetFromQuery {
			x, ok := v.GetKind().(*pb.Value_Str)
			if !ok || len(x.Str) > MaxQuery {
				return "", "", nil, bad("%s: the query must be a string of at most %d bytes", fn, MaxQuery)
			}
			args.Vals[k] = x.Str
			continue
		}
		p, ok := f.Keyword(k)
		if !ok {
			return "", "", nil, bad("%s has no keyword %q (client and server versions differ?)", fn, k)
		}
		x, err := decodeValue(p, v)
		if err != nil {
			return "", "", nil, bad("%s: keyword %s: %v", fn, k, err)
		}
		args.Vals[k] = x
	}
	if _, ok := args.Vals[queryArg]; !ok && f.DatasetFrom == catalog.DatasetFromQuery {
		return "", "", nil, bad("%s: no query", fn)
	}
	for _, p := range f.Keywords {
		if _, ok := args.Vals[p.Name]; !ok {
			return "", "", nil, bad("%s: keyword %s is missing (a client sends every keyword, defaults included; client and server versions differ?)", fn, p.Name)
		}
	}
	for _, k := range req.GetGiven() {
		if _, ok := f.Keyword(k); !ok {
			return "", "", nil, bad("%s: given keyword %q is not one of its keywords", fn, k)
		}
		args.Given[k] = true
	}
	return fn, dataset, args, nil
}

func decodeValue(p *catalog.Param, v *pb.Value) (any, error) {
	switch p.Type {
	case "int":
		x, ok := v.GetKind().(*pb.Value_Int)
		if !ok {
			return nil, fmt.Errorf("want an integer")
		}
		if x.Int > math.MaxInt32 || x.Int < math.MinInt32 {
			return nil, fmt.Errorf("%d is out of range", x.Int)
		}
		return int(x.Int), nil
	case "float":
		x, ok := v.GetKind().(*pb.Value_Float)
		if !ok {
			return nil, fmt.Errorf("want a number")
		}
		if math.IsNaN(x.Float) || math.IsInf(x.Float, 0) {
			return nil, fmt.Errorf("want a finite number")
		}
		return x.Float, nil
	case "string":
		x, ok := v.GetKind().(*pb.Value_Str)
		if !ok {
			return nil, fmt.Errorf("want a string")
		}
		if len(x.Str) > MaxString {
			return nil, fmt.Errorf("longer than %d bytes", MaxString)
		}
		if len(p.Choices) > 0 {
			for _, c := range p.Choices {
				if c == x.Str {
					return x.Str, nil
				}
			}
			return nil, fmt.Errorf("%q is not one of %q", x.Str, p.Choices)
		}
		return x.Str, nil
	case "bool":
		x, ok := v.GetKind().(*pb.Value_Bool)
		if !ok {
			return nil, fmt.Errorf("want a bool")
		}
		return x.Bool, nil
	case "[]string":
		x, ok := v.GetKind().(*pb.Value_Strs)
		if !ok {
			return nil, fmt.Errorf("want a list of strings")
		}
		vals := x.Strs.GetValues()
		if len(vals) > MaxStrs {
			return nil, fmt.Errorf("more than %d strings", MaxStrs)
		}
		for _, s := range vals {
			if len(s) > MaxString {
				return nil, fmt.Errorf("a string longer than %d bytes", MaxString)
			}
		}
		return append([]string{}, vals...), nil
	case "any":
		return decodeAny(p.Name, v)
	}
	return nil, fmt.Errorf("keywords of type %s cannot be sent", p.Type)
}

// decodeAny decodes a keyword of type any as anyKinds says it travels, in
// the canonical form the runtime gives it locally (keys= a map of []any
// of float64, string or nil; weights= []float64), so that the server
// plans and records exactly what a local call would.
func decodeAny(name string, v *pb.Value) (any, error) {
	kind, ok := anyKinds[name]
	if !ok {
		return nil, fmt.Errorf("keywords of type any cannot be sent")
	}
	if _, ok := v.GetKind().(*pb.Value_None); ok {
		return nil, nil
	}
	switch kind {
	case "floats":
		x, ok := v.GetKind().(*pb.Value_Floats)
		if !ok {
			return nil, fmt.Errorf("want a list of numbers or nothing")
		}
		vals := x.Floats.GetValues()
		if len(vals) > MaxFloats {
			return nil, fmt.Errorf("more than %d numbers", MaxFloats)
		}
		for _, f := range vals {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("want finite numbers")
			}
		}
		return append([]float64{}, vals...), nil
	case "keys":
		x, ok := v.GetKind().(*pb.Value_Keys)
		if !ok {
			return nil, fmt.Errorf("want a map of key values or nothing")
		}
		return decodeKeys(x.Keys)
	}
	return nil, fmt.Errorf("only a public table's client holds it: it is never sent")
}

// encodeKeys is keys= (map[string]any of []any, canonicalized by the
// runtime) as a Keys message.
func encodeKeys(m map[string]any) (*pb.Keys, error) {
	out := &pb.Keys{Keys: make(map[string]*pb.Cells, len(m))}
	for name, l := range m {
		vals, ok := l.([]any)
		if !ok {
			return nil, fmt.Errorf("key %q: a %T cannot be sent (a list of strings or numbers)", name, l)
		}
		cells, err := encodeCells(vals)
		if err != nil {
			return nil, fmt.Errorf("key %q: %v", name, err)
		}
		out.Keys[name] = cells
	}
	return out, nil
}

func decodeKeys(k *pb.Keys) (map[string]any, error) {
	if len(k.GetKeys()) > MaxKeys {
		return nil, fmt.Errorf("more than %d keys", MaxKeys)
	}
	out := make(map[string]any, len(k.GetKeys()))
	for name, cells := range k.GetKeys() {
		if len(name) > MaxName {
			return nil, fmt.Errorf("a key name longer than %d bytes", MaxName)
		}
		if len(cells.GetValues()) > MaxCells {
			return nil, fmt.Errorf("key %q: more than %d values", name, MaxCells)
		}
		vals, err := decodeCells(cells)
		if err != nil {
			return nil, fmt.Errorf("key %q: %v", name, err)
		}
		out[name] = vals
	}
	return out, nil
}

// encodeCells carries scalars that are float64, string or nil.
func encodeCells(vals []any) (*pb.Cells, error) {
	out := &pb.Cells{Values: make([]*pb.Cell, len(vals))}
	for i, x := range vals {
		switch x := x.(type) {
		case nil:
			out.Values[i] = &pb.Cell{Kind: &pb.Cell_Null{Null: true}}
		case float64:
			out.Values[i] = &pb.Cell{Kind: &pb.Cell_Num{Num: x}}
		case string:
			out.Values[i] = &pb.Cell{Kind: &pb.Cell_Str{Str: x}}
		default:
			return nil, fmt.Errorf("a %T cannot be sent (strings, numbers or nil)", x)
		}
	}
	return out, nil
}

// decodeCells is encodeCells' inverse; strings are bounded as string
// arguments are.
func decodeCells(c *pb.Cells) ([]any, error) {
	out := make([]any, len(c.GetValues()))
	for i, x := range c.GetValues() {
		switch k := x.GetKind().(type) {
		case *pb.Cell_Null:
		case *pb.Cell_Num:
			out[i] = k.Num
		case *pb.Cell_Str:
			if len(k.Str) > MaxString {
				return nil, fmt.Errorf("a string longer than %d bytes", MaxString)
			}
			out[i] = k.Str
		default:
			return nil, fmt.Errorf("value %d is empty", i)
		}
	}
	return out, nil
}

// EncodeSchema and DecodeSchema carry a public schema as its JSON.
func EncodeSchema(s ledger.Schema) ([]byte, error) { return json.Marshal(s) }

// DecodeSchema is EncodeSchema's inverse.
func DecodeSchema(b []byte) (ledger.Schema, error) {
	var s ledger.Schema
	err := json.Unmarshal(b, &s)
	return s, err
}

// Event converts a cost.
func Event(e accounting.Event) *pb.Event {
	return &pb.Event{Mechanism: e.Mechanism, Kind: e.Kind.String(), Eps: e.Eps, Delta: e.Delta, Rho: e.Rho, Mu: e.Mu, Gaussian: e.Gaussian}
}

// EventOf is Event's inverse.
func EventOf(e *pb.Event) (accounting.Event, error) {
	k, err := accounting.ParseKind(e.GetKind())
	if err != nil {
		return accounting.Event{}, err
	}
	return accounting.Event{Mechanism: e.GetMechanism(), Kind: k, Eps: e.GetEps(), Delta: e.GetDelta(), Rho: e.GetRho(), Mu: e.GetMu(), Gaussian: e.GetGaussian()}, nil
}

// Plan converts a plan.
func Plan(p *release.Plan) (*pb.PlanReply, error) {
	params, err := json.Marshal(p.Params)
	if err != nil {
		return nil, err
	}
	return &pb.PlanReply{Function: p.Func, Method: p.Method, Cost: Event(p.Cost), Eps: p.Eps, Delta: p.Delta,
		Noise: p.Noise, Note: p.Note, Columns: p.Columns, HasValues: p.HasValues, ParamsJson: params}, nil
}

// PlanOf is Plan's inverse: a plan without a run, which only its server
// can execute.
func PlanOf(r *pb.PlanReply) (*release.Plan, error) {
	ev, err := EventOf(r.GetCost())
	if err != nil {
		return nil, err
	}
	p := &release.Plan{Func: r.GetFunction(), Method: r.GetMethod(), Cost: ev, Eps: r.GetEps(), Delta: r.GetDelta(),
		Noise: r.GetNoise(), Note: r.GetNote(), Columns: r.GetColumns(), HasValues: r.GetHasValues()}
	if err := unmarshalParams(r.GetParamsJson(), &p.Params); err != nil {
		return nil, err
	}
	return p, nil
}

func unmarshalParams(b []byte, into *map[string]any) error {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, into)
}

// Receipt converts a receipt. Block is the client's: it is not sent.
func Receipt(r *release.Receipt) (*pb.Receipt, error) {
	params, err := json.Marshal(r.Params)
	if err != nil {
		return nil, err
	}
	return &pb.Receipt{Dataset: r.Dataset, Function: r.Function, Mechanism: r.Mechanism, Eps: r.Eps, Delta: r.Delta,
		Cost: Event(r.Cost), Accountant: r.Accountant, NoiseScale: r.NoiseScale, Note: r.Note, Charged: r.Charged,
		LedgerId: r.LedgerID, Remaining: &pb.Budget{Eps: r.Remaining.Eps, Delta: r.Remaining.Delta}, ParamsJson: params, DryRun: r.DryRun, Filter: r.Filter,
		Name: r.Name, Replayed: r.Replayed, ReleaseHash: r.ReleaseHash}, nil
}

// ReceiptOf is Receipt's inverse.
func ReceiptOf(r *pb.Receipt) (*release.Receipt, error) {
	if r == nil {
		return nil, fmt.Errorf("no receipt")
	}
	ev, err := EventOf(r.GetCost())
	if err != nil {
		return nil, err
	}
	out := &release.Receipt{Dataset: r.GetDataset(), Function: r.GetFunction(), Mechanism: r.GetMechanism(), Eps: r.GetEps(), Delta: r.GetDelta(),
		Cost: ev, NoiseScale: r.GetNoiseScale(), Note: r.GetNote(), Charged: r.GetCharged(), DryRun: r.GetDryRun(),
		Charge: release.Charge{Accountant: r.GetAccountant(), Filter: r.GetFilter(), LedgerID: r.GetLedgerId(),
			Remaining: accounting.Budget{Eps: r.GetRemaining().GetEps(), Delta: r.GetRemaining().GetDelta()}},
		Name: r.GetName(), Replayed: r.GetReplayed(), ReleaseHash: r.GetReleaseHash()}
	if err := unmarshalParams(r.GetParamsJson(), &out.Params); err != nil {
		return nil, err
	}
	return out, nil
}

func matrix(m *mat.Dense) *pb.Matrix {
	if m == nil {
		return nil
	}
	r, c := m.Dims()
	if r == 0 || c == 0 {
		return &pb.Matrix{}
	}
	return &pb.Matrix{Rows: int64(r), Cols: int64(c), Data: mat.DenseCopyOf(m).RawMatrix().Data}
}

func matrixOf(m *pb.Matrix) (*mat.Dense, error) {
	if m == nil {
		return nil, nil
	}
	r, c := m.GetRows(), m.GetCols()
	if r == 0 || c == 0 {
		return &mat.Dense{}, nil
	}
	if r < 0 || c < 0 || r > math.MaxInt32 || c > math.MaxInt32 || int64(len(m.GetData())) != r*c {
		return nil, fmt.Errorf("a %d×%d matrix with %d values", r, c, len(m.GetData()))
	}
	return mat.NewDense(int(r), int(c), append([]float64(nil), m.GetData()...)), nil
}

// Release converts a release.
func Release(rel *release.Release) (*pb.ReleaseReply, error) {
	rc, err := Receipt(rel.Receipt)
	if err != nil {
		return nil, err
	}
	out := &pb.ReleaseReply{Receipt: rc, Columns: rel.Columns}
	switch v := rel.Value.(type) {
	case *release.PCA:
		sup := make([]int64, len(v.Support))
		for i, s := range v.Support {
			sup[i] = int64(s)
		}
		out.Value = &pb.ReleaseReply_Pca{Pca: &pb.PCA{Components: matrix(v.Components), Values: v.Values, Support: sup, Right: matrix(v.Right), Gap: v.Gap,
			Center: v.Center, TotalVariance: v.TotalVariance}}
	case *release.LowRank:
		out.Value = &pb.ReleaseReply_LowRank{LowRank: &pb.LowRank{Components: matrix(v.Components), Right: matrix(v.Right), Values: v.Values, Matrix: matrix(v.Matrix)}}
	case *release.FedRep:
		out.Value = &pb.ReleaseReply_Fedrep{Fedrep: &pb.FedRep{U: matrix(v.U)}}
	case *release.Count:
		out.Value = &pb.ReleaseReply_Count{Count: &pb.Scalar{Value: v.Value}}
	case *release.Mean:
		// The noisy sums and counts travel too: the client computes the
		// mean's interval from them (they were released with the mean).
		out.Value = &pb.ReleaseReply_Mean{Mean: &pb.Vector{Values: v.Values, Sums: v.Sums, Counts: v.Counts}}
	case *release.Sum:
		out.Value = &pb.ReleaseReply_Sum{Sum: &pb.Scalar{Value: v.Value}}
	case *release.Histogram:
		out.Value = &pb.ReleaseReply_Histogram{Histogram: &pb.Histogram{Keys: v.Keys, Counts: v.Counts}}
	case *release.Quantile:
		out.Value = &pb.ReleaseReply_Quantile{Quantile: &pb.Quantile{Q: v.Q, Value: v.Value}}
	case *release.Table:
		t, err := table(v)
		if err != nil {
			return nil, err
		}
		out.Value = &pb.ReleaseReply_Table{Table: t}
	case *release.Groups:
		out.Value = &pb.ReleaseReply_Groups{Groups: &pb.Groups{Stat: v.Stat, Column: v.Column, By: v.By, Keys: v.Keys, Values: v.Values, Sums: v.Sums, Counts: v.Counts}}
	default:
		return nil, fmt.Errorf("a release of type %T has no wire form", rel.Value)
	}
	return out, nil
}

// ReleaseOf is Release's inverse.
func ReleaseOf(r *pb.ReleaseReply) (*release.Release, error) {
	rc, err := ReceiptOf(r.GetReceipt())
	if err != nil {
		return nil, err
	}
	out := &release.Release{Receipt: rc, Columns: r.GetColumns()}
	switch v := r.GetValue().(type) {
	case *pb.ReleaseReply_Pca:
		m, err := matrixOf(v.Pca.GetComponents())
		if err != nil {
			return nil, err
		}
		var sup []int
		for _, s := range v.Pca.GetSupport() {
			sup = append(sup, int(s))
		}
		right, err := matrixOf(v.Pca.GetRight())
		if err != nil {
			return nil, err
		}
		out.Value = &release.PCA{Components: m, Values: v.Pca.GetValues(), Support: sup, Right: right, Gap: v.Pca.GetGap(),
			Center: v.Pca.GetCenter(), TotalVariance: v.Pca.GetTotalVariance()}
	case *pb.ReleaseReply_LowRank:
		var ms [3]*mat.Dense
		for i, m := range []*pb.Matrix{v.LowRank.GetComponents(), v.LowRank.GetRight(), v.LowRank.GetMatrix()} {
			if ms[i], err = matrixOf(m); err != nil {
				return nil, err
			}
		}
		out.Value = &release.LowRank{Components: ms[0], Right: ms[1], Values: v.LowRank.GetValues(), Matrix: ms[2]}
	case *pb.ReleaseReply_Fedrep:
		m, err := matrixOf(v.Fedrep.GetU())
		if err != nil {
			return nil, err
		}
		out.Value = &release.FedRep{U: m}
	case *pb.ReleaseReply_Count:
		out.Value = &release.Count{Value: v.Count.GetValue()}
	case *pb.ReleaseReply_Mean:
		out.Value = &release.Mean{Values: v.Mean.GetValues(), Sums: v.Mean.GetSums(), Counts: v.Mean.GetCounts()}
	case *pb.ReleaseReply_Sum:
		out.Value = &release.Sum{Value: v.Sum.GetValue()}
	case *pb.ReleaseReply_Histogram:
		out.Value = &release.Histogram{Keys: v.Histogram.GetKeys(), Counts: v.Histogram.GetCounts()}
	case *pb.ReleaseReply_Quantile:
		out.Value = &release.Quantile{Q: v.Quantile.GetQ(), Value: v.Quantile.GetValue()}
	case *pb.ReleaseReply_Groups:
		g := v.Groups
		out.Value = &release.Groups{Stat: g.GetStat(), Column: g.GetColumn(), By: g.GetBy(), Keys: g.GetKeys(), Values: g.GetValues(), Sums: g.GetSums(), Counts: g.GetCounts()}
	case *pb.ReleaseReply_Table:
		t, err := tableOf(v.Table)
		if err != nil {
			return nil, err
		}
		out.Value = t
	default:
		return nil, fmt.Errorf("a release without a value")
	}
	return out, nil
}

// table converts a private_sql table: its cells, kinds and the noisy
// parts its intervals are computed from.
func table(t *release.Table) (*pb.Table, error) {
	out := &pb.Table{Columns: t.Columns, Kinds: t.Kinds, Rows: make([]*pb.Cells, len(t.Rows))}
	for i, r := range t.Rows {
		cells, err := encodeCells(r)
		if err != nil {
			return nil, fmt.Errorf("table row %d: %v", i, err)
		}
		out.Rows[i] = cells
	}
	if len(t.Parts) > 0 {
		out.Parts = make(map[string]*pb.TableParts, len(t.Parts))
		for c, p := range t.Parts {
			tp := &pb.TableParts{Vectors: make([]*pb.Floats, len(p))}
			for k, v := range p {
				tp.Vectors[k] = &pb.Floats{Values: v}
			}
			out.Parts[c] = tp
		}
	}
	return out, nil
}

// tableOf is table's inverse. It checks the shape a client relies on to
// display the table: kinds for every column, every row as wide. The parts
// are taken as the server's release holds them.
func tableOf(t *pb.Table) (*release.Table, error) {
	out := &release.Table{Columns: t.GetColumns(), Kinds: t.GetKinds(), Rows: make([][]any, len(t.GetRows()))}
	if len(out.Kinds) != len(out.Columns) {
		return nil, fmt.Errorf("a table of %d columns with %d kinds", len(out.Columns), len(out.Kinds))
	}
	for i, r := range t.GetRows() {
		cells, err := decodeCells(r)
		if err != nil {
			return nil, fmt.Errorf("table row %d: %v", i, err)
		}
		if len(cells) != len(out.Columns) {
			return nil, fmt.Errorf("table row %d has %d cells, not %d", i, len(cells), len(out.Columns))
		}
		out.Rows[i] = cells
	}
	if len(t.GetParts()) > 0 {
		out.Parts = make(map[string][][]float64, len(t.GetParts()))
		for c, p := range t.GetParts() {
			vecs := make([][]float64, len(p.GetVectors()))
			for k, v := range p.GetVectors() {
				vecs[k] = append([]float64{}, v.GetValues()...)
			}
			out.Parts[c] = vecs
		}
	}
	return out, nil
}
