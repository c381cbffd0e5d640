package karpenter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/prices"
)

// ProviderIDPrefix starts the provider ID of every node berth's cloud
// provider launches: berth://NODE.
const ProviderIDPrefix = "berth://"

// CloudProvider is Karpenter's cloud provider on a berth local cluster.
// Its instance types are the blueprint's User pools (InstanceTypes), and
// an instance it launches is one of berth's simulated nodes, made as
// pools.NewNode makes a pool's node: KWOK runs its kubelet, the device
// plugin advertises its GPUs once it runs there, its lease is renewed
// until `berth node stop`, and `berth spot interrupt` reaches it. The
// node registers after the pool's autoscale.provisioningTime, as a VM
// boots, without its GPUs and with Karpenter's unregistered taint, as a
// kubelet Karpenter configured registers.
type CloudProvider struct {
	// life is the cluster's: a launched node registers within it, and
	// not once the cluster has stopped.
	life   context.Context
	client kubernetes.Interface
	// blueprint is the recorded blueprint, read on each launch so an
	// apply reaches new nodes.
	blueprint func() (*v1alpha1.Blueprint, error)
	prices    *prices.Table
	// clock times a launched node's provisioning, after which it
	// registers.
	clock clock.WithDelayedExecution

	// mu guards types, typesOf and gone.
	mu sync.Mutex
	// types are the instance types of typesOf, the blueprint they were
	// made from.
	types   []*instanceType
	typesOf *v1alpha1.Blueprint
	// gone are the provider IDs of the instances Delete terminated: an
	// instance is gone once deleted even while its Node object waits for
	// Karpenter's finalizer.
	gone map[string]bool
}

// NewCloudProvider returns the cloud provider of the blueprint
// blueprint returns (the recorded one), priced from table, for the
// cluster whose life ctx is.
func NewCloudProvider(ctx context.Context, client kubernetes.Interface, blueprint func() (*v1alpha1.Blueprint, error), table *prices.Table, clk clock.WithDelayedExecution) *CloudProvider {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &CloudProvider{life: ctx, client: client, blueprint: blueprint, prices: table, clock: clk, gone: map[string]bool{}}
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// instanceTypes are the instance types of the current blueprint, made
// again only when it changed.
func (c *CloudProvider) instanceTypes() (*v1alpha1.Blueprint, []*instanceType, error) {
	bp, err := c.blueprint()
	if err != nil {
		return nil, nil, err
	}
	if bp == nil {
		return nil, nil, errors.New("no blueprint is recorded in the cluster")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if bp != c.typesOf {
		types, err := instanceTypes(bp, c.prices)
		if err != nil {
			return nil, nil, err
		}
		c.types, c.typesOf = types, bp
	}
	return bp, c.types, nil
}

// Create launches the node a NodeClaim asks for: the cheapest offering
// of its instance types that its requirements allow, as the pool of its
// NodePool.
func (c *CloudProvider) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	bp, types, err := c.instanceTypes()
	if err != nil {
		return nil, fmt.Errorf("reading the instance types: %w", err)
	}
	poolName := nc.Labels[v1alpha1.LabelKarpenterNodePool]
	reqs := scheduling.NewNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	var (
		best     *instanceType
		offering *cloudprovider.Offering
	)
	for _, t := range types {
		if _, ok := t.pools[poolName]; !ok || !reqs.Get(corev1.LabelInstanceTypeStable).Has(t.Name) {
			continue
		}
		for _, o := range t.Offerings.Available().Compatible(reqs) {
			if offering == nil || o.Price < offering.Price {
				best, offering = t, o
			}
		}
	}
	if best == nil {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no offering of pool %s fits the NodeClaim's requirements", poolName))
	}
	pool := best.pools[poolName]
	node := pools.NewNode(bp, pool, 0)
	node.Name = nc.Name
	node.Spec.ProviderID = ProviderIDPrefix + nc.Name
	node.Spec.Taints = append(node.Spec.Taints, karpv1.UnregisteredNoExecuteTaint)
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	zone := offering.Requirements.Get(corev1.LabelTopologyZone).Any()
	capacity := offering.Requirements.Get(karpv1.CapacityTypeLabelKey).Any()
	for k, v := range map[string]string{
		corev1.LabelHostname:           nc.Name,
		corev1.LabelTopologyZone:       zone,
		corev1.LabelInstanceTypeStable: best.Name,
		v1alpha1.LabelCapacityType:     capacity,
		v1alpha1.LabelCapacity:         capacity,
	} {
		node.Labels[k] = v
	}
	delay := time.Duration(0)
	if a := pool.Autoscale; a != nil && a.ProvisioningTime != nil {
		delay = a.ProvisioningTime.Duration
	}
	// The node registers as a booted VM's kubelet would, later and on
	// its own: a failed registration is Karpenter's to notice (it gives
	// the NodeClaim up after its registration TTL), as on a cloud.
	registered := pools.StripGPUs(node)
	c.clock.AfterFunc(delay, func() { c.register(c.life, registered) })

	out := nc.DeepCopy()
	out.Labels = node.Labels
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.Capacity = node.Status.Capacity
	out.Status.Allocatable = node.Status.Allocatable
	out.Status.NodeName = ""
	return out, nil
}

// register creates node, once its provisioning time has passed.
func (c *CloudProvider) register(ctx context.Context, node *corev1.Node) {
	c.mu.Lock()
	gone := c.gone[node.Spec.ProviderID]
	c.mu.Unlock()
	if gone || ctx.Err() != nil {
		return
	}
	_, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).Error(err, "registering a node Karpenter launched", "node", node.Name)
	}
}

