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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// Provisioner makes the volumes of one of berth's drivers: a
// PersistentVolume per claim, after the class's provisioning time, of
// the claim's size raised to the class's least, in the zone of the node
// the scheduler chose when the class is zonal. It is the library's
// Provisioner: the library's controller calls it for each claim of a
// class whose provisioner is the driver.
type Provisioner struct {
	driver string
	// node finds the node the scheduler chose for a zonal claim (nil
	// when there is none): the cluster's cache in its own process, the
	// API server in a driver's process of its own (Serve).
	node func(ctx context.Context, name string) (*corev1.Node, error)
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
		zone, err := p.zoneOf(ctx, o.SelectedNodeName)
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
func (p *Provisioner) zoneOf(ctx context.Context, node string) (string, error) {
	if node == "" {
		return "", fmt.Errorf("a zonal class's claim was not given a node: its class must bind WaitForFirstConsumer")
	}
	n, err := p.node(ctx, node)
	if err != nil {
		return "", fmt.Errorf("node %s, chosen for the claim, is not known (yet): %w", node, err)
	}
	if n == nil {
		return "", fmt.Errorf("node %s, chosen for the claim, is not known (yet)", node)
	}
	zone := n.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		return "", fmt.Errorf("node %s has no %s label to make the volume in", node, corev1.LabelTopologyZone)
	}
	return zone, nil
}

// nodesIn finds nodes in an informer's cache.
func nodesIn(nodes cache.Indexer) func(context.Context, string) (*corev1.Node, error) {
	return func(_ context.Context, name string) (*corev1.Node, error) {
		obj, ok, err := nodes.GetByKey(name)
		if err != nil || !ok {
			return nil, err
		}
		return obj.(*corev1.Node), nil
	}
}

func reclaimPolicy(c *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if c.ReclaimPolicy != nil {
		return *c.ReclaimPolicy
	}
	return corev1.PersistentVolumeReclaimDelete
}
