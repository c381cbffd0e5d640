package audit

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/words"
)

// gpuPool is a GPU pool and the taints its nodes carry.
type gpuPool struct {
	name   string
	taints []corev1.Taint
}

// checkDevicePlugins: the GPU device plugin runs on every GPU pool. A
// GPU node advertises nvidia.com/gpu only while the plugin runs there,
// so a pool whose taints the plugin's DaemonSet does not tolerate has
// GPUs nobody can use. On a live cluster, a GPU node that advertises no
// GPUs and runs no plugin pod is the same failure seen from the node.
func (v *view) checkDevicePlugins() {
	plugins := v.devicePlugins()
	if len(plugins) > 0 {
		v.checkPluginTolerations(plugins)
	}
	if v.inv.sources == nil { // a live cluster: nodes have a status
		v.checkAdvertised(plugins)
	}
}

// devicePlugins are the DaemonSets that stand for the device plugin: the
// one the blueprint names when it is there, else those that look like
// one (image or name).
func (v *view) devicePlugins() []*workload {
	var out []*workload
	for _, w := range v.workloads {
		if w.obj.Kind != "DaemonSet" {
			continue
		}
		if v.opts.DevicePlugin != (Object{}) && w.obj == v.opts.DevicePlugin {
			return []*workload{w}
		}
		if devicePlugin(w) {
			out = append(out, w)
		}
	}
	return out
}

// devicePlugin names the GPU device plugins audit knows.
func devicePlugin(w *workload) bool {
	for _, c := range w.spec.Containers {
		if strings.Contains(c.Image, "k8s-device-plugin") || strings.Contains(c.Image, "nvidia-device-plugin") || strings.Contains(c.Image, "amdgpu-device-plugin") {
			return true
		}
	}
	return strings.Contains(w.obj.Name, "device-plugin") && strings.Contains(w.obj.Name, "gpu") || strings.Contains(w.obj.Name, "nvidia-device-plugin")
}

