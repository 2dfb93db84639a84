// Package client is the remote executor of the data service: a
// release.Executor (release.Remote) that runs each private call on one
// `privnotes serve` over mutual TLS and returns the same releases and
// receipts as the in-process executor.
//
// The caller's gate (the DSL's budget blocks) stays here: Execute plans at
// the server, asks the gate with the server's cost, then has the server
// charge and run the call under a fresh call id, retrying with the same id
// while the server is unreachable (the server charges an id once). A
// server that does not answer within the timeout fails the call with
// ProviderFailed naming it; since it may have charged, the gate counts
// the call.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/federated"
	"github.com/privnotes/privnotes/mechanisms/fedrep"
	"github.com/privnotes/privnotes/service/wire"
)

// gateMu serializes the gated part of Execute across every server.
var gateMu sync.Mutex

// DefaultTimeout is how long a call waits for its server: to describe,
// plan or dry-run it, and to come back when the connection breaks.
const DefaultTimeout = 30 * time.Second

// RunTimeout bounds how long an Execute waits for its release while the
// server is connected and running it (the server's own cap, MaxCall of
// package service). A server that goes away is noticed well before: by
// the broken connection, or by keepalive pings unanswered for
// keepaliveTime+keepaliveTimeout, and then waited for DefaultTimeout.
const RunTimeout = 30 * time.Minute

const (
	keepaliveTime    = 15 * time.Second
	keepaliveTimeout = 10 * time.Second
)

// MaxReply bounds a reply (the server's own limit).
const MaxReply = 64 << 20

// Client runs calls on one server.
type Client struct {
	// Name is the server's name in the client's configuration ("p1").
	Name string
	// Addr is its HOST:PORT.
	Addr string
	// Timeout bounds each call, retries included (DefaultTimeout if 0).
	Timeout time.Duration

	conn *grpc.ClientConn
	api  pb.DataServiceClient
}

var _ release.Remote = (*Client)(nil)

