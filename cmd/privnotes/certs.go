package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/privnotes/privnotes/service/tlsdir"
)

func init() {
	register(&command{
		name:    "certs",
		summary: "mutual-TLS material for the data service: init DIR --hosts H1,H2; client DIR --name NAME",
		run:     runCerts,
	})
}

const certsUsage = `Usage:
  privnotes certs init DIR --hosts 127.0.0.1,localhost [--client NAME]
  privnotes certs client DIR --name NAME [--out DIR/clients/NAME]
`

func runCerts(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = []string{"init", "-h"}
	}
	if len(args) > 0 && args[0] == "client" {
		return runCertsClient(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprint(stderr, certsUsage)
		return 2
	}
	fs := newFlags("certs", "certs init DIR --hosts H1,H2 [--client NAME]", `Writes a new certificate authority (ca.pem, ca-key.pem), a server certificate
for the given hosts (server.pem, server-key.pem) and a client certificate
(client.pem, client-key.pem) into DIR: ECDSA P-256, keys 0600, the CA valid
5 years and the others 2. The server gets server*.pem and ca.pem; each analyst
gets client*.pem and ca.pem. Keep ca-key.pem offline. Existing files are never
overwritten.`, stderr)
	hosts := fs.String("hosts", "", "comma-separated IP addresses and DNS names clients reach the server at (required)")
	client := fs.String("client", "privnotes-client", "the client certificate's common name: its identity in a server's --authz file and log")
	dir, code, ok := certsDir(fs, args[1:])
	if !ok {
		return code
	}
	var hs []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	if err := tlsdir.Init(dir, hs, *client); err != nil {
		fmt.Fprintf(stderr, "privnotes certs init: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s/{ca,ca-key,server,server-key,client,client-key}.pem for hosts %s\n", dir, strings.Join(hs, ","))
	return 0
}

// certsDir parses the flags of a certs subcommand and its one DIR, which
// may come before or after them.
func certsDir(fs *flag.FlagSet, rest []string) (string, int, bool) {
	var dir string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		dir, rest = rest[0], rest[1:]
	}
	if code, ok := parseFlags(fs, rest); !ok {
		return "", code, false
	}
	if dir == "" && fs.NArg() == 1 {
		dir = fs.Arg(0)
	} else if fs.NArg() > 0 || dir == "" {
		fs.Usage()
		return "", 2, false
	}
	return dir, 0, true
}

func runCertsClient(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("certs", "certs client DIR --name NAME [--out OUT]", `Issues one more client certificate, for one analyst, signed by the CA in DIR
(ca.pem and ca-key.pem from privnotes certs init): writes ca.pem, client.pem
and client-key.pem into OUT (default DIR/clients/NAME), the directory the
analyst gives as --tls-dir. NAME is the certificate's common name: the
client's identity in a server's --authz file and log. Existing files are
never overwritten.`, stderr)
	name := fs.String("name", "", "the client's name (required): letters, digits, '_', '.', '@' or '-'")
	out := fs.String("out", "", "the directory to write (default DIR/clients/NAME)")
	dir, code, ok := certsDir(fs, args)
	if !ok {
		return code
	}
	if *name == "" {
		fmt.Fprintln(stderr, "privnotes certs client: --name is required (the analyst's identity, e.g. --name alice)")
		return 2
	}
	if *out == "" {
		*out = filepath.Join(dir, "clients", *name)
	}
	if err := tlsdir.Issue(dir, *name, *out); err != nil {
		fmt.Fprintf(stderr, "privnotes certs client: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s/{ca,client,client-key}.pem for client %q: hand the directory to the analyst (--tls-dir)\n", *out, *name)
	return 0
}
