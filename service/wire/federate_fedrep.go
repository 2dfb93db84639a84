package wire

import (
	"fmt"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
)

// A private_fedrep round travels in the FedRound messages: round is the
// round's index across both steps (fedrep.Plan.RoundIndex), step "init"
// or "gradient", basis the broadcast representation U, and the reply's
// value the silo's noisy average.

// EncodeFedRepRound is round index of a federated private_fedrep call as a
// request.
func EncodeFedRepRound(call release.Call, index int, req fedrep.Request) (*pb.FedRoundRequest, error) {
	c, err := EncodeCall(call)
	if err != nil {
		return nil, err
	}
	return &pb.FedRoundRequest{Call: c, Round: int64(index), Step: req.Step.String(), Basis: matrix(req.U)}, nil
}

// DecodeFedRepRound checks a private_fedrep round request and returns its
// index and the silo's request, whose per-step round the server derives
// from its own plan (a Silo checks it against its order).
func DecodeFedRepRound(r *pb.FedRoundRequest) (index int, step fedrep.Step, u *pb.Matrix, err error) {
	bad := func(format string, a ...any) (int, fedrep.Step, *pb.Matrix, error) {
		return 0, 0, nil, release.Errorf(release.NameArgumentError, "round request: "+format, a...)
	}
	if r.GetRound() < 0 || r.GetRound() >= MaxRounds {
		return bad("round %d is outside [0, %d)", r.GetRound(), MaxRounds)
	}
	switch r.GetStep() {
	case fedrep.StepInit.String():
		step = fedrep.StepInit
	case fedrep.StepGradient.String():
		step = fedrep.StepGradient
	default:
		return bad("unknown step %q: a private_fedrep round is init or gradient", truncate(r.GetStep()))
	}
	if b := r.GetBasis(); b != nil && (b.GetRows() < 0 || b.GetCols() < 0 || b.GetRows() > MaxBasisEntries || b.GetCols() > MaxBasisEntries || b.GetRows()*b.GetCols() > MaxBasisEntries) {
		return bad("a %d×%d representation: at most %d entries", b.GetRows(), b.GetCols(), MaxBasisEntries)
	}
	return int(r.GetRound()), step, r.GetBasis(), nil
}

// WithU is req with the broadcast representation u of a decoded round.
func WithU(req fedrep.Request, u *pb.Matrix) (fedrep.Request, error) {
	if u != nil {
		m, err := matrixOf(u)
		if err != nil {
			return fedrep.Request{}, release.Errorf(release.NameArgumentError, "round request: representation: %v", err)
		}
		if !m.IsEmpty() {
			req.U = m
		}
	}
	return req, nil
}

// FedRepRoundOf decodes a silo's reply to round index.
func FedRepRoundOf(index int, r *pb.FedRoundReply) (fedrep.SiloReply, error) {
	rep, err := RoundOf(index, r)
	if err != nil {
		return fedrep.SiloReply{}, err
	}
	if rep.Value == nil {
		return fedrep.SiloReply{}, fmt.Errorf("an empty reply to round %d", index)
	}
	return fedrep.SiloReply{Avg: rep.Value}, nil
}

// FedRepRound is a silo's reply to round index as a message.
func FedRepRound(index int, rep fedrep.SiloReply) *pb.FedRoundReply {
	return &pb.FedRoundReply{Round: int64(index), Value: matrix(rep.Avg)}
}
