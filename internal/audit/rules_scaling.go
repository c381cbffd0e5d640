package audit

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"berth.io/berth/api/v1alpha1"
)

// hpaDefaultWindow is the scale-down stabilization window of an HPA that
// sets none.
const hpaDefaultWindow = 300

// scalingClass is a blueprint class with scaling, as the scaling rules
// read it.
type scalingClass struct {
	name    string
	scaling *v1alpha1.Scaling
	// window is the class's scaleDownWindow in seconds, defaulted as the
	// blueprint does when the class names none.
	window int32
	// gpuPools are the class's pools that have GPUs, by the blueprint or
	// by the nodes and pool definitions audited.
	gpuPools []string
}

// scalingClasses are the classes of Options.Classes that have scaling,
// by name.
func (v *view) scalingClasses() map[string]*scalingClass {
	out := map[string]*scalingClass{}
	for i := range v.opts.Classes {
		c := &v.opts.Classes[i]
		if c.Scaling == nil {
			continue
		}
		sc := &scalingClass{name: c.Name, scaling: c.Scaling}
		for _, p := range c.Pools {
			if _, ok := v.opts.GPUPools[p]; ok || v.gpuPools[p] {
				sc.gpuPools = append(sc.gpuPools, p)
			}
		}
		switch {
		case c.Scaling.ScaleDownWindow != nil:
			sc.window = int32(c.Scaling.ScaleDownWindow.Duration / time.Second)
		case len(sc.gpuPools) > 0:
			sc.window = int32(v1alpha1.DefaultGPUScaleDownWindow / time.Second)
		default:
			sc.window = int32(v1alpha1.DefaultScaleDownWindow / time.Second)
		}
		out[c.Name] = sc
	}
	return out
}

// floor is the fewest replicas the class asks for: 0 for a class with a
// queue that names none.
func (c *scalingClass) floor() int32 {
	if m := c.scaling.MinReplicas; m != nil {
		return *m
	}
	if c.scaling.Queue != nil {
		return 0
	}
	return 1
}

// workloadNamed is the audited workload of that kind and name, or nil.
func (v *view) workloadNamed(ns, kind, name string) *workload {
	for _, w := range v.byNS[ns] {
		if w.obj.Kind == kind && w.obj.Name == name {
			return w
		}
	}
	return nil
}

// checkScaling holds HPAs and ScaledObjects to the scaling of their
// workloads' classes: scale-down no faster than the class's window, and
// a queue class on GPU pools able to reach zero replicas.
func (v *view) checkScaling() {
	classes := v.scalingClasses()
	if len(classes) == 0 {
		return
	}
	classOf := func(w *workload) *scalingClass {
		if w == nil {
			return nil
		}
		return classes[w.labels[v1alpha1.LabelClass]]
	}
	for i := range v.inv.HPAs {
		h := &v.inv.HPAs[i]
		if ownedByKEDA(h) {
			continue // its ScaledObject is checked instead
		}
		w := v.workloadNamed(h.Namespace, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		if c := classOf(w); c != nil {
			v.checkHPAWindow(h, w, c)
		}
	}
	for i := range v.inv.ScaledObjects {
		so := &v.inv.ScaledObjects[i]
		w := v.workloadNamed(so.Namespace, so.targetKind(), so.Spec.ScaleTargetRef.Name)
		c := classOf(w)
		if c == nil {
			continue
		}
		for _, win := range so.scaleDownWindows() {
			v.checkWindow(Object{Kind: "ScaledObject", Namespace: so.Namespace, Name: so.Name}, win, w, c)
		}
	}
	for _, w := range v.workloads {
		c := classOf(w)
		if c == nil || w.replicas == nil || c.scaling.Queue == nil || len(c.gpuPools) == 0 || c.floor() > 0 {
			continue
		}
		v.checkScaleToZero(w, c)
	}
}

func (v *view) checkHPAWindow(h *autoscalingv2.HorizontalPodAutoscaler, w *workload, c *scalingClass) {
	win := window{field: "spec.behavior.scaleDown.stabilizationWindowSeconds", seconds: hpaDefaultWindow, unset: true}
	if b := h.Spec.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
		win.seconds, win.unset = *b.ScaleDown.StabilizationWindowSeconds, false
	}
	v.checkWindow(Object{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name}, win, w, c)
}

