// Package tlsdir writes and reads the mutual-TLS material of a privnotes
// data service: one directory holding a private certificate authority
// (ca.pem, ca-key.pem), the server's pair (server.pem, server-key.pem) and
// a client pair (client.pem, client-key.pem). Further clients, one per
// analyst, get their own directory (Issue: ca.pem, client.pem,
// client-key.pem), which is all an analyst's --tls-dir needs.
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
	"regexp"
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

// nameRE is what a client certificate's common name may be: it is the
// client's identity in a server's authz file, so it is kept to one word.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// ValidName reports whether name can name a client certificate (and so a
// client of a server's authz file).
func ValidName(name string) bool { return nameRE.MatchString(name) }

func checkName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("client name %q: use a letter or digit followed by letters, digits, '_', '.', '@' or '-' (at most 64): it is the client's identity in a server's authz file", name)
	}
	return nil
}

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
	if err := checkName(client); err != nil {
		return err
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
	cliTmpl := clientTemplate(client, now)
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

func clientTemplate(name string, now time.Time) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{"privnotes"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(LeafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// Issue writes a client certificate named name, signed by the CA of dir
// (ca.pem, ca-key.pem), into out with a copy of ca.pem: ca.pem,
// client.pem and client-key.pem, the directory an analyst gives as
// --tls-dir. It creates out (0700) and refuses to overwrite any file.
func Issue(dir, name, out string) error {
	if err := checkName(name); err != nil {
		return err
	}
	for _, f := range []string{CAFile, ClientFile, ClientKeyFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			return fmt.Errorf("%s already exists: refusing to overwrite TLS material (choose another --out)", filepath.Join(out, f))
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return fmt.Errorf("reading the CA certificate: %w (run `privnotes certs init DIR --hosts ...` first)", err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return fmt.Errorf("reading the CA's certificate and key (%s, %s): %w", filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile), err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	caKey, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !ca.IsCA {
		return fmt.Errorf("%s is not a privnotes CA (an ECDSA CA certificate and key)", dir)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, _, err := sign(clientTemplate(name, time.Now()), key, ca, caKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(out, CAFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(caPEM); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := writePEM(out, ClientFile, "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(out, ClientKeyFile, key)
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
