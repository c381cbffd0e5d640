package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"berth.io/berth/internal/cluster/pki"
	"berth.io/berth/internal/simtime"
)

// serviceCIDR is the Service IP range; serviceIP is the first address in
// it, the "kubernetes" Service, which the serving certificate covers.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// apiServerArgs are the kube-apiserver flags berth runs with, exactly as
// they would be passed to the binary.
func apiServerArgs(p pki.Dir, etcdPort int) []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// No kube-proxy and one API server: nothing to reconcile.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--tls-cert-file=" + p.ServingCert(),
		"--tls-private-key-file=" + p.ServingKey(),
		"--client-ca-file=" + p.CACert(),
		"--service-account-key-file=" + p.ServiceAccountKey(),
		"--service-account-signing-key-file=" + p.ServiceAccountKey(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		// The aggregator's identity towards aggregated APIs (berth's
		// metrics server), which trust the user it names in headers.
		"--proxy-client-cert-file=" + p.ProxyClientCert(),
		"--proxy-client-key-file=" + p.ProxyClientKey(),
		"--requestheader-client-ca-file=" + p.ProxyCACert(),
		"--requestheader-allowed-names=" + pki.ProxyClientCN,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--feature-gates=" + featureGates,
	}
}

// featureGates are the alpha features berth's control plane turns on:
// HPAScaleToZero lets an HPA on an external metric (a queue) take a
// workload to zero replicas and back, as KEDA does on real clusters.
const featureGates = "HPAScaleToZero=true"

// runAPIServer starts kube-apiserver on ln through the same steps as its
// command (options → Complete → Validate → Run), without the command's
// process-wide signal handling. It returns when ctx ends or the server
// fails. On a rehearsal's clock (clk non-nil) it counts the requests it
// serves (watches aside) in the clock's Activity, and stamps objects'
// creation and deletion times with the clock (stamps.go). A non-nil
// etcd dials etcd in place of its loopback address (serveEtcdInMemory).
func runAPIServer(ctx context.Context, args []string, ln net.Listener, clk *simtime.Clock, etcd egressselector.Lookup) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	if etcd != nil {
		// NewConfig hands the transport to every storage it makes.
		completed.Etcd.StorageConfig.Transport.EgressLookup = etcd
	}
	// app.Run's steps, with the counter around the outermost server's
	// handler chain.
	config, err := app.NewConfig(completed)
	if err != nil {
		return err
	}
	if clk != nil {
		inFlight := clk.Activity().Counter("requests to the API server")
		generic := &config.Aggregator.GenericConfig.Config
		build := generic.BuildHandlerChainFunc
		generic.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
			return countRequests(build(h, c), clk.Activity(), inFlight)
		}
		view := newQuotaView(clk.Activity())
		informer := config.KubeAPIs.ControlPlane.VersionedInformers.Core().V1().ResourceQuotas().Informer()
		if err := view.follow(informer); err != nil {
			return fmt.Errorf("following the quota admission's informer: %w", err)
		}
		go view.giveUp(ctx)
		kube := config.KubeAPIs.ControlPlane.Generic
		uids := &uidSource{created: map[string]int{}}
		kube.RESTOptionsGetter = quotaViewOptions{stampedOptions{kube.RESTOptionsGetter, clk, uids}, view}
		ext := config.ApiExtensions
		ext.GenericConfig.RESTOptionsGetter = stampedOptions{ext.GenericConfig.RESTOptionsGetter, clk, uids}
		ext.ExtraConfig.CRDRESTOptionsGetter = stampedOptions{ext.ExtraConfig.CRDRESTOptionsGetter, clk, uids}
	}
	cc, err := config.Complete()
	if err != nil {
		return err
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return err
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}

// countRequests counts the requests next serves while it serves them,
// except those that do not end while the server waits (watches) and the
// renewals of node leases, which the simulated kubelets make on the wall
// clock whatever the rehearsal's clock does (simtime.Counted). Of a
// watch a counted client opened, it counts the bytes written, which the
// client counts as it reads them (simtime.WatchWriter).
func countRequests(next http.Handler, activity *simtime.Activity, inFlight *simtime.Counter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !simtime.Counted(r) {
			if counted, ok := activity.WatchWriter(r, w); ok {
				w = responsewriter.WrapForHTTP1Or2(counted)
			}
			next.ServeHTTP(w, r)
			return
		}
		inFlight.Begin()
		defer inFlight.End()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		begin := time.Now()
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(rec), r)
		activity.Requests().Served(requestKind(r), rec.code >= 400, time.Since(begin))
		if simtime.Tracing {
			simtime.Tracef("request %s %s %d %s (%s, %s)", r.Method, r.URL.Path, rec.code, time.Since(begin).Round(time.Microsecond), r.UserAgent(), begin.Format("15:04:05.000000"))
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			inFlight.Wrote()
		}
		if retried(r.Method, rec.code, simtime.RetriesOnClock(r)) {
			inFlight.Refused()
		}
	})
}

// requestInfo reads a request's verb and resource as the API server's
// own handler chain does.
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// requestKind is the verb and resource of a request the API server
// serves: "create" "pods", "update" "jobs.batch/status", or a path that
// names no resource ("get" "/readyz").
func requestKind(r *http.Request) simtime.RequestKind {
	info, err := requestInfo.NewRequestInfo(r)
	if err != nil || !info.IsResourceRequest {
		return simtime.RequestKind{Verb: strings.ToLower(r.Method), Resource: r.URL.Path}
	}
	resource := info.Resource
	if info.APIGroup != "" {
		resource += "." + info.APIGroup
	}
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return simtime.RequestKind{Verb: info.Verb, Resource: resource}
}

// retried says whether a request that got code is one its client will
// likely retry after a backoff of its own on the wall clock: a write that
// conflicted (RetryOnConflict sleeps, whoever calls it), one refused by a
// quota or an admission policy from a client that does not retry on the
// rehearsal's clock (onClock), or any request the server could not serve.
func retried(method string, code int, onClock bool) bool {
	switch {
	case code == http.StatusTooManyRequests || code >= 500:
		return true
	case method == http.MethodGet || method == http.MethodHead:
		return false
	case code == http.StatusConflict:
		return true
	default:
		return !onClock && (code == http.StatusForbidden || code == http.StatusUnprocessableEntity)
	}
}

// statusRecorder keeps the status code of a response it passes on.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap is the writer it decorates, from which WrapForHTTP1Or2 keeps its
// Flush, CloseNotify and Hijack (a proxied upgrade, a streamed response).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
