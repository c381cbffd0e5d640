package simulate

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// Failure is one Filter plugin's rejection of a pod on a node, in the
// plugin's own words.
type Failure struct {
	Plugin  string
	Reasons []string
	// Unresolvable: evicting pods from the node would not help.
	Unresolvable bool
}

// Diagnosis is every Filter plugin's verdict on one pod for one node.
// Unlike a scheduling cycle, which stops at a node's first failing
// plugin, it runs them all: a node that fails one filter is closer to
// holding the pod than one that fails three.
type Diagnosis struct {
	Node *corev1.Node
	// Failures are the plugins that rejected the pod, in the
	// scheduler's order. Empty: the pod fits.
	Failures []Failure
	// Insufficient is NodeResourcesFit's account of what the node lacks,
	// with its numbers (milli-CPU, bytes, counts), when it rejected.
	Insufficient []noderesources.InsufficientResource
	// Pods are the pods the simulation has bound to the node.
	Pods []*corev1.Pod
}

// Fits reports whether every Filter plugin let the pod onto the node.
func (d *Diagnosis) Fits() bool { return len(d.Failures) == 0 }

// Failed is the failure of plugin, or nil when it let the pod on.
func (d *Diagnosis) Failed(plugin string) *Failure {
	for i := range d.Failures {
		if d.Failures[i].Plugin == plugin {
			return &d.Failures[i]
		}
	}
	return nil
}