// New returns a client of the server name at addr. It does not connect
// until the first call.
func New(name, addr string, cfg *tls.Config) (*Client, error) {
	if cfg == nil || len(cfg.Certificates) == 0 {
		return nil, fmt.Errorf("server %s (%s): no client certificate (give --tls-dir DIR holding ca.pem, client.pem and client-key.pem)", name, addr)
	}
	// A short reconnect backoff: a restarted server is found again within
	// a second or two, not after grpc's default of up to two minutes.
	bo := backoff.DefaultConfig
	bo.MaxDelay = time.Second
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxReply)))
	if err != nil {
		return nil, fmt.Errorf("server %s (%s): %w", name, addr, err)
	}
	return &Client{Name: name, Addr: addr, conn: conn, api: pb.NewDataServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// failed is the ProviderFailed error of a call the server did not answer.
func (c *Client) failed(err error, what string) *release.Error {
	st, _ := status.FromError(err)
	why := st.Message()
	switch {
	case st.Code() == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		why = fmt.Sprintf("did not answer within %v", c.timeout().Round(time.Second))
	case st.Code() == codes.Canceled || errors.Is(err, context.Canceled):
		return release.Errorf(release.NameInterrupted, "the call to %s (%s) was interrupted; %s", c.Name, c.Addr, what)
	case isAuth(st) && strings.Contains(st.Message(), "remote error"):
		why = "refused this client's credentials (authentication failed: the client certificate is missing, expired or not signed by the server's CA; check --tls-dir): " + st.Message()
	case isAuth(st):
		why = "could not be authenticated (authentication failed: its certificate is not signed by the CA in --tls-dir, or not for this address): " + st.Message()
	case st.Code() == codes.Unavailable:
		why = "is unreachable or stopped answering: " + st.Message()
	}
	return release.Errorf(release.NameProviderFailed, "%s (%s) %s; %s", c.Name, c.Addr, why, what)
}

// isAuth reports a TLS failure: a refused or missing certificate.
func isAuth(st *status.Status) bool {
	if st.Code() == codes.Unauthenticated || st.Code() == codes.PermissionDenied {
		return true
	}
	m := st.Message()
	// A server killed or restarting while a handshake is under way resets
	// the connection: unavailable, not a refusal of credentials.
	for _, s := range []string{"connection reset", "connection refused", "broken pipe", "EOF"} {
		if strings.Contains(m, s) {
			return false
		}
	}
	for _, s := range []string{"certificate", "tls:", "handshake"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// remoteErr turns a status into the DSL error it carries or a
// ProviderFailed; charged reports whether the server charged the call
// (true when unknown).
func (c *Client) remoteErr(err error, what string) (error, bool) {
	st, _ := status.FromError(err)
	if st.Code() == codes.PermissionDenied {
		// The server's authz file refused this client or a dataset before
		// its handler ran: nothing was planned or charged there.
		return release.Errorf(release.NameProviderFailed, "%s (%s) refused this client: %s", c.Name, c.Addr, st.Message()), false
	}
	if e, charged, ok := wire.ErrorOf(st); ok {
		var re *release.Error
		if errors.As(e, &re) && re.Name == release.NameProviderFailed {
			re.Msg = fmt.Sprintf("%s (%s): %s", c.Name, c.Addr, re.Msg)
		}
		return e, charged
	}
	return c.failed(err, what), true
}

// invoke calls rpc until it answers, the server refuses the client's
// credentials, or ctx ends. An unreachable server (down, restarting, a
// connection broken mid-call) is asked again: requests are idempotent (an
// Execute carries its call id), so a retry never charges twice.
func (c *Client) invoke(ctx context.Context, rpc func(context.Context) error) error {
	var gone time.Time // when the server was first found unavailable
	for {
		err := rpc(ctx)
		if err == nil || status.Code(err) != codes.Unavailable || isAuth(status.Convert(err)) {
			return err
		}
		if gone.IsZero() {
			gone = time.Now()
		} else if time.Since(gone) > c.timeout() {
			return status.Error(codes.DeadlineExceeded, err.Error())
		}
		c.conn.Connect()
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Describe returns a dataset's public schema as the server registered it.
func (c *Client) Describe(ctx context.Context, dataset string) (ledger.Schema, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var r *pb.DescribeReply
	err := c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.Describe(ctx, &pb.DescribeRequest{Dataset: dataset})
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, "nothing was charged")
		return ledger.Schema{}, e
	}
	sc, err := wire.DecodeSchema(r.GetSchemaJson())
	if err != nil {
		return sc, release.Errorf(release.NameProviderFailed, "%s (%s) sent a schema this client cannot read: %v", c.Name, c.Addr, err)
	}
	return sc, nil
}

// Datasets lists the server's datasets this client may use (those its
// authz file grants to this client's certificate, or all of them).
func (c *Client) Datasets(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var r *pb.DescribeReply
	err := c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.Describe(ctx, &pb.DescribeRequest{})
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, "nothing was charged")
		return nil, e
	}
	return r.GetDatasets(), nil
}

func (c *Client) request(call release.Call) (*pb.CallRequest, error) {
	if call.Dataset.Synthetic() || call.Dataset.Derived != nil {
		return nil, release.Errorf(release.NameNotAvailable, "%s: filtered or selected subsets of a dataset on server %s cannot run there yet; run the call on the whole dataset", call.Func, c.Name)
	}
	return wire.EncodeCall(call)
}

// Plan plans call at the server: free, nothing is read.
func (c *Client) Plan(call release.Call) (*release.Plan, error) {
	req, err := c.request(call)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	var r *pb.PlanReply
	err = c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.Plan(ctx, req)
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, "nothing was charged")
		return nil, e
	}
	p, err := wire.PlanOf(r)
	if err != nil {
		return nil, release.Errorf(release.NameProviderFailed, "%s (%s) sent a plan this client cannot read: %v", c.Name, c.Addr, err)
	}
	return p, nil
}

// DryRun asks the gate whether it could admit the call's cost, then the
// server what the call would cost and leave.
func (c *Client) DryRun(ctx context.Context, call release.Call, gate release.Gate) (*release.Receipt, error) {
	p, err := c.Plan(call)
	if err != nil {
		return nil, err
	}
	if gc, ok := gate.(release.GateChecker); ok {
		if err := gc.Check(p.Event(), call.Dataset); err != nil {
			return nil, err
		}
	}
	req, _ := c.request(call)
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var r *pb.ReceiptReply
	err = c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.DryRun(ctx, req)
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, "nothing was charged")
		return nil, e
	}
	rc, err := wire.ReceiptOf(r.GetReceipt())
	if err != nil {
		return nil, release.Errorf(release.NameProviderFailed, "%s (%s) sent a receipt this client cannot read: %v", c.Name, c.Addr, err)
	}
	return rc, nil
}

