package metricsapi

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server listening before its caches are filled answers the
// aggregator's discovery at once, and metrics with 503 until then.
func TestStartingServer(t *testing.T) {
	s := NewStartingServer()
	for _, gv := range GroupVersions {
		var l metav1.APIResourceList
		if code, st := serve(t, s, http.MethodGet, "/apis/"+gv.String(), &l); code != http.StatusOK || len(l.APIResources) == 0 {
			t.Errorf("discovery of %s while starting: %d %v, %d resources; want 200 with its resources", gv, code, st, len(l.APIResources))
		}
	}
	code, st := serve(t, s, http.MethodGet, "/apis/external.metrics.k8s.io/v1beta1/namespaces/a/rabbitmq_queue_messages_ready", nil)
	if code != http.StatusServiceUnavailable || st == nil {
		t.Errorf("a metric while starting: %d %v; want 503", code, st)
	}
}