// checkWindow: a scale-down delay of obj is at least its class's window.
func (v *view) checkWindow(obj Object, win window, w *workload, c *scalingClass) {
	if win.seconds >= c.window {
		return
	}
	set := win.field
	if win.unset {
		set += " unset: the default"
	}
	v.add(v1alpha1.RuleHPAClassWindow, obj, win.field,
		fmt.Sprintf("scales %s %s of class %s down after %d s (%s), sooner than the class's scaleDownWindow of %s (%d s), so replicas%s go between bursts and the next burst pays their start-up again",
			w.obj.Kind, w.obj.Name, c.name, win.seconds, set, time.Duration(c.window)*time.Second, c.window, onGPU(c)),
		fmt.Sprintf("set %s to %d (the class's scaleDownWindow)", win.field, c.window))
}

// checkScaleToZero: a workload of a queue class on GPU pools can go to
// zero replicas, so the pools can go to zero nodes while the queue is
// empty. A KEDA ScaledObject decides; else an HPA that is not KEDA's;
// else the workload's own replicas.
func (v *view) checkScaleToZero(w *workload, c *scalingClass) {
	what := fmt.Sprintf("class %s drains a %s queue on GPU pool(s) %s", c.name, c.scaling.Queue.Type, strings.Join(c.gpuPools, ", "))
	tail := fmt.Sprintf("so a replica stays with the queue empty and %s never goes back to zero nodes", strings.Join(c.gpuPools, ", "))
	for i := range v.inv.ScaledObjects {
		so := &v.inv.ScaledObjects[i]
		if so.Namespace != w.obj.Namespace || so.targetKind() != w.obj.Kind || so.Spec.ScaleTargetRef.Name != w.obj.Name {
			continue
		}
		if m := so.minReplicas(); m > 0 {
			v.add(v1alpha1.RuleQueueNeverZero, Object{Kind: "ScaledObject", Namespace: so.Namespace, Name: so.Name}, "spec.minReplicaCount",
				fmt.Sprintf("keeps %d replica(s) of %s %s: %s, %s", m, w.obj.Kind, w.obj.Name, what, tail),
				"set spec.minReplicaCount to 0 (or leave it unset): KEDA wakes the workload when the queue passes the class's activationThreshold")
		}
		return
	}
	for i := range v.inv.HPAs {
		h := &v.inv.HPAs[i]
		if h.Namespace != w.obj.Namespace || h.Spec.ScaleTargetRef.Kind != w.obj.Kind || h.Spec.ScaleTargetRef.Name != w.obj.Name || ownedByKEDA(h) {
			continue
		}
		m, set := int32(1), "unset, so 1"
		if h.Spec.MinReplicas != nil {
			m, set = *h.Spec.MinReplicas, fmt.Sprint(*h.Spec.MinReplicas)
		}
		if m > 0 {
			v.add(v1alpha1.RuleQueueNeverZero, Object{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name}, "spec.minReplicas",
				fmt.Sprintf("keeps at least %d replica(s) of %s %s (minReplicas %s): %s, %s", m, w.obj.Kind, w.obj.Name, set, what, tail),
				"set spec.minReplicas: 0 with an External metric on the queue's depth (the HPAScaleToZero feature gate, which berth's local cluster turns on), or scale it with a KEDA ScaledObject with minReplicaCount 0 instead (`berth new batch NAME --team T --queue URL` writes one)")
		}
		return
	}
	if *w.replicas > 0 {
		v.add(v1alpha1.RuleQueueNeverZero, w.obj, "spec.replicas",
			fmt.Sprintf("runs %d replica(s) and no HPA or KEDA ScaledObject scales it: %s, %s", *w.replicas, what, tail),
			fmt.Sprintf("scale %s %s with a KEDA ScaledObject with minReplicaCount 0 on the queue (`berth new batch NAME --team T --queue URL` writes one), or an HPA with minReplicas 0 on an External metric of the queue's depth (berth's local cluster turns on HPAScaleToZero)", w.obj.Kind, w.obj.Name))
	}
}

// onGPU is " on GPU pool(s) P" for a class with GPU pools, where a
// replica takes minutes to start and load its model.
func onGPU(c *scalingClass) string {
	if len(c.gpuPools) == 0 {
		return ""
	}
	return " on GPU pool(s) " + strings.Join(c.gpuPools, ", ")
}
