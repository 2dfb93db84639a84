package service

// Calls bound to the client that opened them (issue 25.3). A call id is a
// capability only in the hands of the client that opened the call: a
// second client signed by the same CA who learns the id (from a log, a
// shared notebook, a ledger listing) must not take a federated round's
// answer first, commit or abort the call, or read a kept release.
//
// The binding is one interceptor, bind, run on every unary RPC after the
// authz check and before the handler: it finds every call id the request
// names (every string field "call_id", at any depth: the CallRequest of
// Execute and FedPrepare, the call inside a FedRoundRequest, a
// FedCallRef), and for each asks callUses how the method uses it:
//
//   - opensCall (Execute, FedPrepare, FedOpen): an id nobody holds becomes
//     the caller's before the handler runs; an id the caller holds is its
//     retry; an id another client holds is refused.
//   - continuesCall (FedCommit, FedAbort, FedRound): only the caller's own
//     call. An id another client holds and an id nobody holds are refused
//     alike, so the refusal tells nothing of another client's call: not
//     whether it exists, nor its state.
//   - ignoresCall (Describe, Plan, DryRun): the handler never reads or
//     writes call state, so the id is not looked at.
//
// A method missing from callUses is treated as continuesCall (fail
// closed), and a test checks that every method of the service is listed.
// Every refusal is errNotYours, a PermissionDenied with a fixed text.
//
// The owner is recorded under STATE/service/calls, one file per call id
// (named by its SHA-256 digest, like the kept replies), written and
// synced before the handler runs and linked into place only if no file
// is there yet: the first client wins a race, the record never changes
// afterwards, and it survives a restart like the kept requests and
// rounds that make a call resumable. It lives beside them rather than in
// the ledger because it must exist before anything is planned or
// reserved, and for calls that reserve nothing (a public dataset's, an
// Execute's).
//
// The owner is the client certificate's subject common name (the
// identity of authz files and the log) and the SHA-256 of its public key
// (SubjectPublicKeyInfo), which the TLS handshake proves the client
// holds: a second certificate issued for the same name, which whoever
// holds the CA key can make, does not continue the call. A client whose
// certificate is renewed with a new key cannot continue the calls it
// opened before (they are minutes long; a reservation lapses at its
// expiry, a charge stands).

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/service/wire"
)

// callUse is how an RPC uses the call ids its request names.
type callUse int

const (
	// continuesCall: the request continues a call the caller opened.
	continuesCall callUse = iota
	// opensCall: the request opens a call under a fresh id, or retries the
	// caller's own.
	opensCall
	// ignoresCall: the handler never reads or writes call state.
	ignoresCall
)

// callUses lists every method of the service. A method not listed
// continues calls (the zero value): a new RPC is bound to call owners
// until it is listed otherwise.
var callUses = map[string]callUse{
	pb.DataService_Describe_FullMethodName:   ignoresCall,
	pb.DataService_Plan_FullMethodName:       ignoresCall,
	pb.DataService_DryRun_FullMethodName:     ignoresCall,
	pb.DataService_Execute_FullMethodName:    opensCall,
	pb.DataService_FedOpen_FullMethodName:    opensCall,
	pb.DataService_FedPrepare_FullMethodName: opensCall,
	pb.DataService_FedCommit_FullMethodName:  continuesCall,
	pb.DataService_FedAbort_FullMethodName:   continuesCall,
	pb.DataService_FedRound_FullMethodName:   continuesCall,
}

// errNotYours is every refusal of bind: it names nothing but the id the
// caller sent, and reads the same whether the call belongs to another
// client, does not exist, or cannot be continued by anyone (opened by an
// older privnotes, which kept no owner).
func errNotYours(id string) error {
	return status.Errorf(codes.PermissionDenied, "call %s is not a call this client opened on this server: a call id is bound to the client certificate that opened it; nothing was done", logID(id))
}

// owner is a call's client: its certificate's common name and the
// SHA-256 digest of its public key (hex).
type owner struct {
	Client string `json:"client"`
	Key    string `json:"key_sha256"`
}

func (o owner) is(p owner) bool {
	return subtle.ConstantTimeCompare([]byte(o.Client), []byte(p.Client)) == 1 &&
		subtle.ConstantTimeCompare([]byte(o.Key), []byte(p.Key)) == 1 && o.Client != "" && o.Key != ""
}

