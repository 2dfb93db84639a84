package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/service/wire"
)

// Limits of the transport.
const (
	// MaxRequest bounds a request: calls are a few keywords; a federated
	// round carries the broadcast d×k basis (wire.MaxBasisEntries values).
	MaxRequest = 9 << 20
	// MaxReply bounds a reply: a d×k basis at d = 10 000, k = 100 is 8 MB.
	MaxReply = 64 << 20
	// MaxCall is the longest a call may run on the server, whatever
	// deadline the client asked for; a call without a deadline gets it.
	MaxCall = 30 * time.Minute
)

var logger = log.New(os.Stderr, "privnotes serve: ", log.LstdFlags|log.LUTC)

// SetLog sends the server's log (one line per call, public facts only) to w.
func SetLog(w io.Writer) { logger.SetOutput(w) }

func logf(format string, args ...any) { logger.Printf(format, args...) }

// NewGRPC returns a gRPC server for s over mutual TLS (tlsCfg must require
// and verify client certificates: tlsdir.Server). There is no plaintext
// variant.
func NewGRPC(s *Server, tlsCfg *tls.Config) (*grpc.Server, error) {
	if tlsCfg == nil || tlsCfg.ClientAuth != tls.RequireAndVerifyClientCert || tlsCfg.MinVersion < tls.VersionTLS13 {
		return nil, fmt.Errorf("the data service needs TLS 1.3 with verified client certificates")
	}
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsCfg)),
		grpc.MaxRecvMsgSize(MaxRequest),
		grpc.MaxSendMsgSize(MaxReply),
		grpc.ConnectionTimeout(10*time.Second),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
		// Clients ping every 15 s during a long call (service/client) to
		// notice a server that is gone; allow that.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second}),
		// authorize and bind run last, right before the handler: a
		// refusal is logged, and nothing is planned, charged or read
		// before them. bind runs after authorize so that a client the
		// authz file refuses records no call owner.
		grpc.ChainUnaryInterceptor(recoverer, deadline, logging, s.authorize, s.bind),
		grpc.ChainStreamInterceptor(s.authorizeStream),
	)
	pb.RegisterDataServiceServer(g, s)
	return g, nil
}

// client names the caller by its certificate's common name.
func client(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "?"
	}
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
		return ti.State.PeerCertificates[0].Subject.CommonName + "@" + p.Addr.String()
	}
	return p.Addr.String()
}

// logging writes one line per call: public facts only (method, client,
// function, dataset, call id, code, duration), never a value.
func logging(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	what := ""
	switch r := req.(type) {
	case *pb.CallRequest:
		what = fmt.Sprintf(" %s(%q) call %s", r.GetFunction(), r.GetDataset(), logID(r.GetCallId()))
	case *pb.FedRoundRequest:
		what = fmt.Sprintf(" %s(%q) call %s round %d", r.GetCall().GetFunction(), r.GetCall().GetDataset(), logID(r.GetCall().GetCallId()), r.GetRound())
	case *pb.DescribeRequest:
		what = fmt.Sprintf(" %q", r.GetDataset())
	case *pb.FedCallRef: // FedCommit, FedAbort
		what = fmt.Sprintf(" call %s", logID(r.GetCallId()))
	}
	logf("%s %s%s: %s in %v", client(ctx), info.FullMethod, what, status.Code(err), time.Since(start).Round(time.Millisecond))
	return resp, err
}

// logID is a client's call id as the log shows it: as sent when it is a
// plain token of at most wire.MaxName bytes, else quoted and cut, so that
// no request can forge or flood log lines (the handler refuses it).
func logID(id string) string {
	plain := len(id) <= wire.MaxName
	for _, c := range id {
		if c <= ' ' || c > '~' {
			plain = false
			break
		}
	}
	if plain {
		return id
	}
	if len(id) > wire.MaxName {
		id = id[:wire.MaxName] + "…"
	}
	return strconv.Quote(id)
}

// deadline caps every call at MaxCall.
func deadline(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > MaxCall {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, MaxCall)
		defer cancel()
	}
	return h(ctx, req)
}

// recoverer turns a handler's panic into a fixed error: its value may
// depend on data, so it is neither returned nor logged. The executor
// already recovers the mechanisms' panics; this is the last wall.
func recoverer(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			logf("%s: a handler panicked (value not shown)", info.FullMethod)
			// An Execute may have been charged: the client counts it.
			charged := strings.HasSuffix(info.FullMethod, "/Execute") || strings.HasPrefix(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:], "Fed")
			resp, err = nil, wire.Status(release.Errorf(release.NameLedgerError, "the server failed while handling %s (see its log)", info.FullMethod), charged).Err()
		}
	}()
	return h(ctx, req)
}

// Serve serves g on lis until ctx ends, then stops gracefully.
func Serve(ctx context.Context, g *grpc.Server, lis net.Listener) error {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			g.GracefulStop()
		case <-done:
		}
	}()
	err := g.Serve(lis)
	close(done)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
