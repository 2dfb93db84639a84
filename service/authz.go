package service

// Per-client authorization (`privnotes serve --authz FILE`). Without it,
// every client whose certificate the deployment's CA signed may use every
// dataset of the server; with it, each client may use only the datasets
// the file grants to its certificate's identity.
//
// The identity is the Subject common name of the client's verified
// certificate: `privnotes certs client DIR --name alice` writes it, the
// server's log already names clients by it, and the certificates privnotes
// issues carry no client SANs. The CA vouches for it, so whoever holds
// ca-key.pem can issue any identity: keep that key offline.
//
// The check is one gRPC interceptor (authorize), so every RPC, present or
// future, passes it before its handler runs: before anything is planned,
// charged or read. It finds the datasets a request names by walking the
// request message for string fields named "dataset" (a CallRequest, the
// call inside a FedRoundRequest, a DescribeRequest, and any new message
// that embeds them), adds the dataset of the call a request's call_id
// continues (a kept release, an opened federated call: a call id must not
// reach another dataset's answers), and fails closed: a request naming no
// dataset is refused, except the Describe that lists the server's
// datasets, which lists only the granted ones; streaming RPCs (the service
// has none) are refused.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// Authz maps client identities to the datasets they may use.
type Authz struct {
	grants map[string]Grant
}

// Grant is what one client may use.
type Grant struct {
	// All is set by "*": every dataset of the server.
	All bool
	// Datasets are the names granted otherwise.
	Datasets map[string]bool
}

// Allows reports whether the grant covers dataset.
func (g Grant) Allows(dataset string) bool { return g.All || g.Datasets[dataset] }

// datasetRE is the dataset names an authz file may hold: the registry's
// (identities are the names tlsdir accepts for a client certificate).
var datasetRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ParseAuthz reads an authz file: one client per line, its certificate's
// common name followed by the datasets it may use (separated by spaces or
// commas; "*" alone for every dataset); "#" starts a comment; blank lines
// are skipped. A client listed twice, a name that cannot be an identity or
// a dataset, or a client without datasets is an error naming its line.
func ParseAuthz(r io.Reader) (*Authz, error) {
	a := &Authz{grants: map[string]Grant{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' })
		if len(fields) == 0 {
			continue
		}
		id, names := fields[0], fields[1:]
		switch {
		case !tlsdir.ValidName(id):
			return nil, fmt.Errorf("line %d: %q is not a client identity (a certificate common name: a letter or digit followed by letters, digits, '_', '.', '@' or '-', at most 64)", n, id)
		case len(names) == 0:
			return nil, fmt.Errorf("line %d: client %q is granted no dataset (list its datasets after its name, or * for all)", n, id)
		}
		if _, dup := a.grants[id]; dup {
			return nil, fmt.Errorf("line %d: client %q is listed twice (put all its datasets on one line)", n, id)
		}
		g := Grant{Datasets: map[string]bool{}}
		for _, d := range names {
			switch {
			case d == "*" && len(names) == 1:
				g.All = true
			case d == "*":
				return nil, fmt.Errorf("line %d: client %q: * (every dataset) cannot be combined with dataset names", n, id)
			case !datasetRE.MatchString(d):
				return nil, fmt.Errorf("line %d: client %q: %q is not a dataset name (a letter followed by letters, digits, '_', '.' or '-', at most 64)", n, id, d)
			default:
				g.Datasets[d] = true
			}
		}
		a.grants[id] = g
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return a, nil
}

// LoadAuthz reads the authz file at path.
func LoadAuthz(path string) (*Authz, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := ParseAuthz(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Grant returns the grant of client id.
func (a *Authz) Grant(id string) (Grant, bool) {
	g, ok := a.grants[id]
	return g, ok
}

// Clients returns the listed identities, sorted.
func (a *Authz) Clients() []string {
	out := make([]string, 0, len(a.grants))
	for id := range a.grants {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// SetAuthz makes the server check every request against a (nil: every
// client the CA signed may use every dataset). Call it before serving.
func (s *Server) SetAuthz(a *Authz) { s.authz = a }

type grantKey struct{}

// grantOf is the grant authorize found for the request of ctx (ok is false
// when the server has no authz file).
func grantOf(ctx context.Context) (Grant, bool) {
	g, ok := ctx.Value(grantKey{}).(Grant)
	return g, ok
}

// identity is the common name of the peer's verified client certificate.
func identity(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return "", false
	}
	return ti.State.VerifiedChains[0][0].Subject.CommonName, true
}

// authorize is the interceptor of the authz file: it refuses, with
// PermissionDenied, a client the file does not list and a request naming
// a dataset not granted to it, before the handler runs.
func (s *Server) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s.authz == nil {
		return h(ctx, req)
	}
	id, ok := identity(ctx)
	if !ok {
		return nil, status.Error(codes.PermissionDenied, "no verified client certificate: this server authorizes clients by their certificate")
	}
	g, ok := s.authz.Grant(id)
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "client %q is not listed in this server's authz file: ask the data owner to grant it datasets", id)
	}
	m, ok := req.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "client %q: %s carries no request the server can authorize", id, info.FullMethod)
	}
	names := datasetsOf(m.ProtoReflect(), nil)
	// A call id names the call it continues (a retried Execute, a round of
	// an opened federated call): the dataset that call was made on must be
	// granted too, whatever dataset this request claims. Only the
	// caller's own calls are looked at: a refusal naming the dataset of
	// another client's call would tell that the call exists and where
	// (bind, next, refuses such a request without a word about it).
	for _, cid := range callIDsOf(m.ProtoReflect(), nil) {
		if s.owns(ctx, cid) {
			names = append(names, s.keptDatasets(cid)...)
		}
	}
	if len(names) == 0 {
		if d, ok := req.(*pb.DescribeRequest); !ok || d.GetDataset() != "" {
			return nil, status.Errorf(codes.PermissionDenied, "client %q: %s names no dataset, so this server's authz file cannot grant it", id, info.FullMethod)
		}
	}
	for _, name := range names {
		if !g.Allows(name) {
			return nil, status.Errorf(codes.PermissionDenied, "client %q may not use dataset %q on this server (its authz file does not grant it); nothing was planned or charged", id, name)
		}
	}
	return h(context.WithValue(ctx, grantKey{}, g), req)
}

