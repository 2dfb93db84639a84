package wire

import (
	"fmt"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/federated"
)

// Limits of a federated round request, beyond the call's own.
const (
	// MaxRounds bounds a round number: a run has at most MaxIters power
	// steps and two initialisation releases.
	MaxRounds = federated.MaxIters + 2
	// MaxBasisEntries bounds the broadcast basis (d·k entries): what fits
	// in a request of the service's size limit.
	MaxBasisEntries = 1 << 20
)

// EncodeRound is a round of a federated call as a request. The request's
// Sigma is not sent: the server uses its own plan's.
func EncodeRound(call release.Call, req federated.PCARequest) (*pb.FedRoundRequest, error) {
	c, err := EncodeCall(call)
	if err != nil {
		return nil, err
	}
	out := &pb.FedRoundRequest{Call: c, Round: int64(req.Round), Step: req.Step.String(), Basis: matrix(req.Q)}
	for _, s := range req.Support {
		out.Support = append(out.Support, int64(s))
	}
	return out, nil
}

// DecodeRound checks a round request and returns its call and round.
// Everything in it is public; the server still checks the round against
// its plan (federated.Session).
func DecodeRound(r *pb.FedRoundRequest) (fn, dataset string, args *release.Args, req federated.PCARequest, err error) {
	bad := func(format string, a ...any) (string, string, *release.Args, federated.PCARequest, error) {
		return "", "", nil, federated.PCARequest{}, release.Errorf(release.NameArgumentError, "round request: "+format, a...)
	}
	if r.GetCall() == nil {
		return bad("no call")
	}
	if fn, dataset, args, err = DecodeCall(r.GetCall()); err != nil {
		return "", "", nil, federated.PCARequest{}, err
	}
	if r.GetRound() < 0 || r.GetRound() >= MaxRounds {
		return bad("round %d is outside [0, %d)", r.GetRound(), MaxRounds)
	}
	req.Round = int(r.GetRound())
	switch r.GetStep() {
	case federated.StepDiag.String():
		req.Step = federated.StepDiag
	case federated.StepBlock.String():
		req.Step = federated.StepBlock
	case federated.StepProduct.String():
		req.Step = federated.StepProduct
	default:
		return bad("unknown step %q: use diag, block or product", truncate(r.GetStep()))
	}
	if b := r.GetBasis(); b != nil {
		if b.GetRows() < 0 || b.GetCols() < 0 || b.GetRows() > MaxBasisEntries || b.GetCols() > MaxBasisEntries || b.GetRows()*b.GetCols() > MaxBasisEntries {
			return bad("a %d×%d basis: at most %d entries", b.GetRows(), b.GetCols(), MaxBasisEntries)
		}
		q, err := matrixOf(b)
		if err != nil {
			return bad("basis: %v", err)
		}
		if !q.IsEmpty() {
			req.Q = q
		}
	}
	if len(r.GetSupport()) > federated.MaxBlockDim {
		return bad("a support of %d coordinates: at most %d", len(r.GetSupport()), federated.MaxBlockDim)
	}
	for _, s := range r.GetSupport() {
		if s < 0 || s > MaxBasisEntries {
			return bad("support coordinate %d out of range", s)
		}
		req.Support = append(req.Support, int(s))
	}
	return fn, dataset, args, req, nil
}

// Round is a provider's reply as a message. Its count is not sent.
func Round(round int, rep federated.PCAReply) *pb.FedRoundReply {
	return &pb.FedRoundReply{Round: int64(round), Value: matrix(rep.Value)}
}

// RoundOf decodes a provider's reply to round.
func RoundOf(round int, r *pb.FedRoundReply) (federated.PCAReply, error) {
	if r.GetRound() != int64(round) {
		return federated.PCAReply{}, fmt.Errorf("a reply to round %d for round %d", r.GetRound(), round)
	}
	v, err := matrixOf(r.GetValue())
	if err != nil {
		return federated.PCAReply{}, err
	}
	if v == nil || v.IsEmpty() {
		return federated.PCAReply{}, fmt.Errorf("an empty reply to round %d", round)
	}
	return federated.PCAReply{Value: v}, nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
