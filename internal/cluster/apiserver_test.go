package cluster

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"berth.io/berth/internal/simtime"
)

func TestRequestKind(t *testing.T) {
	for _, c := range []struct {
		method, target string
		want           simtime.RequestKind
	}{
		{http.MethodPost, "/api/v1/namespaces/team-a/pods", simtime.RequestKind{Verb: "create", Resource: "pods"}},
		{http.MethodPut, "/apis/batch/v1/namespaces/team-a/jobs/train-1/status", simtime.RequestKind{Verb: "update", Resource: "jobs.batch/status"}},
		{http.MethodPatch, "/api/v1/nodes/gpu-1/status", simtime.RequestKind{Verb: "patch", Resource: "nodes/status"}},
		{http.MethodGet, "/api/v1/pods?watch=true", simtime.RequestKind{Verb: "watch", Resource: "pods"}},
		{http.MethodGet, "/apis/apps/v1/namespaces/team-a/deployments", simtime.RequestKind{Verb: "list", Resource: "deployments.apps"}},
		{http.MethodGet, "/readyz", simtime.RequestKind{Verb: "get", Resource: "/readyz"}},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if got := requestKind(r); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.target, got, c.want)
		}
	}
}
