package audit

import (
	"cmp"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
)

// workload is a pod template, or a pod no audited controller owns: the
// unit the pod rules check, so that a Deployment of 100 replicas is one
// finding and not 100.
type workload struct {
	obj Object
	// labels are the pods' labels, which PDBs select.
	labels map[string]string
	// objLabels are the object's own (a berth.io/class on a Deployment).
	objLabels map[string]string
	spec      *corev1.PodSpec
	// path is where spec is in the object: "spec.template.spec".
	path string
	// job is a Job's spec or a CronJob's jobTemplate spec, at jobPath;
	// nil for other kinds.
	job     *batchv1.JobSpec
	jobPath string
	// replicas is nil for kinds without a replica count.
	replicas *int32
	// claims: a StatefulSet's volumeClaimTemplates give each pod a volume.
	claims bool
	// ownerKind is the kind of a pod's controller that was not audited
	// (a Kubeflow PyTorchJob), or "".
	ownerKind string
	gpu       bool
}

type role int

const (
	other role = iota
	inference
	training
)

func (v *view) indexWorkloads() {
	inv := v.inv
	present := inv.controllers()
	// owned reports whether an audited controller stands for the object.
	owned := func(m *metav1.ObjectMeta) (bool, string) {
		ref := metav1.GetControllerOf(m)
		if ref == nil {
			return false, ""
		}
		return present[Object{Kind: ref.Kind, Namespace: m.Namespace, Name: ref.Name}], ref.Kind
	}
	add := func(w *workload) {
		w.gpu = usesGPU(w.spec)
		v.workloads = append(v.workloads, w)
	}
	defer func() {
		// Files are decoded on every core, so objects come in any order.
		slices.SortFunc(v.workloads, func(a, b *workload) int {
			return cmp.Or(cmp.Compare(a.obj.Namespace, b.obj.Namespace), cmp.Compare(a.obj.Kind, b.obj.Kind), cmp.Compare(a.obj.Name, b.obj.Name))
		})
		for _, w := range v.workloads {
			v.byNS[w.obj.Namespace] = append(v.byNS[w.obj.Namespace], w)
		}
	}()
	for i := range inv.Deployments {
		d := &inv.Deployments[i]
		add(&workload{obj: Object{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}, labels: d.Spec.Template.Labels, objLabels: d.Labels,
			spec: &d.Spec.Template.Spec, path: "spec.template.spec", replicas: orOne(d.Spec.Replicas)})
	}
	for i := range inv.StatefulSets {
		s := &inv.StatefulSets[i]
		add(&workload{obj: Object{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name}, labels: s.Spec.Template.Labels, objLabels: s.Labels,
			spec: &s.Spec.Template.Spec, path: "spec.template.spec", replicas: orOne(s.Spec.Replicas), claims: len(s.Spec.VolumeClaimTemplates) > 0})
	}
	for i := range inv.ReplicaSets {
		r := &inv.ReplicaSets[i]
		if ok, _ := owned(&r.ObjectMeta); ok {
			continue
		}
		add(&workload{obj: Object{Kind: "ReplicaSet", Namespace: r.Namespace, Name: r.Name}, labels: r.Spec.Template.Labels, objLabels: r.Labels,
			spec: &r.Spec.Template.Spec, path: "spec.template.spec", replicas: orOne(r.Spec.Replicas)})
	}
	for i := range inv.DaemonSets {
		d := &inv.DaemonSets[i]
		add(&workload{obj: Object{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name}, labels: d.Spec.Template.Labels, objLabels: d.Labels,
			spec: &d.Spec.Template.Spec, path: "spec.template.spec"})
	}
	for i := range inv.Jobs {
		j := &inv.Jobs[i]
		if ok, _ := owned(&j.ObjectMeta); ok {
			continue
		}
		add(&workload{obj: Object{Kind: "Job", Namespace: j.Namespace, Name: j.Name}, labels: j.Spec.Template.Labels, objLabels: j.Labels,
			spec: &j.Spec.Template.Spec, path: "spec.template.spec", job: &j.Spec, jobPath: "spec"})
	}
	for i := range inv.CronJobs {
		c := &inv.CronJobs[i]
		add(&workload{obj: Object{Kind: "CronJob", Namespace: c.Namespace, Name: c.Name}, labels: c.Spec.JobTemplate.Spec.Template.Labels, objLabels: c.Labels,
			spec: &c.Spec.JobTemplate.Spec.Template.Spec, path: "spec.jobTemplate.spec.template.spec", job: &c.Spec.JobTemplate.Spec, jobPath: "spec.jobTemplate.spec"})
	}
	for i := range inv.Pods {
		p := &inv.Pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ok, kind := owned(&p.ObjectMeta)
		if ok {
			continue
		}
		add(&workload{obj: Object{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}, labels: p.Labels, objLabels: p.Labels,
			spec: &p.Spec, path: "spec", ownerKind: kind})
	}
}

