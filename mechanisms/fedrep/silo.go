package fedrep

// Private FedRep across silos (cross-silo federation of seed 004,
// Algorithms 2 and 1; federated.md §2.3 for the per-silo calibration).
// Each silo is a data service holding its own users; the coordinator no
// longer sees any user's message. In every round the silo runs the
// central algorithm's release on its own users alone — each user's local
// head fit and gradient, the clip to ψ, the sum, the Gaussian noise of the
// silo's OWN plan (the central σ for its data: sensitivity one user's clip
// bound, composed over the rounds by the central accountant) and the
// division by its own public number of users — and returns that noisy
// average. The coordinator takes the mean of the silos' averages and steps.
//
// So every silo's users have the full user-level (ε, δ) guarantee from the
// silo's releases alone, whatever the other silos and the coordinator do.
// The price: S silos add S independent noises. With equal silos of n/S
// users the mean's noise std per entry is √S·σ/n against σ/n for the
// central run on the pooled n users — √S times the central noise (see
// docs/mechanisms.md, Private FedRep).
//
// The normaliser: a silo divides by its own user count, which the central
// version already needs public (the plan is made with it), and the
// coordinator divides by the number of silos; no count crosses a silo's
// boundary. The mean weights silos equally, which equals the pooled
// average when the silos have equal numbers of users; the weighting is
// public and does not affect privacy.
//
// Initialisation: Algorithm 2 runs per silo in the same way (each silo
// releases its noisy average Ẑ_s with its own init budget share, the
// coordinator takes the top-k eigenvectors of the mean), or a public start
// replaces it on every silo; it needs no pooled data because Ẑ is an
// average of per-user matrices.

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// ErrRound marks a refused silo round request (out of order, the wrong
// step, a malformed broadcast). Its text holds public facts only.
var ErrRound = errors.New("fedrep: round refused")

// SiloReply is what leaves a silo in one round: its noisy average (d×d
// symmetric Ẑ_s for StepInit, d×k gradient for StepGradient), a DP release
// of the silo's users under the silo's plan.
type SiloReply struct {
	Avg *mat.Dense
}

// Rounds is the number of rounds a silo of pl answers: one for the
// private initialisation, if any, and one per step.
func (pl *Plan) Rounds() int {
	if pl.InitFromData {
		return pl.Iters + 1
	}
	return pl.Iters
}

// RequestAt is the request (step and per-step round, no U) of a run of
// pl's r-th round, r counted from 0 across both steps.
func (pl *Plan) RequestAt(r int) Request {
	if pl.InitFromData {
		if r == 0 {
			return Request{Round: 0, Step: StepInit}
		}
		r--
	}
	return Request{Round: r, Step: StepGradient}
}

// RoundIndex is the session round of req under pl: the rounds of a run
// numbered from 0 across both steps (the inverse of the silo's order).
func (pl *Plan) RoundIndex(req Request) int {
	if pl.InitFromData && req.Step == StepGradient {
		return req.Round + 1
	}
	return req.Round
}

// Silo answers the rounds of one planned run for one silo's users. It is
// not safe for concurrent use; the caller serializes a run's rounds (each
// needs the previous one's aggregate).
type Silo struct {
	pl   *Plan
	tr   federated.Transport[Request, Reply]
	src  *noise.Sampler
	next int
}

// NewSilo returns the session of the private plan pl (made by PlanRun for
// exactly these users) over users whose next round is next (0 for a new
// run). Charge pl.Cost to the silo's ledger before the first Answer.
func NewSilo(pl *Plan, users []*User, next int) (*Silo, error) {
	if pl == nil || !pl.Private {
		return nil, errors.New("fedrep: a silo needs a private plan")
	}
	ps, d, err := federated.Parties[User, Request, Reply](users, "user", "features")
	if err != nil {
		return nil, fmt.Errorf("fedrep: %w", err)
	}
	if d != pl.D || len(ps) != pl.Users {
		return nil, fmt.Errorf("fedrep: the plan is for %d users with d=%d, the silo has %d with d=%d", pl.Users, pl.D, len(ps), d)
	}
	if next < 0 || next > pl.Rounds() {
		return nil, fmt.Errorf("fedrep: a run of %d rounds cannot resume at round %d", pl.Rounds(), next)
	}
	src := pl.opt.Noise
	if src == nil {
		src = noise.New()
	}
	return &Silo{pl: pl, tr: federated.NewLocal(ps), src: src, next: next}, nil
}

