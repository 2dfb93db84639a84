package federated

// The DPS-PCA data provider (seed 003; federated.md §1.3 steps 3 and the
// initialisation of §1.4): it holds its records and releases only noisy
// second-moment statistics of them.

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// PCAStep names what a DPS-PCA round asks the providers to release.
type PCAStep int

const (
	// StepDiag: the noisy diagonal of Σ_x x xᵀ (d×1), for the private
	// initialisation's coordinate selection (federated.md §1.4, step 1).
	StepDiag PCAStep = iota + 1
	// StepBlock: the noisy principal sub-block of Σ_x x xᵀ on the rows and
	// columns Support (ŝ×ŝ, symmetric noise), for the initial basis (§1.4,
	// step 3).
	StepBlock
	// StepProduct: the noisy product Σ_x x xᵀ Q + G_j (d×k), one power
	// iteration (§1.3 step 3).
	StepProduct
)

func (s PCAStep) String() string {
	switch s {
	case StepDiag:
		return "diag"
	case StepBlock:
		return "block"
	case StepProduct:
		return "product"
	}
	return fmt.Sprintf("PCAStep(%d)", int(s))
}

// PCARequest is the coordinator's message of one DPS-PCA round. Every field
// is public: the round number, the step, the broadcast basis Q (itself a DP
// release or a public start), the selected support, and the noise std the
// provider must add.
type PCARequest struct {
	Round int
	Step  PCAStep
	// Q is the broadcast d×k basis (StepProduct only).
	Q *mat.Dense
	// Support lists the selected coordinates, increasing (StepBlock only).
	Support []int
	// Sigma is the per-entry standard deviation of the provider's Gaussian
	// noise, in units of the unnormalised sum Σ_x (0 only in the
	// non-private baseline).
	Sigma float64
}

// PCAReply is what leaves provider j in one round: its public record count
// n_j and the noisy unnormalised statistic n_j·H_j (federated.md §1.3:
// H_j = Σ̂_j Q + G_j/n_j, so n_j·H_j = Σ_{x∈S_j} x xᵀ Q + G_j). Sending n_j·H_j
// rather than H_j is the same information and lets a provider with no
// records take part without dividing by zero.
type PCAReply struct {
	Count int
	Value *mat.Dense
}

// PCAProvider is a DPS-PCA data provider. It holds a reference to its
// records and its own noise source; nothing but PCAReply values leaves it.
//
// Row rule (public): a row is scaled by min(1, 1/‖x‖) so that it enters with
// norm at most 1 (federated.md §1.3 "pre", required by the privacy proof);
// a row holding NaN or ±Inf is replaced by zero. The records are not
// centred: the estimand is the uncentred second moment (003:L190).
type PCAProvider struct {
	x     *mat.Dense
	scale []float64 // per-row factor applied on the fly; the caller's matrix is never modified
	d     int
	noise *noise.Sampler
}

// NewPCAProvider returns a provider over the rows of x (kept by reference;
// the caller must not modify x while the provider is in use). s is the
// provider's noise source; nil means noise.New(), the cryptographic sampler.
// Seeded samplers are for tests and public benchmarks only. Each provider
// must have its own source.
func NewPCAProvider(x *mat.Dense, s *noise.Sampler) (*PCAProvider, error) {
	if x == nil || x.IsEmpty() {
		return nil, errors.New("federated: a PCA provider needs a data matrix with at least one column")
	}
	n, d := x.Dims()
	if s == nil {
		s = noise.New()
	}
	p := &PCAProvider{x: x, scale: make([]float64, n), d: d, noise: s}
	for i := range n {
		p.scale[i] = unitScale(x.RawRowView(i))
	}
	return p, nil
}

// unitScale returns min(1, 1/‖a‖), or 0 for a row with a non-finite entry.
func unitScale(a []float64) float64 {
	big := 0.0
	for _, v := range a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		big = math.Max(big, math.Abs(v))
	}
	if big == 0 {
		return 1
	}
	var ss float64
	for _, v := range a {
		q := v / big
		ss += q * q
	}
	nrm := big * math.Sqrt(ss)
	if nrm <= 1 {
		return 1
	}
	// Rounding could leave s·‖a‖ a hair above 1; shrink by one ulp-scale step.
	return (1 / nrm) * (1 - 1e-15)
}

// Dim returns the number of columns d (public schema).
func (p *PCAProvider) Dim() int { return p.d }

