package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const serviceIP = "10.96.0.1"

// cert reads a PEM certificate file.
func cert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verifies reports whether c chains to the CA in caFile for usage.
func verifies(t *testing.T, c *x509.Certificate, caFile string, usage x509.ExtKeyUsage) bool {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(cert(t, caFile))
	_, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err == nil
}

// snapshot reads every file of dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// A first start makes the cluster's CA and what it issues; a resume
// changes nothing, so kubeconfigs handed out earlier keep working.
func TestEnsureMakesThenKeeps(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "pki"))
	if err := d.Ensure(serviceIP); err != nil {
		t.Fatal(err)
	}
	serving := cert(t, d.ServingCert())
	if !verifies(t, serving, d.CACert(), x509.ExtKeyUsageServerAuth) {
		t.Error("the API server's certificate does not chain to the cluster's CA")
	}
	for _, ip := range []string{"127.0.0.1", serviceIP} {
		if err := serving.VerifyHostname(ip); err != nil {
			t.Errorf("the API server's certificate does not name %s: %v", ip, err)
		}
	}
	admin := cert(t, d.AdminCert())
	if !verifies(t, admin, d.CACert(), x509.ExtKeyUsageClientAuth) || admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin certificate %v does not chain to the CA as a system:masters client", admin.Subject)
	}
	if _, err := os.Stat(d.ServiceAccountKey()); err != nil {
		t.Error(err)
	}

	before := snapshot(t, d.dir)
	if err := d.Ensure(serviceIP); err != nil {
		t.Fatal(err)
	}
	if !sameFiles(before, snapshot(t, d.dir)) {
		t.Error("a second Ensure changed the credentials")
	}
}

// A state directory with its CA but a credential missing was damaged:
// Ensure names the file and the fix, and issues nothing, since new
// credentials would not match the kubeconfigs handed out.
func TestEnsureRefusesDamagedState(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "pki"))
	if err := d.Ensure(serviceIP); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d.AdminKey()); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, d.dir)
	err := d.Ensure(serviceIP)
	if err == nil || !strings.Contains(err.Error(), d.AdminKey()) || !strings.Contains(err.Error(), "berth down --purge") {
		t.Errorf("Ensure with admin.key missing: %v; want an error naming the file and the fix", err)
	}
	if !sameFiles(before, snapshot(t, d.dir)) {
		t.Error("Ensure changed a damaged state directory")
	}
}

// The front proxy's credentials, whatever an older berth left: none (a
// cluster made before the metrics server), a proxy certificate from the
// cluster's own CA (before the front proxy had its own), or half a CA.
// Each start leaves a proxy certificate from the front proxy's CA, and
// never touches the cluster's CA or what it issued.
func TestEnsureProxyClientMigrates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, d Dir)
	}{
		{"before metrics: no front proxy files", func(*testing.T, Dir) {}},
		{"before the front proxy's CA: a proxy certificate from the cluster's CA", func(t *testing.T, d Dir) {
			ca, key, _, err := loadCA(d.CACert(), d.CAKey())
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: ProxyClientCN}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			if err := issue(tmpl, ca, key, d.ProxyClientCert(), d.ProxyClientKey()); err != nil {
				t.Fatal(err)
			}
		}},
		{"the front proxy's CA key lost", func(t *testing.T, d Dir) {
			if err := d.EnsureProxyClient(); err != nil {
				t.Fatal(err)
			}
			os.Remove(d.ProxyCAKey())
		}},
		{"the proxy certificate lost", func(t *testing.T, d Dir) {
			if err := d.EnsureProxyClient(); err != nil {
				t.Fatal(err)
			}
			os.Remove(d.ProxyClientCert())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := At(filepath.Join(t.TempDir(), "pki"))
			if err := d.Ensure(serviceIP); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, d)
			cluster := map[string][]byte{}
			for _, f := range []string{d.CACert(), d.CAKey(), d.ServingCert(), d.ServingKey(), d.AdminCert(), d.AdminKey(), d.ServiceAccountKey()} {
				cluster[f], _ = os.ReadFile(f)
			}

			if err := d.EnsureProxyClient(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{d.ProxyCACert(), d.ProxyCAKey(), d.ProxyClientCert(), d.ProxyClientKey()} {
				if _, err := os.Stat(f); err != nil {
					t.Error(err)
				}
			}
			proxy := cert(t, d.ProxyClientCert())
			if proxy.Subject.CommonName != ProxyClientCN || !verifies(t, proxy, d.ProxyCACert(), x509.ExtKeyUsageClientAuth) {
				t.Errorf("proxy certificate %v does not chain to the front proxy's CA", proxy.Subject)
			}
			if verifies(t, proxy, d.CACert(), x509.ExtKeyUsageClientAuth) {
				t.Error("the proxy certificate still chains to the cluster's CA")
			}
			for f, b := range cluster {
				if now, _ := os.ReadFile(f); !bytes.Equal(now, b) {
					t.Errorf("%s changed", filepath.Base(f))
				}
			}
			before := snapshot(t, d.dir)
			if err := d.EnsureProxyClient(); err != nil {
				t.Fatal(err)
			}
			if !sameFiles(before, snapshot(t, d.dir)) {
				t.Error("a second EnsureProxyClient changed the credentials")
			}
		})
	}
}

// Issue signs a certificate in memory from the cluster's CA, for a server
// whose clients trust the CA bundle it returns.
func TestIssue(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "pki"))
	if err := d.Ensure(serviceIP); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, d.dir)
	c, caPEM, err := d.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "metrics"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA bundle holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the issued certificate does not verify against the bundle: %v", err)
	}
	if !sameFiles(before, snapshot(t, d.dir)) {
		t.Error("Issue wrote to the state directory")
	}
}

// IssueKueueWebhook writes a serving certificate for 127.0.0.1 that the
// cluster's CA verifies, and a new one at each call.
func TestIssueKueueWebhook(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "pki"))
	if err := d.Ensure(serviceIP); err != nil {
		t.Fatal(err)
	}
	if err := d.IssueKueueWebhook(); err != nil {
		t.Fatal(err)
	}
	first := cert(t, d.KueueWebhookCert())
	if !verifies(t, first, d.CACert(), x509.ExtKeyUsageServerAuth) {
		t.Error("the webhook's certificate does not verify against the cluster's CA")
	}
	if err := first.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if _, err := tls.LoadX509KeyPair(d.KueueWebhookCert(), d.KueueWebhookKey()); err != nil {
		t.Errorf("certificate and key do not pair: %v", err)
	}
	if err := d.IssueKueueWebhook(); err != nil {
		t.Fatal(err)
	}
	if cert(t, d.KueueWebhookCert()).SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Error("a second start kept the first certificate")
	}
}
