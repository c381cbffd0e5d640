package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	berthcontroller "berth.io/berth/internal/controller"
)

// Provisioner makes the volumes of one of berth's drivers: a
// PersistentVolume per claim, after the class's provisioning time, of
// the claim's size raised to the class's least, in the zone of the node
// the scheduler chose when the class is zonal. It is the library's
// Provisioner: the library's controller calls it for each claim of a
// class whose provisioner is the driver.
type Provisioner struct {
	driver string
	nodes  cache.Indexer
	// client and clock time a class's provisioning: a claim's volume is
	// due its provisioning time after the claim was first asked of the
	// driver, on clock, the cluster's (a rehearsal's virtual one).
	client kubernetes.Interface
	clock  clock.WithDelayedExecution

	mu  sync.Mutex
	due map[types.UID]time.Time
}

// AnnotationProvisioned is set on a claim when its class's provisioning
// time is up, so that the provision controller looks at the claim again.
const AnnotationProvisioned = "storage.berth.io/provisioned"

// Provision makes the claim's volume, or says why the class cannot.
func (p *Provisioner) Provision(ctx context.Context, o controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	params := o.StorageClass.Parameters
	offered := strings.Split(params[paramAccessModes], ",")
	for _, m := range o.PVC.Spec.AccessModes {
		if !slices.Contains(offered, string(m)) {
			return nil, controller.ProvisioningFinished, fmt.Errorf("storage class %s offers %s, not %s: ask for one of them, or use a class that offers %s", o.StorageClass.Name, params[paramAccessModes], m, m)
		}
	}
	size := o.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if v, ok := params[paramMinSize]; ok {
		if least, err := resource.ParseQuantity(v); err == nil && size.Cmp(least) < 0 {
			size = least
		}
	}
	if v, ok := params[paramMaxSize]; ok {
		if most, err := resource.ParseQuantity(v); err == nil && size.Cmp(most) > 0 {
			return nil, controller.ProvisioningFinished, fmt.Errorf("storage class %s makes volumes of at most %s; the claim asks %s: ask less, or use a class with a larger maxSize", o.StorageClass.Name, most.String(), size.String())
		}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   o.PVC.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaimPolicy(o.StorageClass),
			StorageClassName:              o.StorageClass.Name,
			VolumeMode:                    o.PVC.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: p.driver, VolumeHandle: o.PVName,
			}},
		},
	}
	if params[paramZonal] == "true" {
		zone, err := p.zoneOf(o.SelectedNodeName)
		if err != nil {
			return nil, controller.ProvisioningFinished, err
		}
		pv.Labels = map[string]string{corev1.LabelTopologyZone: zone}
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
		}}}}
	}
	if d, err := time.ParseDuration(params[paramProvisioningTime]); err == nil && d > 0 {
		if at, waiting := p.wait(o.PVC, d); waiting {
			// Ignored, the library makes no retry and no warning of it:
			// the claim is touched when the time is up (provisioned).
			return nil, controller.ProvisioningFinished, &controller.IgnoredError{
				Reason: fmt.Sprintf("storage class %s takes %s to make a volume: claim %s/%s gets its volume at %s", o.StorageClass.Name, d, o.PVC.Namespace, o.PVC.Name, at.Format(time.RFC3339))}
		}
	}
	return pv, controller.ProvisioningFinished, nil
}

// wait starts the claim's provisioning time on the first call, and
// reports whether it is still running, with when it ends. The library
// calls Provision on a worker of a named workqueue, which a rehearsal's
// clock counts as work in flight: a worker that slept out the time would
// stop that clock, so the time runs on a timer of the clock instead.
func (p *Provisioner) wait(claim *corev1.PersistentVolumeClaim, d time.Duration) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	at, ok := p.due[claim.UID]
	if !ok {
		at = now.Add(d)
		if p.due == nil {
			p.due = map[types.UID]time.Time{}
		}
		p.due[claim.UID] = at
		ns, name := claim.Namespace, claim.Name
		p.clock.AfterFunc(d, func() { p.provisioned(ns, name, at) })
	}
	if now.Before(at) {
		return at, true
	}
	delete(p.due, claim.UID)
	return at, false
}

// provisioned touches a claim whose provisioning time is up: the update
// brings it back to the provision controller, which then makes its
// volume.
func (p *Provisioner) provisioned(namespace, name string, at time.Time) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationProvisioned, at.Format(time.RFC3339))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.client.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		// A claim deleted meanwhile needs no volume.
		klog.V(2).InfoS("touching a claim whose provisioning time is up", "claim", klog.KRef(namespace, name), "err", err)
	}
}

// Delete removes nothing: a local volume is its PersistentVolume alone.
func (p *Provisioner) Delete(context.Context, *corev1.PersistentVolume) error { return nil }

