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
	MaxStrs   = 1024 // elements of a []string argument
)

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
	}
	return nil, fmt.Errorf("keywords of type %s cannot be sent", p.Type)
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
	default:
		return nil, fmt.Errorf("a release without a value")
	}
	return out, nil
}
