package audit

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"berth.io/berth/api/v1alpha1"
)

// A user who may not list nodes still gets the audit of what they may
// read, with the kinds left out named. (Only reading is faked here; the
// rules run on a real cluster in test/e2e.)
func TestLoadClusterForbidden(t *testing.T) {
	kube := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "team-b"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
	)
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	inv, err := LoadCluster(context.Background(), kube, nil, nil, []string{"team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Pods) != 1 || inv.Pods[0].Name != "p" || len(inv.Nodes) != 0 {
		t.Errorf("read pods %v and %d nodes; want team-a's pod only", inv.Pods, len(inv.Nodes))
	}
	if diff := cmp.Diff([]string{"nodes (forbidden)"}, inv.Unread); diff != "" {
		t.Errorf("unread (-want +got):\n%s", diff)
	}
	if r := Check(inv, Options{}); !cmp.Equal(r.Unread, inv.Unread) {
		t.Errorf("the report does not say what was not read: %v", r.Unread)
	}
}

// Karpenter NodePools are read where the cluster serves them, and checked
// as pools.
func TestLoadClusterNodePools(t *testing.T) {
	np := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": "gpu"},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{"requirements": []any{
				map[string]any{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": []any{"0"}},
			}}},
			"limits": map[string]any{"nvidia.com/gpu": "8"},
		},
	}}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{nodePools: "NodePoolList", scaledObjects: "ScaledObjectList"}, np)
	inv, err := LoadCluster(context.Background(), fake.NewClientset(), dyn, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(inv, Options{})
	if len(r.Findings) != 1 || r.Findings[0].Rule != v1alpha1.RuleGPUPoolTaint || r.Findings[0].Object != (Object{Kind: "NodePool", Name: "gpu"}) {
		t.Errorf("findings %+v, want the NodePool's missing GPU taint", r.Findings)
	}
}

// KEDA ScaledObjects are read where the cluster serves them and checked
// against the blueprint's classes; a cluster without KEDA's CRD answers
// NotFound, and audits as one with none.
func TestLoadClusterScaledObjects(t *testing.T) {
	replicas := int32(0)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "whisper", Namespace: "queues"}}
	deploy.Spec.Replicas = &replicas
	deploy.Spec.Template.Labels = map[string]string{"app": "whisper", "berth.io/class": "transcribe"}
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"name": "whisper", "namespace": "queues"},
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"name": "whisper"},
			"minReplicaCount": int64(1),
			"cooldownPeriod":  int64(600),
		},
	}}
	kinds := map[schema.GroupVersionResource]string{nodePools: "NodePoolList", scaledObjects: "ScaledObjectList"}
	gpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{"agentpool": "gpu"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	opts := Options{Classes: brokenClasses, Ignore: []string{v1alpha1.RuleGPUPoolTaint, v1alpha1.RuleDevicePlugin, v1alpha1.RuleInferencePDB, v1alpha1.RuleInferenceSpread, v1alpha1.RuleInferenceReplicas, v1alpha1.RulePriorityClassMissing, v1alpha1.RuleLimitRangeMissing}}

	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, so)
	inv, err := LoadCluster(context.Background(), fake.NewClientset(deploy, gpu), dyn, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(inv, opts)
	if len(r.Findings) != 1 || r.Findings[0].Rule != v1alpha1.RuleQueueNeverZero || r.Findings[0].Object != (Object{Kind: "ScaledObject", Namespace: "queues", Name: "whisper"}) {
		t.Errorf("findings %+v, want the ScaledObject's minReplicaCount", r.Findings)
	}

	noKEDA := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds)
	noKEDA.PrependReactor("list", "scaledobjects", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "keda.sh", Resource: "scaledobjects"}, "")
	})
	inv, err = LoadCluster(context.Background(), fake.NewClientset(deploy, gpu), noKEDA, nil, nil)
	if err != nil {
		t.Fatalf("a cluster without KEDA: %v", err)
	}
	if len(inv.ScaledObjects) != 0 || len(inv.Unread) != 0 {
		t.Errorf("a cluster without KEDA gave %d ScaledObjects, unread %v", len(inv.ScaledObjects), inv.Unread)
	}
}

