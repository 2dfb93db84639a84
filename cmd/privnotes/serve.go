package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/signal"
	"sort"
	"syscall"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/service"
	"github.com/privnotes/privnotes/service/tlsdir"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "the data service: run private calls on this state directory's datasets over gRPC with mutual TLS",
		run:     runServe,
	})
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", "serve --state DIR --listen HOST:PORT --tls-dir DIR [--authz FILE]", `Serves the datasets of a state directory to privnotes clients (kernels, repl,
run started with --servers NAME=HOST:PORT): each private call is planned from
this server's own registry, charged to its ledger before any data is read,
and answered with its release and receipt only. Mutual TLS 1.3 only: the
server presents server.pem and accepts clients whose certificate ca.pem
signed (privnotes certs init). There is no plaintext listener.
Without --authz every such client may use every dataset; with --authz FILE
each may use only the datasets FILE grants to its certificate's common name
(docs/deployment.md), and every other request is refused before anything is
planned or charged.
Stops gracefully on SIGINT or SIGTERM; a restarted server continues from its
ledger.`, stderr)
	listen := fs.String("listen", "127.0.0.1:7001", "address to listen on (HOST:PORT; port 0 picks a free one)")
	tlsDir := fs.String("tls-dir", "", "directory holding ca.pem, server.pem and server-key.pem (required)")
	authzFile := fs.String("authz", "", "`FILE` granting each client (its certificate's common name) its datasets; default: every client the CA signed may use every dataset")
	fedReserve := fs.Duration("fed-reserve", release.FedReserve, "how long a prepared federated call holds its reservation of budget when its coordinator neither commits nor aborts it; then it lapses uncharged")
	st, _, code := openState(fs, args, stderr, false)
	if st == nil {
		return code
	}
	defer st.Close()
	if *fedReserve <= 0 {
		fmt.Fprintln(stderr, "privnotes serve: --fed-reserve must be a positive duration (e.g. 10m)")
		return 2
	}
	release.FedReserve = *fedReserve
	if *tlsDir == "" {
		fmt.Fprintln(stderr, "privnotes serve: --tls-dir is required (the service speaks mutual TLS only; make the files with `privnotes certs init DIR --hosts ...`)")
		return 2
	}
	cfg, err := tlsdir.Server(*tlsDir)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes serve: %v\n", err)
		return 1
	}
	var authz *service.Authz
	if *authzFile != "" {
		if authz, err = service.LoadAuthz(*authzFile); err != nil {
			fmt.Fprintf(stderr, "privnotes serve: --authz %v\n", err)
			return 1
		}
	}
	exec := &release.Local{Store: func() (*ledger.Store, error) { return st, nil }}
	srv, err := service.NewServer(st, exec)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes serve: %v\n", err)
		return 1
	}
	srv.SetAuthz(authz)
	g, err := service.NewGRPC(srv, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes serve: %v\n", err)
		return 1
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes serve: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if authz != nil {
		warnUnregistered(st, authz, *authzFile, stderr)
	}
	// The first line names the address (scripts and tests read it).
	fmt.Fprintf(stdout, "privnotes serve: state %s, listening on %s (mutual TLS)\n", st.Dir(), lis.Addr())
	if authz != nil {
		fmt.Fprintf(stdout, "privnotes serve: %d clients authorized by %s\n", len(authz.Clients()), *authzFile)
	} else {
		fmt.Fprintln(stdout, "privnotes serve: no --authz: every client the CA signed may use every dataset")
	}
	if err := service.Serve(ctx, g, lis); err != nil {
		fmt.Fprintf(stderr, "privnotes serve: %v\n", err)
		return 1
	}
	return 0
}

// warnUnregistered names the grants of an authz file whose dataset is not
// registered here (a typo, or a dataset still to come): they grant nothing
// until it is.
func warnUnregistered(st *ledger.Store, a *service.Authz, file string, stderr io.Writer) {
	all, err := st.Datasets()
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, sc := range all {
		have[sc.Name] = true
	}
	for _, id := range a.Clients() {
		g, _ := a.Grant(id)
		names := make([]string, 0, len(g.Datasets))
		for d := range g.Datasets {
			if !have[d] {
				names = append(names, d)
			}
		}
		sort.Strings(names)
		for _, d := range names {
			fmt.Fprintf(stderr, "privnotes serve: warning: %s grants client %q dataset %q, which is not registered here\n", file, id, d)
		}
	}
}