// Delete terminates a NodeClaim's instance: its Node goes (once
// Karpenter's finalizer lets it), and the instance is gone at once.
func (c *CloudProvider) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	id := nc.Status.ProviderID
	name := strings.TrimPrefix(id, ProviderIDPrefix)
	c.mu.Lock()
	already := c.gone[id]
	c.gone[id] = true
	c.mu.Unlock()
	if already {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s terminated", name))
	}
	err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node: %w", err)
	}
	return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s terminated", name))
}

// Get is the NodeClaim of the instance with the provider ID.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	gone := c.gone[providerID]
	c.mu.Unlock()
	name := strings.TrimPrefix(providerID, ProviderIDPrefix)
	if gone || !strings.HasPrefix(providerID, ProviderIDPrefix) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", name))
	}
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", name))
	}
	if err != nil {
		return nil, fmt.Errorf("getting node: %w", err)
	}
	// A node being deleted is an instance going: a spot interruption or
	// a termination Karpenter started.
	if n.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s terminating", name))
	}
	return toNodeClaim(n), nil
}

// List is the NodeClaims of every instance berth's provider launched that
// is not gone.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*karpv1.NodeClaim
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if strings.HasPrefix(n.Spec.ProviderID, ProviderIDPrefix) && !c.gone[n.Spec.ProviderID] {
			out = append(out, toNodeClaim(n))
		}
	}
	return out, nil
}

// toNodeClaim is what the cloud knows of an instance.
func toNodeClaim(n *corev1.Node) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Status: karpv1.NodeClaimStatus{
			NodeName:    n.Name,
			ProviderID:  n.Spec.ProviderID,
			Capacity:    n.Status.Capacity,
			Allocatable: n.Status.Allocatable,
		},
	}
}

// GetInstanceTypes returns every instance type, whatever the NodePool:
// its requirements select among them.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, _ *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	_, types, err := c.instanceTypes()
	if err != nil {
		return nil, err
	}
	return karpenterTypes(types), nil
}

// IsDrifted reports a NodeClaim whose node runs another Kubernetes
// version than its pool now asks for, as AWS's provider reports a node
// whose AMI is no longer the node class's: the version is the machine
// image's, not the NodePool's. A change to the NodePool itself (its
// instance type, labels, taints) is drift Karpenter finds on its own.
func (c *CloudProvider) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	bp, err := c.blueprint()
	if err != nil || bp == nil {
		return "", err
	}
	var pool *v1alpha1.Pool
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Name == nc.Labels[v1alpha1.LabelKarpenterNodePool] {
			pool = &bp.Spec.Pools[i]
		}
	}
	if pool == nil || nc.Status.NodeName == "" {
		return "", nil
	}
	n, err := c.client.CoreV1().Nodes().Get(ctx, nc.Status.NodeName, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if want := pool.KubeletVersion(); n.Status.NodeInfo.KubeletVersion != "" && n.Status.NodeInfo.KubeletVersion != want {
		return "KubernetesVersionDrift", nil
	}
	return "", nil
}

// RepairPolicies are none: node repair is off (its feature gate is).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy { return nil }

// Name is the provider's name in Karpenter's logs and metrics.
func (c *CloudProvider) Name() string { return "berth" }

// GetSupportedNodeClasses is the one node class the exported NodePools
// refer to.
func (c *CloudProvider) GetSupportedNodeClasses() []status.Object {
	return []status.Object{&NodeClass{}}
}
