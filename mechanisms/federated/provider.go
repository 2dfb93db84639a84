package federated

// The DPS-PCA data provider (seed 003; federated.md §1.3 steps 3 and the
// initialisation of §1.4): it holds its records and releases only noisy
// second-moment statistics of them.

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
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

// PCAReply is what leaves provider j in one round: its record count n_j
// (0 when withheld, as a Session withholds it: the coordinator then
// aggregates the unnormalised sums, see pcaCoordinator.round) and the
// noisy unnormalised statistic n_j·H_j (federated.md §1.3:
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
// a row holding NaN or ±Inf is replaced by zero. The records are not centred: the estimand is the
// uncentred second moment (003:L190).
//
// Every reply is one pass over the records (one Scan of the source): the
// scale of each row is computed from the row as it arrives and kept by no
// one, so the provider holds at most a chunk of rows whatever its record
// count, which it learns, for PCAReply.Count, by counting the rows of the
// pass.
type PCAProvider struct {
	src   rows.Source
	d     int
	noise *noise.Sampler
}

// NewPCAProvider returns a provider over the rows of x (kept by reference;
// the caller must not modify x while the provider is in use):
// NewPCAProviderSource over rows.FromDense(x), with the record limit
// checked here, before any value is read. s is the provider's noise
// source; nil means noise.New(), the cryptographic sampler. Seeded
// samplers are for tests and public benchmarks only. Each provider must
// have its own source.
func NewPCAProvider(x *mat.Dense, s *noise.Sampler) (*PCAProvider, error) {
	if x == nil || x.IsEmpty() {
		return nil, errors.New("federated: a PCA provider needs a data matrix with at least one column")
	}
	if n, _ := x.Dims(); n > MaxRows {
		return nil, errTooManyRecords
	}
	return NewPCAProviderSource(rows.FromDense(x), s)
}

// NewPCAProviderSource returns a provider over the rows of src, which it
// scans once per reply; the rows must not change while the provider is in
// use, and src must allow concurrent scans if it is shared with providers
// that answer concurrently (as RoundRobin's parts share their parent). s
// is as for NewPCAProvider.
//
// A source with no rows answers exactly as one holding a single zero row
// would: Count 1 and zero sums, plus the noise. That is what a provider
// left without rows by a round-robin split has always been given (a matrix
// cannot have zero rows), and it keeps every provider's count ≥ 1.
// A source that knows its row count (rows.RandomAccess) is refused here
// above MaxRows; any other fails the first reply that streams more.
func NewPCAProviderSource(src rows.Source, s *noise.Sampler) (*PCAProvider, error) {
	if src == nil || src.Dim() < 1 {
		return nil, errors.New("federated: a PCA provider needs a data source with at least one column")
	}
	if ra, ok := src.(rows.RandomAccess); ok && ra.NumRows() > MaxRows {
		return nil, errTooManyRecords
	}
	if s == nil {
		s = noise.New()
	}
	return &PCAProvider{src: src, d: src.Dim(), noise: s}, nil
}

// errTooManyRecords refuses a provider over more than MaxRows records. The
// data registry refuses such data sets; the message names the public
// limit, not n.
var errTooManyRecords = errors.New("federated: a PCA provider holds at most federated.MaxRows = 2^30 records, the most the privacy accounting covers: split the data set")

// unitScale returns min(1, 1/‖a‖), or 0 for a row with a non-finite entry.
func unitScale(a []float64) float64 {
	// Most rows lie inside the unit ball: the cheap certified test skips
	// the exact norm there.
	if linalg.InsideBall(a, 1) {
		return 1
	}
	big, rel, ok := linalg.ScaledNorm(a) // ‖a‖ = big·rel
	if !ok {
		return 0
	}
	if big == 0 {
		return 1
	}
	nrm := big * rel
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
	switch req.Step {
	case StepDiag:
		sq, n, err := p.rows().SumSquares(ctx)
		if err != nil {
			return PCAReply{}, passError(req.Round, err)
		}
		v := mat.NewDense(p.d, 1, sq)
		p.noise.AddGaussianMatrix(v, req.Sigma)
		return PCAReply{Count: count(n), Value: v}, nil
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
		c, n, err := p.rows().Gram(ctx, sup)
		if err != nil {
			return PCAReply{}, passError(req.Round, err)
		}
		v := mat.NewDense(s, s, c)
		// Upper triangle noised, lower mirrored (the input's lower triangle is ignored).
		if req.Sigma > 0 {
			p.noise.AddSymmetricGaussian(v, req.Sigma)
		} else {
			for i := range s {
				for j := range i {
					c[i*s+j] = c[j*s+i]
				}
			}
		}
		return PCAReply{Count: count(n), Value: v}, nil
	case StepProduct:
		if req.Q == nil {
			return PCAReply{}, fmt.Errorf("round %d: no broadcast basis", req.Round)
		}
		if qd, _ := req.Q.Dims(); qd != p.d {
			return PCAReply{}, fmt.Errorf("round %d: broadcast basis has %d rows, provider data have %d columns", req.Round, qd, p.d)
		}
		v, n, err := p.covTimes(ctx, req.Q)
		if err != nil {
			return PCAReply{}, passError(req.Round, err)
		}
		p.noise.AddGaussianMatrix(v, req.Sigma)
		return PCAReply{Count: count(n), Value: v}, nil
	}
	return PCAReply{}, fmt.Errorf("round %d: unknown step %v", req.Round, req.Step)
}

// count is the record count a reply carries for a pass over n rows: n,
// or 1 for no rows, which answer as one zero row (see
// NewPCAProviderSource): a zero row adds nothing to any sum.
func count(n int) int { return max(n, 1) }

// passError is a reply's error for a failed pass: the row limit with its
// fixed message, otherwise the source's or ctx's error with the public
// round number.
func passError(round int, err error) error {
	if errors.Is(err, linalg.ErrTooManyRows) {
		return errTooManyRecords
	}
	return fmt.Errorf("round %d: %w", round, err)
}

// rows returns the provider's records with their row rule as the shared
// row kernels: every released sum is one pass over the source accumulated
// in the fixed pairwise order of rowpass.Pairwise, bit identical for every
// core count and batching, with the rounding budgets that PCAPlan charges
// (see roundingExcesses).
func (p *PCAProvider) rows() linalg.Rows {
	return linalg.Rows{Src: p.src, Scale: unitScale, Pass: rowpass.Options{MinRows: linalg.MinRowsFor(p.d)}}
}

// covTimes returns Σ_i s_i² x_i x_iᵀ Q without forming the d×d second
// moment, in one pass over the rows (linalg.Rows.CovTimes), and the
// number of rows read.
func (p *PCAProvider) covTimes(ctx context.Context, q *mat.Dense) (*mat.Dense, int, error) {
	return p.rows().CovTimes(ctx, q)
}
