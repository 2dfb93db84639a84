package release

// Matrix datasets (privnotes dataset add --matrix): one public-shape
// matrix whose private units are its entries. private_pca with method
// "ppm-entry" and private_low_rank run the entry-level private power
// method of Hardt and Price (2014), Figure 3 and Corollaries 4.3/4.7
// (mechanisms/pca ppm_entry.go, lra.go). Spec: power_methods.md §2, §6.
//
// Neighbours replace one entry (and its mirror, for a symmetric matrix) by
// any value in [−B, B], B the registered entry bound, so an entry moves by
// at most 2B: the mechanisms are calibrated with Change = 2B. A
// rectangular M (m×n) is analysed through S = [[0, M], [Mᵀ, 0]]; one entry
// of M is one mirror pair of S, the same relation. S has eigenpairs
// ±s_i, (u_i; ±v_i)/√2, so a rank-k question about M is a rank-2k one
// about S, mapped back by post-processing (rectangularPCA, rectangularLRA).

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/dsl/catalog"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/pca"
)

// matrixFuncs are the functions that take a matrix dataset, and the
// private_pca method that does.
var fnLowRank = catalog.PrivateLowRank.Name

const matrixPCAMethod = pca.MethodPPMEntry

// whyEntryScaled is why ppm-entry's and private_low_rank's releases carry
// no interval.
const whyEntryScaled = "the noise of each product is scaled by the largest entry of its iterate (‖X‖_∞), which the run draws, and the released directions' error depends on the data's eigengap; no interval follows from the plan's public parameters"

// checkKind refuses, before anything is planned or charged, a function
// on the wrong kind of dataset: row functions on a matrix dataset and
// matrix functions on row data (registered, derived or synthetic).
func checkKind(call Call) error {
	src := call.Dataset
	matrix := src.Schema.IsMatrix() || src.Derived != nil && src.Derived.ParentSchema.IsMatrix()
	wantsMatrix := call.Func == fnLowRank
	if call.Func == catalog.PrivatePCA.Name && call.Args != nil {
		m, _ := call.Args.Vals["method"].(string)
		wantsMatrix = m == matrixPCAMethod || matrix && m == "auto"
	}
	switch {
	case matrix && src.Derived != nil:
		return Errorf(NameArgumentError, "%s: dataset %q is a matrix dataset, which cannot be filtered or have columns selected: call the function on dataset(%q) itself", call.Func, src.Name, src.Name)
	case matrix && !wantsMatrix:
		if call.Func == catalog.PrivatePCA.Name {
			return Errorf(NameArgumentError, "%s: dataset %q is a matrix dataset (entry-level neighbours); private_pca takes it with method=%q only (the other methods take row datasets); or use private_low_rank", call.Func, src.Name, matrixPCAMethod)
		}
		return Errorf(NameArgumentError, "%s takes a row dataset, and %q is a matrix dataset (entry-level neighbours): use private_pca(ds, method=%q) or private_low_rank(ds, k=...) on it", call.Func, src.Name, matrixPCAMethod)
	case !matrix && wantsMatrix:
		what := call.Func
		if call.Func == catalog.PrivatePCA.Name {
			what = fmt.Sprintf("%s with method=%q", catalog.PrivatePCA.Name, matrixPCAMethod)
		}
		return Errorf(NameArgumentError, "%s takes a matrix dataset (registered with privnotes dataset add --matrix), and %q is a row dataset: use private_pca with a row method (npm, gauss, adaptive, ...)", what, src.Name)
	}
	return nil
}

// matrixDim is the dimension the mechanisms iterate on and the number of
// components they compute for k requested ones.
func matrixDim(ms *ledger.MatrixShape, k int) (dim, kk int) {
	if ms.Symmetric {
		return ms.Rows, k
	}
	return ms.Rows + ms.Cols, 2 * k
}

// stringArg is a string keyword a function may not have (private_pca
// has no noise keyword): def when absent.
func stringArg(a *Args, name, def string) string {
	if s, ok := a.Vals[name].(string); ok && s != "" {
		return s
	}
	return def
}

