package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/record"
	"berth.io/berth/internal/rehearse"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/spot"
)

// seenService is a Deployment or StatefulSet as the watch first saw it
// (its replicas then), and when it was deleted, if it was.
type seenService struct {
	deployment  *appsv1.Deployment
	statefulSet *appsv1.StatefulSet
	deleted     bool
}

func (s *seenService) meta() metav1.ObjectMeta {
	if s.deployment != nil {
		return s.deployment.ObjectMeta
	}
	return s.statefulSet.ObjectMeta
}

func (s *seenService) selector() *metav1.LabelSelector {
	if s.deployment != nil {
		return s.deployment.Spec.Selector
	}
	return s.statefulSet.Spec.Selector
}

// onService notes a Deployment or StatefulSet: made, or deleted.
func (w *watcher) onService(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var uid types.UID
	s := &seenService{}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		uid, s.deployment = o.UID, o.DeepCopy()
	case *appsv1.StatefulSet:
		uid, s.statefulSet = o.UID, o.DeepCopy()
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if have, ok := w.services[uid]; ok {
		s = have
	} else {
		w.services[uid] = s
	}
	if deleted && !s.deleted {
		s.deleted = true
		// A moment for its pods' deletion to reach their cache: their
		// deletionTimestamp is when it ended, on the cluster's clock.
		w.queue.AddAfter(uid, time.Second)
	}
}

// serviceRow is a GPU service's row: from its creation, and, when it was
// deleted while watched, for as long as it ran (to its pods' deletion);
// else to the trace's end. ok is false for one without GPUs.
func (w *watcher) serviceRow(s *seenService) (record.Row, bool) {
	c := record.Cluster{Namespaces: w.nsList()}
	if s.deployment != nil {
		c.Deployments = []appsv1.Deployment{*s.deployment}
	} else {
		c.StatefulSets = []appsv1.StatefulSet{*s.statefulSet}
	}
	opts := w.opts
	if opts.Since.IsZero() {
		opts.Since = w.start
	}
	rows := record.Convert(c, opts).Rows
	if len(rows) == 0 {
		return record.Row{}, false
	}
	row := rows[0]
	if s.deleted {
		if end, ok := w.podsDeleted(s); ok && end.After(row.At) {
			row.Duration = (end.Sub(row.At) + time.Second - 1).Truncate(time.Second)
		}
	}
	return row, true
}

// podsDeleted is when a deleted service's pods were deleted: the latest
// deletionTimestamp among them, stamped by the cluster's clock.
func (w *watcher) podsDeleted(s *seenService) (time.Time, bool) {
	m := s.meta()
	sel, err := metav1.LabelSelectorAsSelector(s.selector())
	if err != nil || sel.Empty() {
		return time.Time{}, false
	}
	objs, _ := w.servicePods.ByIndex(cache.NamespaceIndex, m.Namespace)
	var end time.Time
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if p.DeletionTimestamp != nil && sel.Matches(labels.Set(p.Labels)) && p.DeletionTimestamp.After(end) {
			end = p.DeletionTimestamp.Time
		}
	}
	if t, ok := w.gonePods[m.Namespace]; ok {
		for _, p := range t {
			if sel.Matches(labels.Set(p.labels)) && p.at.After(end) {
				end = p.at
			}
		}
	}
	return end, !end.IsZero()
}

// gonePod is a service's pod deleted from the cache: its labels and when
// it was marked for deletion.
type gonePod struct {
	labels map[string]string
	at     time.Time
}

// onServicePodGone keeps a pod's deletion time once it leaves the cache.
func (w *watcher) onServicePodGone(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gonePods[p.Namespace] = append(w.gonePods[p.Namespace], gonePod{labels: p.Labels, at: p.DeletionTimestamp.Time})
}

// onNode notes a spot interruption notice on a node: the pool's
// interruption at the moment the notice began.
func (w *watcher) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	end, notice, ok := spot.Deadline(n)
	pool := n.Labels[v1alpha1.LabelPool]
	if !ok || pool == "" {
		return
	}
	at := end.Add(-notice)
	w.mu.Lock()
	defer w.mu.Unlock()
	key := at.UTC().Format(time.RFC3339) + "/" + pool
	if w.interrupted[key] {
		return
	}
	w.interrupted[key] = true
	w.interruptions = append(w.interruptions, interruptionAt{at: at, pool: pool})
	sort.SliceStable(w.interruptions, func(i, j int) bool { return w.interruptions[i].at.Before(w.interruptions[j].at) })
	fmt.Fprintf(w.o.ErrOut, "+ interruption of pool %s at %s\n", pool, at.UTC().Format(time.RFC3339))
	if w.yaml != nil {
		if err := w.yaml.write(w); err != nil {
			fmt.Fprintf(w.o.ErrOut, "warning: writing the trace: %v\n", err)
		}
	}
}

// interruptionAt is a pool's interruption as seen: at a time of the
// cluster's clock.
type interruptionAt struct {
	at   time.Time
	pool string
}

// untilGone ends the watch (cancel) once the rehearsal's cluster has not
// answered three times a second apart: the rehearsal has ended.
func untilGone(ctx context.Context, t *target, cancel context.CancelFunc) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	misses := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req, stop := context.WithTimeout(ctx, 2*time.Second)
		_, ok, err := rehearse.ReadMarker(req, t.client.Kube)
		stop()
		var op *net.OpError
		switch {
		case err == nil && ok:
			misses = 0
		case errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded):
			misses++
		default:
			misses = 0
		}
		if misses >= 3 {
			cancel()
			return
		}
	}
}

// traceOf is the trace the watch has recorded, for the YAML form: the
// rows and interruptions as offsets from start.
func traceOf(start time.Time, rows []record.Row, interruptions []interruptionAt) *trace.Trace {
	t := &trace.Trace{Start: start}
	for _, r := range rows {
		j := r.Job
		j.Submit = max(r.At.Sub(start), 0)
		t.Jobs = append(t.Jobs, j)
	}
	sort.SliceStable(t.Jobs, func(i, k int) bool { return t.Jobs[i].Submit < t.Jobs[k].Submit })
	for _, i := range interruptions {
		if at := i.at.Sub(start); at >= 0 {
			t.Interruptions = append(t.Interruptions, trace.Interruption{At: at, Pool: i.pool})
		}
	}
	return t
}
