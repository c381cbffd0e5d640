package audit

import (
	"encoding/json"
	"fmt"
	"strings"

	jsoniter "github.com/json-iterator/go"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectJSON decodes documents into API types. It is json-iterator in the
// configuration Kubernetes' own JSON serializer used from 1.11 until 1.23
// (kubernetes/kubernetes#65034, #105030): field names match
// case-sensitively, as the API server matches them. It decodes a pod about
// three times as fast as encoding/json, and decoding is most of the cost
// of a dump of bare pods.
var objectJSON = jsoniter.Config{EscapeHTML: true, CaseSensitive: true}.Froze()

// unmarshal decodes js into v. json-iterator's errors quote the bytes
// around the fault but name no field, so a document it refuses is decoded
// again by encoding/json, whose error is the one reported ("cannot
// unmarshal string into Go struct field PodSpec.spec.containers"). Should
// encoding/json take what json-iterator refused, its reading stands.
func unmarshal(js []byte, v any) error {
	if objectJSON.Unmarshal(js, v) == nil {
		return nil
	}
	return json.Unmarshal(js, v)
}

// badObject is a document that is JSON but not the object its kind says.
type badObject struct{ msg string }

func (b *badObject) Error() string { return b.msg }

// decodeObject adds the object in js (or, for a List, its items) to inv.
// Pods are only peeked at; see pods.go.
func decodeObject(js []byte, src source, inv *Inventory) error {
	top, err := topLevel(js, "apiVersion", "kind")
	if err != nil {
		return &badObject{"not a Kubernetes object: " + err.Error()}
	}
	apiVersion, kind := unquote(top[0]), unquote(top[1])
	if kind == "" {
		return nil // not a Kubernetes object: values.yaml, Chart.yaml
	}
	if strings.HasSuffix(kind, "List") {
		if top, err = topLevel(js, "items"); err != nil || top[0] == nil {
			return &badObject{kind + ": no items"}
		}
		items, err := elements(top[0])
		if err != nil {
			return &badObject{kind + ": items: " + err.Error()}
		}
		for _, it := range items {
			s := src
			if !src.yaml {
				s.offset = src.file.offsetOf(it)
			} else {
				s.doc = nil // the item's fields are not looked up within the list
			}
			if err := decodeObject(it, s, inv); err != nil {
				return err
			}
		}
		return nil
	}
	group := apiVersion
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		group = apiVersion[:i]
	} else {
		group = ""
	}
	var meta *metav1.ObjectMeta
	into := func(obj any, m *metav1.ObjectMeta) error {
		meta = m
		if err := unmarshal(js, obj); err != nil {
			return &badObject{fmt.Sprintf("%s: %v", kind, err)}
		}
		return nil
	}
	err = nil
	switch {
	case group == "" && kind == "Node":
		inv.Nodes = append(inv.Nodes, corev1.Node{})
		o := &inv.Nodes[len(inv.Nodes)-1]
		meta = &o.ObjectMeta
		err = decodeNode(js, o)
	case group == "" && kind == "Namespace":
		inv.Namespaces = append(inv.Namespaces, corev1.Namespace{})
		o := &inv.Namespaces[len(inv.Namespaces)-1]
		err = into(o, &o.ObjectMeta)
	case group == "" && kind == "Pod":
		p, err := peekPod(js, src)
		if err != nil {
			return err
		}
		inv.pending = append(inv.pending, p)
		return nil
	case group == "" && kind == "ResourceQuota":
		inv.ResourceQuotas = append(inv.ResourceQuotas, corev1.ResourceQuota{})
		o := &inv.ResourceQuotas[len(inv.ResourceQuotas)-1]
		err = into(o, &o.ObjectMeta)
	case group == "" && kind == "LimitRange":
		inv.LimitRanges = append(inv.LimitRanges, corev1.LimitRange{})
		o := &inv.LimitRanges[len(inv.LimitRanges)-1]
		err = into(o, &o.ObjectMeta)
	case group == "" && kind == "PersistentVolumeClaim":
		inv.Claims = append(inv.Claims, corev1.PersistentVolumeClaim{})
		o := &inv.Claims[len(inv.Claims)-1]
		err = into(o, &o.ObjectMeta)
	case group == "apps" && kind == "Deployment":
		inv.Deployments = append(inv.Deployments, appsv1.Deployment{})
		o := &inv.Deployments[len(inv.Deployments)-1]
		err = into(o, &o.ObjectMeta)
	case group == "apps" && kind == "StatefulSet":
		inv.StatefulSets = append(inv.StatefulSets, appsv1.StatefulSet{})
		o := &inv.StatefulSets[len(inv.StatefulSets)-1]
		err = into(o, &o.ObjectMeta)
	case group == "apps" && kind == "DaemonSet":
		inv.DaemonSets = append(inv.DaemonSets, appsv1.DaemonSet{})
		o := &inv.DaemonSets[len(inv.DaemonSets)-1]
		err = into(o, &o.ObjectMeta)
	case group == "apps" && kind == "ReplicaSet":
		inv.ReplicaSets = append(inv.ReplicaSets, appsv1.ReplicaSet{})
		o := &inv.ReplicaSets[len(inv.ReplicaSets)-1]
		err = into(o, &o.ObjectMeta)
	case group == "batch" && kind == "Job":
		inv.Jobs = append(inv.Jobs, batchv1.Job{})
		o := &inv.Jobs[len(inv.Jobs)-1]
		err = into(o, &o.ObjectMeta)
	case group == "batch" && kind == "CronJob":
		inv.CronJobs = append(inv.CronJobs, batchv1.CronJob{})
		o := &inv.CronJobs[len(inv.CronJobs)-1]
		err = into(o, &o.ObjectMeta)
	case group == "policy" && kind == "PodDisruptionBudget":
		inv.PDBs = append(inv.PDBs, policyv1.PodDisruptionBudget{})
		o := &inv.PDBs[len(inv.PDBs)-1]
		err = into(o, &o.ObjectMeta)
	case group == "scheduling.k8s.io" && kind == "PriorityClass":
		inv.PriorityClasses = append(inv.PriorityClasses, schedulingv1.PriorityClass{})
		o := &inv.PriorityClasses[len(inv.PriorityClasses)-1]
		err = into(o, &o.ObjectMeta)
	case group == "autoscaling" && kind == "HorizontalPodAutoscaler":
		// autoscaling/v1 names the same fields; it has no behavior.
		inv.HPAs = append(inv.HPAs, autoscalingv2.HorizontalPodAutoscaler{})
		o := &inv.HPAs[len(inv.HPAs)-1]
		err = into(o, &o.ObjectMeta)
	case group == "admissionregistration.k8s.io" && kind == "ValidatingAdmissionPolicyBinding":
		inv.PolicyBindings = append(inv.PolicyBindings, admissionv1.ValidatingAdmissionPolicyBinding{})
		o := &inv.PolicyBindings[len(inv.PolicyBindings)-1]
		err = into(o, &o.ObjectMeta)
	case group == "karpenter.sh" && kind == "NodePool":
		inv.NodePools = append(inv.NodePools, NodePool{})
		o := &inv.NodePools[len(inv.NodePools)-1]
		err = into(o, &o.ObjectMeta)
	case group == "eksctl.io" && kind == "ClusterConfig":
		inv.ClusterConfigs = append(inv.ClusterConfigs, ClusterConfig{})
		o := &inv.ClusterConfigs[len(inv.ClusterConfigs)-1]
		err = into(o, &o.ObjectMeta)
	case group == "keda.sh" && kind == "ScaledObject":
		inv.ScaledObjects = append(inv.ScaledObjects, ScaledObject{})
		o := &inv.ScaledObjects[len(inv.ScaledObjects)-1]
		err = into(o, &o.ObjectMeta)
	default:
		if inv.Ignored == nil {
			inv.Ignored = map[string]int{}
		}
		inv.Ignored[kind]++
		return nil
	}
	if err != nil {
		return err
	}
	if meta.Name == "" && meta.GenerateName == "" {
		return &badObject{kind + " has no metadata.name"}
	}
	name := meta.Name
	if name == "" {
		name = meta.GenerateName
	}
	inv.sources[Object{Kind: kind, Namespace: meta.Namespace, Name: name}] = src
	return nil
}

// decodeNode reads what the rules read of a node: its metadata, spec,
// capacity and allocatable. A node's status is mostly images, conditions
// and addresses, and thousands of nodes are a large part of a dump.
func decodeNode(js []byte, n *corev1.Node) error {
	top, err := topLevel(js, "metadata", "spec", "status")
	if err != nil {
		return &badObject{"Node: " + err.Error()}
	}
	parts := []struct {
		raw  []byte
		into any
	}{{top[0], &n.ObjectMeta}, {top[1], &n.Spec}}
	if top[2] != nil {
		st, err := topLevel(top[2], "capacity", "allocatable")
		if err != nil {
			return &badObject{"Node: status: " + err.Error()}
		}
		parts = append(parts, struct {
			raw  []byte
			into any
		}{st[0], &n.Status.Capacity}, struct {
			raw  []byte
			into any
		}{st[1], &n.Status.Allocatable})
	}
	for _, p := range parts {
		if p.raw == nil {
			continue
		}
		if err := unmarshal(p.raw, p.into); err != nil {
			return &badObject{fmt.Sprintf("Node: %v", err)}
		}
	}
	return nil
}
