package simulate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Verdict is the scheduler's verdict on one pod for one node.
type Verdict struct {
	Node string
	// Plugin is the plugin that rejected the pod, as the scheduler
	// names it (TaintToleration, NodeResourcesFit, ...). Empty: the pod
	// fits. The framework stops at the first plugin that rejects, so
	// this is the one the scheduler reports.
	Plugin string
	// Reasons are that plugin's reasons, worded as in the pod's
	// FailedScheduling event ("Insufficient nvidia.com/gpu").
	Reasons []string
	// Unresolvable is true when evicting pods from the node could not
	// make room (the scheduler's UnschedulableAndUnresolvable), so
	// preemption would not help.
	Unresolvable bool
}

// Fits reports whether every Filter plugin let the pod onto the node.
func (v Verdict) Fits() bool { return v.Plugin == "" }

func (v Verdict) String() string {
	if v.Fits() {
		return v.Node + ": fits"
	}
	return fmt.Sprintf("%s: %s: %s", v.Node, v.Plugin, strings.Join(v.Reasons, "; "))
}

// Result is the scheduler's verdict on one pod for every node.
type Result struct {
	// Nodes holds one verdict per node, in the simulation's order.
	Nodes []Verdict
}

// Fitting names the nodes the pod fits on.
func (r *Result) Fitting() []string {
	var out []string
	for _, v := range r.Nodes {
		if v.Fits() {
			out = append(out, v.Node)
		}
	}
	return out
}

// Check runs the PreFilter plugins for pod once and then the Filter
// plugins on every node, as a scheduling cycle does (without stopping
// at enough fitting nodes), and reports each node's verdict. It changes
// nothing.
func (s *Simulator) Check(ctx context.Context, pod *corev1.Pod) (*Result, error) {
	nodes := s.snap.list
	res := &Result{Nodes: make([]Verdict, len(nodes))}
	c, err := s.preFilter(ctx, pod)
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		firstErr error
	)
	s.fw.Parallelizer().Until(ctx, len(nodes), func(i int) {
		ni := nodes[i]
		v, err := s.filter(ctx, c, pod, ni)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		res.Nodes[i] = v
	}, "berth-simulate")
	if firstErr != nil {
		return nil, firstErr
	}
	return res, nil
}

// cycle is what PreFilter decided for one pod over one state of the
// snapshot: the state its Filter plugins read, and, when PreFilter
// already rejects nodes, the verdict for them.
type cycle struct {
	state fwk.CycleState
	// all, when set, is the verdict for every node: PreFilter rejected
	// the pod outright.
	all *Verdict
	// only, when set, are the nodes PreFilter left; others get absent.
	only   sets.Set[string]
	absent Verdict
}

// preFilter runs the PreFilter plugins, as the scheduler does at the
// start of a cycle.
func (s *Simulator) preFilter(ctx context.Context, pod *corev1.Pod) (*cycle, error) {
	state := framework.NewCycleState()
	pre, status, withNodes := s.fw.RunPreFilterPlugins(ctx, state, pod)
	c := &cycle{state: state}
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, status.AsError())
		}
		plugin := status.Plugin()
		if plugin == "" {
			plugin = strings.Join(sets.List(withNodes), ",")
		}
		c.all = &Verdict{Plugin: plugin, Reasons: status.Reasons(), Unresolvable: status.Code() == fwk.UnschedulableAndUnresolvable}
		return c, nil
	}
	if !pre.AllNodes() {
		c.only = pre.NodeNames
		plugins := sets.List(withNodes)
		c.absent = Verdict{
			Plugin:       strings.Join(plugins, ","),
			Reasons:      []string{fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", plugins)},
			Unresolvable: true,
		}
	}
	return c, nil
}

// filter runs the Filter plugins for one node.
func (s *Simulator) filter(ctx context.Context, c *cycle, pod *corev1.Pod, ni fwk.NodeInfo) (Verdict, error) {
	name := ni.Node().Name
	switch {
	case c.all != nil:
		v := *c.all
		v.Node = name
		return v, nil
	case c.only != nil && !c.only.Has(name):
		v := c.absent
		v.Node = name
		return v, nil
	}
	status := s.fw.RunFilterPlugins(ctx, c.state, pod, ni)
	if status.IsSuccess() {
		return Verdict{Node: name}, nil
	}
	if !status.IsRejected() {
		return Verdict{Node: name}, fmt.Errorf("pod %s/%s on node %s: %w", pod.Namespace, pod.Name, name, status.AsError())
	}
	return Verdict{
		Node:         name,
		Plugin:       status.Plugin(),
		Reasons:      status.Reasons(),
		Unresolvable: status.Code() == fwk.UnschedulableAndUnresolvable,
	}, nil
}