// podsByMetadata is a cluster of pods served to LoadCluster by the fake
// typed and metadata clients. It returns the namespaces whose pods were
// listed in full ("" for all of them).
func podsByMetadata(t *testing.T, namespaces []string, pods []*corev1.Pod, objs ...runtime.Object) (*Inventory, []string) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var metas []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta})
	}
	kube := fake.NewClientset(objs...)
	var mu sync.Mutex
	var listedInFull []string
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		listedInFull = append(listedInFull, a.GetNamespace())
		return false, nil, nil
	})
	inv, err := LoadCluster(context.Background(), kube, nil, metadatafake.NewSimpleMetadataClient(scheme, metas...), namespaces)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(listedInFull)
	return inv, listedInFull
}

func barePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// Pods are listed by their metadata, and read in full only where audit
// checks the pod itself: bare pods, pods whose controller is not audited,
// and a DaemonSet's (their nodes matter to the device-plugin rule). A
// namespace whose pods are all accounted for by their controllers is not
// read in full.
func TestLoadClusterPodsByMetadata(t *testing.T) {
	ctrl := true
	pod := func(ns, name, ownerKind, owner string) *corev1.Pod {
		p := barePod(ns, name)
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: owner, Controller: &ctrl}}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("team-c", "web-abc-1", "ReplicaSet", "web-abc"),
		pod("team-c", "web-abc-2", "ReplicaSet", "web-abc"),
		pod("team-a", "bare", "", ""),
		pod("team-b", "orphan", "ReplicaSet", "gone"),
		pod("kube-system", "plugin-x", "DaemonSet", "plugin"),
	}
	inv, listedInFull := podsByMetadata(t, nil, pods,
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "web-abc"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin"}})
	var got []string
	for _, p := range inv.Pods {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	sort.Strings(got)
	if want := []string{"kube-system/plugin-x", "team-a/bare", "team-b/orphan"}; !cmp.Equal(got, want) {
		t.Errorf("pods read in full %v, want %v", got, want)
	}
	if want := []string{"kube-system", "team-a", "team-b"}; !cmp.Equal(listedInFull, want) {
		t.Errorf("namespaces whose pods were listed in full %v, want %v", listedInFull, want)
	}
	if r := Check(inv, Options{}); r.Objects["Pod"] != len(pods) {
		t.Errorf("the report counts %d pods, want %d", r.Objects["Pod"], len(pods))
	}
}

// Bare pods in many namespaces of a whole-cluster audit are read by one
// list of every pod rather than a list per namespace; an audit of named
// namespaces lists only those.
func TestLoadClusterPodsManyNamespaces(t *testing.T) {
	var pods []*corev1.Pod
	var namespaces []string
	for i := range manyNamespaces + 1 {
		ns := fmt.Sprintf("team-%d", i)
		namespaces = append(namespaces, ns)
		pods = append(pods, barePod(ns, "bare"))
	}
	inv, listedInFull := podsByMetadata(t, nil, pods)
	if len(inv.Pods) != len(pods) || !cmp.Equal(listedInFull, []string{""}) {
		t.Errorf("read %d of %d bare pods in full, listing the pods of %q; want all, in one list of every namespace", len(inv.Pods), len(pods), listedInFull)
	}
	inv, listedInFull = podsByMetadata(t, namespaces, pods)
	sort.Strings(namespaces)
	if len(inv.Pods) != len(pods) || !cmp.Equal(listedInFull, namespaces) {
		t.Errorf("with -n: read %d of %d bare pods in full, listing the pods of %q; want all, in the namespaces named", len(inv.Pods), len(pods), listedInFull)
	}
}
