package simulate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Cluster is what a simulation starts from: the cluster's nodes, the
// pods bound to them, and the few objects the plugins look up.
type Cluster struct {
	// Nodes are the nodes pods may be placed on, in the order Check
	// reports them. Nodes being provisioned belong here too.
	Nodes []*corev1.Node
	// Pods are the pods that hold resources: those bound to one of
	// Nodes (Spec.NodeName) and not finished. Others are ignored, as
	// the scheduler's cache ignores them.
	Pods []*corev1.Pod
	// Namespaces are read by InterPodAffinity for terms with a
	// namespaceSelector. Nil: such terms match no namespace.
	Namespaces []*corev1.Namespace
	// Claims are read by VolumeRestrictions for ReadWriteOncePod
	// volumes. Nil: a pod that mounts a claim is unschedulable, as it is
	// on a cluster where the claim does not exist.
	Claims []*corev1.PersistentVolumeClaim
	// Storage is what the VolumeZone and NodeVolumeLimits plugins look
	// up. Nil leaves those two plugins out: a simulation must not
	// answer from empty listers.
	Storage *Storage
}

// Storage are the cluster's volumes, storage classes and CSI objects, as
// the scheduler's VolumeZone plugin (a bound volume's zone against the
// node's) and NodeVolumeLimits plugin (the volumes a node's CSINode says
// each driver can attach) read them. A node without a CSINode, such as a
// node the autoscaler has yet to make, has no attach limit, as on a real
// cluster.
type Storage struct {
	Volumes  []*corev1.PersistentVolume
	Classes  []*storagev1.StorageClass
	CSINodes []*storagev1.CSINode
	Drivers  []*storagev1.CSIDriver
}

// Simulator runs the scheduler's PreFilter and Filter plugins for pods
// over a snapshot of a Cluster. Place and Pack change the snapshot as
// the scheduler's cache would change. A Simulator is not safe for
// concurrent use.
type Simulator struct {
	fw   framework.Framework
	snap *snapshot
	// lastCycle is the PreFilter cycle of the last firstFit; carried is
	// one ready for a group's next pod (carry.go).
	lastCycle *cycle
	carried   *carried
	// noCarry runs PreFilter afresh for every pod, for the test that
	// carrying changes no answer.
	noCarry bool
	// lookups are the namespaces and claims the plugins look up, for
	// Clone.
	lookups Cluster
}

// disabled are the default plugins a simulation leaves out.
// VolumeBinding keeps its volumes in an assume cache that only a running
// informer's events fill; DynamicResources looks devices up through the
// API, which berth's simulated nodes do not have; DefaultPreemption runs
// after Filter (preemption is a separate question from fit).
var disabled = []string{
	names.VolumeBinding,
	names.DynamicResources,
	names.DefaultPreemption,
}

// needStorage are the plugins a simulation runs only with a Cluster's
// Storage.
var needStorage = []string{names.VolumeZone, names.NodeVolumeLimits}

// New builds a Simulator over c.
func New(ctx context.Context, c Cluster) (*Simulator, error) {
	snap := newSnapshot()
	for _, n := range c.Nodes {
		if err := snap.addNode(n); err != nil {
			return nil, err
		}
	}
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || snap.infos[p.Spec.NodeName] == nil || finished(p) {
			continue
		}
		if err := snap.bind(p, p.Spec.NodeName); err != nil {
			return nil, err
		}
	}
	fw, err := newFramework(ctx, snap, c)
	if err != nil {
		return nil, err
	}
	return &Simulator{fw: fw, snap: snap, lookups: Cluster{Namespaces: c.Namespaces, Claims: c.Claims, Storage: c.Storage}}, nil
}

// newFramework builds the scheduler framework with the default profile
// of the kube-scheduler berth runs, its default plugin arguments, and
// the in-tree plugin registry. The plugins read nodes and pods from
// snap; the informer factory is only the plumbing some plugins take
// their listers from, filled with c's namespaces and claims and never
// started: nothing reaches an API server.
func newFramework(ctx context.Context, snap *snapshot, c Cluster) (framework.Framework, error) {
	leave := disabled
	if c.Storage == nil {
		leave = slices.Concat(disabled, needStorage)
	}
	profile, err := defaultProfile(leave)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	nsIndexer := factory.Core().V1().Namespaces().Informer().GetIndexer()
	for _, ns := range c.Namespaces {
		if err := nsIndexer.Add(ns); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
	}
	pvcIndexer := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	for _, pvc := range c.Claims {
		if err := pvcIndexer.Add(pvc); err != nil {
			return nil, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	if err := fillStorage(factory, c.Storage); err != nil {
		return nil, err
	}
	// NewFramework starts a metrics recorder of its own (its default,
	// which WithMetricsRecorder replaces without stopping) whose goroutine
	// and two 1,000-entry channels live until ctx ends: one per Simulator
	// and Clone, every autoscaler scan, was 38,627 goroutines, each
	// polling its channels 2,000 times a second, and about 3 GB of
	// buffers 26 minutes into the retail week's rehearsal. Built on a
	// context that ends when it returns, the recorder stops at once; the
	// plugins keep nothing of ctx but its logger.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), profile,
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithMetricsRecorder(metricsRecorder()),
	)
	if err != nil {
		return nil, fmt.Errorf("building the scheduler framework: %w", err)
	}
	return fw, nil
}

// fillStorage puts st's objects where the volume plugins' listers read
// them.
func fillStorage(factory informers.SharedInformerFactory, st *Storage) error {
	if st == nil {
		return nil
	}
	for _, l := range []struct {
		inf  cache.SharedIndexInformer
		kind string
		objs []metav1.Object
	}{
		{factory.Core().V1().PersistentVolumes().Informer(), "PersistentVolume", objects(st.Volumes)},
		{factory.Storage().V1().StorageClasses().Informer(), "StorageClass", objects(st.Classes)},
		{factory.Storage().V1().CSINodes().Informer(), "CSINode", objects(st.CSINodes)},
		{factory.Storage().V1().CSIDrivers().Informer(), "CSIDriver", objects(st.Drivers)},
	} {
		for _, o := range l.objs {
			if err := l.inf.GetIndexer().Add(o); err != nil {
				return fmt.Errorf("%s %s: %w", l.kind, o.GetName(), err)
			}
		}
	}
	return nil
}

// objects are os as metav1.Objects.
func objects[T metav1.Object](os []T) []metav1.Object {
	out := make([]metav1.Object, len(os))
	for i, o := range os {
		out[i] = o
	}
	return out
}

// defaultProfile is the kube-scheduler's default profile (scheduler
// name, plugins, plugin arguments) less the plugins leave names.
func defaultProfile(leave []string) (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("the kube-scheduler's default configuration: %w", err)
	}
	profile := cfg.Profiles[0]
	mp := &profile.Plugins.MultiPoint
	mp.Enabled = slices.DeleteFunc(mp.Enabled, func(p config.Plugin) bool {
		return slices.Contains(leave, p.Name)
	})
	profile.PluginConfig = slices.DeleteFunc(profile.PluginConfig, func(p config.PluginConfig) bool {
		return slices.Contains(leave, p.Name)
	})
	return &profile, nil
}

// metricsRecorder is one recorder for every Simulator: the framework
// records plugin timings through it, and each recorder runs a goroutine
// for the life of the process. metrics.Register is idempotent, and in
// berth's process the running scheduler has called it already.
var metricsRecorder = sync.OnceValue(func() *metrics.MetricAsyncRecorder {
	metrics.Register()
	return metrics.NewMetricsAsyncRecorder(1000, time.Second, nil)
})

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
