package service

// The server as one provider of a federated call: DPS-PCA (private_pca on
// federate(...), method "federated"; seed 003, federated.md §1) or one
// silo of Private FedRep (private_fedrep on federate(...); seed 004,
// federated.md §2.3, its rounds in the same messages). Opening a call has
// two phases: FedPrepare plans it from the server's registry and reserves
// its cost in the ledger (dsl/ledger/reserve.go: counted against the
// budget like a charge, lapsing at a public expiry; no data read);
// FedCommit turns the reservation into the charge and loads the data;
// FedAbort releases a reservation the coordinator gave up on. FedOpen,
// the one-step open of older clients, is the two in a row. FedRound
// answers each round with the noise of the server's own plan
// (release.Local's federated session, the provider code of the in-process
// method), and only for a committed call.
//
// Every request of a call comes from the client certificate that
// prepared (or opened) it: the interceptor bind (bind.go) refuses any
// other before these handlers run, so they never see another client's
// request under a call id.
//
// Each answer is kept under STATE/service/replies before it is sent,
// bound to the digest of the request it answers: a retry of the same
// request gets the same answer (no round is released twice), another
// request under the same call id and round gets an error. A server
// restarted between rounds resumes the call from its committed
// reservation, the prepared request it kept and the rounds it kept.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/privnotes/privnotes/dsl/catalog"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/service/wire"
)

func openKey(id string) string             { return "fed-open\x00" + id }
func openReqKey(id string) string          { return "fed-request\x00" + id }
func roundKey(id string, round int) string { return fmt.Sprintf("fed-round\x00%s\x00%d", id, round) }

// A kept message is stored bound to the request it answers (pb.FedKept):
// with the SHA-256 digest of the request's canonical (deterministic
// protobuf) encoding. A retry gets the kept message only if it is the
// same request.

// digestOf is the SHA-256 digest of req's canonical encoding and of the
// common name of the client certificate that sent it: a kept answer goes
// only to a retry of the same request by the same client, so a call id
// learned by another analyst reads nothing.
func digestOf(ctx context.Context, req proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return nil, release.Errorf(release.NameArgumentError, "request: %v", err)
	}
	who, _ := identity(ctx)
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(who))
	return h.Sum(nil), nil
}

// errOtherRequest refuses a request that reuses the call id (and round)
// of a kept answer to another request: nothing is answered.
func errOtherRequest(what string) error {
	return release.Errorf(release.NameArgumentError, "request: this %s was answered for a different request, or another client, under the same call id; a retry must repeat the request exactly from the same client (nothing was answered)", what)
}

// kept reads the message kept under key into m, whatever request it
// answered (the prepared request of a call, for its later phases).
func (s *Server) kept(key string, m proto.Message) (bool, error) { return s.keptFor(key, nil, m) }

// keptFor reads the message kept under key into m if it answered the
// request of digest (errOtherRequest otherwise; nil: any request).
func (s *Server) keptFor(key string, digest []byte, m proto.Message) (bool, error) {
	b, err := os.ReadFile(s.replyPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, release.Errorf(release.NameLedgerError, "reading a kept reply: %v", err)
	}
	k := &pb.FedKept{}
	if err := proto.Unmarshal(b, k); err != nil || len(k.GetRequestSha256()) != sha256.Size {
		return false, release.Errorf(release.NameLedgerError, "a kept reply is damaged or was kept by an older privnotes (no request digest)")
	}
	if digest != nil && !bytes.Equal(k.GetRequestSha256(), digest) {
		what := "call" // a single-dataset call's release is kept under its bare call id
		if i := strings.IndexByte(key, 0); i >= 0 {
			what = strings.TrimPrefix(key[:i], "fed-")
		}
		return false, errOtherRequest(what)
	}
	if err := proto.Unmarshal(k.GetReply(), m); err != nil {
		return false, release.Errorf(release.NameLedgerError, "a kept reply is damaged: %v", err)
	}
	return true, nil
}

// keepFor keeps m under key, bound to the request of digest.
func (s *Server) keepFor(key string, digest []byte, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return s.keep(key, &pb.FedKept{RequestSha256: digest, Reply: b})
}

