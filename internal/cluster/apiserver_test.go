package cluster

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"berth.io/berth/internal/simtime"
)

func TestRetried(t *testing.T) {
	for _, c := range []struct {
		method  string
		code    int
		onClock bool
		want    bool
	}{
		{http.MethodGet, http.StatusOK, false, false},
		{http.MethodGet, http.StatusInternalServerError, true, true},
		{http.MethodPost, http.StatusTooManyRequests, true, true},
		// An update that conflicted: RetryOnConflict sleeps on the wall
		// clock, whoever the client.
		{http.MethodPut, http.StatusConflict, true, true},
		{http.MethodPatch, http.StatusConflict, false, true},
		// A create whose object was there already: RetryOnConflict does
		// not retry it, so only a client off the clock retries on wall
		// time.
		{http.MethodPost, http.StatusConflict, true, false},
		{http.MethodPost, http.StatusConflict, false, true},
		// Refused by quota or a policy.
		{http.MethodPost, http.StatusForbidden, true, false},
		{http.MethodPost, http.StatusForbidden, false, true},
		{http.MethodPost, http.StatusUnprocessableEntity, false, true},
		{http.MethodPost, http.StatusCreated, false, false},
	} {
		if got := retried(c.method, c.code, c.onClock); got != c.want {
			t.Errorf("retried(%s, %d, onClock %v) = %v, want %v", c.method, c.code, c.onClock, got, c.want)
		}
	}
}

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
