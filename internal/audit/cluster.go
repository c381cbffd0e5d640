package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
)

// nodePools is Karpenter's NodePool resource, listed where it is served.
var nodePools = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// podsResource is listed by its metadata alone; see fetchPods.
var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// LoadCluster lists what audit checks from a live cluster, every kind at
// once, in pages. namespaces, when not empty, limits namespaced kinds to
// those namespaces; nodes, PriorityClasses and Karpenter NodePools (with
// dyn, where the cluster serves them) are always read whole. KEDA
// ScaledObjects are read with dyn where the cluster serves them: without
// KEDA's CRD the list is NotFound, and there are none.
//
// With meta, pods are first listed by their metadata only, and read in
// full only where audit checks the pod itself (fetchPods), as pods in
// files are only peeked at: on a cluster of Deployments that is none of
// them. Without meta every pod is listed in full.
func LoadCluster(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, meta metadata.Interface, namespaces []string) (*Inventory, error) {
	inv := &Inventory{}
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	var mu sync.Mutex
	type lister struct {
		what       string
		namespaced bool
		list       func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error)
	}
	listers := []lister{
		{"nodes", false, func(ctx context.Context, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().Nodes().List(ctx, o)
		}},
		{"namespaces", false, func(ctx context.Context, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().Namespaces().List(ctx, o)
		}},
		{"priorityclasses", false, func(ctx context.Context, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.SchedulingV1().PriorityClasses().List(ctx, o)
		}},
		{"pods", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			if meta != nil {
				return meta.Resource(podsResource).Namespace(ns).List(ctx, o)
			}
			return kube.CoreV1().Pods(ns).List(ctx, o)
		}},
		{"deployments", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AppsV1().Deployments(ns).List(ctx, o)
		}},
		{"statefulsets", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AppsV1().StatefulSets(ns).List(ctx, o)
		}},
		{"daemonsets", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AppsV1().DaemonSets(ns).List(ctx, o)
		}},
		{"replicasets", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AppsV1().ReplicaSets(ns).List(ctx, o)
		}},
		{"jobs", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.BatchV1().Jobs(ns).List(ctx, o)
		}},
		{"cronjobs", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.BatchV1().CronJobs(ns).List(ctx, o)
		}},
		{"resourcequotas", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().ResourceQuotas(ns).List(ctx, o)
		}},
		{"limitranges", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().LimitRanges(ns).List(ctx, o)
		}},
		{"persistentvolumeclaims", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
		}},
		{"poddisruptionbudgets", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, o)
		}},
		{"horizontalpodautoscalers", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, o)
		}},
		{"validatingadmissionpolicybindings", false, func(ctx context.Context, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, o)
		}},
	}
	if dyn != nil {
		listers = append(listers, lister{"nodepools.karpenter.sh", false, func(ctx context.Context, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return dyn.Resource(nodePools).List(ctx, o)
		}}, lister{"scaledobjects.keda.sh", true, func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return dyn.Resource(scaledObjects).Namespace(ns).List(ctx, o)
		}})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var firstErr error
	for _, l := range listers {
		nss := scopes
		if !l.namespaced {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			wg.Go(func() {
				err := eachItem(ctx, func(o metav1.ListOptions) (runtime.Object, error) { return l.list(ctx, ns, o) }, func(obj runtime.Object) {
					mu.Lock()
					defer mu.Unlock()
					inv.add(obj)
				})
				mu.Lock()
				defer mu.Unlock()
				if err := inv.listed(l.what, ns, err); err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := inv.fetchPods(ctx, kube, len(namespaces) == 0); err != nil {
		return nil, err
	}
	sort.Strings(inv.Unread)
	return inv, nil
}

// eachItem lists in pages of 1,000 and calls fn with each item.
func eachItem(ctx context.Context, list func(metav1.ListOptions) (runtime.Object, error), fn func(runtime.Object)) error {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = 1000
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		fn(obj)
		return nil
	})
}

// listed records how listing what in ns ended: a kind the cluster does
// not serve has nothing to audit, and one it will not let audit list is
// named in Unread while the rest is audited. Any other error is returned.
func (inv *Inventory) listed(what, ns string, err error) error {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		inv.Unread = append(inv.Unread, listScope(what, ns)+" (forbidden)")
		return nil
	}
	return listError(what, ns, err)
}

// manyNamespaces is how many namespaces' pods fetchPods lists one by one
// before it lists every pod at once instead.
const manyNamespaces = 16

// podRef is a pod listed by its metadata only.
type podRef struct {
	key   Object
	owner Object // Kind and Name of the controller, if any
}

// fetchPods reads in full the pods listed by their metadata that audit
// must check itself, those no audited controller stands for, and a
// DaemonSet's (a GPU node without the device plugin's pod on it is a
// finding, and which node a pod runs on is in its spec). The rest are
// counted: their controllers' templates are checked instead.
//
// The pods wanted are read by listing their namespaces in full, in
// parallel, and keeping those asked for; or, on an audit of the whole
// cluster that wants pods of more than manyNamespaces namespaces, by one
// list of every pod, since each list costs a request and the client is
// rate-limited. A pod deleted in between is left out, and one created
// since was not listed and is not audited.
func (inv *Inventory) fetchPods(ctx context.Context, kube kubernetes.Interface, clusterWide bool) error {
	if len(inv.podRefs) == 0 {
		return nil
	}
	present := inv.controllers()
	want := map[string]map[string]bool{} // namespace → names
	for _, p := range inv.podRefs {
		if present[p.owner] && p.owner.Kind != "DaemonSet" {
			inv.represented++
			continue
		}
		if want[p.key.Namespace] == nil {
			want[p.key.Namespace] = map[string]bool{}
		}
		want[p.key.Namespace][p.key.Name] = true
	}
	inv.podRefs = nil
	scopes := slices.Collect(maps.Keys(want))
	if clusterWide && len(scopes) > manyNamespaces {
		scopes = []string{metav1.NamespaceAll}
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	for _, ns := range scopes {
		wg.Go(func() {
			err := eachItem(ctx, func(o metav1.ListOptions) (runtime.Object, error) { return kube.CoreV1().Pods(ns).List(ctx, o) }, func(obj runtime.Object) {
				if p, ok := obj.(*corev1.Pod); ok && want[p.Namespace][p.Name] {
					mu.Lock()
					defer mu.Unlock()
					inv.Pods = append(inv.Pods, *p)
				}
			})
			mu.Lock()
			defer mu.Unlock()
			if err := inv.listed("pods", ns, err); err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return firstErr
}

func listScope(what, ns string) string {
	if ns == "" {
		return what
	}
	return what + " in " + ns
}

func listError(what, ns string, err error) error {
	return fmt.Errorf("listing %s: %w", listScope(what, ns), err)
}
