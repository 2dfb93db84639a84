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
// A call id is the capability of the client that opened the call only
// (bind.go): a retry from another client certificate is refused before
// the handler runs.
package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	// authz, if set, grants each client its datasets (authz.go).
	authz *Authz
	// replies holds the encoded release of every executed call id.
	replies string
	// calls holds the owner of every call id (bind.go).
	calls string

	mu     sync.Mutex
	active map[string]*idLock // per call id: a retry waits for the first attempt
	// charged maps the call ids of the ledger's charges to their records:
	// read from the ledger at the start, kept up to date by Execute.
	charged map[string]int64
}

type idLock struct {
	sync.Mutex
	users int
}

// NewServer serves st's datasets; exec runs the calls (its Store must
// return st). It marks exec as a data service's executor (release.Local's
// Served), so that a private_sql query naming the dataset as server.name
// plans here.
func NewServer(st *ledger.Store, exec *release.Local) (*Server, error) {
	exec.Served = true
	dir := filepath.Join(st.Dir(), "service", "replies")
	calls := filepath.Join(st.Dir(), "service", "calls")
	for _, d := range []string{dir, calls} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	s := &Server{store: st, exec: exec, replies: dir, calls: calls, active: map[string]*idLock{}, charged: map[string]int64{}}
	entries, err := st.Entries("")
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	for _, e := range entries {
		if id, ok := callID(e); ok {
			s.charged[id] = e.ID
		}
	}
	return s, nil
}

// Describe returns a dataset's public schema, or with no dataset named the
// names of the datasets this client may use.
func (s *Server) Describe(ctx context.Context, req *pb.DescribeRequest) (*pb.DescribeReply, error) {
	if req.GetDataset() == "" {
		names, err := s.granted(ctx)
		if err != nil {
			return nil, wire.Status(err, false).Err()
		}
		return &pb.DescribeReply{Datasets: names}, nil
	}
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

// granted lists the registered datasets the caller may use: all of them
// without an authz file.
func (s *Server) granted(ctx context.Context) ([]string, error) {
	all, err := s.store.Datasets()
	if err != nil {
		return nil, release.Errorf(release.NameLedgerError, "reading the registry: %v", err)
	}
	g, checked := grantOf(ctx)
	if s.authz != nil && !checked {
		return nil, release.Errorf(release.NameLedgerError, "the authz check did not run")
	}
	names := []string{}
	for _, sc := range all {
		if !checked || g.Allows(sc.Name) {
			names = append(names, sc.Name)
		}
	}
	return names, nil
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
	digest, err := digestOf(ctx, req)
	if err != nil {
		return nil, wire.Status(err, false).Err()
	}
	unlock := s.lock(c.ID)
	defer unlock()
	kept := &pb.ReleaseReply{}
	if ok, err := s.keptFor(c.ID, digest, kept); err != nil {
		return nil, wire.Status(err, false).Err()
	} else if ok {
		return kept, nil // a retry: the first answer, not a second charge
	}
	if id, ok := s.chargedAs(c.ID); ok {
		return nil, wire.Status(release.Errorf(release.NameProviderFailed,
			"call %s was charged on this server (ledger record %d) but its release was not delivered (the server stopped or the mechanism failed); the charge stands and the call is not run again", c.ID, id), true).Err()
	}
	// Once it starts, a call runs to its end even when the client goes
	// away (a broken connection, its deadline, an interrupt): after the
	// charge a call must always produce its release, which is kept for a
	// retry of the same call id. MaxCall still bounds it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxCall)
	defer cancel()
	rel, err := s.exec.Execute(runCtx, c, nil)
	if err != nil {
		// Whether it was charged is in the ledger (an error may come
		// before or after the charge).
		charged, lerr := s.findCharge(c.Dataset.Name, c.ID)
		return nil, wire.Status(err, charged || lerr != nil).Err()
	}
	s.mu.Lock()
	s.charged[c.ID] = rel.Receipt.LedgerID
	s.mu.Unlock()
	r, err := wire.Release(rel)
	if err != nil {
		return nil, wire.Status(release.Errorf(release.NameLedgerError, "encoding the release: %v", err), true).Err()
	}
	if err := s.keepFor(c.ID, digest, r); err != nil {
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

// keep writes the release of call id durably (write, sync, rename).
func (s *Server) keep(id string, r proto.Message) error {
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

// chargedAs reports the ledger record charged with call id.
func (s *Server) chargedAs(id string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.charged[id]
	return rec, ok
}

// findCharge looks for call id among dataset's ledger records and
// remembers it.
func (s *Server) findCharge(dataset, id string) (bool, error) {
	entries, err := s.store.Entries(dataset)
	if err != nil {
		return false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if got, ok := callID(entries[i]); ok && got == id {
			s.mu.Lock()
			s.charged[id] = entries[i].ID
			s.mu.Unlock()
			return true, nil
		}
	}
	return false, nil
}

// callID is the call id a ledger charge records, if any.
func callID(e ledger.Entry) (string, bool) {
	if e.Kind != "charge" || len(e.Params) == 0 {
		return "", false
	}
	var p map[string]any
	if json.Unmarshal(e.Params, &p) != nil {
		return "", false
	}
	id, ok := p[release.CallIDParam].(string)
	return id, ok && id != ""
}
