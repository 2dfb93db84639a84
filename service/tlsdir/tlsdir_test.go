package tlsdir

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitWritesVerifiablePairs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := Init(dir, []string{"127.0.0.1", "localhost"}, "alice"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAKeyFile, ServerKeyFile, ClientKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	ca := readCert(t, filepath.Join(dir, CAFile))
	if !ca.IsCA {
		t.Fatal("ca.pem is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	srv := readCert(t, filepath.Join(dir, ServerFile))
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Errorf("server.pem does not verify for localhost: %v", err)
	}
	if err := srv.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("server.pem lacks 127.0.0.1: %v", err)
	}
	if err := srv.VerifyHostname("10.0.0.1"); err == nil {
		t.Error("server.pem verifies for a host it was not made for")
	}
	cli := readCert(t, filepath.Join(dir, ClientFile))
	if _, err := cli.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client.pem does not verify as a client: %v", err)
	}
	if cli.Subject.CommonName != "alice" {
		t.Errorf("client CN %q, want alice", cli.Subject.CommonName)
	}
	if err := Init(dir, []string{"127.0.0.1"}, ""); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("a second Init in the same directory: %v, want a refusal", err)
	}
	if err := Init(t.TempDir(), nil, ""); err == nil {
		t.Error("Init without hosts succeeded")
	}
}

// TestHandshake checks the configurations against each other: a client of
// the same CA connects with TLS 1.3; a client of another CA, or without a
// certificate, is refused.
func TestHandshake(t *testing.T) {
	good, other := t.TempDir(), t.TempDir()
	for _, d := range []string{good, other} {
		if err := Init(d, []string{"127.0.0.1"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	scfg, err := Server(good)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	dial := func(cfg *tls.Config) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		if c.ConnectionState().Version != tls.VersionTLS13 {
			t.Errorf("TLS version %x, want 1.3", c.ConnectionState().Version)
		}
		// A refused client certificate surfaces at the first read in TLS 1.3.
		_, err = io.ReadAll(c)
		return err
	}
	ccfg, err := Client(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(ccfg); err != nil {
		t.Errorf("a client of the same CA: %v", err)
	}
	wrong, err := Client(other)
	if err != nil {
		t.Fatal(err)
	}
	wrong.RootCAs = ccfg.RootCAs // trusts the server, but its own certificate is another CA's
	if err := dial(wrong); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	none := ccfg.Clone()
	none.Certificates = nil
	if err := dial(none); err == nil {
		t.Error("a client without a certificate was accepted")
	}
	if _, err := Client(t.TempDir()); err == nil || !strings.Contains(err.Error(), "certs init") {
		t.Errorf("an empty TLS directory: %v, want an error saying how to make one", err)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