// Answer implements Provider.
func (p *PCAProvider) Answer(ctx context.Context, req PCARequest) (PCAReply, error) {
	if err := ctx.Err(); err != nil {
		return PCAReply{}, err
	}
	if !(req.Sigma >= 0) || math.IsInf(req.Sigma, 0) {
		return PCAReply{}, fmt.Errorf("round %d: noise std %v is not a finite number ≥ 0", req.Round, req.Sigma)
	}
	n, _ := p.x.Dims()
	switch req.Step {
	case StepDiag:
		v := mat.NewDense(p.d, 1, nil)
		out := v.RawMatrix().Data
		for i := range n {
			s2 := p.scale[i] * p.scale[i]
			if s2 == 0 {
				continue
			}
			for j, a := range p.x.RawRowView(i) {
				out[j] += s2 * a * a
			}
		}
		p.noise.AddGaussianMatrix(v, req.Sigma)
		return PCAReply{Count: n, Value: v}, nil
	case StepBlock:
		sup := req.Support
		for t, j := range sup {
			if j < 0 || j >= p.d || (t > 0 && sup[t-1] >= j) {
				return PCAReply{}, fmt.Errorf("round %d: support must list distinct coordinates in [0, %d) in increasing order", req.Round, p.d)
			}
		}
		s := len(sup)
		if s == 0 {
			return PCAReply{}, fmt.Errorf("round %d: empty support", req.Round)
		}
		sub := make([]float64, n*s)
		for i := range n {
			if p.scale[i] == 0 {
				continue // dropped row: NaN·0 would still be NaN
			}
			row := p.x.RawRowView(i)
			for t, j := range sup {
				sub[i*s+t] = p.scale[i] * row[j]
			}
		}
		c := blas64.Symmetric{N: s, Stride: s, Uplo: blas.Upper, Data: make([]float64, s*s)}
		blas64.Syrk(blas.Trans, 1, blas64.General{Rows: n, Cols: s, Stride: s, Data: sub}, 0, c)
		v := mat.NewDense(s, s, c.Data)
		// Upper triangle noised, lower mirrored (the input's lower triangle is ignored).
		if req.Sigma > 0 {
			p.noise.AddSymmetricGaussian(v, req.Sigma)
		} else {
			for i := range s {
				for j := range i {
					c.Data[i*s+j] = c.Data[j*s+i]
				}
			}
		}
		return PCAReply{Count: n, Value: v}, nil
	case StepProduct:
		if req.Q == nil {
			return PCAReply{}, fmt.Errorf("round %d: no broadcast basis", req.Round)
		}
		qd, k := req.Q.Dims()
		if qd != p.d {
			return PCAReply{}, fmt.Errorf("round %d: broadcast basis has %d rows, provider data have %d columns", req.Round, qd, p.d)
		}
		v := p.covTimes(req.Q, k)
		p.noise.AddGaussianMatrix(v, req.Sigma)
		return PCAReply{Count: n, Value: v}, nil
	}
	return PCAReply{}, fmt.Errorf("round %d: unknown step %v", req.Round, req.Step)
}

// covTimes returns Σ_i s_i² x_i x_iᵀ Q without forming the d×d second
// moment, in one pass over the rows: each row is read once for its k dot
// products and its k updates while it is in cache. The pass is split over
// the cores with a fixed merge order (mechanisms/internal/rowpass), so the
// result is reproducible for a given number of cores.
func (p *PCAProvider) covTimes(q *mat.Dense, k int) *mat.Dense {
	n, d := p.x.Dims()
	qt := make([]float64, k*d) // Qᵀ: one contiguous column of Q per row
	for i := range d {
		for j := range k {
			qt[j*d+i] = q.At(i, j)
		}
	}
	opt := rowpass.Options{MinRows: max(256, 65536/max(d, 1))}
	acc := rowpass.Reduce(n, opt,
		func() []float64 { return make([]float64, k*d) },
		func(yt []float64, lo, hi int) {
			for i := lo; i < hi; i++ {
				s2 := p.scale[i] * p.scale[i]
				if s2 == 0 {
					continue // dropped row (non-finite entry)
				}
				a := p.x.RawRowView(i)
				for j := range k {
					w := s2 * floats.Dot(a, qt[j*d:(j+1)*d])
					floats.AddScaled(yt[j*d:(j+1)*d], w, a)
				}
			}
		},
		func(into, from []float64) { floats.Add(into, from) })
	out := mat.NewDense(d, k, nil)
	for j := range k {
		for i := range d {
			out.Set(i, j, acc[j*d+i])
		}
	}
	return out
}
