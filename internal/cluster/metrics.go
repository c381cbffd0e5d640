package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/cluster/pki"
	"berth.io/berth/internal/metricsapi"
)

// metricsServing is the metrics server's listener and TLS: a certificate
// for its Service's name, made at each start, and client certificates
// required from the front proxy's CA (the aggregator's proxy certificate).
type metricsServing struct {
	ln       net.Listener
	tls      *tls.Config
	caBundle []byte
	server   *metricsapi.Server
	http     *http.Server
}

// serve starts answering on the listener, before the API server starts:
// an APIService whose backend does not answer holds the API server's
// readiness back (4 s on a resumed cluster, which has them registered).
func (m *metricsServing) serve() {
	m.server = metricsapi.NewStartingServer()
	m.http = &http.Server{Handler: m.server, TLSConfig: m.tls, ReadHeaderTimeout: 10 * time.Second}
	go m.http.Serve(tls.NewListener(m.ln, m.tls))
}

func (m *metricsServing) close() {
	if m.http != nil {
		m.http.Close()
	}
	m.ln.Close()
}

// metricsServingFor makes the metrics server's listener and its serving
// certificate, issued from the cluster's CA at each start.
func metricsServingFor(p pki.Dir) (*metricsServing, error) {
	// Its one client is the aggregator, with the front proxy's
	// certificate.
	proxyCAPEM, err := os.ReadFile(p.ProxyCACert())
	if err != nil {
		return nil, err
	}
	host := metricsapi.ServiceName + "." + metricsapi.Namespace + ".svc"
	cert, caPEM, err := p.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: host},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{host, "localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		return nil, err
	}
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(proxyCAPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the metrics APIs: %w", err)
	}
	return &metricsServing{
		ln: ln,
		tls: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    clients,
			MinVersion:   tls.VersionTLS12,
		},
		caBundle: caPEM,
	}, nil
}

// The API server finds a Service's endpoint through a resolver it builds
// once, at start. Its default sends the aggregator to the Service's
// cluster IP, which nothing routes on a local cluster, so berth installs
// one that knows the metrics server's loopback address. The hook is named
// for tests; it is the API server's one way to say where a Service is.
var (
	resolverOnce    sync.Once
	metricsEndpoint atomic.Pointer[url.URL]
	apiEndpoint     atomic.Pointer[url.URL]
	// kueueVisibility is where berth-kueue serves Kueue's visibility
	// API, once it has said (startKueue).
	kueueVisibility atomic.Pointer[url.URL]
)

type localServices struct{}

func (localServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	switch {
	case namespace == metricsapi.Namespace && name == metricsapi.ServiceName:
		if u := metricsEndpoint.Load(); u != nil {
			return u, nil
		}
	case namespace == "default" && name == "kubernetes":
		if u := apiEndpoint.Load(); u != nil {
			return u, nil
		}
	case namespace == metav1.NamespaceSystem && name == v1alpha1.KueueVisibilityService:
		if u := kueueVisibility.Load(); u != nil {
			return u, nil
		}
	}
	return nil, fmt.Errorf("service %s/%s has no endpoint: a local cluster's pods run no code, so only berth's own services (%s/%s) answer",
		namespace, name, metricsapi.Namespace, metricsapi.ServiceName)
}

// resolveLocalServices points the API server's resolver at this cluster's
// metrics server and API server, before the API server starts.
func resolveLocalServices(metrics net.Addr, apiPort int) {
	resolverOnce.Do(func() { app.SetServiceResolverForTests(localServices{}) })
	metricsEndpoint.Store(&url.URL{Scheme: "https", Host: metrics.String()})
	apiEndpoint.Store(&url.URL{Scheme: "https", Host: "127.0.0.1:" + strconv.Itoa(apiPort)})
}
