package cluster

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/slim"
)

// runLeases renews each simulated kubelet's node lease, as a kubelet
// does (every quarter of the lease's 40 s), with KWOK's own lease
// controller, but decides itself which kubelets are alive: a node
// annotated v1alpha1.AnnotationKubeletStopped (`berth node stop`) gets no
// renewals, so the node lifecycle controller finds its lease expired
// and marks it Unknown, exactly as with a dead kubelet. KWOK is run
// without leases of its own (kwok.go): its node selector is applied on
// the client side, so it never notices a node leaving it, and it would
// renew a stopped node's lease for ever.
func runLeases(ctx context.Context, client kubernetes.Interface) error {
	factory := slim.Informers(client, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelPool }))
	nodes := factory.Core().V1().Nodes()
	leaseFactory := slim.Informers(client, 10*time.Minute, informers.WithNamespace(corev1.NamespaceNodeLease))
	leases := leaseFactory.Coordination().V1().Leases()
	duration := time.Duration(nodeLeaseSeconds) * time.Second
	lc, err := controllers.NewNodeLeaseController(controllers.NodeLeaseControllerConfig{
		TypedClient:          client,
		HolderIdentity:       leaseHolder,
		LeaseDurationSeconds: nodeLeaseSeconds,
		// Renewals wait on etcd's fsync'd writes: enough of them in
		// flight that thousands of nodes renew within their quarter.
		LeaseParallelism: 32,
		GetLease: func(node string) (*coordinationv1.Lease, bool) {
			l, err := leases.Lister().Leases(corev1.NamespaceNodeLease).Get(node)
			return l, err == nil
		},
		RenewInterval:       duration / 4,
		RenewIntervalJitter: 0.04,
		MutateLeaseFunc: func(l *coordinationv1.Lease) error {
			if n, err := nodes.Lister().Get(l.Name); err == nil {
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
			}
			return nil
		},
		OnNodeManagedFunc: func(string) {},
	})
	if err != nil {
		return err
	}
	sync := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok || n.Annotations[v1alpha1.AnnotationKWOKNode] != "fake" {
			return
		}
		if _, stopped := n.Annotations[v1alpha1.AnnotationKubeletStopped]; stopped {
			lc.ReleaseHold(n.Name)
			return
		}
		lc.TryHold(n.Name)
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj any) { sync(obj) },
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				lc.ReleaseHold(n.Name)
			}
		},
	}); err != nil {
		return err
	}
	leases.Informer() // registered before Start
	factory.Start(ctx.Done())
	leaseFactory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	leaseFactory.WaitForCacheSync(ctx.Done())
	if err := lc.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	factory.Shutdown()
	leaseFactory.Shutdown()
	return nil
}

// leaseHolder is the holder identity of the simulated kubelets' leases,
// the identity KWOK held them under before berth renewed them itself, so
// a cluster made by an earlier berth keeps its leases.
const leaseHolder = "berth"
