package cluster

import (
	"crypto"
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
	"time"
)

// pki is the cluster's certificate authority and the credentials issued
// from it. It is generated once, on first start, and reused on resume so
// that kubeconfigs handed out earlier keep working.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// Files the components read.
func (p pki) caCert() string         { return p.path("ca.crt") }
func (p pki) caKey() string          { return p.path("ca.key") }
func (p pki) servingCert() string    { return p.path("apiserver.crt") }
func (p pki) servingKey() string     { return p.path("apiserver.key") }
func (p pki) adminCert() string      { return p.path("admin.crt") }
func (p pki) adminKey() string       { return p.path("admin.key") }
func (p pki) serviceAccount() string { return p.path("sa.key") }

// ensure creates whatever credentials are missing.
func (p pki) ensure() error {
	if _, err := os.Stat(p.caCert()); err == nil {
		for _, f := range []string{p.caKey(), p.servingCert(), p.servingKey(), p.adminCert(), p.adminKey(), p.serviceAccount()} {
			if _, err := os.Stat(f); err != nil {
				return fmt.Errorf("state is incomplete: %s is missing while %s exists; the state directory was damaged\nfix: remove it with `berth down --purge` and start again", f, p.caCert())
			}
		}
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	if err := newCA("berth-ca", p.caCert(), p.caKey()); err != nil {
		return err
	}
	ca, caKey, _, err := p.loadCA()
	if err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(serviceIP)},
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "berth-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	saKey, err := newKey()
	if err != nil {
		return err
	}
	writes := []error{
		p.issue(serving, ca, caKey, p.servingCert(), p.servingKey()),
		p.issue(admin, ca, caKey, p.adminCert(), p.adminKey()),
		writeKey(p.serviceAccount(), saKey),
	}
	return errors.Join(writes...)
}

// loadCA reads the cluster's CA.
func (p pki) loadCA() (*x509.Certificate, crypto.Signer, []byte, error) {
	return loadCA(p.caCert(), p.caKey())
}

// loadCA reads a CA's certificate and key; it also returns the
// certificate as PEM.
func loadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the CA %s: %w", certFile, err)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("the CA key %s cannot sign", keyFile)
	}
	return ca, signer, certPEM, nil
}

// newCA makes a self-signed certificate authority named name.
func newCA(name, certFile, keyFile string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
	}
	der, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	return errors.Join(writePEM(certFile, "CERTIFICATE", der), writeKey(keyFile, key))
}

func (p pki) issue(tmpl, ca *x509.Certificate, caKey crypto.Signer, certFile, keyFile string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	der, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return errors.Join(writePEM(certFile, "CERTIFICATE", der), writeKey(keyFile, key))
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(10 * 365 * 24 * time.Hour)
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
