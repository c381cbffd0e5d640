package kubelets

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/slim"
)

// LeaseController renews each simulated kubelet's node lease, as a
// kubelet does (every quarter of the lease's 40 s), with KWOK's own lease
// controller, but decides itself which kubelets are alive: a node
// annotated v1alpha1.AnnotationKubeletStopped (`berth node stop`) gets no
// renewals, so the node lifecycle controller finds its lease expired
// and marks it Unknown, exactly as with a dead kubelet. KWOK is run
// without leases of its own (internal/cluster's kwok.go): its node
// selector is applied on the client side, so it never notices a node
// leaving it, and it would renew a stopped node's lease for ever.
//
// It is no Reconciler: a node's event only takes or releases its hold,
// and KWOK's controller keeps the renewals' own queue.
type LeaseController struct {
	client kubernetes.Interface
	nodes  cache.SharedIndexInformer
}

// NewLeaseController returns a controller that renews leases through
// client (one that is not rate-limited: 5,000 nodes renew 500 leases a
// second) and takes the cluster's nodes from factory, shared with
// berth's other controllers and started by its owner.
func NewLeaseController(client kubernetes.Interface, factory informers.SharedInformerFactory) *LeaseController {
	return &LeaseController{client: client, nodes: factory.Core().V1().Nodes().Informer()}
}

// Register runs the lease controller.
func (c *LeaseController) Register(m *controller.Manager) error {
	m.Add("leases", c.Run)
	return nil
}

// Run renews leases until ctx ends.
func (c *LeaseController) Run(ctx context.Context) error {
	leaseFactory := slim.Informers(c.client, 10*time.Minute, informers.WithNamespace(corev1.NamespaceNodeLease))
	leases := leaseFactory.Coordination().V1().Leases()
	nodes := corelisters.NewNodeLister(c.nodes.GetIndexer())
	duration := time.Duration(LeaseSeconds) * time.Second
	lc, err := controllers.NewNodeLeaseController(controllers.NodeLeaseControllerConfig{
		TypedClient:          c.client,
		HolderIdentity:       leaseHolder,
		LeaseDurationSeconds: LeaseSeconds,
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
			if n, err := nodes.Get(l.Name); err == nil {
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
		_, pool := n.Labels[v1alpha1.LabelPool]
		if _, stopped := n.Annotations[v1alpha1.AnnotationKubeletStopped]; stopped || !pool {
			lc.ReleaseHold(n.Name)
			return
		}
		lc.TryHold(n.Name)
	}
	reg, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj any) { sync(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				lc.ReleaseHold(n.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	leases.Informer() // registered before Start
	leaseFactory.Start(ctx.Done())
	defer leaseFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced, leases.Informer().HasSynced) {
		return nil // stopped first
	}
	if err := lc.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// LeaseSeconds is a node lease's duration: the kubelet's default.
const LeaseSeconds = 40

// leaseHolder is the holder identity of the simulated kubelets' leases,
// the identity KWOK held them under before berth renewed them itself, so
// a cluster made by an earlier berth keeps its leases.
const leaseHolder = "berth"