// FedPrepare reserves the server's part of a federated call, once per
// call id: it plans the call and reserves its cost in the ledger until
// the reply's expiry. Nothing is charged and no data are read.
func (s *Server) FedPrepare(ctx context.Context, req *pb.CallRequest) (*pb.FedPrepareReply, error) {
	c, err := s.call(req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	if c.ID == "" {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: FedPrepare needs a call_id (it makes retries safe)"), false).Err()
	}
	digest, err := digestOf(ctx, req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	unlock := s.lock(c.ID)
	defer unlock()
	// The request is kept before the reservation, bound to its digest: a
	// commit (after a restart too) runs the call that was reserved for,
	// and a prepare under this id with another request is refused.
	if ok, err := s.keptFor(openReqKey(c.ID), digest, &pb.CallRequest{}); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if !ok {
		if err := s.keepFor(openReqKey(c.ID), digest, req); err != nil {
			return nil, wire.Status(release.Errorf(release.NameLedgerError, "federated call %s: the request could not be kept (%v); nothing was reserved or charged", c.ID, err), false).Err()
		}
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxCall)
	defer cancel()
	exp, err := s.exec.FedPrepare(runCtx, c)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	return &pb.FedPrepareReply{ExpiresUnixMs: exp.UnixMilli()}, nil
}

// FedCommit charges the reservation of a prepared call, once per call id,
// and readies its data for the rounds.
func (s *Server) FedCommit(ctx context.Context, ref *pb.FedCallRef) (*pb.ReceiptReply, error) {
	id := ref.GetCallId()
	if id == "" || len(id) > wire.MaxName {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: FedCommit needs the call_id of a prepared call"), false).Err()
	}
	digest, err := digestOf(ctx, ref)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	unlock := s.lock(id)
	defer unlock()
	r := &pb.ReceiptReply{}
	if ok, err := s.keptFor(openKey(id), digest, r); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if ok {
		return r, nil // a retry: the first answer, not a second charge
	}
	open := &pb.CallRequest{}
	if ok, err := s.kept(openReqKey(id), open); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if !ok {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "federated call %s was not prepared on this server (prepare it first); nothing was charged", id), false).Err()
	}
	c, err := s.call(open)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxCall)
	defer cancel()
	rc, err := s.exec.FedCommit(runCtx, c)
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
	if err := s.keepFor(openKey(id), digest, r); err != nil {
		// The ledger has the commit: a retry finds it there (a second
		// commit returns the first charge) and reads no data again.
		logf("keeping the receipt of federated call %s: %v", id, err)
	}
	return r, nil
}

// FedAbort releases the reservation of a prepared call that was not
// committed; idempotent. A call never prepared here has nothing to release.
func (s *Server) FedAbort(ctx context.Context, ref *pb.FedCallRef) (*pb.FedAbortReply, error) {
	id := ref.GetCallId()
	if id == "" || len(id) > wire.MaxName {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: FedAbort needs the call_id of a prepared call"), false).Err()
	}
	unlock := s.lock(id)
	defer unlock()
	open := &pb.CallRequest{}
	if ok, err := s.kept(openReqKey(id), open); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if !ok {
		return &pb.FedAbortReply{Released: true}, nil // nothing was reserved here
	}
	// The reservation is found by its id alone: a dataset removed since
	// does not keep it from being released.
	c := release.Call{ID: id, Func: open.GetFunction(), Dataset: release.Ref{Name: open.GetDataset()}}
	if err := s.exec.FedAbort(context.WithoutCancel(ctx), c); err != nil {
		return nil, wire.Status(err, false).Err()
	}
	return &pb.FedAbortReply{Released: true}, nil
}

// FedOpen is the one-step open of clients from before the two-phase open:
// FedPrepare, then FedCommit, under the request's call id.
func (s *Server) FedOpen(ctx context.Context, req *pb.CallRequest) (*pb.ReceiptReply, error) {
	if id := req.GetCallId(); id != "" && len(id) <= wire.MaxName {
		digest, err := digestOf(ctx, req)
		if err != nil {
			return nil, wire.Status(err, false).Err()
		}
		if _, err := s.keptFor(openReqKey(id), digest, &pb.CallRequest{}); err != nil {
			return nil, wire.Status(err, false).Err() // another request under this id
		}
		r := &pb.ReceiptReply{}
		if ok, err := s.kept(openKey(id), r); err == nil && ok {
			return r, nil // a retry of an open that went through
		}
	}
	if _, err := s.FedPrepare(ctx, req); err != nil {
		return nil, err
	}
	return s.FedCommit(ctx, &pb.FedCallRef{CallId: req.GetCallId()})
}

// FedRound answers one round of an opened federated call, once: a DPS-PCA
// round, or a private_fedrep silo round (its index across both steps in
// round, step "init" or "gradient", U in basis).
func (s *Server) FedRound(ctx context.Context, req *pb.FedRoundRequest) (*pb.FedRoundReply, error) {
	var round int
	var answer func(ctx context.Context, c release.Call) (*pb.FedRoundReply, error)
	if req.GetCall().GetFunction() == catalog.PrivateFedRep.Name {
		index, step, u, err := wire.DecodeFedRepRound(req)
		if err != nil {
			return nil, wire.Status(err, false).Err()
		}
		round = index
		answer = func(ctx context.Context, c release.Call) (*pb.FedRoundReply, error) {
			rq, err := release.FedRepRequestAt(c, index)
			if err == nil && rq.Step != step {
				err = release.Errorf(release.NameArgumentError, "%s: round %d is a %v round, not %v", catalog.PrivateFedRep.Name, index, rq.Step, step)
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
	digest, err := digestOf(ctx, req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	r := &pb.FedRoundReply{}
	if ok, err := s.keptFor(roundKey(id, round), digest, r); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if ok {
		return r, nil // a retry of the same request: the same noisy answer
	}
	// The call as it was prepared and charged, never the round's copy: a
	// resumed call must run the plan its charge paid for.
	open := &pb.CallRequest{}
	if ok, err := s.kept(openReqKey(id), open); err != nil {
		return nil, wire.Status(err, true).Err()
	} else if !ok {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "federated call %s is not open on this server (prepare and commit it first)", id), false).Err()
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
	if err := s.keepFor(roundKey(id, round), digest, r); err != nil {
		return nil, wire.Status(release.Errorf(release.NameLedgerError, "federated call %s: round %d could not be kept, so it is not sent; the charge stands", id, round), true).Err()
	}
	return r, nil
}