// gpuPoolTaints are the GPU pools, of the blueprint and of what was
// audited, with the taints that keep a DaemonSet's pods off their nodes.
func (v *view) gpuPoolTaints() []gpuPool {
	byName := map[string][]corev1.Taint{}
	add := func(pool string, ts []corev1.Taint) {
		if _, ok := byName[pool]; !ok {
			byName[pool] = nil
		}
		for _, t := range ts {
			// The DaemonSet controller tolerates node conditions' taints
			// for its pods.
			if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !strings.HasPrefix(t.Key, "node.kubernetes.io/") {
				byName[pool] = appendTaint(byName[pool], t)
			}
		}
	}
	for name, ts := range v.opts.GPUPools {
		add(name, ts)
	}
	for _, p := range v.pools {
		if p.gpu {
			for _, n := range p.all() {
				add(p.name, n.Spec.Taints)
			}
		}
	}
	out := make([]gpuPool, 0, len(byName))
	for name, ts := range byName {
		out = append(out, gpuPool{name, ts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// untolerated are the taints of ts the DaemonSet does not tolerate.
func untolerated(w *workload, ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for i := range ts {
		if _, ok := tolerates(w.spec, ts[i:i+1]); !ok {
			out = append(out, ts[i])
		}
	}
	return out
}

func (v *view) checkPluginTolerations(plugins []*workload) {
	w := plugins[0]
	field := w.path + ".tolerations"
	pools := v.gpuPoolTaints()
	if len(pools) == 0 {
		if v.opts.GPUPools != nil {
			// The blueprint has no GPU pool, and no GPU node was
			// audited: the plugin has nowhere it must run.
			return
		}
		// Nothing says which pools there are: hold the plugin to the
		// taints GPU pools should carry.
		if missing := untolerated(w, v.gpuTaints); len(missing) > 0 {
			v.add(v1alpha1.RuleDevicePlugin, w.obj, field,
				fmt.Sprintf("GPU device plugin does not tolerate the GPU pools' %s, so it never runs on the GPU nodes, they advertise no GPUs, and every GPU pod stays Pending", taintsText(missing)),
				"add "+tolerationsToAdd(missing))
		}
		return
	}
pools:
	for _, p := range pools {
		for _, other := range plugins {
			if len(untolerated(other, p.taints)) == 0 {
				continue pools
			}
		}
		missing := untolerated(w, p.taints)
		v.add(v1alpha1.RuleDevicePlugin, w.obj, field,
			fmt.Sprintf("GPU pool %s: the device plugin does not tolerate the pool's %s, so it never runs on the pool's nodes, they advertise no GPUs, and every GPU pod meant for the pool stays Pending", p.name, taintsText(missing)),
			fmt.Sprintf("add %s to %s", tolerationsToAdd(missing), field))
	}
}

// checkAdvertised: every node of a GPU pool advertises its GPUs, or runs
// the plugin that will.
func (v *view) checkAdvertised(plugins []*workload) {
	isPlugin := map[Object]bool{}
	for _, w := range plugins {
		isPlugin[w.obj] = true
	}
	running := map[string]bool{}
	for i := range v.inv.Pods {
		p := &v.inv.Pods[i]
		ref := metav1.GetControllerOf(p)
		if ref != nil && isPlugin[Object{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}] && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running[p.Spec.NodeName] = true
		}
	}
	taints := map[string][]corev1.Taint{}
	for _, p := range v.gpuPoolTaints() {
		taints[p.name] = p.taints
	}
	for _, p := range v.pools {
		if !p.gpu {
			continue
		}
		var bare []string
		for _, n := range p.nodes {
			if !advertisesGPUs(n) && !running[n.Name] {
				bare = append(bare, n.Name)
			}
		}
		if len(bare) == 0 {
			continue
		}
		var why, fix string
		switch {
		case len(plugins) == 0:
			why = "no GPU device plugin DaemonSet was found"
			fix = "install the NVIDIA device plugin (or the GPU Operator) with tolerations of the GPU pools' taints; `berth up` installs it from spec.devicePlugin"
		case len(untolerated(plugins[0], taints[p.name])) > 0:
			missing := untolerated(plugins[0], taints[p.name])
			why = fmt.Sprintf("the device plugin (DaemonSet %s/%s) does not tolerate the pool's %s", plugins[0].obj.Namespace, plugins[0].obj.Name, taintsText(missing))
			fix = fmt.Sprintf("add %s to DaemonSet %s/%s's %s.tolerations", tolerationsToAdd(missing), plugins[0].obj.Namespace, plugins[0].obj.Name, plugins[0].path)
		default:
			why = fmt.Sprintf("no pod of the device plugin (DaemonSet %s/%s) is Running there", plugins[0].obj.Namespace, plugins[0].obj.Name)
			fix = fmt.Sprintf("find out why: kubectl -n %s get pods -o wide --field-selector spec.nodeName=%s", plugins[0].obj.Namespace, bare[0])
		}
		v.add(v1alpha1.RuleDevicePlugin, Object{Kind: "Node", Name: bare[0]}, "status.allocatable",
			fmt.Sprintf("GPU pool %s: %s of %d node(s) advertise no GPUs: %s, so no GPU pod can run there", p.name, words.List(bare, 3), len(p.nodes), why),
			fix)
	}
}

// advertisesGPUs reports whether a node offers any accelerator.
func advertisesGPUs(n *corev1.Node) bool {
	for r, q := range n.Status.Allocatable {
		if isGPUResource(r) && !q.IsZero() {
			return true
		}
	}
	return false
}

// taintsText writes "taint A" or "taints A, B".
func taintsText(ts []corev1.Taint) string {
	if len(ts) == 1 {
		return "taint " + ts[0].ToString()
	}
	return "taints " + strings.Join(taintStrings(ts), ", ")
}

// tolerationsToAdd writes the tolerations that tolerate ts.
func tolerationsToAdd(ts []corev1.Taint) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("{key: %s, operator: Exists, effect: %s}", t.Key, t.Effect)
	}
	if len(parts) == 1 {
		return "the toleration " + parts[0]
	}
	return "the tolerations " + strings.Join(parts, ", ")
}
