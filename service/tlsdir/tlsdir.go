// Package tlsdir writes and reads the mutual-TLS material of a privnotes
// data service: one directory holding a private certificate authority
// (ca.pem, ca-key.pem), the server's pair (server.pem, server-key.pem) and
// a client pair (client.pem, client-key.pem).
//
// The service accepts TLS 1.3 only, and only clients whose certificate the
// directory's CA signed; clients accept only a server certificate the same
// CA signed. Keys are ECDSA P-256, written 0600.
package tlsdir

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside a TLS directory.
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
	ClientFile    = "client.pem"
	ClientKeyFile = "client-key.pem"
)

// Validity of the certificates Init writes: the CA outlives the leaves, so
// leaves can be reissued under the same CA.
const (
	CAValidity   = 5 * 365 * 24 * time.Hour
	LeafValidity = 2 * 365 * 24 * time.Hour
)

// Init writes a new CA, a server certificate for hosts (IP addresses or
// DNS names) and a client certificate named client into dir, which it
// creates (0700). It refuses to overwrite any existing file.
func Init(dir string, hosts []string, client string) error {
	if len(hosts) == 0 {
		return errors.New("no --hosts: name the addresses or host names clients use to reach the server (e.g. 127.0.0.1,localhost)")
	}
	if client == "" {
		client = "privnotes-client"
	}
	for _, f := range []string{CAFile, CAKeyFile, ServerFile, ServerKeyFile, ClientFile, ClientKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s already exists: refusing to overwrite TLS material (use a new directory)", filepath.Join(dir, f))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "privnotes CA", Organization: []string{"privnotes"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, ca, err := sign(caTmpl, caKey, nil, nil)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "privnotes server", Organization: []string{"privnotes"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(LeafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			srvTmpl.IPAddresses = append(srvTmpl.IPAddresses, ip)
		} else {
			srvTmpl.DNSNames = append(srvTmpl.DNSNames, h)
		}
	}
	cliTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: client, Organization: []string{"privnotes"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(LeafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := writePEM(dir, CAFile, "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(dir, CAKeyFile, caKey); err != nil {
		return err
	}
	for _, leaf := range []struct {
		tmpl          *x509.Certificate
		cert, keyFile string
	}{{srvTmpl, ServerFile, ServerKeyFile}, {cliTmpl, ClientFile, ClientKeyFile}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		der, _, err := sign(leaf.tmpl, key, ca, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(dir, leaf.cert, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		if err := writeKey(dir, leaf.keyFile, key); err != nil {
			return err
		}
	}
	return nil
}

// sign makes a certificate of tmpl for key's public half, signed by parent
// (self-signed when parent is nil).
func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return der, c, err
}

func writeKey(dir, name string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(dir, name, "PRIVATE KEY", der, 0o600)
}

func writePEM(dir, name, typ string, der []byte, mode os.FileMode) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pool reads dir's CA certificate.
func pool(dir string) (*x509.CertPool, error) {
	b, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificate: %w (run `privnotes certs init DIR --hosts ...` or point --tls-dir at the deployment's TLS directory)", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, CAFile))
	}
	return p, nil
}

func pair(dir, cert, key string) (tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(filepath.Join(dir, cert), filepath.Join(dir, key))
	if err != nil {
		return c, fmt.Errorf("reading %s and %s: %w", filepath.Join(dir, cert), filepath.Join(dir, key), err)
	}
	return c, nil
}

// Server is the server's TLS configuration: TLS 1.3 only, server.pem as
// its certificate, and client certificates required and verified against
// ca.pem.
func Server(dir string) (*tls.Config, error) {
	p, err := pool(dir)
	if err != nil {
		return nil, err
	}
	c, err := pair(dir, ServerFile, ServerKeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p,
	}, nil
}

// Client is a client's TLS configuration: TLS 1.3 only, client.pem as its
// certificate, and the server verified against ca.pem.
func Client(dir string) (*tls.Config, error) {
	p, err := pool(dir)
	if err != nil {
		return nil, err
	}
	c, err := pair(dir, ClientFile, ClientKeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{c}, RootCAs: p}, nil
}
