package why

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/simulate"
)

// Snapshot is everything an explanation reads. Read fills it from a
// cluster; tests build it by hand. A Snapshot must not be copied after
// its first use: Explain indexes it once and keeps the index.
type Snapshot struct {
	// Now is when the snapshot was taken; event ages are relative to it.
	Now time.Time
	// Nodes are all the cluster's nodes.
	Nodes []corev1.Node
	// Pods are the pods that are neither Succeeded nor Failed: those on
	// a node count against its allocatable, nominated ones reserve room.
	Pods []corev1.Pod
	// ResourceQuotas and LimitRanges of the namespaces explained.
	ResourceQuotas []corev1.ResourceQuota
	LimitRanges    []corev1.LimitRange
	// PriorityClasses are all of them; PDBs those of every namespace
	// (a would-be victim of preemption may be anywhere).
	PriorityClasses []schedulingv1.PriorityClass
	PDBs            []policyv1.PodDisruptionBudget
	// Events are those about the pods and workloads explained and
	// about their owners.
	Events []corev1.Event
	// Workloads are the controllers explained, or that own the pods
	// explained, when Read could find them.
	Workloads []Workload
	// Blueprint, when set, gives pools their size range and a template
	// node, so that a pool that could grow (or scale from zero) is found.
	// Nil means pools are known only by their nodes.
	Blueprint *v1alpha1.Blueprint
	// Local is true on a berth local cluster.
	Local bool
	// Autoscaler is the node autoscaler's status (kube-system/
	// cluster-autoscaler-status, read with castatus), and
	// AutoscalerActivity berth's own record in it; nil when the cluster
	// has no such ConfigMap: no autoscaler publishes there.
	// DevicePlugin is the device-plugin DaemonSet the blueprint names
	// (spec.devicePlugin, else NVIDIA's default name); nil when the
	// cluster has none. Its pods are among Pods.
	DevicePlugin       *appsv1.DaemonSet
	Autoscaler         *castatus.Status
	AutoscalerActivity *castatus.Activity
	// Namespaces and Claims are what the scheduler's InterPodAffinity
	// (namespace selectors) and VolumeRestrictions (claims of the
	// namespaces explained) read.
	Namespaces []corev1.Namespace
	Claims     []corev1.PersistentVolumeClaim
	// Volumes and StorageClasses are what the Volumes layer reads of a
	// claim's binding (volumes.go); none when this user may not list
	// them.
	Volumes        []corev1.PersistentVolume
	StorageClasses []storagev1.StorageClass
	// CSINodes and CSIDrivers are what the scheduler's NodeVolumeLimits
	// plugin reads: how many volumes of each driver a node can attach.
	CSINodes   []storagev1.CSINode
	CSIDrivers []storagev1.CSIDriver
	// AllClaims are the claims of every namespace, which the volume
	// plugins read for the pods already on a node.
	AllClaims []corev1.PersistentVolumeClaim
	// StorageKnown says all of the storage above was read: a claim's
	// class is judged, and the simulation runs the scheduler's
	// VolumeZone and NodeVolumeLimits plugins, only then.
	StorageKnown bool
	// HPAs are the HorizontalPodAutoscalers of the namespaces explained;
	// nil when they were not read (explaining one pod) or may not be.
	HPAs []autoscalingv2.HorizontalPodAutoscaler

	once sync.Once
	idx  *index
}

// Workload is a controller of pods.
type Workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
	// Desired is the number of pods it wants (replicas, or a Job's
	// parallelism); -1 when unknown.
	Desired int32
	// Creators are the objects that create its pods: itself, or for a
	// Deployment its ReplicaSets. Their events hold FailedCreate.
	Creators []Ref
	// Done is true for a finished Job.
	Done bool
	// Class is its berth.io/class label (its own, else its pod
	// template's); empty when it has none or was not read.
	Class string
	// Queued is what Kueue says of a Job in one of its queues; nil for
	// any other workload.
	Queued *Queued
}

// Ref names an object.
type Ref struct {
	Kind, Name string
	UID        types.UID
}

// String is KIND/NAMESPACE/NAME, lower-case kind as kubectl writes it.
func (w *Workload) String() string {
	return lowerKind(w.Kind) + "/" + w.Namespace + "/" + w.Name
}

// index is the snapshot's nodes with what runs on them.
type index struct {
	nodes     []*nodeInfo
	byName    map[string]*nodeInfo
	poolNames []string
	byPool    map[string][]*nodeInfo
	// gpuNodes are the nodes whose machines have GPUs (label
	// nvidia.com/gpu.count above zero), advertised or not.
	gpuNodes []*nodeInfo
	// nominated are unbound pods the scheduler has nominated to a node.
	nominated map[string][]*corev1.Pod
	// sim is the scheduler's simulation of the nodes and their pods;
	// simErr why there is none.
	sim    *simulate.Simulator
	simErr error

	// diagnoses are the Filter plugins' verdicts by equivalence class
	// (equivalenceKey), guarded by mu.
	mu        sync.Mutex
	diagnoses map[string]diagnosis
}

// nodeInfo is a node, its pool and the pods bound to it.
type nodeInfo struct {
	node *corev1.Node
	pool string
	pods []*corev1.Pod
}

