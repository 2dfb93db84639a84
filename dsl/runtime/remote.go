package runtime

import (
	"errors"
	"fmt"
	"sync"

	"github.com/privnotes/privnotes/dsl/release"
)

// Remote datasets: dataset("NAME", server="p1") is a handle on a dataset of
// a data service (`privnotes serve`), and every private call on it runs
// there through a release.Remote. This package imports no transport: the
// binary registers how servers are reached (cmd/privnotes wires
// service/client), as it registers the snapshot engine.

var (
	remotesMu sync.Mutex
	dialer    func(server string) (release.Remote, error)
)

// ErrNoServers is what a dialer returns for a server name it does not
// know because no servers are configured.
var ErrNoServers = errors.New("no data servers are configured")

// RegisterRemotes sets how a server name ("p1") becomes an executor; the
// dialer is called at each use and should cache its connections.
func RegisterRemotes(dial func(server string) (release.Remote, error)) {
	remotesMu.Lock()
	dialer = dial
	remotesMu.Unlock()
}

// remote returns the executor of server, or panics with a DatasetError
// saying how to configure it.
func (rt *Runtime) remote(fn, server string) release.Remote {
	remotesMu.Lock()
	dial := dialer
	remotesMu.Unlock()
	if dial == nil {
		panic(errorf(NameDatasetError, "%s: server %q: this build reaches no data servers", fn, server))
	}
	r, err := dial(server)
	if err != nil {
		var e *release.Error
		if errors.As(err, &e) {
			panic(e)
		}
		panic(errorf(NameDatasetError, "%s: server %q: %v (start the kernel, repl or run with --servers NAME=HOST:PORT,... and --tls-dir DIR, or set PRIVNOTES_SERVERS and PRIVNOTES_TLS_DIR)", fn, server, err))
	}
	return r
}

// remoteDataset opens dataset name on server.
func (rt *Runtime) remoteDataset(b *binding, name, server string) Dataset {
	key := server + "/" + name
	rt.mu.Lock()
	h, ok := rt.byName[key]
	rt.mu.Unlock()
	if ok {
		return h
	}
	sc, err := rt.remote("dataset", server).Describe(b.ctx, name)
	if err != nil {
		panic(providerNote(err, b))
	}
	h = registerHandle(&handleEntry{rt: rt, name: name, schema: sc, server: server})
	rt.mu.Lock()
	rt.byName[key] = h
	rt.mu.Unlock()
	return h
}

// executor is the executor of src: its server's, or the in-process one.
func (rt *Runtime) executor(fn string, src *source) release.Executor {
	if src.server != "" {
		return rt.remote(fn, src.server)
	}
	return rt.exec
}

// serverKeyword is dataset()'s server= keyword ("" for a local dataset).
func serverKeyword(kws []KW) string {
	if len(kws) == 0 {
		return ""
	}
	return mustArgs("dataset", kws).Str("server")
}

// providerNote adds to a server's failure that the cell's earlier charges
// (on that server or others) stand.
func providerNote(err error, b *binding) error {
	var re *release.Error
	if errors.As(err, &re) && re.Name == NameProviderFailed && b.charged > 0 {
		re.Msg += fmt.Sprintf("; the %d charge(s) this cell made before this call stand (their receipts and the servers' ledgers list them)", b.charged)
	}
	return err
}
