package federated

// The provider's side of one DPS-PCA run when the provider does not trust
// the coordinator (seed 003; federated.md §1.2 "what the server sees",
// §1.4): a data service answering a remote coordinator. The coordinator
// sends rounds; the provider answers each planned round once, with the
// noise std of its OWN plan (never one the request names), after checking
// that the request is the round its plan expects and that the broadcast
// basis keeps the sensitivity the plan calibrated for. Its record count is
// withheld: the aggregation does not need it (see PCAReply).

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ErrRound marks a refused round request: out of order, the wrong step,
// a malformed support or basis. Its text holds public facts only (the
// request and the plan).
var ErrRound = errors.New("federated: round refused")

// maxBasisGrowth bounds the Gershgorin bound of QᵀQ a broadcast basis may
// have: an orthonormal basis from the coordinator's QR is within about
// d·1e-16 of 1; anything further is not a coordinator's basis.
const maxBasisGrowth = 1 + 1e-6

// Session answers the rounds of one planned DPS-PCA run for one provider.
// It is not safe for concurrent use; the caller serializes a run's rounds
// (they are sequential by construction: each needs the previous aggregate).
type Session struct {
	pl   *PCAPlan
	p    *PCAProvider
	next int
}

// NewSession returns the session of plan pl over provider p whose next
// round is next (0 for a new run; a resumed run continues after the
// rounds it already answered). pl must be private and its dimension p's.
func NewSession(pl *PCAPlan, p *PCAProvider, next int) (*Session, error) {
	if pl == nil || !pl.Private || p == nil {
		return nil, errors.New("federated: a session needs a private plan and a provider")
	}
	if pl.D != p.Dim() {
		return nil, fmt.Errorf("federated: the plan is for d=%d, the provider's data have %d columns", pl.D, p.Dim())
	}
	if next < 0 || next > pl.Rounds() {
		return nil, fmt.Errorf("federated: a run of %d rounds cannot resume at round %d", pl.Rounds(), next)
	}
	return &Session{pl: pl, p: p, next: next}, nil
}

// Rounds is the number of rounds a run of pl answers: the two
// initialisation releases (private start) and one per power step.
func (pl *PCAPlan) Rounds() int {
	if pl.InitFromData {
		return pl.Iters + 2
	}
	return pl.Iters
}

// StepOf is the step round r of a run of pl asks for.
func (pl *PCAPlan) StepOf(r int) PCAStep {
	if pl.InitFromData {
		switch r {
		case 0:
			return StepDiag
		case 1:
			return StepBlock
		}
	}
	return StepProduct
}

// Next is the round the session answers next; Done reports that it
// answered every planned round.
func (s *Session) Next() int  { return s.next }
func (s *Session) Done() bool { return s.next >= s.pl.Rounds() }

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRound}, a...)...)
}

// Answer answers req if it is the round the plan expects next. The noise
// std is the plan's; the request's Sigma is ignored. A refused request
// (ErrRound) reads nothing and leaves the session where it was; any other
// error comes from the pass over the records, after which the round is
// spent (the session does not answer it again).
func (s *Session) Answer(ctx context.Context, req PCARequest) (PCAReply, error) {
	pl := s.pl
	if s.Done() {
		return PCAReply{}, refuse("the run has %d rounds and all were answered", pl.Rounds())
	}
	if req.Round != s.next {
		return PCAReply{}, refuse("round %d asked, round %d is next", req.Round, s.next)
	}
	want := pl.StepOf(req.Round)
	if req.Step != want {
		return PCAReply{}, refuse("round %d is a %v round, not %v", req.Round, want, req.Step)
	}
	own := PCARequest{Round: req.Round, Step: want}
	switch want {
	case StepDiag:
		own.Sigma = pl.DiagStd
	case StepBlock:
		if len(req.Support) != pl.Sparsity {
			return PCAReply{}, refuse("round %d: the support lists %d coordinates, the plan's sparsity is %d", req.Round, len(req.Support), pl.Sparsity)
		}
		for t, j := range req.Support {
			if j < 0 || j >= pl.D || (t > 0 && req.Support[t-1] >= j) {
				return PCAReply{}, refuse("round %d: the support must list distinct coordinates in [0, %d) in increasing order", req.Round, pl.D)
			}
		}
		own.Support, own.Sigma = req.Support, pl.BlockStd
	case StepProduct:
		q, err := checkBasis(req.Q, pl.D, pl.K)
		if err != nil {
			return PCAReply{}, refuse("round %d: %v", req.Round, err)
		}
		own.Q, own.Sigma = q, pl.StepStd
	}
	s.next++
	rep, err := s.p.Answer(ctx, own)
	if err != nil {
		return PCAReply{}, err
	}
	rep.Count = 0 // withheld: the coordinator's aggregation is scale-free
	return rep, nil
}

// checkBasis returns the broadcast basis the provider multiplies by: q if
// its columns are orthonormal up to rounding, scaled by 1/√g where g ≥ 1
// is the Gershgorin bound of qᵀq, so that ‖q‖₂ ≤ 1 and ‖q‖_F ≤ √k hold
// exactly as the step sensitivity min(√2, √k) assumes (stepSensitivity).
// Every provider receives the same q and scales it the same way, so the
// aggregate is scaled by one factor, which the coordinator's QR ignores.
// A basis far from orthonormal, of the wrong shape or not finite is
// refused: a coordinator that sent it could read more than the plan paid.
func checkBasis(q *mat.Dense, d, k int) (*mat.Dense, error) {
	if q == nil {
		return nil, errors.New("no broadcast basis")
	}
	if r, c := q.Dims(); r != d || c != k {
		return nil, fmt.Errorf("the broadcast basis is %d×%d, the plan's is %d×%d", r, c, d, k)
	}
	raw := q.RawMatrix()
	for i := range d {
		for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+k] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, errors.New("the broadcast basis has a non-finite entry")
			}
		}
	}
	var g mat.Dense
	g.Mul(q.T(), q)
	bound := 0.0
	for i := range k {
		row := 0.0
		for j := range k {
			row += math.Abs(g.At(i, j))
		}
		bound = math.Max(bound, row)
	}
	if !(bound <= maxBasisGrowth) {
		return nil, errors.New("the broadcast basis does not have orthonormal columns")
	}
	if bound <= 1 {
		return q, nil
	}
	out := mat.DenseCopyOf(q)
	// Scale a hair below 1/√bound so that rounding cannot leave it above.
	out.Scale((1/math.Sqrt(bound))*(1-1e-15), out)
	return out, nil
}