// authorizeStream refuses every streaming RPC when the server has an authz
// file: the service has none, and one added later must be given a check of
// its requests before it can be authorized.
func (s *Server) authorizeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if s.authz == nil {
		return h(srv, ss)
	}
	return status.Errorf(codes.PermissionDenied, "%s is a streaming call, which this server's authz check does not cover", info.FullMethod)
}

// datasetsOf appends the values of m's string fields named "dataset", in m
// and every message it holds.
func datasetsOf(m protoreflect.Message, out []string) []string {
	return stringsNamed(m, "dataset", out)
}

// callIDsOf appends the values of m's string fields named "call_id".
func callIDsOf(m protoreflect.Message, out []string) []string {
	return stringsNamed(m, "call_id", out)
}

func stringsNamed(m protoreflect.Message, name protoreflect.Name, out []string) []string {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == name && fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap():
			out = append(out, v.String())
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				out = stringsNamed(l.Get(i).Message(), name, out)
			}
		case fd.Kind() == protoreflect.MessageKind && fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					out = stringsNamed(mv.Message(), name, out)
					return true
				})
			}
		case fd.Kind() == protoreflect.MessageKind:
			out = stringsNamed(v.Message(), name, out)
		}
		return true
	})
	return out
}

// keptDatasets are the datasets of what the server keeps under call id:
// an executed call's release, an opened federated call's request.
func (s *Server) keptDatasets(id string) []string {
	if id == "" {
		return nil
	}
	var out []string
	r := &pb.ReleaseReply{}
	if ok, _ := s.kept(id, r); ok {
		out = append(out, r.GetReceipt().GetDataset())
	}
	open := &pb.CallRequest{}
	if ok, _ := s.kept(openReqKey(id), open); ok {
		out = append(out, open.GetDataset())
	}
	return out
}
