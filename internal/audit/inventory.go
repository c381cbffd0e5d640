package audit

import (
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"berth.io/berth/api/v1alpha1"
)

// Inventory is what an audit checks: the objects of a cluster, or of a
// set of manifests. Kinds audit has no rules for are counted in Ignored.
type Inventory struct {
	Nodes           []corev1.Node
	Namespaces      []corev1.Namespace
	Pods            []corev1.Pod
	Deployments     []appsv1.Deployment
	StatefulSets    []appsv1.StatefulSet
	DaemonSets      []appsv1.DaemonSet
	ReplicaSets     []appsv1.ReplicaSet
	Jobs            []batchv1.Job
	CronJobs        []batchv1.CronJob
	ResourceQuotas  []corev1.ResourceQuota
	LimitRanges     []corev1.LimitRange
	Claims          []corev1.PersistentVolumeClaim
	PDBs            []policyv1.PodDisruptionBudget
	PriorityClasses []schedulingv1.PriorityClass
	HPAs            []autoscalingv2.HorizontalPodAutoscaler
	// PolicyBindings are ValidatingAdmissionPolicyBindings: berth's say
	// whether its guardrails refuse or only warn.
	PolicyBindings []admissionv1.ValidatingAdmissionPolicyBinding
	// NodePools are Karpenter's; ClusterConfigs eksctl's, from files.
	NodePools      []NodePool
	ClusterConfigs []ClusterConfig
	// ScaledObjects are KEDA's, which scale a workload on a queue.
	ScaledObjects []ScaledObject

	// Ignored counts objects of other kinds, by kind.
	Ignored map[string]int
	// Unread are the kinds a cluster would not list: "nodes (forbidden)".
	Unread []string

	// sources says where each object was read from; nil for a cluster.
	sources map[Object]source

	// pending are pods read from files, not yet decoded: a pod is only
	// decoded when no audited controller stands for it (resolvePods).
	pending []rawPod
	// podRefs are pods listed from a cluster by their metadata only,
	// not yet read in full (fetchPods).
	podRefs []podRef
	// represented counts the pods left undecoded because their
	// controller's template is checked instead.
	represented int
}

// source is where an object's document is: its file, and the line a YAML
// document starts on or the offset of a JSON one. A YAML document is kept
// to find a field's line in, when a finding needs it.
type source struct {
	file   *file
	line   int
	offset int
	doc    []byte
	yaml   bool
	// block says doc was converted by blockToJSON, so that finding a
	// line in it may stop as soon as the line is known.
	block bool
}

// counts are the objects of each kind, for the report.
func (inv *Inventory) counts() map[string]int {
	c := map[string]int{}
	add := func(kind string, n int) {
		if n > 0 {
			c[kind] = n
		}
	}
	add("Node", len(inv.Nodes))
	add("Namespace", len(inv.Namespaces))
	add("Pod", len(inv.Pods)+inv.represented)
	add("Deployment", len(inv.Deployments))
	add("StatefulSet", len(inv.StatefulSets))
	add("DaemonSet", len(inv.DaemonSets))
	add("ReplicaSet", len(inv.ReplicaSets))
	add("Job", len(inv.Jobs))
	add("CronJob", len(inv.CronJobs))
	add("ResourceQuota", len(inv.ResourceQuotas))
	add("LimitRange", len(inv.LimitRanges))
	add("PersistentVolumeClaim", len(inv.Claims))
	add("PodDisruptionBudget", len(inv.PDBs))
	add("PriorityClass", len(inv.PriorityClasses))
	add("HorizontalPodAutoscaler", len(inv.HPAs))
	add("ValidatingAdmissionPolicyBinding", len(inv.PolicyBindings))
	add("NodePool", len(inv.NodePools))
	add("ClusterConfig", len(inv.ClusterConfigs))
	add("ScaledObject", len(inv.ScaledObjects))
	return c
}

// merge appends other's objects to inv.
func (inv *Inventory) merge(other *Inventory) {
	inv.Nodes = append(inv.Nodes, other.Nodes...)
	inv.Namespaces = append(inv.Namespaces, other.Namespaces...)
	inv.Pods = append(inv.Pods, other.Pods...)
	inv.Deployments = append(inv.Deployments, other.Deployments...)
	inv.StatefulSets = append(inv.StatefulSets, other.StatefulSets...)
	inv.DaemonSets = append(inv.DaemonSets, other.DaemonSets...)
	inv.ReplicaSets = append(inv.ReplicaSets, other.ReplicaSets...)
	inv.Jobs = append(inv.Jobs, other.Jobs...)
	inv.CronJobs = append(inv.CronJobs, other.CronJobs...)
	inv.ResourceQuotas = append(inv.ResourceQuotas, other.ResourceQuotas...)
	inv.LimitRanges = append(inv.LimitRanges, other.LimitRanges...)
	inv.Claims = append(inv.Claims, other.Claims...)
	inv.PDBs = append(inv.PDBs, other.PDBs...)
	inv.PriorityClasses = append(inv.PriorityClasses, other.PriorityClasses...)
	inv.HPAs = append(inv.HPAs, other.HPAs...)
	inv.PolicyBindings = append(inv.PolicyBindings, other.PolicyBindings...)
	inv.NodePools = append(inv.NodePools, other.NodePools...)
	inv.ClusterConfigs = append(inv.ClusterConfigs, other.ClusterConfigs...)
	inv.ScaledObjects = append(inv.ScaledObjects, other.ScaledObjects...)
	inv.pending = append(inv.pending, other.pending...)
	inv.represented += other.represented
	for k, n := range other.Ignored {
		if inv.Ignored == nil {
			inv.Ignored = map[string]int{}
		}
		inv.Ignored[k] += n
	}
	for k, s := range other.sources {
		if inv.sources == nil {
			inv.sources = map[Object]source{}
		}
		inv.sources[k] = s
	}
}

