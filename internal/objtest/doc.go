// Package objtest builds the Kubernetes objects berth's tests make, in the
// style of Kueue's wrappers: MakePod(...) or MakeNode(...), setters that
// each change one thing and return the wrapper, and Obj() at the end:
//
//	objtest.MakePod("team-a", "train").GPU(1).Tolerate("gpu").On("gpu-0").Obj()
//
// It imports only the API types, so the unit tests of every package can
// use it without linking the control plane. Its defaults are what a test
// would otherwise have to spell out: a pod as the API server holds one
// just created (Pending, one container, no node), a node of 8 CPUs, 32Gi
// and 110 pods. Names of things are the caller's; the only label it adds
// on its own is a node's hostname.
package objtest
