package simtime

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Requests is the tally of the requests an API server on the clock has
// served, by verb and resource: what a rehearsal's cluster spent its
// time on ("create pods", refused by quota for the most part, in a
// replay bound by a Job controller's retries).
type Requests struct {
	mu sync.Mutex
	by map[RequestKind]*RequestCount
}

// RequestKind is a request's verb ("create", "list", "watch") and the
// resource it names ("pods", "pods/status", "jobs.batch").
type RequestKind struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
}

// RequestCount is what the server did of one kind of request.
type RequestCount struct {
	RequestKind
	// Count counts the requests, Refused those answered with an error.
	Count   int `json:"count"`
	Refused int `json:"refused,omitempty"`
	// Served is the wall time the server took to answer them, in all.
	Served time.Duration `json:"served"`
}

// Served notes a request of kind k answered (refused with an error or
// not) in took.
func (r *Requests) Served(k RequestKind, refused bool, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[RequestKind]*RequestCount{}
	}
	c := r.by[k]
	if c == nil {
		c = &RequestCount{RequestKind: k}
		r.by[k] = c
	}
	c.Count++
	if refused {
		c.Refused++
	}
	c.Served += took
}

// Counts are the requests served so far by kind, the longest served
// first (then by verb and resource, so that the order is the same every
// time).
func (r *Requests) Counts() []RequestCount {
	r.mu.Lock()
	out := make([]RequestCount, 0, len(r.by))
	for _, c := range r.by {
		out = append(out, *c)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b RequestCount) int {
		return cmp.Or(cmp.Compare(b.Served, a.Served), cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}
