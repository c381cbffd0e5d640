package cluster

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"berth.io/berth/internal/problem"
)

// A cluster runs some of its work in child processes of the binary it
// runs in, started again with childEnv naming the child's role: a
// storage class's driver first seen after start (drivers.go). Child, in
// main, runs them.

// childEnv names, in a process's environment, the role a cluster started
// it for.
const childEnv = "BERTH_CLUSTER_CHILD"

// childCapable is set once Child has returned: this binary, started
// again with childEnv, runs as the child.
var childCapable atomic.Bool

// Child runs this process as a cluster's child where its environment
// says it was started as one, and exits; else it returns at once. A
// binary that starts clusters calls it first in main (cmd/berth; the
// test binaries through test/harness.Main), so that its clusters can
// start it again as a child; a cluster in a binary that does not runs
// no storage driver first seen after its start.
func Child() {
	role, ok := os.LookupEnv(childEnv)
	if !ok {
		childCapable.Store(true)
		return
	}
	var err error
	switch role {
	case driverChild:
		err = serveDriver(os.Args[1:])
	default:
		err = problem.Errorf("unset it: a cluster sets it for the processes it starts", "%s=%s names no role of a cluster's child process (%s is the one)", childEnv, role, driverChild)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// children are the child processes a cluster starts once it runs: Stop
// waits for them to end, and none starts once it has begun.
type children struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// Go runs f, which ends when the cluster's context does, unless the
// cluster is stopping; it reports whether it did.
func (ch *children) Go(f func()) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.stopped {
		return false
	}
	ch.wg.Go(f)
	return true
}

// stop starts no more and waits for those running.
func (ch *children) stop() {
	ch.mu.Lock()
	ch.stopped = true
	ch.mu.Unlock()
	ch.wg.Wait()
}