// principal is the owner a request of ctx would be: its verified client
// certificate's.
func principal(ctx context.Context) (owner, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return owner{}, false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return owner{}, false
	}
	leaf := ti.State.VerifiedChains[0][0]
	h := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return owner{Client: leaf.Subject.CommonName, Key: hex.EncodeToString(h[:])}, true
}

// bind is the interceptor of call ownership (see the file's comment).
func (s *Server) bind(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "%s carries no request the server can check", info.FullMethod)
	}
	use := callUses[info.FullMethod]
	if use == ignoresCall {
		return h(ctx, req)
	}
	ids := callIDsOf(m.ProtoReflect(), nil)
	if len(ids) == 0 {
		return h(ctx, req) // the handler refuses a request without its call id
	}
	me, ok := principal(ctx)
	if !ok {
		return nil, errNotYours(ids[0])
	}
	for _, id := range ids {
		o, found, err := s.ownerOf(id)
		if err != nil {
			logf("reading the owner of call %s: %v", logID(id), err)
			return nil, errNotYours(id)
		}
		switch {
		case found && o.is(me):
			continue // the caller's own call
		case found, use != opensCall, len(id) > wire.MaxName:
			return nil, errNotYours(id)
		}
		// A fresh id: it becomes the caller's, unless the server already
		// holds state under it that no owner was recorded for (kept by an
		// older privnotes): such a call is nobody's to continue.
		if s.hasCallState(id) {
			return nil, errNotYours(id)
		}
		o, err = s.claim(id, me)
		if err != nil {
			logf("recording the owner of call %s: %v", logID(id), err)
			return nil, errNotYours(id)
		}
		if !o.is(me) { // another client claimed it first
			return nil, errNotYours(id)
		}
	}
	return h(ctx, req)
}

// owns reports whether the client of ctx opened call id.
func (s *Server) owns(ctx context.Context, id string) bool {
	me, ok := principal(ctx)
	if !ok {
		return false
	}
	o, found, err := s.ownerOf(id)
	return err == nil && found && o.is(me)
}

func (s *Server) ownerPath(id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(s.calls, hex.EncodeToString(h[:])+".json")
}

// ownerOf reads the owner recorded for call id.
func (s *Server) ownerOf(id string) (owner, bool, error) {
	b, err := os.ReadFile(s.ownerPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return owner{}, false, nil
	}
	if err != nil {
		return owner{}, false, err
	}
	var o owner
	if err := json.Unmarshal(b, &o); err != nil || o.Client == "" || o.Key == "" {
		return owner{}, false, errors.New("the owner record is damaged")
	}
	return o, true, nil
}

// claim records o as the owner of call id unless one is recorded, and
// returns the recorded owner. The record is written and synced under a
// temporary name, then linked to its own (which fails if it exists): two
// clients racing for one id cannot both win, and a crash leaves either
// no record or a whole one.
func (s *Server) claim(id string, o owner) (owner, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return owner{}, err
	}
	f, err := os.CreateTemp(s.calls, ".tmp-*")
	if err != nil {
		return owner{}, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return owner{}, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return owner{}, err
	}
	if err := f.Close(); err != nil {
		return owner{}, err
	}
	if err := os.Link(f.Name(), s.ownerPath(id)); errors.Is(err, fs.ErrExist) {
		got, found, err := s.ownerOf(id)
		if err == nil && !found {
			err = errors.New("the owner record vanished")
		}
		return got, err
	} else if err != nil {
		return owner{}, err
	}
	// The record must outlive a crash before the handler's first write.
	if d, err := os.Open(s.calls); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return owner{}, err
		}
	}
	return o, nil
}

// hasCallState reports whether the server holds anything under call id:
// a kept release, a federated call's kept request or receipt, a charge
// or a reservation in the ledger.
func (s *Server) hasCallState(id string) bool {
	for _, key := range []string{id, openReqKey(id), openKey(id)} {
		if _, err := os.Stat(s.replyPath(key)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	if _, ok := s.chargedAs(id); ok {
		return true
	}
	_, err := s.store.ReservationOf(id)
	return !errors.Is(err, ledger.ErrNoReservation)
}