// Diagnose runs the PreFilter plugins for pod once and then every Filter
// plugin on every node, and reports each node's failures. Nominated are
// pods the scheduler has nominated to a node (Placement.Node) that this
// pod must leave room for (those of at least its priority): they count
// on their node, as the scheduler's first filter pass counts them. It
// changes nothing.
func (s *Simulator) Diagnose(ctx context.Context, pod *corev1.Pod, nominated []Placement) ([]Diagnosis, error) {
	c, err := s.preFilter(ctx, pod)
	if err != nil {
		return nil, err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range nominated {
		if p.Pod.UID != pod.UID {
			byNode[p.Node] = append(byNode[p.Node], p.Pod)
		}
	}
	nodes := s.snap.list
	out := make([]Diagnosis, len(nodes))
	var (
		mu       sync.Mutex
		firstErr error
	)
	s.fw.Parallelizer().Until(ctx, len(nodes), func(i int) {
		d, err := s.diagnose(ctx, c, pod, nodes[i], byNode[nodes[i].Node().Name])
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		out[i] = d
	}, "berth-diagnose")
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// DiagnoseTemplate is Diagnose on the next node of a pool: it is added to
// the simulation for the question (so that spread and affinity count it
// as one more domain) and taken away again.
func (s *Simulator) DiagnoseTemplate(ctx context.Context, pod *corev1.Pod, t Template) (Diagnosis, error) {
	n := t.Node(0)
	if _, taken := s.snap.infos[n.Name]; taken {
		n = n.DeepCopy()
		n.Name += "-next"
		n.Labels[corev1.LabelHostname] = n.Name
	}
	if err := s.snap.addNode(n); err != nil {
		return Diagnosis{}, fmt.Errorf("pool %s: %w", t.Pool, err)
	}
	defer s.snap.removeLast()
	c, err := s.preFilter(ctx, pod)
	if err != nil {
		return Diagnosis{}, err
	}
	return s.diagnose(ctx, c, pod, s.snap.infos[n.Name], nil)
}

// diagnose runs every Filter plugin for one node: the framework's
// RunFilterPlugins again after each rejection, with the plugins that
// rejected so far skipped, so the order and the words stay the
// scheduler's.
func (s *Simulator) diagnose(ctx context.Context, c *cycle, pod *corev1.Pod, ni fwk.NodeInfo, nominated []*corev1.Pod) (Diagnosis, error) {
	d := Diagnosis{Node: ni.Node()}
	for _, pi := range ni.GetPods() {
		d.Pods = append(d.Pods, pi.GetPod())
	}
	if c.all != nil || (c.only != nil && !c.only.Has(d.Node.Name)) {
		v, err := s.filter(ctx, c, pod, ni)
		d.Failures = []Failure{{Plugin: v.Plugin, Reasons: v.Reasons, Unresolvable: v.Unresolvable}}
		return d, err
	}
	state := c.state
	if len(nominated) > 0 {
		var err error
		if state, ni, err = s.withNominated(ctx, state, pod, ni, nominated); err != nil {
			return d, err
		}
	}
	var skip sets.Set[string]
	for {
		status := s.fw.RunFilterPlugins(ctx, state, pod, ni)
		if status.IsSuccess() {
			break
		}
		if !status.IsRejected() {
			return d, fmt.Errorf("pod %s/%s on node %s: %w", pod.Namespace, pod.Name, d.Node.Name, status.AsError())
		}
		d.Failures = append(d.Failures, Failure{Plugin: status.Plugin(), Reasons: status.Reasons(), Unresolvable: status.Code() == fwk.UnschedulableAndUnresolvable})
		if skip == nil {
			// The state is shared with the other nodes: skip on a copy.
			state = state.Clone()
			skip = sets.New[string]()
			skip = skip.Union(state.GetSkipFilterPlugins())
		}
		skip.Insert(status.Plugin())
		state.SetSkipFilterPlugins(skip)
	}
	if d.Failed(names.NodeResourcesFit) != nil {
		d.Insufficient = noderesources.Fits(pod, ni, nil, noderesources.ResourceRequestsOptions{EnablePodLevelResources: true})
	}
	return d, nil
}

// withNominated adds the nominated pods to a copy of the node and of the
// cycle state, as the scheduler's RunFilterPluginsWithNominatedPods does.
func (s *Simulator) withNominated(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo, pods []*corev1.Pod) (fwk.CycleState, fwk.NodeInfo, error) {
	ni = ni.Snapshot()
	state = state.Clone()
	for _, p := range pods {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			return nil, nil, err
		}
		ni.AddPodInfo(pi)
		if st := s.fw.RunPreFilterExtensionAddPod(ctx, state, pod, pi, ni); !st.IsSuccess() {
			return nil, nil, st.AsError()
		}
	}
	return state, ni, nil
}

// Trial asks, on one node, whether a pod would fit once some of the
// node's pods are gone, as the scheduler's DefaultPreemption asks it
// when it picks victims: on a copy of the node and of the pod's cycle
// state, which the PreFilter extensions (spread, affinity, resources)
// keep up to date as pods are removed and put back. The simulation
// itself is not changed.
type Trial struct {
	s     *Simulator
	pod   *corev1.Pod
	state fwk.CycleState
	ni    fwk.NodeInfo
	// all is set when PreFilter rejects the pod on every node.
	all *Verdict
}

// Trial starts a trial of pod on node.
func (s *Simulator) Trial(ctx context.Context, pod *corev1.Pod, node string) (*Trial, error) {
	ni, ok := s.snap.infos[node]
	if !ok {
		return nil, fmt.Errorf("node %s is not in the simulation", node)
	}
	c, err := s.preFilter(ctx, pod)
	if err != nil {
		return nil, err
	}
	t := &Trial{s: s, pod: pod, state: c.state.Clone(), ni: ni.Snapshot(), all: c.all}
	if c.only != nil && !c.only.Has(node) {
		t.all = &c.absent
	}
	return t, nil
}

// Remove takes a pod bound to the trial's node away.
func (t *Trial) Remove(ctx context.Context, p *corev1.Pod) error {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return err
	}
	if err := t.ni.RemovePod(klog.FromContext(ctx), p); err != nil {
		return err
	}
	if st := t.s.fw.RunPreFilterExtensionRemovePod(ctx, t.state, t.pod, pi, t.ni); !st.IsSuccess() {
		return st.AsError()
	}
	return nil
}

// Add puts a pod back on the trial's node.
func (t *Trial) Add(ctx context.Context, p *corev1.Pod) error {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return err
	}
	t.ni.AddPodInfo(pi)
	if st := t.s.fw.RunPreFilterExtensionAddPod(ctx, t.state, t.pod, pi, t.ni); !st.IsSuccess() {
		return st.AsError()
	}
	return nil
}

// Fits runs the Filter plugins on the trial's node as it is now.
func (t *Trial) Fits(ctx context.Context) (bool, error) {
	if t.all != nil {
		return false, nil
	}
	status := t.s.fw.RunFilterPlugins(ctx, t.state, t.pod, t.ni)
	if !status.IsSuccess() && !status.IsRejected() {
		return false, status.AsError()
	}
	return status.IsSuccess(), nil
}
