package service

// The server as one provider of a federated call: DPS-PCA (private_pca on
// federate(...), method "federated"; seed 003, federated.md §1) or one
// silo of Private FedRep (private_fedrep on federate(...); seed 004,
// federated.md §2.3, its rounds in the same messages): FedOpen
// plans the call from the server's registry and charges its ledger,
// FedRound answers each round with the noise of the server's own plan
// (release.Local's federated session, the provider code of the in-process
// method). Each round's reply is kept under STATE/service/replies before
// it is sent, so a retry gets the same noisy answer and no round is ever
// released twice; a server restarted between rounds resumes the call from
// its ledger charge, the opened request it kept and the rounds it kept.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/service/wire"
)

func openKey(id string) string             { return "fed-open\x00" + id }
func openReqKey(id string) string          { return "fed-request\x00" + id }
func roundKey(id string, round int) string { return fmt.Sprintf("fed-round\x00%s\x00%d", id, round) }

// kept reads the message kept under key into m.
func (s *Server) kept(key string, m proto.Message) (bool, error) {
	b, err := os.ReadFile(s.replyPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, release.Errorf(release.NameLedgerError, "reading a kept reply: %v", err)
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return false, release.Errorf(release.NameLedgerError, "a kept reply is damaged: %v", err)
	}
	return true, nil
}

// FedOpen charges the server's part of a federated call, once per call id.
func (s *Server) FedOpen(ctx context.Context, req *pb.CallRequest) (*pb.ReceiptReply, error) {
	c, err := s.call(req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	if c.ID == "" {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: FedOpen needs a call_id (it makes retries safe)"), false).Err()
	}
	unlock := s.lock(c.ID)
	defer unlock()
	r := &pb.ReceiptReply{}
	if ok, err := s.kept(openKey(c.ID), r); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if ok {
		return r, nil // a retry: the first answer, not a second charge
	}
	if id, ok := s.chargedAs(c.ID); ok {
		return nil, wire.Status(release.Errorf(release.NameProviderFailed,
			"federated call %s was charged on this server (ledger record %d) but not opened (the server stopped in between); the charge stands and the call is not opened again", c.ID, id), true).Err()
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxCall)
	defer cancel()
	rc, err := s.exec.FedOpen(runCtx, c)
	if err != nil {
		charged, lerr := s.findCharge(c.Dataset.Name, c.ID)
		return nil, wire.Status(err, charged || lerr != nil).Err()
	}
	s.mu.Lock()
	s.charged[c.ID] = rc.LedgerID
	s.mu.Unlock()
	if r.Receipt, err = wire.Receipt(rc); err != nil {
		return nil, wire.Status(release.Errorf(release.NameLedgerError, "encoding the receipt: %v", err), true).Err()
	}
	// The request first: a kept receipt means the call can be resumed.
	if err := s.keep(openReqKey(c.ID), req); err != nil {
		logf("keeping the request of federated call %s: %v", c.ID, err)
	} else if err := s.keep(openKey(c.ID), r); err != nil {
		logf("keeping the receipt of federated call %s: %v", c.ID, err)
	}
	return r, nil
}

// FedRound answers one round of an opened federated call, once: a DPS-PCA
// round, or a private_fedrep silo round (its index across both steps in
// round, step "init" or "gradient", U in basis).
func (s *Server) FedRound(ctx context.Context, req *pb.FedRoundRequest) (*pb.FedRoundReply, error) {
	var round int
	var answer func(ctx context.Context, c release.Call) (*pb.FedRoundReply, error)
	if req.GetCall().GetFunction() == "private_fedrep" {
		index, step, u, err := wire.DecodeFedRepRound(req)
		if err != nil {
			return nil, wire.Status(err, false).Err()
		}
		round = index
		answer = func(ctx context.Context, c release.Call) (*pb.FedRoundReply, error) {
			rq, err := release.FedRepRequestAt(c, index)
			if err == nil && rq.Step != step {
				err = release.Errorf(release.NameArgumentError, "private_fedrep: round %d is a %v round, not %v", index, rq.Step, step)
			}
			if err == nil {
				rq, err = wire.WithU(rq, u)
			}
			if err != nil {
				return nil, err
			}
			rep, err := s.exec.FedRepRound(ctx, c, index, rq)
			if err != nil {
				return nil, err
			}
			return wire.FedRepRound(index, rep), nil
		}
	} else {
		_, _, _, rq, err := wire.DecodeRound(req)
		if err != nil {
			return nil, wire.Status(err, false).Err()
		}
		round = rq.Round
		answer = func(ctx context.Context, c release.Call) (*pb.FedRoundReply, error) {
			rep, err := s.exec.FedRound(ctx, c, rq)
			if err != nil {
				return nil, err
			}
			return wire.Round(rq.Round, rep), nil
		}
	}
	id := req.GetCall().GetCallId()
	if id == "" {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: FedRound needs the call_id of an opened call"), false).Err()
	}
	unlock := s.lock(id)
	defer unlock()
	r := &pb.FedRoundReply{}
	if ok, err := s.kept(roundKey(id, round), r); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if ok {
		return r, nil // a retry: the same noisy answer
	}
	// The call as it was opened and charged, never the round's copy: a
	// resumed call must run the plan its charge paid for.
	open := &pb.CallRequest{}
	if ok, err := s.kept(openReqKey(id), open); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if !ok {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "federated call %s is not open on this server (open it first)", id), false).Err()
	}
	c, err := s.call(open)
	if err != nil {
		return nil, wire.Status(err, true).Err()
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxCall)
	defer cancel()
	if !s.exec.FedOpened(id) {
		// Restarted since the open: continue after the rounds kept (each
		// was kept before it was sent; one not kept was never sent). The
		// data are those the call was charged for: a dataset with charges
		// cannot be removed or registered again (the ledger refuses).
		next := 0
		for ; ; next++ {
			if _, err := os.Stat(s.replyPath(roundKey(id, next))); err != nil {
				break
			}
		}
		if next != round {
			return nil, wire.Status(release.Errorf(release.NameArgumentError, "federated call %s: round %d asked, round %d is next", id, round, next), true).Err()
		}
		if err := s.exec.FedResume(runCtx, c, next); err != nil {
			return nil, wire.Status(err, true).Err()
		}
	}
	r, err = answer(runCtx, c)
	if err != nil {
		return nil, wire.Status(err, true).Err()
	}
	// Kept before it is sent: a reply that could not be kept is not sent,
	// so no round is ever answered twice with different noise.
	if err := s.keep(roundKey(id, round), r); err != nil {
		return nil, wire.Status(release.Errorf(release.NameLedgerError, "federated call %s: round %d could not be kept, so it is not sent; the charge stands", id, round), true).Err()
	}
	return r, nil
}