// planEntry plans private_pca(method="ppm-entry") and private_low_rank on
// a matrix dataset. It reads no data.
func planEntry(env *Local, fn string, src Ref, a *Args) (*Plan, error) {
	sc := src.Schema
	ms := sc.Matrix
	if ms == nil {
		return nil, Errorf(NameDatasetError, "%s: dataset %q is registered as a matrix without its shape: run `privnotes ledger verify`", fn, src.Name)
	}
	for _, kw := range []string{"neighbour", "clip", "providers", "sparsity", "pad", "gap"} {
		if a.Given[kw] {
			return nil, Errorf(NameArgumentError, "%s: %s= is for row datasets; matrix dataset %q is bounded entrywise (|entry| ≤ %g) and its neighbours differ in one entry: leave it out", fn, kw, src.Name, ms.EntryBound)
		}
	}
	k := a.Int("k")
	dim, kk := matrixDim(ms, k)
	if k < 1 || (!ms.Symmetric && k > min(ms.Rows, ms.Cols)) || kk > dim {
		return nil, Errorf(NameArgumentError, "%s: k=%d: use 1 ≤ k ≤ %d for this %d×%d matrix", fn, k, maxK(ms), ms.Rows, ms.Cols)
	}
	eps, delta := a.Float("eps"), a.Float("delta")
	noiseKind := stringArg(a, "noise", "gaussian")
	laplace := noiseKind == "laplace"
	if !laplace && delta == 0 {
		return nil, Errorf(NameArgumentError, "%s: delta=0: Gaussian noise needs δ > 0 (e.g. delta=1e-6); give noise=\"laplace\" for the pure-ε variant", fn)
	}
	if laplace && delta != 0 {
		return nil, Errorf(NameArgumentError, "%s: noise=\"laplace\" is pure ε-DP: leave delta out (or give delta=0)", fn)
	}
	calib, err := pca.ParseCalibration(stringArg(a, "calibration", "zcdp"))
	if err != nil {
		return nil, argErr(fn, err)
	}
	opt := pca.EntryOptions{K: kk, Iters: a.Int("iters"), Eps: eps, Delta: delta, Calibration: calib,
		Bound: ms.EntryBound, Change: 2 * ms.EntryBound, Laplace: laplace, Noise: env.sampler()}
	var pl *pca.EntryPlan
	if fn == fnLowRank {
		pl, err = pca.PlanLowRank(opt, dim)
	} else {
		// p = 2k columns where they fit (the spec's recommendation, §6).
		opt.Oversample = min(kk, dim-kk)
		pl, err = pca.PlanPPMEntry(opt, dim)
	}
	if err != nil {
		return nil, argErr(fn, err)
	}
	p := &Plan{Func: fn, Eps: eps, Delta: delta, Method: "pca/" + pl.Method, Cost: pl.Cost, HasValues: true,
		Columns: componentRows(sc),
		Params: publicParams(a, map[string]any{"method": pl.Method, "neighbour": ledger.NeighbourEntry, "noise": noiseKind,
			"entry_bound": ms.EntryBound, "symmetric": ms.Symmetric, "p": pl.P, "iters": pl.Iters})}
	// The last product's noise is scaled by its iterate's largest entry,
	// itself a noisy release: no width is fixed by the plan.
	p.Params[ErrorParam] = noIntervalModel(whyEntryScaled)
	if laplace {
		p.Noise = fmt.Sprintf("discrete Laplace, ε=%.4g per release, scale %.4g·‖X‖_∞ per entry (ℓ1 sensitivity 2·p·2B, B=%g), %d releases of a %d×%d product", pl.StepEps, (pl.Sensitivity+pl.RoundingExcess)/pl.StepEps, ms.EntryBound, pl.Releases, dim, pl.P)
	} else {
		p.Noise = fmt.Sprintf("Gaussian, multiplier %.4g, std ≈ %.4g·‖X‖_∞ per entry (ℓ2 sensitivity √2·√p·2B, B=%g), %d releases of a %d×%d product", pl.NoiseMultiplier, (pl.Sensitivity+pl.RoundingExcess)*pl.NoiseMultiplier, ms.EntryBound, pl.Releases, dim, pl.P)
	}
	p.Note = pl.Note
	// The matrix is read whole (its shape is public): it, its symmetric
	// form, and the iterates of width k+p.
	p.setMemory(add(memFixed, mul(i64(ms.Rows), i64(ms.Cols), 8, 3), mul(i64(dim), i64(dim), 8, 2), mul(i64(dim), i64(kk+pl.P), 8, 8)),
		fmt.Sprintf("the %d×%d matrix and its %d×%d symmetric form", ms.Rows, ms.Cols, dim, dim), "Use a smaller matrix dataset")
	if !ms.Symmetric {
		p.Note += fmt.Sprintf("; the %d×%d matrix M runs as the %d×%d symmetric [[0, M], [Mᵀ, 0]] with %d components, mapped back to k=%d left and right singular vectors", ms.Rows, ms.Cols, dim, dim, kk, k)
	}
	p.run = func(ctx context.Context, data *Data) (any, error) {
		x, err := matrixOf(ctx, data.Rows)
		if err != nil {
			return nil, err
		}
		s, err := symmetricOf(x, ms)
		if err != nil {
			return nil, err
		}
		r, err := pl.Run(ctx, s)
		if err != nil {
			return nil, err
		}
		switch {
		case fn == fnLowRank && ms.Symmetric:
			return &LowRank{Components: r.Components, Values: r.Values, Matrix: r.LowRank}, nil
		case fn == fnLowRank:
			return rectangularLRA(r.LowRank, ms, k)
		case ms.Symmetric:
			return &PCA{Components: r.Components, Values: r.Values}, nil
		}
		return rectangularPCA(r, ms, k)
	}
	return p, nil
}

