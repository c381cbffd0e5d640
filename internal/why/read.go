package why

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/pools"
)

// activePods selects the pods that hold room on a node or wait for one.
var activePods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
).String()

// reader fills a Snapshot with independent List calls run concurrently.
type reader struct {
	c kubernetes.Interface
	// l lists the pods, nodes and events.
	l   listing.Lister
	s   *Snapshot
	mu  sync.Mutex // guards s.Events and s.Workloads while reading
	g   *errgroup.Group
	ctx context.Context
	// afterPods, when set, runs once the pods are listed, to start the
	// reads that depend on them.
	afterPods func(pods []corev1.Pod)
}

// newReader's calls all run to the end even when one fails: cancelling
// the others would only make client-go log the cancelled reads.
func newReader(ctx context.Context, c kubernetes.Interface, l listing.Lister, bp *v1alpha1.Blueprint) *reader {
	return &reader{c: c, l: l, s: &Snapshot{Now: time.Now(), Blueprint: bp}, g: &errgroup.Group{}, ctx: ctx}
}

// cluster lists what every explanation needs: nodes, active pods,
// namespaces, PriorityClasses, PDBs, and whether this is a berth local
// cluster; quotas, LimitRanges and claims of namespace ("" for all).
func (r *reader) cluster(namespace string) {
	r.g.Go(func() error {
		l, err := r.l.Nodes(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		r.s.Nodes = l.Items
		return nil
	})
	r.g.Go(func() error {
		l, err := r.l.Pods(r.ctx, "", metav1.ListOptions{FieldSelector: activePods})
		if err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		r.s.Pods = l.Items
		if r.afterPods != nil {
			r.afterPods(l.Items)
		}
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.SchedulingV1().PriorityClasses().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PriorityClasses: %w", err)
		}
		r.s.PriorityClasses = l.Items
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.PolicyV1().PodDisruptionBudgets("").List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PodDisruptionBudgets: %w", err)
		}
		r.s.PDBs = l.Items
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.CoreV1().ResourceQuotas(namespace).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing ResourceQuotas: %w", err)
		}
		r.s.ResourceQuotas = l.Items
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.CoreV1().LimitRanges(namespace).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing LimitRanges: %w", err)
		}
		r.s.LimitRanges = l.Items
		return nil
	})
	r.g.Go(func() error {
		ns, name := devicePluginRef(r.s.Blueprint)
		ds, err := r.c.AppsV1().DaemonSets(ns).Get(r.ctx, name, metav1.GetOptions{})
		if err == nil {
			r.s.DevicePlugin = ds
		}
		return nil // not found, or not allowed to look: none known
	})
	r.g.Go(func() error {
		cm, err := r.c.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(r.ctx, castatus.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return nil // not found, or not allowed to look: no autoscaler status
		}
		if st, a, err := castatus.Read(cm); err == nil {
			r.s.Autoscaler, r.s.AutoscalerActivity = st, a
		}
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.CoreV1().Namespaces().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing namespaces: %w", err)
		}
		r.s.Namespaces = l.Items
		return nil
	})
	r.g.Go(func() error {
		l, err := r.c.CoreV1().PersistentVolumeClaims(namespace).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing PersistentVolumeClaims: %w", err)
		}
		r.s.Claims = l.Items
		return nil
	})
	r.g.Go(func() error {
		// Not allowed to look at any of them: the Volumes layer judges
		// no class and sees no volume's zone, and the simulation leaves
		// the volume plugins out.
		pvs, err := r.c.CoreV1().PersistentVolumes().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		classes, err := r.c.StorageV1().StorageClasses().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		csiNodes, err := r.c.StorageV1().CSINodes().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		drivers, err := r.c.StorageV1().CSIDrivers().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		claims, err := r.c.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		r.s.Volumes, r.s.StorageClasses, r.s.CSINodes, r.s.CSIDrivers, r.s.AllClaims = pvs.Items, classes.Items, csiNodes.Items, drivers.Items, claims.Items
		r.s.StorageKnown = true
		return nil
	})
	r.g.Go(func() error {
		_, err := r.c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(r.ctx, pools.LocalClusterConfigMap, metav1.GetOptions{})
		r.s.Local = err == nil
		return nil // not found, or not allowed to look: not local
	})
}

// hpas lists the HorizontalPodAutoscalers of namespace ("" for all);
// none when this user may not.
func (r *reader) hpas(namespace string) {
	r.g.Go(func() error {
		l, err := r.c.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(r.ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
		}
		r.s.HPAs = l.Items
		return nil
	})
}

// events lists the events of namespace that the selector picks.
func (r *reader) events(namespace string, selector fields.Selector) {
	r.g.Go(func() error {
		l, err := r.l.Events(r.ctx, namespace, metav1.ListOptions{FieldSelector: selector.String()})
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		r.mu.Lock()
		r.s.Events = append(r.s.Events, l.Items...)
		r.mu.Unlock()
		return nil
	})
}

