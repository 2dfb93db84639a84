// Package service is privnotes' data service: `privnotes serve` holds a
// state directory's registry, ledger and data, and answers private calls
// over gRPC with mutual TLS, returning releases and receipts only.
//
// The handlers are thin: each decodes a request (service/wire), resolves
// the dataset in the server's own registry and hands the call to
// release.Local, which plans it from public facts, charges the server's
// ledger before it reads, and runs it. The server never takes a cost, a
// noise scale or a row count from a client; a client's budget blocks stay
// on the client (it asks its own gate before calling Execute).
//
// Execute is idempotent per call id: the id is recorded with the ledger
// charge in the same transaction, and the release is kept under
// STATE/service/replies, so a retried request gets the first answer and
// is not charged twice. A call charged whose release was never written
// (the server died in between) is answered with ProviderFailed, never
// re-run: a second run would release a second noisy answer on one charge.
package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/service/wire"
)

// Server implements the DataService over one state directory.
type Server struct {
	pb.UnimplementedDataServiceServer

	store *ledger.Store
	exec  *release.Local
	// replies holds the encoded release of every executed call id.
	replies string

	mu     sync.Mutex
	active map[string]*idLock // per call id: a retry waits for the first attempt
}

type idLock struct {
	sync.Mutex
	users int
}

// NewServer serves st's datasets; exec runs the calls (its Store must
// return st).
func NewServer(st *ledger.Store, exec *release.Local) (*Server, error) {
	dir := filepath.Join(st.Dir(), "service", "replies")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Server{store: st, exec: exec, replies: dir, active: map[string]*idLock{}}, nil
}

// Describe returns a dataset's public schema.
func (s *Server) Describe(ctx context.Context, req *pb.DescribeRequest) (*pb.DescribeReply, error) {
	sc, err := s.schema(req.GetDataset())
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	b, err := wire.EncodeSchema(sc)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	return &pb.DescribeReply{SchemaJson: b}, nil
}

func (s *Server) schema(name string) (ledger.Schema, error) {
	if name == "" || len(name) > wire.MaxName {
		return ledger.Schema{}, release.Errorf(release.NameArgumentError, "request: no dataset name, or one longer than %d bytes", wire.MaxName)
	}
	sc, err := s.store.Schema(name)
	if errors.Is(err, ledger.ErrNoDataset) {
		return sc, release.Errorf(release.NameDatasetError, "no dataset %q is registered on this server", name)
	}
	if err != nil {
		return sc, release.Errorf(release.NameLedgerError, "reading dataset %q: %v", name, err)
	}
	return sc, nil
}

// call decodes a request into a call on the server's own registration of
// its dataset.
func (s *Server) call(req *pb.CallRequest) (release.Call, error) {
	fn, name, args, err := wire.DecodeCall(req)
	if err != nil {
		return release.Call{}, err
	}
	sc, err := s.schema(name)
	if err != nil {
		return release.Call{}, err
	}
	return release.Call{Func: fn, Dataset: release.Ref{Name: name, Schema: sc}, Args: args, Cell: req.GetCell(), ID: req.GetCallId()}, nil
}

// Plan plans a call; it reads no data and charges nothing.
func (s *Server) Plan(ctx context.Context, req *pb.CallRequest) (*pb.PlanReply, error) {
	c, err := s.call(req)
	if err == nil {
		var p *release.Plan
		if p, err = s.exec.Plan(c); err == nil {
			var r *pb.PlanReply
			if r, err = wire.Plan(p); err == nil {
				return r, nil
			}
		}
	}
	return nil, wire.Status(err, false).Err()
}

// DryRun says what a call would cost and leave.
func (s *Server) DryRun(ctx context.Context, req *pb.CallRequest) (*pb.ReceiptReply, error) {
	c, err := s.call(req)
	if err == nil {
		var rc *release.Receipt
		if rc, err = s.exec.DryRun(ctx, c, nil); err == nil {
			var r *pb.Receipt
			if r, err = wire.Receipt(rc); err == nil {
				return &pb.ReceiptReply{Receipt: r}, nil
			}
		}
	}
	return nil, wire.Status(err, false).Err()
}

// Execute runs a call once per call id.
func (s *Server) Execute(ctx context.Context, req *pb.CallRequest) (*pb.ReleaseReply, error) {
	c, err := s.call(req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	if c.ID == "" {
		return nil, wire.Status(release.Errorf(release.NameArgumentError, "request: Execute needs a call_id (it makes retries safe)"), false).Err()
	}
	unlock := s.lock(c.ID)
	defer unlock()
	if r, ok, err := s.reply(c.ID); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if ok {
		return r, nil // a retry: the first answer, not a second charge
	}
	if id, ok, err := s.chargedAs(c.Dataset.Name, c.ID); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if ok {
		return nil, wire.Status(release.Errorf(release.NameProviderFailed,
			"call %s was charged on this server (ledger record %d) but its release was not delivered (the server stopped or the mechanism failed); the charge stands and the call is not run again", c.ID, id), true).Err()
	}
	rel, err := s.exec.Execute(ctx, c, nil)
	if err != nil {
		_, charged, _ := s.chargedAs(c.Dataset.Name, c.ID)
		return nil, wire.Status(err, charged).Err()
	}
	r, err := wire.Release(rel)
	if err != nil {
		return nil, wire.Status(release.Errorf(release.NameLedgerError, "encoding the release: %v", err), true).Err()
	}
	if err := s.keep(c.ID, r); err != nil {
		// The release exists and is paid for: deliver it; only a retry
		// of this call would then find the charge without its release.
		logf("keeping the release of call %s: %v", c.ID, err)
	}
	return r, nil
}

// lock serializes the requests of one call id.
func (s *Server) lock(id string) func() {
	s.mu.Lock()
	m, ok := s.active[id]
	if !ok {
		m = &idLock{}
		s.active[id] = m
	}
	m.users++
	s.mu.Unlock()
	m.Lock()
	return func() {
		m.Unlock()
		s.mu.Lock()
		if m.users--; m.users == 0 {
			delete(s.active, id)
		}
		s.mu.Unlock()
	}
}

func (s *Server) replyPath(id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(s.replies, hex.EncodeToString(h[:])+".pb")
}

// reply returns the kept release of call id.
func (s *Server) reply(id string) (*pb.ReleaseReply, bool, error) {
	b, err := os.ReadFile(s.replyPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, release.Errorf(release.NameLedgerError, "reading the kept release of call %s: %v", id, err)
	}
	r := &pb.ReleaseReply{}
	if err := proto.Unmarshal(b, r); err != nil {
		return nil, false, release.Errorf(release.NameLedgerError, "the kept release of call %s is damaged: %v", id, err)
	}
	return r, true, nil
}

// keep writes the release of call id durably (write, sync, rename).
func (s *Server) keep(id string, r *pb.ReleaseReply) error {
	b, err := proto.Marshal(r)
	if err != nil {
		return err
	}
	path := s.replyPath(id)
	f, err := os.CreateTemp(s.replies, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// chargedAs finds the ledger charge recorded with call id on dataset.
func (s *Server) chargedAs(dataset, id string) (int64, bool, error) {
	entries, err := s.store.Entries(dataset)
	if err != nil {
		return 0, false, release.Errorf(release.NameLedgerError, "reading the ledger of %q: %v", dataset, err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != "charge" || len(e.Params) == 0 {
			continue
		}
		var p map[string]any
		if json.Unmarshal(e.Params, &p) == nil && p[release.CallIDParam] == id {
			return e.ID, true, nil
		}
	}
	return 0, false, nil
}
