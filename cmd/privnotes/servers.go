package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/dsl/runtime"
	"github.com/privnotes/privnotes/service/client"
	"github.com/privnotes/privnotes/service/tlsdir"
)

// The data servers a kernel, repl or script reaches: --servers
// NAME=HOST:PORT,... and --tls-dir DIR, or PRIVNOTES_SERVERS and
// PRIVNOTES_TLS_DIR. The flags are written into the environment, which the
// kernel's worker inherits; the runtime dials a server at its first use.
const (
	envServers = "PRIVNOTES_SERVERS"
	envTLSDir  = "PRIVNOTES_TLS_DIR"
	// envTimeout is how long a call waits for its server (a Go duration;
	// default 30s).
	envTimeout = "PRIVNOTES_SERVER_TIMEOUT"
)

// serverFlags are the client flags of kernel, repl, run and install.
type serverFlags struct {
	servers string
	tlsDir  string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.servers, "servers", "", "data servers `NAME=HOST:PORT,...` that dataset(\"x\", server=\"NAME\") reaches (default $"+envServers+")")
	fs.StringVar(&f.tlsDir, "tls-dir", "", "`DIR` holding ca.pem, client.pem and client-key.pem for the data servers (default $"+envTLSDir+")")
}

// apply validates the flags (or the environment) and writes them into the
// environment; it returns the variables set, for kernel.json.
func (f *serverFlags) apply() (map[string]string, error) {
	servers, dir := f.servers, f.tlsDir
	if servers == "" {
		servers = os.Getenv(envServers)
	}
	if dir == "" {
		dir = os.Getenv(envTLSDir)
	}
	if servers == "" {
		if f.tlsDir != "" {
			return nil, errors.New("--tls-dir without --servers: name the servers (NAME=HOST:PORT,...)")
		}
		return nil, nil
	}
	if _, err := parseServers(servers); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("--servers needs --tls-dir DIR (or $" + envTLSDir + "): the servers accept mutual TLS only")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := tlsdir.Client(abs); err != nil {
		return nil, err
	}
	env := map[string]string{envServers: servers, envTLSDir: abs}
	for k, v := range env {
		os.Setenv(k, v)
	}
	return env, nil
}

// parseServers reads NAME=HOST:PORT,...
func parseServers(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("servers: %q is not NAME=HOST:PORT", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("servers: %s: %q is not HOST:PORT", name, addr)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("servers: %s is named twice", name)
		}
		out[name] = addr
	}
	return out, nil
}

// remotes dials the configured servers once each.
var remotes struct {
	mu      sync.Mutex
	clients map[string]*client.Client
}

func init() { runtime.RegisterRemotes(dialServer) }

// dialServer returns the client of a server named in the environment.
func dialServer(name string) (release.Remote, error) {
	remotes.mu.Lock()
	defer remotes.mu.Unlock()
	key := strings.Join([]string{name, os.Getenv(envServers), os.Getenv(envTLSDir), os.Getenv(envTimeout)}, "\x00")
	if c, ok := remotes.clients[key]; ok {
		return c, nil
	}
	servers, err := parseServers(os.Getenv(envServers))
	if err != nil {
		return nil, err
	}
	addr, ok := servers[name]
	if !ok {
		if len(servers) == 0 {
			return nil, fmt.Errorf("no data servers are configured, so %q names none", name)
		}
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no server is named %q; the configured servers are %s", name, strings.Join(names, ", "))
	}
	cfg, err := tlsdir.Client(os.Getenv(envTLSDir))
	if err != nil {
		return nil, release.Errorf(release.NameProviderFailed, "%s (%s): no client credentials: %v", name, addr, err)
	}
	c, err := client.New(name, addr, cfg)
	if err != nil {
		return nil, err
	}
	if t := os.Getenv(envTimeout); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("$%s=%q is not a positive duration (e.g. 30s)", envTimeout, t)
		}
		c.Timeout = d
	}
	if remotes.clients == nil {
		remotes.clients = map[string]*client.Client{}
	}
	remotes.clients[key] = c
	return c, nil
}