// controllers are the objects that create pods or other controllers.
func (inv *Inventory) controllers() map[Object]bool {
	present := map[Object]bool{}
	mark := func(kind, ns, name string) { present[Object{Kind: kind, Namespace: ns, Name: name}] = true }
	for i := range inv.Deployments {
		mark("Deployment", inv.Deployments[i].Namespace, inv.Deployments[i].Name)
	}
	for i := range inv.ReplicaSets {
		mark("ReplicaSet", inv.ReplicaSets[i].Namespace, inv.ReplicaSets[i].Name)
	}
	for i := range inv.StatefulSets {
		mark("StatefulSet", inv.StatefulSets[i].Namespace, inv.StatefulSets[i].Name)
	}
	for i := range inv.DaemonSets {
		mark("DaemonSet", inv.DaemonSets[i].Namespace, inv.DaemonSets[i].Name)
	}
	for i := range inv.Jobs {
		mark("Job", inv.Jobs[i].Namespace, inv.Jobs[i].Name)
	}
	for i := range inv.CronJobs {
		mark("CronJob", inv.CronJobs[i].Namespace, inv.CronJobs[i].Name)
	}
	return present
}

func orOne(n *int32) *int32 {
	if n == nil {
		one := int32(1)
		return &one
	}
	return n
}

// usesGPU reports whether any container asks for an accelerator.
func usesGPU(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for r := range cs[i].Resources.Limits {
				if isGPUResource(r) {
					return true
				}
			}
			for r := range cs[i].Resources.Requests {
				if isGPUResource(r) {
					return true
				}
			}
		}
	}
	return false
}

// role says whether a workload serves (inference) or trains. A
// workload labelled app.kubernetes.io/component: batch (or worker) is a
// queue's worker, neither, whatever its class is named; otherwise a berth
// class label, the PriorityClass name or the component saying so decides;
// failing those a GPU Deployment or StatefulSet serves and a GPU Job,
// CronJob or a pod of another kind of job trains.
func (w *workload) role() role {
	for _, l := range []map[string]string{w.labels, w.objLabels} {
		switch strings.ToLower(l[v1alpha1.LabelAppComponent]) {
		case "batch", "worker":
			return other
		}
	}
	hint := strings.ToLower(w.objLabels[v1alpha1.LabelClass] + " " + w.labels[v1alpha1.LabelClass] + " " + w.spec.PriorityClassName + " " + w.labels[v1alpha1.LabelAppComponent])
	serving := w.obj.Kind == "Deployment" || w.obj.Kind == "StatefulSet" || w.obj.Kind == "ReplicaSet"
	batch := w.obj.Kind == "Job" || w.obj.Kind == "CronJob" || (w.obj.Kind == "Pod" && strings.HasSuffix(w.ownerKind, "Job"))
	switch {
	case serving && (strings.Contains(hint, "inference") || strings.Contains(hint, "serving") || strings.Contains(hint, "predictor")):
		return inference
	case (batch || w.obj.Kind == "Pod") && strings.Contains(hint, "train"):
		return training
	case serving && w.gpu:
		return inference
	case batch && w.gpu:
		return training
	}
	return other
}

// tolerates reports whether the pod tolerates any of taints, and the
// index of the toleration that does: the scheduler's matching
// (Toleration.ToleratesTaint), without the comparison operators that are
// still alpha.
func tolerates(spec *corev1.PodSpec, taints []corev1.Taint) (int, bool) {
	for i := range spec.Tolerations {
		for j := range taints {
			if spec.Tolerations[i].ToleratesTaint(klog.Background(), &taints[j], false) {
				return i, true
			}
		}
	}
	return 0, false
}
