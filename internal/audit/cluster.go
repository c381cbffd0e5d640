package audit

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// nodePools is Karpenter's NodePool resource, listed where it is served.
var nodePools = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// LoadCluster lists what audit checks from a live cluster, every kind at
// once, in pages. namespaces, when not empty, limits namespaced kinds to
// those namespaces; nodes, PriorityClasses and Karpenter NodePools (with
// dyn, where the cluster serves them) are always read whole. KEDA
// ScaledObjects are read with dyn where the cluster serves them: without
// KEDA's CRD the list is NotFound, and there are none.
func LoadCluster(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, namespaces []string) (*Inventory, error) {
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
				p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) { return l.list(ctx, ns, o) }))
				p.PageSize = 1000
				err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
					mu.Lock()
					defer mu.Unlock()
					inv.add(obj)
					return nil
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil, apierrors.IsNotFound(err):
					// A kind the cluster does not serve has nothing to audit.
				case apierrors.IsForbidden(err):
					// Audit what may be read, and say what was not.
					inv.Unread = append(inv.Unread, listScope(l.what, ns)+" (forbidden)")
				default:
					if firstErr == nil {
						firstErr = listError(l.what, ns, err)
						cancel()
					}
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Strings(inv.Unread)
	return inv, nil
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
