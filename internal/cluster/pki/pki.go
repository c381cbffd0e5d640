// Package pki makes and keeps a local cluster's certificate authorities
// and the credentials issued from them: the API server's serving
// certificate, the admin client certificate every component and
// kubeconfig uses, the service-account signing key, and the front proxy's
// CA and client certificate for aggregated APIs. They are made on a
// cluster's first start and reused on every resume, so that kubeconfigs
// handed out earlier keep working.
//
// It is its own package, apart from the control plane, so that what a
// state directory left by an older berth becomes on the next start is
// tested without building the API server.
package pki

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

	"berth.io/berth/internal/problem"
)

// ProxyClientCN is the aggregator's identity when it proxies a request to
// an aggregated API (the metrics server), as kubeadm names it.
const ProxyClientCN = "front-proxy-client"

// Dir is a cluster's credentials, the files of one directory.
type Dir struct {
	dir string
}

// At is the credentials kept in dir.
func At(dir string) Dir { return Dir{dir: dir} }

func (d Dir) path(name string) string { return filepath.Join(d.dir, name) }

// Files the components read.
func (d Dir) CACert() string            { return d.path("ca.crt") }
func (d Dir) CAKey() string             { return d.path("ca.key") }
func (d Dir) ServingCert() string       { return d.path("apiserver.crt") }
func (d Dir) ServingKey() string        { return d.path("apiserver.key") }
func (d Dir) AdminCert() string         { return d.path("admin.crt") }
func (d Dir) AdminKey() string          { return d.path("admin.key") }
func (d Dir) ServiceAccountKey() string { return d.path("sa.key") }

// Files of the aggregator's proxy client certificate and of the CA that
// issues it. The front proxy has a CA of its own, as kubeadm gives it and
// as the API server's documentation asks of --requestheader-client-ca-file.
// With the client CA in both places, the chain of every request with a
// client certificate would be verified twice: by the request-header
// authenticator, which then refuses the name, and by the x509 one.
func (d Dir) ProxyClientCert() string { return d.path("front-proxy-client.crt") }
func (d Dir) ProxyClientKey() string  { return d.path("front-proxy-client.key") }
func (d Dir) ProxyCACert() string     { return d.path("front-proxy-ca.crt") }
func (d Dir) ProxyCAKey() string      { return d.path("front-proxy-ca.key") }

// Ensure makes the cluster's CA and what it issues when none exists yet;
// serviceIP is the API server's Service address, which its serving
// certificate names. When the CA exists and another of its files does
// not, the directory was damaged, and Ensure says so rather than issue
// credentials that kubeconfigs handed out earlier would not trust.
func (d Dir) Ensure(serviceIP string) error {
	if _, err := os.Stat(d.CACert()); err == nil {
		for _, f := range []string{d.CAKey(), d.ServingCert(), d.ServingKey(), d.AdminCert(), d.AdminKey(), d.ServiceAccountKey()} {
			if _, err := os.Stat(f); err != nil {
				return problem.Errorf("remove it with `berth down --purge` and start again", "state is incomplete: %s is missing while %s exists; the state directory was damaged", f, d.CACert())
			}
		}
		return nil
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	if err := newCA("berth-ca", d.CACert(), d.CAKey()); err != nil {
		return err
	}
	ca, caKey, _, err := loadCA(d.CACert(), d.CAKey())
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
		issue(serving, ca, caKey, d.ServingCert(), d.ServingKey()),
		issue(admin, ca, caKey, d.AdminCert(), d.AdminKey()),
		writeKey(d.ServiceAccountKey(), saKey),
	}
	return errors.Join(writes...)
}

// EnsureProxyClient makes the front proxy's CA and issues the
// aggregator's proxy client certificate from it when either is missing:
// clusters made before berth served metrics lack both, and clusters made
// before the front proxy had a CA of its own have a certificate from the
// cluster's CA, which is issued again.
//
// Nothing outside the cluster process trusts the front proxy's CA, so a
// damaged one (a file of the pair missing) is made again rather than
// refused.
func (d Dir) EnsureProxyClient() error {
	exists := func(f string) bool { _, err := os.Stat(f); return err == nil }
	haveCA := exists(d.ProxyCACert()) && exists(d.ProxyCAKey())
	if haveCA && exists(d.ProxyClientCert()) && exists(d.ProxyClientKey()) {
		return nil
	}
	if !haveCA {
		if err := newCA("berth-front-proxy-ca", d.ProxyCACert(), d.ProxyCAKey()); err != nil {
			return err
		}
	}
	ca, key, _, err := loadCA(d.ProxyCACert(), d.ProxyCAKey())
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: ProxyClientCN},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(tmpl, ca, key, d.ProxyClientCert(), d.ProxyClientKey())
}

// Issue signs tmpl with the cluster's CA and keeps the certificate and its
// key in memory: a serving certificate made at each start (the metrics
// server's). It also returns the CA's certificate as PEM, the bundle its
// clients trust.
func (d Dir) Issue(tmpl *x509.Certificate) (tls.Certificate, []byte, error) {
	ca, caKey, caPEM, err := loadCA(d.CACert(), d.CAKey())
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := newKey()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	der, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// KueueWebhookCert and KueueWebhookKey are the serving certificate of
// Kueue's webhooks (IssueKueueWebhook).
func (d Dir) KueueWebhookCert() string { return d.path("kueue-webhook.crt") }
func (d Dir) KueueWebhookKey() string  { return d.path("kueue-webhook.key") }

// IssueKueueWebhook writes a serving certificate for 127.0.0.1 and
// dnsNames, signed by the cluster's CA, for Kueue's webhooks and its
// visibility API (which the aggregator reaches by its Service's name):
// made at each start, as the metrics server's is, but in files, since
// Kueue runs as a process of its own.
func (d Dir) IssueKueueWebhook(dnsNames ...string) error {
	ca, caKey, _, err := loadCA(d.CACert(), d.CAKey())
	if err != nil {
		return err
	}
	return issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kueue-webhook"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    dnsNames,
	}, ca, caKey, d.KueueWebhookCert(), d.KueueWebhookKey())
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

// issue signs tmpl with the CA and writes the certificate and a new key.
func issue(tmpl, ca *x509.Certificate, caKey crypto.Signer, certFile, keyFile string) error {
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