// Dim is the number of features (public schema).
func (s *Silo) Dim() int { return s.pl.D }

// Next is the round the silo answers next; Done reports that it answered
// every planned round.
func (s *Silo) Next() int  { return s.next }
func (s *Silo) Done() bool { return s.next >= s.pl.Rounds() }

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRound}, a...)...)
}

// Answer answers req if it is the round the plan expects next, with the
// noise of the silo's own plan (the request carries no noise scale, batch
// or round count: those are the plan's). A refused request (ErrRound)
// reads nothing and leaves the session where it was; after any other
// error the round is spent.
func (s *Silo) Answer(ctx context.Context, req Request) (SiloReply, error) {
	pl := s.pl
	if s.Done() {
		return SiloReply{}, refuse("the run has %d rounds and all were answered", pl.Rounds())
	}
	want := pl.RequestAt(s.next)
	if req.Step != want.Step || req.Round != want.Round {
		return SiloReply{}, refuse("%v round %d asked, %v round %d is next", req.Step, req.Round, want.Step, want.Round)
	}
	if want.Step == StepGradient {
		if err := checkBroadcast(req.U, pl.D, pl.K); err != nil {
			return SiloReply{}, refuse("%v round %d: %v", want.Step, want.Round, err)
		}
		want.U = req.U
	}
	s.next++
	avg, err := pl.release(ctx, s.tr, want, s.src)
	if err != nil {
		return SiloReply{}, err
	}
	return SiloReply{Avg: avg}, nil
}

// checkBroadcast refuses a broadcast representation that is not a finite
// d×k matrix. Its values need no other check: every user's gradient is
// clipped to ψ whatever U is, so the sensitivity the plan paid for holds.
func checkBroadcast(u *mat.Dense, d, k int) error {
	if u == nil {
		return errors.New("no broadcast representation")
	}
	if r, c := u.Dims(); r != d || c != k {
		return fmt.Errorf("the broadcast representation is %d×%d, the plan's is %d×%d", r, c, d, k)
	}
	for i := range d {
		for j := range k {
			if v := u.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return errors.New("the broadcast representation has a non-finite entry")
			}
		}
	}
	return nil
}

// CoordinateSilos runs the coordinator's side of a cross-silo run over tr,
// whose providers are the silos (a Silo each, in process or behind a data
// service). pl is any silo's plan, or one made with the same options: the
// coordinator uses only its public shape (d, k, T, η, the start). It sees
// only the silos' noisy averages and takes their mean.
func (pl *Plan) CoordinateSilos(ctx context.Context, tr federated.Transport[Request, SiloReply]) (*Result, error) {
	silos := tr.Providers()
	if silos < 1 {
		return nil, errors.New("fedrep: a cross-silo run needs at least one silo")
	}
	return pl.coordinate(ctx, func(ctx context.Context, req Request) (*mat.Dense, error) {
		c := pl.K
		if req.Step == StepInit {
			c = pl.D
		}
		sum := mat.NewDense(pl.D, c, nil)
		err := tr.Round(ctx, req, func(i int, rep SiloReply) error {
			if rep.Avg == nil {
				return fmt.Errorf("silo %d sent no release", i)
			}
			if r, cc := rep.Avg.Dims(); r != pl.D || cc != c {
				return fmt.Errorf("silo %d sent a %d×%d release, expected %d×%d", i, r, cc, pl.D, c)
			}
			sum.Add(sum, rep.Avg)
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The mean of the silos' averages; clamped as a silo's average
		// is (post-processing), so the step stays finite.
		average(sum, silos)
		return sum, nil
	})
}