func (s *Snapshot) index() *index {
	s.once.Do(func() { s.idx = buildIndex(s) })
	return s.idx
}

func buildIndex(s *Snapshot) *index {
	ix := &index{
		byName:    make(map[string]*nodeInfo, len(s.Nodes)),
		byPool:    map[string][]*nodeInfo{},
		nominated: map[string][]*corev1.Pod{},
		diagnoses: map[string]diagnosis{},
	}
	for i := range s.Nodes {
		n := &nodeInfo{node: &s.Nodes[i], pool: PoolOf(&s.Nodes[i])}
		ix.nodes = append(ix.nodes, n)
		ix.byName[n.node.Name] = n
		if _, ok := ix.byPool[n.pool]; !ok {
			ix.poolNames = append(ix.poolNames, n.pool)
		}
		ix.byPool[n.pool] = append(ix.byPool[n.pool], n)
		if count, _ := strconv.Atoi(n.node.Labels[v1alpha1.LabelGPUCount]); count > 0 {
			ix.gpuNodes = append(ix.gpuNodes, n)
		}
	}
	sort.Strings(ix.poolNames)
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			if nn := p.Status.NominatedNodeName; nn != "" {
				ix.nominated[nn] = append(ix.nominated[nn], p)
			}
			continue
		}
		n, ok := ix.byName[p.Spec.NodeName]
		if !ok {
			continue
		}
		n.pods = append(n.pods, p)
	}
	ix.sim, ix.simErr = simulation(s, ix)
	return ix
}

// simulation is the kube-scheduler's Filter plugins over the snapshot's
// nodes and the pods bound to them.
func simulation(s *Snapshot, ix *index) (*simulate.Simulator, error) {
	c := simulate.Cluster{Nodes: make([]*corev1.Node, len(ix.nodes))}
	for i, n := range ix.nodes {
		c.Nodes[i] = n.node
		c.Pods = append(c.Pods, n.pods...)
	}
	for i := range s.Namespaces {
		c.Namespaces = append(c.Namespaces, &s.Namespaces[i])
	}
	claims := s.Claims
	if s.StorageKnown {
		if s.AllClaims != nil {
			claims = s.AllClaims
		}
		c.Storage = &simulate.Storage{}
		for i := range s.Volumes {
			c.Storage.Volumes = append(c.Storage.Volumes, &s.Volumes[i])
		}
		for i := range s.StorageClasses {
			c.Storage.Classes = append(c.Storage.Classes, &s.StorageClasses[i])
		}
		for i := range s.CSINodes {
			c.Storage.CSINodes = append(c.Storage.CSINodes, &s.CSINodes[i])
		}
		for i := range s.CSIDrivers {
			c.Storage.Drivers = append(c.Storage.Drivers, &s.CSIDrivers[i])
		}
	}
	for i := range claims {
		c.Claims = append(c.Claims, &claims[i])
	}
	sim, err := simulate.New(context.Background(), c)
	if err != nil {
		return nil, fmt.Errorf("simulating the scheduler: %w", err)
	}
	return sim, nil
}

// podRequests is what the scheduler counts for a pod: init containers,
// sidecars and overhead included (the resize status of a running pod too).
func podRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: p.Spec.NodeName != ""})
}

// NoPool is the pool of nodes that carry no pool label.
const NoPool = "(no pool)"

// PoolOf is the pool a node belongs to, or NoPool.
func PoolOf(n *corev1.Node) string {
	if p := pools.PoolOf(n); p != "" {
		return p
	}
	return NoPool
}

// BlueprintOwnsNodes reports whether any node carries the blueprint's
// name: only then does a blueprint found by default describe the cluster.
func BlueprintOwnsNodes(s *Snapshot, name string) bool {
	for i := range s.Nodes {
		if s.Nodes[i].Labels[v1alpha1.LabelBlueprint] == name {
			return true
		}
	}
	return false
}

// eventsAbout are the snapshot's events whose object has uid (or, when
// the event carries no uid, kind, namespace and name), oldest first.
func (s *Snapshot) eventsAbout(kind, namespace, name string, uid types.UID) []*corev1.Event {
	var out []*corev1.Event
	for i := range s.Events {
		e := &s.Events[i]
		o := e.InvolvedObject
		if uid != "" && o.UID != "" {
			if o.UID != uid {
				continue
			}
		} else if o.Kind != kind || o.Namespace != namespace || o.Name != name {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).Before(eventTime(out[j])) })
	return out
}

// eventTime is when an event was last seen, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.FirstTimestamp.Time
	}
}

func eventCount(e *corev1.Event) int32 {
	c := e.Count
	if e.Series != nil && e.Series.Count > c {
		c = e.Series.Count
	}
	return max(c, 1)
}

func (s *Snapshot) eventLine(e *corev1.Event) EventLine {
	l := EventLine{
		Object:  lowerKind(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name,
		Type:    e.Type,
		Reason:  e.Reason,
		Count:   eventCount(e),
		Message: e.Message,
	}
	if t := eventTime(e); !t.IsZero() && !s.Now.IsZero() {
		l.Age = age(s.Now.Sub(t))
	}
	return l
}

// controllerOf is the pod's controller, or nil.
func controllerOf(p *corev1.Pod) *metav1.OwnerReference { return metav1.GetControllerOf(p) }