func maxK(ms *ledger.MatrixShape) int {
	if ms.Symmetric {
		return ms.Rows
	}
	return min(ms.Rows, ms.Cols)
}

// symmetricOf is the matrix the mechanisms run on: the stored symmetric
// matrix (its upper triangle; registration checked the symmetry), or
// [[0, M], [Mᵀ, 0]] for a rectangular M.
func symmetricOf(x *mat.Dense, ms *ledger.MatrixShape) (*mat.SymDense, error) {
	r, c := x.Dims()
	if r != ms.Rows || c != ms.Cols {
		return nil, fmt.Errorf("release: the stored matrix does not have its registered shape")
	}
	if ms.Symmetric {
		s := mat.NewSymDense(r, nil)
		for i := 0; i < r; i++ {
			for j := i; j < r; j++ {
				s.SetSym(i, j, x.At(i, j))
			}
		}
		return s, nil
	}
	s := mat.NewSymDense(r+c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s.SetSym(i, r+j, x.At(i, j))
		}
	}
	return s, nil
}

// rectangularPCA maps a PPM-entry run on [[0, M], [Mᵀ, 0]] back to M: the
// 2k-column basis spans ≈ {(u_i; 0), (0; v_i)}, so the top k left singular
// vectors of its first m rows estimate M's left singular vectors and
// those of its last n rows the right ones. The values come in pairs ±s_i
// (the run reports |λ|): every second one estimates s_i. Post-processing.
func rectangularPCA(r *pca.EntryResult, ms *ledger.MatrixShape, k int) (*PCA, error) {
	m, n := ms.Rows, ms.Cols
	basis := r.Components
	left, _, err := topSingular(basis.Slice(0, m, 0, 2*k), k)
	if err != nil {
		return nil, err
	}
	right, _, err := topSingular(basis.Slice(m, m+n, 0, 2*k), k)
	if err != nil {
		return nil, err
	}
	vals := make([]float64, k)
	for i := range vals {
		vals[i] = r.Values[2*i]
	}
	return &PCA{Components: left, Right: right, Values: vals}, nil
}

// rectangularLRA maps B ≈ S (rank ≤ 4k) back to M: the top-right block
// and the transposed bottom-left block both approximate M; their mean is
// the released m×n approximation, and its top-k singular triplets the
// components and values. Post-processing.
func rectangularLRA(b *mat.Dense, ms *ledger.MatrixShape, k int) (*LowRank, error) {
	m, n := ms.Rows, ms.Cols
	approx := mat.NewDense(m, n, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			approx.Set(i, j, (b.At(i, m+j)+b.At(m+j, i))/2)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(approx, mat.SVDThin) {
		return nil, fmt.Errorf("release: no SVD of the low-rank approximation")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	left := mat.DenseCopyOf(u.Slice(0, m, 0, k))
	right := mat.DenseCopyOf(v.Slice(0, n, 0, k))
	alignSigns(left, right)
	return &LowRank{Components: left, Right: right, Values: svd.Values(nil)[:k], Matrix: approx}, nil
}

// topSingular returns the top k left singular vectors of x, each with its
// largest-magnitude entry positive, and the singular values.
func topSingular(x mat.Matrix, k int) (*mat.Dense, []float64, error) {
	var svd mat.SVD
	if !svd.Factorize(x, mat.SVDThin) {
		return nil, nil, fmt.Errorf("release: no SVD")
	}
	var u mat.Dense
	svd.UTo(&u)
	r, _ := u.Dims()
	out := mat.DenseCopyOf(u.Slice(0, r, 0, k))
	alignSigns(out, nil)
	return out, svd.Values(nil)[:k], nil
}

// alignSigns makes the largest-magnitude entry of each column of a
// positive, flipping the same column of b (a singular pair) with it.
func alignSigns(a, b *mat.Dense) {
	r, c := a.Dims()
	for j := 0; j < c; j++ {
		best := 0.0
		for i := 0; i < r; i++ {
			if v := a.At(i, j); math.Abs(v) > math.Abs(best) {
				best = v
			}
		}
		if best >= 0 {
			continue
		}
		for i := 0; i < r; i++ {
			a.Set(i, j, -a.At(i, j))
		}
		if b != nil {
			br, _ := b.Dims()
			for i := 0; i < br; i++ {
				b.Set(i, j, -b.At(i, j))
			}
		}
	}
}

// componentRows names the rows of a matrix release's components: the
// columns of a symmetric matrix, r1..rm for the left vectors of a
// rectangular M.
func componentRows(sc ledger.Schema) []string {
	if sc.Matrix != nil && !sc.Matrix.Symmetric {
		out := make([]string, sc.Matrix.Rows)
		for i := range out {
			out[i] = "r" + strconv.Itoa(i+1)
		}
		return out
	}
	return append([]string(nil), sc.Columns...)
}