// add appends a typed object read from a cluster.
func (inv *Inventory) add(obj any) {
	switch o := obj.(type) {
	case *corev1.Node:
		inv.Nodes = append(inv.Nodes, *o)
	case *corev1.Namespace:
		inv.Namespaces = append(inv.Namespaces, *o)
	case *corev1.Pod:
		inv.Pods = append(inv.Pods, *o)
	case *metav1.PartialObjectMetadata:
		p := podRef{key: Object{Kind: "Pod", Namespace: o.Namespace, Name: o.Name}}
		if ref := metav1.GetControllerOf(o); ref != nil {
			p.owner = Object{Kind: ref.Kind, Namespace: o.Namespace, Name: ref.Name}
		}
		inv.podRefs = append(inv.podRefs, p)
	case *appsv1.Deployment:
		inv.Deployments = append(inv.Deployments, *o)
	case *appsv1.StatefulSet:
		inv.StatefulSets = append(inv.StatefulSets, *o)
	case *appsv1.DaemonSet:
		inv.DaemonSets = append(inv.DaemonSets, *o)
	case *appsv1.ReplicaSet:
		inv.ReplicaSets = append(inv.ReplicaSets, *o)
	case *batchv1.Job:
		inv.Jobs = append(inv.Jobs, *o)
	case *batchv1.CronJob:
		inv.CronJobs = append(inv.CronJobs, *o)
	case *corev1.ResourceQuota:
		inv.ResourceQuotas = append(inv.ResourceQuotas, *o)
	case *corev1.LimitRange:
		inv.LimitRanges = append(inv.LimitRanges, *o)
	case *corev1.PersistentVolumeClaim:
		inv.Claims = append(inv.Claims, *o)
	case *policyv1.PodDisruptionBudget:
		inv.PDBs = append(inv.PDBs, *o)
	case *schedulingv1.PriorityClass:
		inv.PriorityClasses = append(inv.PriorityClasses, *o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		inv.HPAs = append(inv.HPAs, *o)
	case *admissionv1.ValidatingAdmissionPolicyBinding:
		inv.PolicyBindings = append(inv.PolicyBindings, *o)
	case *unstructured.Unstructured:
		switch o.GetKind() {
		case "NodePool":
			var np NodePool
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np) == nil {
				inv.NodePools = append(inv.NodePools, np)
			}
		case "ScaledObject":
			var so ScaledObject
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &so) == nil {
				inv.ScaledObjects = append(inv.ScaledObjects, so)
			}
		}
	}
}

// exemptions reads the audit.berth.io/ignore annotation of every object that has one.
func (inv *Inventory) exemptions() map[Object]map[string]bool {
	out := map[Object]map[string]bool{}
	note := func(kind string, m *metav1.ObjectMeta) {
		list, ok := m.Annotations[v1alpha1.AnnotationAuditIgnore]
		if !ok {
			return
		}
		rules := map[string]bool{}
		for _, id := range strings.Split(list, ",") {
			rules[strings.TrimSpace(id)] = true
		}
		out[Object{Kind: kind, Namespace: m.Namespace, Name: m.Name}] = rules
	}
	for i := range inv.Nodes {
		note("Node", &inv.Nodes[i].ObjectMeta)
	}
	for i := range inv.Namespaces {
		note("Namespace", &inv.Namespaces[i].ObjectMeta)
	}
	for i := range inv.Pods {
		note("Pod", &inv.Pods[i].ObjectMeta)
	}
	for i := range inv.Deployments {
		note("Deployment", &inv.Deployments[i].ObjectMeta)
	}
	for i := range inv.StatefulSets {
		note("StatefulSet", &inv.StatefulSets[i].ObjectMeta)
	}
	for i := range inv.DaemonSets {
		note("DaemonSet", &inv.DaemonSets[i].ObjectMeta)
	}
	for i := range inv.ReplicaSets {
		note("ReplicaSet", &inv.ReplicaSets[i].ObjectMeta)
	}
	for i := range inv.Jobs {
		note("Job", &inv.Jobs[i].ObjectMeta)
	}
	for i := range inv.CronJobs {
		note("CronJob", &inv.CronJobs[i].ObjectMeta)
	}
	for i := range inv.ResourceQuotas {
		note("ResourceQuota", &inv.ResourceQuotas[i].ObjectMeta)
	}
	for i := range inv.LimitRanges {
		note("LimitRange", &inv.LimitRanges[i].ObjectMeta)
	}
	for i := range inv.Claims {
		note("PersistentVolumeClaim", &inv.Claims[i].ObjectMeta)
	}
	for i := range inv.PDBs {
		note("PodDisruptionBudget", &inv.PDBs[i].ObjectMeta)
	}
	for i := range inv.PriorityClasses {
		note("PriorityClass", &inv.PriorityClasses[i].ObjectMeta)
	}
	for i := range inv.HPAs {
		note("HorizontalPodAutoscaler", &inv.HPAs[i].ObjectMeta)
	}
	for i := range inv.PolicyBindings {
		note("ValidatingAdmissionPolicyBinding", &inv.PolicyBindings[i].ObjectMeta)
	}
	for i := range inv.NodePools {
		note("NodePool", &inv.NodePools[i].ObjectMeta)
	}
	for i := range inv.ClusterConfigs {
		note("ClusterConfig", &inv.ClusterConfigs[i].ObjectMeta)
	}
	for i := range inv.ScaledObjects {
		note("ScaledObject", &inv.ScaledObjects[i].ObjectMeta)
	}
	return out
}
