package why

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/simulate"
	"berth.io/berth/internal/words"
)

// devicePluginRef is the device-plugin DaemonSet the blueprint names
// (spec.devicePlugin), or NVIDIA's default.
func devicePluginRef(bp *v1alpha1.Blueprint) (namespace, name string) {
	namespace, name = v1alpha1.DefaultDevicePluginNamespace, v1alpha1.DefaultDevicePluginName
	if bp != nil && bp.Spec.DevicePlugin != nil {
		if d := bp.Spec.DevicePlugin; d.Namespace != "" {
			namespace = d.Namespace
		}
		if d := bp.Spec.DevicePlugin; d.Name != "" {
			name = d.Name
		}
	}
	return namespace, name
}

// gpuResource is the resource a GPU node's devices are advertised as:
// its pool's machine.gpu.resource, else nvidia.com/gpu.
func (e *explainer) gpuResource(n *nodeInfo) corev1.ResourceName {
	if bp := e.s.Blueprint; bp != nil {
		if p := findPool(bp, n.pool); p != nil && p.GPUResource() != "" {
			return corev1.ResourceName(p.GPUResource())
		}
	}
	return v1alpha1.DefaultGPUResource
}

// invisibleGPUs says why GPU nodes (label nvidia.com/gpu.count > 0)
// advertise no GPUs while the pod asks for them: no device-plugin
// DaemonSet, one that does not tolerate the pool's taint (or select its
// nodes), or its pods not Running there. all is true when no GPU node
// advertises any: then nothing else can hold the pod.
func (e *explainer) invisibleGPUs() (c *Cause, all bool) {
	var gpuNodes, dark []*nodeInfo
	for _, n := range e.s.index().gpuNodes {
		r := e.gpuResource(n)
		if q := e.c.requests[r]; q.Sign() <= 0 {
			continue
		}
		gpuNodes = append(gpuNodes, n)
		if q := n.node.Status.Allocatable[r]; q.Sign() <= 0 {
			dark = append(dark, n)
		}
	}
	if len(dark) == 0 {
		return nil, false
	}
	ns, name := devicePluginRef(e.s.Blueprint)
	ds := fmt.Sprintf("%s/%s", ns, name)
	byPool := map[string][]*nodeInfo{}
	var poolNames []string
	for _, n := range dark {
		if _, ok := byPool[n.pool]; !ok {
			poolNames = append(poolNames, n.pool)
		}
		byPool[n.pool] = append(byPool[n.pool], n)
	}
	sort.Strings(poolNames)
	var where []string
	for _, p := range poolNames {
		where = append(where, fmt.Sprintf("pool %s (%s of %d)", p, words.Count(len(byPool[p]), "node"), len(e.s.index().byPool[p])))
	}
	head := fmt.Sprintf("GPU nodes advertise no %s: %s, though their machines have GPUs (%s)", e.gpuResource(dark[0]), strings.Join(where, ", "), v1alpha1.LabelGPUCount)
	c = &Cause{Layer: LayerPools, Code: CauseGPUsInvisible}
	all = len(dark) == len(gpuNodes)
	plugin := e.s.DevicePlugin
	if plugin == nil {
		c.Message = fmt.Sprintf("%s: there is no device-plugin DaemonSet %s to advertise them", head, ds)
		c.Fix = fmt.Sprintf("install the NVIDIA device plugin as DaemonSet %s (spec.devicePlugin names it; a berth local cluster installs it at `berth up` unless spec.devicePlugin.install is false; elsewhere the GPU operator or NVIDIA's chart does)", ds)
		return c, all
	}
	// Whether the plugin may run on a dark node is the scheduler's verdict
	// on the pod the DaemonSet controller would make for it (with the
	// tolerations that controller adds); berth names only the taint or
	// the selection in the way.
	pod := simulate.DaemonPod(plugin)
	daemonutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
	pc := newCheck(e.s, pod)
	for _, p := range poolNames {
		f := pc.fit(byPool[p][0])
		// A node condition's taint is the node's state, said below by
		// what the plugin's pods are doing, not the pool's to change.
		if i := slices.IndexFunc(f.taints, func(t corev1.Taint) bool { return conditionTaint(t.Key) == "" }); i >= 0 {
			t := f.taints[i]
			c.Message = fmt.Sprintf("%s: device-plugin DaemonSet %s does not tolerate pool %s's taint %s, so it runs no pod on those nodes", head, ds, p, taintString(t))
			c.Fix = fmt.Sprintf("add to DaemonSet %s's spec.template.spec.tolerations %s (or {operator: Exists}, as NVIDIA's chart does, to run on every tainted GPU node)", ds, tolerationFor(t))
			return c, all
		}
		if len(f.unmet) > 0 {
			c.Message = fmt.Sprintf("%s: device-plugin DaemonSet %s's node selector or affinity leaves out pool %s's nodes", head, ds, p)
			c.Fix = fmt.Sprintf("let DaemonSet %s select the GPU nodes (spec.template.spec.nodeSelector or affinity, e.g. %s exists)", ds, v1alpha1.LabelGPUCount)
			return c, all
		}
	}
	// It may run there: say what its pods on the dark nodes are doing.
	var states []string
	for _, n := range dark {
		states = append(states, e.pluginPodOn(n, ns, name))
	}
	c.Message = fmt.Sprintf("%s: device-plugin DaemonSet %s is not Running on them: %s", head, ds, words.List(states, 4))
	c.Fix = fmt.Sprintf("get DaemonSet %s's pods Running on the GPU nodes (`kubectl -n %s describe daemonset %s` and its pods' events); the GPUs appear once they run", ds, ns, name)
	return c, all
}

// pluginPodOn says what the device plugin's pod on the node is doing.
func (e *explainer) pluginPodOn(n *nodeInfo, namespace, name string) string {
	for _, p := range n.pods {
		if ref := metav1.GetControllerOf(p); p.Namespace == namespace && ref != nil && ref.Kind == "DaemonSet" && ref.Name == name {
			s := fmt.Sprintf("pod %s on %s is %s", p.Name, n.node.Name, p.Status.Phase)
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason != "" {
					s += " (" + w.Reason + ")"
					break
				}
			}
			return s
		}
	}
	return "no pod on " + n.node.Name
}
