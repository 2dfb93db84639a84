package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/privnotes/privnotes/service/tlsdir"
)

func init() {
	register(&command{
		name:    "certs",
		summary: "mutual-TLS material for the data service: init DIR --hosts H1,H2",
		run:     runCerts,
	})
}

const certsUsage = `Usage:
  privnotes certs init DIR --hosts 127.0.0.1,localhost [--client NAME]
`

func runCerts(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = []string{"init", "-h"}
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
	client := fs.String("client", "privnotes-client", "the client certificate's common name (shown in the server's log)")
	rest := args[1:]
	// DIR may come before or after the flags.
	var dir string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		dir, rest = rest[0], rest[1:]
	}
	if code, ok := parseFlags(fs, rest); !ok {
		return code
	}
	if dir == "" && fs.NArg() == 1 {
		dir = fs.Arg(0)
	} else if fs.NArg() > 0 || dir == "" {
		fs.Usage()
		return 2
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
