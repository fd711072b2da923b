package mariadb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are PEM files made by MakeCerts: a CA, a server certificate it
// signed for 127.0.0.1 and localhost, a client certificate it signed, and
// a second CA that signed none of them.
type Certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey, OtherCA string
}

// MakeCerts writes a fresh set of Certs into dir.
func MakeCerts(t testing.TB, dir string) Certs {
	t.Helper()
	c := Certs{
		CA: filepath.Join(dir, "ca.pem"), OtherCA: filepath.Join(dir, "other-ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	ca, caKey := makeCert(t, "binlogstream test CA", nil, nil, c.CA, "")
	makeCert(t, "binlogstream other CA", nil, nil, c.OtherCA, "")
	makeCert(t, "127.0.0.1", ca, caKey, c.ServerCert, c.ServerKey)
	makeCert(t, "binlogstream client", ca, caKey, c.ClientCert, c.ClientKey)
	return c
}

// makeCert writes a certificate (self-signed CA when parent is nil) to
// certPath and its key to keyPath ("" keeps it in memory only).
func makeCert(t testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey,
	certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent, parentKey
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certPath, "CERTIFICATE", der)
	if keyPath != "" {
		b, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyPath, "PRIVATE KEY", b)
	}
	return cert, key
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// RequireTLSArgs are mariadbd options (for Options.ExtraArgs) that serve c
// and refuse connections over plain TCP (require_secure_transport; the
// unix socket the helpers use stays allowed).
func (c Certs) RequireTLSArgs() []string {
	return []string{"--ssl-ca=" + c.CA, "--ssl-cert=" + c.ServerCert, "--ssl-key=" + c.ServerKey,
		"--require-secure-transport=ON"}
}