// Execute plans call at the server, asks gate, and has the server charge
// and run it.
func (c *Client) Execute(ctx context.Context, call release.Call, gate release.Gate) (*release.Release, error) {
	p, err := c.Plan(call)
	if err != nil {
		return nil, err
	}
	commit, abort := func() string { return "" }, func() {}
	if gate != nil {
		// A gate's check and its commit must not interleave with another
		// call's (release.Local serializes its charges the same way), so
		// calls with a gate run one at a time in a process.
		gateMu.Lock()
		defer gateMu.Unlock()
		if commit, abort, err = gate.Admit(ctx, p.Event(), call.Dataset); err != nil {
			return nil, err
		}
	}
	if call.ID == "" {
		call.ID = uuid.NewString()
	}
	req, err := c.request(call)
	if err != nil {
		abort()
		return nil, err
	}
	// A running call may take long (the server finishes it even if this
	// client goes away, and keeps its release for a retry of the call id);
	// a server that is gone is given up after DefaultTimeout (invoke).
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	var r *pb.ReleaseReply
	err = c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.Execute(ctx, req)
		return err
	})
	if err != nil {
		what := fmt.Sprintf("whether it charged this call is in its ledger (call id %s; `privnotes ledger show` there lists it), and the call counts against your budget block", call.ID)
		e, charged := c.remoteErr(err, what)
		if charged {
			commit()
		} else {
			abort()
		}
		return nil, e
	}
	rel, derr := wire.ReleaseOf(r)
	block := commit()
	if derr != nil {
		return nil, release.Errorf(release.NameProviderFailed, "%s (%s) charged call %s but sent a release this client cannot read: %v", c.Name, c.Addr, call.ID, derr)
	}
	rel.Receipt.Block = block
	return rel, nil
}

var _ release.FedProvider = (*Client)(nil)

// FedOpen has the server charge its part of a federated call and ready
// its data. It is retried with the call's id while the server is
// unreachable (the server opens an id once).
func (c *Client) FedOpen(ctx context.Context, call release.Call) (*release.Receipt, error) {
	req, err := c.request(call)
	if err != nil {
		return nil, err
	}
	return c.chargeCall(ctx, call.ID, func(ctx context.Context) (*pb.ReceiptReply, error) {
		return c.api.FedOpen(ctx, req)
	})
}

// chargeCall runs rpc, a call that charges the server's ledger and
// answers with the receipt (FedOpen, FedCommit), retried while the server
// is unreachable, and decodes the receipt.
func (c *Client) chargeCall(ctx context.Context, id string, rpc func(context.Context) (*pb.ReceiptReply, error)) (*release.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	var r *pb.ReceiptReply
	err := c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = rpc(ctx)
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, fmt.Sprintf("whether it charged is in its ledger (call id %s)", id))
		return nil, e
	}
	rc, err := wire.ReceiptOf(r.GetReceipt())
	if err != nil {
		return nil, release.Errorf(release.NameProviderFailed, "%s (%s) charged call %s but sent a receipt this client cannot read: %v", c.Name, c.Addr, id, err)
	}
	return rc, nil
}

// FedRepRound implements release.FedRepProvider: round index of an
// opened private_fedrep call, answered by the server's silo.
func (c *Client) FedRepRound(ctx context.Context, call release.Call, index int, round fedrep.Request) (fedrep.SiloReply, error) {
	req, err := wire.EncodeFedRepRound(call, index, round)
	if err != nil {
		return fedrep.SiloReply{}, err
	}
	r, err := c.fedRound(ctx, call, req)
	if err != nil {
		return fedrep.SiloReply{}, err
	}
	rep, err := wire.FedRepRoundOf(index, r)
	if err != nil {
		return fedrep.SiloReply{}, c.unreadableRound(err)
	}
	return rep, nil
}

// FedRound asks the server for one round of an opened federated call,
// retrying while it is unreachable: the server answers each round once
// and keeps the answer for a retry.
func (c *Client) FedRound(ctx context.Context, call release.Call, round federated.PCARequest) (federated.PCAReply, error) {
	req, err := wire.EncodeRound(call, round)
	if err != nil {
		return federated.PCAReply{}, err
	}
	r, err := c.fedRound(ctx, call, req)
	if err != nil {
		return federated.PCAReply{}, err
	}
	rep, err := wire.RoundOf(round.Round, r)
	if err != nil {
		return federated.PCAReply{}, c.unreadableRound(err)
	}
	return rep, nil
}

// fedRound sends one round of either federated call, retrying while the
// server is unreachable; a failure says the member's charge stands.
func (c *Client) fedRound(ctx context.Context, call release.Call, req *pb.FedRoundRequest) (*pb.FedRoundReply, error) {
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	var r *pb.FedRoundReply
	err := c.invoke(ctx, func(ctx context.Context) (err error) {
		r, err = c.api.FedRound(ctx, req)
		return err
	})
	if err != nil {
		e, _ := c.remoteErr(err, fmt.Sprintf("its charge for call %s stands", call.ID))
		return nil, e
	}
	return r, nil
}

func (c *Client) unreadableRound(err error) error {
	return release.Errorf(release.NameProviderFailed, "%s (%s) sent a round this client cannot read: %v", c.Name, c.Addr, err)
}