// zoneOf is the zone of the node the scheduler chose for a zonal claim.
func (p *Provisioner) zoneOf(node string) (string, error) {
	if node == "" {
		return "", fmt.Errorf("a zonal class's claim was not given a node: its class must bind WaitForFirstConsumer")
	}
	obj, ok, err := p.nodes.GetByKey(node)
	if err != nil {
		return "", fmt.Errorf("node %s, chosen for the claim, is not known (yet): %w", node, err)
	}
	if !ok {
		return "", fmt.Errorf("node %s, chosen for the claim, is not known (yet)", node)
	}
	zone := obj.(*corev1.Node).Labels[corev1.LabelTopologyZone]
	if zone == "" {
		return "", fmt.Errorf("node %s has no %s label to make the volume in", node, corev1.LabelTopologyZone)
	}
	return zone, nil
}

func reclaimPolicy(c *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if c.ReclaimPolicy != nil {
		return *c.ReclaimPolicy
	}
	return corev1.PersistentVolumeReclaimDelete
}

// Controller runs the library's provision controller for each of berth's
// drivers a StorageClass names (classes come and go with the blueprints
// applied, and each driver gets its controller when its first class
// appears), and publishes the drivers on each node's CSINode.
type Controller struct {
	client kubernetes.Interface
	// clock is the manager's: the cluster's, virtual in a rehearsal.
	clock clock.WithDelayedExecution
	// prepared are the drivers' controllers made before the cluster's
	// components started (Prepare).
	prepared Prepared
	classes  cache.SharedIndexInformer
	nodes    cache.SharedIndexInformer

	mu      sync.Mutex
	running map[string]bool
}

// Prepared are provision controllers made before anything in the
// process watches the API: the library's constructor registers core/v1
// in client-go's global scheme (controller.go, v1.AddToScheme), a map
// write that the process's watch decoders may be reading at the same
// moment, which Go stops with "concurrent map read and map write". A
// cluster prepares its blueprint's drivers before it starts its
// components; a driver first seen later is made when its class
// appears.
type Prepared map[string]*prepared

type prepared struct {
	pc *controller.ProvisionController
	p  *Provisioner
}

// Prepare makes the provision controllers of drivers, through client,
// to be run by a Controller given them.
func Prepare(ctx context.Context, client kubernetes.Interface, drivers []string) Prepared {
	out := Prepared{}
	for _, d := range drivers {
		p := &Provisioner{driver: d, client: client}
		out[d] = &prepared{pc: newProvisionController(ctx, client, d, p), p: p}
	}
	return out
}

func newProvisionController(ctx context.Context, client kubernetes.Interface, driver string, p *Provisioner) *controller.ProvisionController {
	return controller.NewProvisionController(klog.NewContext(ctx, klog.Background().WithName(driver)), client, driver, p,
		controller.LeaderElection(false))
}

// NewController returns a controller that provisions through client,
// taking StorageClasses and nodes from factory (shared with berth's other
// controllers and started by its owner).
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory, prepared Prepared) *Controller {
	return &Controller{
		client:   client,
		prepared: prepared,
		classes:  factory.Storage().V1().StorageClasses().Informer(),
		nodes:    factory.Core().V1().Nodes().Informer(),
		running:  map[string]bool{},
	}
}

// Register runs the provisioners as one loop of the manager, and
// publishes each node's drivers (csinode.go).
func (c *Controller) Register(m *berthcontroller.Manager) error {
	c.clock = m.Clock()
	m.Add("storage", c.run)
	return m.Controller("storage-csinodes").WatchesChanges(c.nodes, zoneChanged, nodeKey).Watches(c.classes, c.allNodes).Complete(c)
}

func (c *Controller) run(ctx context.Context) error {
	start := func(obj any) {
		sc, ok := obj.(*storagev1.StorageClass)
		if !ok || !strings.HasSuffix(sc.Provisioner, DriverSuffix) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[sc.Provisioner] {
			return
		}
		c.running[sc.Provisioner] = true
		if pre := c.prepared[sc.Provisioner]; pre != nil {
			pre.p.nodes, pre.p.clock = c.nodes.GetIndexer(), c.clock
			go pre.pc.Run(ctx)
			return
		}
		p := &Provisioner{driver: sc.Provisioner, nodes: c.nodes.GetIndexer(), client: c.client, clock: c.clock}
		go newProvisionController(ctx, c.client, sc.Provisioner, p).Run(ctx)
	}
	reg, err := c.classes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    start,
		UpdateFunc: func(_, obj any) { start(obj) },
	})
	if err != nil {
		return err
	}
	defer c.classes.RemoveEventHandler(reg)
	<-ctx.Done()
	return nil
}