func (r *reader) wait() (*Snapshot, error) {
	if err := r.g.Wait(); err != nil {
		return nil, err
	}
	return r.s, nil
}

// ReadPod reads what explaining one pod needs, listing pods, nodes and
// events through l. A pod that does not exist is an error
// apierrors.IsNotFound recognises.
func ReadPod(ctx context.Context, c kubernetes.Interface, l listing.Lister, namespace, name string, bp *v1alpha1.Blueprint) (*Snapshot, *corev1.Pod, error) {
	r := newReader(ctx, c, l, bp)
	r.cluster(namespace)
	r.events(namespace, fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name}.AsSelector())
	var pod *corev1.Pod
	r.g.Go(func() error {
		p, err := c.CoreV1().Pods(namespace).Get(r.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = p
		// The pod's controller, for its FailedCreate events and its name.
		if ref := metav1.GetControllerOf(p); ref != nil {
			r.events(namespace, fields.Set{"involvedObject.uid": string(ref.UID)}.AsSelector())
			if ref.Kind == "ReplicaSet" {
				r.g.Go(func() error { return r.replicaSetOwner(namespace, ref.Name) })
			}
		}
		return nil
	})
	s, err := r.wait()
	if err != nil {
		return nil, nil, err
	}
	return s, pod, nil
}

// replicaSetOwner records the Deployment that owns a ReplicaSet, so the
// pod is reported as that Deployment's.
func (r *reader) replicaSetOwner(namespace, name string) error {
	rs, err := r.c.AppsV1().ReplicaSets(namespace).Get(r.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ReplicaSet %s: %w", name, err)
	}
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		r.mu.Lock()
		r.s.Workloads = append(r.s.Workloads, Workload{Kind: "Deployment", Namespace: namespace, Name: ref.Name, UID: ref.UID, Desired: -1,
			Creators: []Ref{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}})
		r.mu.Unlock()
	}
	return nil
}

// ReadAll reads what explaining every Pending pod of namespace ("" for
// all) needs, and the workloads whose controllers fail to create pods.
func ReadAll(ctx context.Context, c kubernetes.Interface, l listing.Lister, namespace string, bp *v1alpha1.Blueprint) (*Snapshot, error) {
	r := newReader(ctx, c, l, bp)
	// The scheduler's and the autoscaler's events are read only in the
	// namespaces that have a pod waiting. The API server keeps no watch
	// cache of events, so a list of them reads and decodes every event
	// of its scope from etcd, whatever the field selector; on a large
	// cluster, where most events are about pods long running, three
	// cluster-wide lists cost more than everything else why --all reads
	// but the pods.
	r.afterPods = func(pods []corev1.Pod) {
		for _, ns := range waitingNamespaces(pods, namespace) {
			for _, reason := range []string{"FailedScheduling", castatus.ReasonTriggeredScaleUp, castatus.ReasonNotTriggerScaleUp} {
				r.events(ns, fields.OneTermEqualSelector("reason", reason))
			}
		}
	}
	r.cluster(namespace)
	r.hpas(namespace)
	var failed []corev1.Event
	r.g.Go(func() error {
		l, err := r.l.Events(r.ctx, namespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "FailedCreate").String()})
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		failed = l.Items
		return nil
	})
	s, err := r.wait()
	if err != nil {
		return nil, err
	}
	s.Events = append(s.Events, failed...)
	// Each creator that failed, once, read to see whether it still lacks
	// pods.
	seen := map[string]bool{}
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	for _, ev := range failed {
		o := ev.InvolvedObject
		key := o.Kind + "/" + o.Namespace + "/" + o.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		g.Go(func() error {
			w, err := readCreator(gctx, c, o.Kind, o.Namespace, o.Name)
			if err != nil || w == nil {
				return err
			}
			mu.Lock()
			s.Workloads = append(s.Workloads, *w)
			mu.Unlock()
			return nil
		})
	}
	var queued []Workload
	g.Go(func() (err error) { queued, err = readWaiting(gctx, c, namespace); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, w := range queued {
		if !slices.ContainsFunc(s.Workloads, func(o Workload) bool { return o.UID == w.UID }) {
			s.Workloads = append(s.Workloads, w)
		}
	}
	sort.Slice(s.Workloads, func(i, j int) bool { return s.Workloads[i].String() < s.Workloads[j].String() })
	return s, nil
}

// waitingNamespaces are the namespaces (within namespace, "" for all) of
// the pods that are Pending and not being deleted, sorted: every pod
// ExplainAll explains, and every pending pod of a workload it explains.
func waitingNamespaces(pods []corev1.Pod, namespace string) []string {
	seen := map[string]bool{}
	var out []string
	for i := range pods {
		p := &pods[i]
		if (namespace != "" && p.Namespace != namespace) || p.DeletionTimestamp != nil || seen[p.Namespace] {
			continue
		}
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
			seen[p.Namespace] = true
			out = append(out, p.Namespace)
		}
	}
	sort.Strings(out)
	return out
}
