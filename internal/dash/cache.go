package dash

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/internal/slim"
)

// watched is the server's one informer cache. It tells the server when
// anything a page shows has changed (Jobs too, which Kueue may hold with
// no pod), and holds what the pages read most:
// pods, nodes and events (which status and why read through it, see
// cachedClient), PodDisruptionBudgets. Objects are kept without their
// managed fields. Secrets are never watched.
type watched struct {
	factory informers.SharedInformerFactory
	events  corelisters.EventLister
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	pdbs    policylisters.PodDisruptionBudgetLister
	synced  []cache.InformerSynced
}

// newWatched registers the informers; changed is called (from the
// informers' goroutines) on every add, update and delete.
func newWatched(c kubernetes.Interface, changed func()) (*watched, error) {
	f := slim.Informers(c, 0)
	w := &watched{factory: f}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	}
	pods := f.Core().V1().Pods().Informer()
	// The autoscaler's status and the spot record live in kube-system.
	systemConfigMaps := f.InformerFor(&corev1.ConfigMap{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewConfigMapInformer(c, metav1.NamespaceSystem, resync, cache.Indexers{})
	})
	informers := []cache.SharedIndexInformer{
		pods,
		systemConfigMaps,
		f.Core().V1().Nodes().Informer(),
		f.Core().V1().Events().Informer(),
		f.Core().V1().ResourceQuotas().Informer(),
		f.Autoscaling().V2().HorizontalPodAutoscalers().Informer(),
		f.Policy().V1().PodDisruptionBudgets().Informer(),
		f.Scheduling().V1().PriorityClasses().Informer(),
		// A Job Kueue holds has no pod: without its own watch, one
		// submitted into a full queue would reach the Waiting page only
		// with the next pod, node or event that changed.
		f.Batch().V1().Jobs().Informer(),
	}
	for _, i := range informers {
		if _, err := i.AddEventHandler(h); err != nil {
			return nil, err
		}
		w.synced = append(w.synced, i.HasSynced)
	}
	w.events = f.Core().V1().Events().Lister()
	w.nodes = f.Core().V1().Nodes().Lister()
	w.pods = f.Core().V1().Pods().Lister()
	w.pdbs = f.Policy().V1().PodDisruptionBudgets().Lister()
	return w, nil
}
