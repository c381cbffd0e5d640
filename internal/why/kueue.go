package why

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibility "sigs.k8s.io/kueue/apis/visibility/v1beta2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Queued is what Kueue says of a Job that names one of its queues: the
// Workload it made for it, and the conditions Kueue set on it.
type Queued struct {
	// Queue is the LocalQueue the Job names.
	Queue string
	// Suspended: Kueue holds the Job (it has not admitted it, or took
	// its quota back).
	Suspended bool
	// Workload is Kueue's Workload for the Job; nil while Kueue has made
	// none.
	Workload *kueue.Workload
	// Position is where Kueue's visibility API places the Workload among
	// those waiting; nil where the cluster does not serve that API or
	// the Workload is not waiting.
	Position *QueuePosition
}

// QueuePosition is a waiting Workload's place in Kueue's queues, as its
// visibility API reports it.
type QueuePosition struct {
	// InLocalQueue and InClusterQueue count from 0, the next Workload
	// Kueue tries to admit.
	InLocalQueue, InClusterQueue int32
	// Waiting is how many Workloads wait in the LocalQueue.
	Waiting int
}

// readPositions asks Kueue's visibility API where each Workload pending
// in LocalQueue queue of namespace waits, by Workload name; nil, nil
// where the cluster does not serve the API.
func readPositions(ctx context.Context, rc rest.Interface, namespace, queue string) (map[string]*QueuePosition, error) {
	// The discovery client asks for discovery documents first, which an
	// aggregated server built as Kueue's refuses to negotiate: JSON.
	raw, err := rc.Get().AbsPath("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/"+namespace+"/localqueues/"+queue+"/pendingworkloads").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, nil // no visibility API (Kueue's VisibilityOnDemand off, or no Kueue)
	}
	var pending visibility.PendingWorkloadsSummary
	if err := json.Unmarshal(raw, &pending); err != nil {
		return nil, fmt.Errorf("reading the Workloads pending in LocalQueue %s/%s: %w", namespace, queue, err)
	}
	out := make(map[string]*QueuePosition, len(pending.Items))
	for _, p := range pending.Items {
		out[p.Name] = &QueuePosition{InLocalQueue: p.PositionInLocalQueue, InClusterQueue: p.PositionInClusterQueue, Waiting: len(pending.Items)}
	}
	return out, nil
}

// String says the position for a person: "2nd of 3 waiting in the
// LocalQueue, 4th in its ClusterQueue".
func (p *QueuePosition) String() string {
	return fmt.Sprintf("%s of %d waiting in the LocalQueue, %s in its ClusterQueue", ordinal(p.InLocalQueue+1), p.Waiting, ordinal(p.InClusterQueue+1))
}

// ordinal is 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st.
func ordinal(n int32) string {
	suffix := "th"
	switch n % 10 {
	case 1:
		suffix = "st"
	case 2:
		suffix = "nd"
	case 3:
		suffix = "rd"
	}
	if n%100 >= 11 && n%100 <= 13 {
		suffix = "th"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// readQueued reads Kueue's Workload for the Job uid in namespace, where
// the cluster serves Kueue's API; nil, nil where it does not.
func readQueued(ctx context.Context, c kubernetes.Interface, namespace string, uid types.UID, queue string, suspended bool) (*Queued, error) {
	q := &Queued{Queue: queue, Suspended: suspended}
	rc := c.Discovery().RESTClient()
	if rc == nil { // a fake clientset serves no API of its own
		return q, nil
	}
	raw, err := rc.Get().AbsPath("/apis/kueue.x-k8s.io/v1beta2/namespaces/" + namespace + "/workloads").DoRaw(ctx)
	if err != nil {
		// No Kueue on the cluster: the Job waits for a queue nothing
		// serves, which explain says.
		return q, nil
	}
	var list kueue.WorkloadList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("reading Kueue's Workloads in %s: %w", namespace, err)
	}
	for i := range list.Items {
		for _, o := range list.Items[i].OwnerReferences {
			if o.UID == uid {
				q.Workload = &list.Items[i]
				if q.Position, err = waitingPosition(ctx, rc, q.Workload, map[string]map[string]*QueuePosition{}); err != nil {
					return nil, err
				}
				return q, nil
			}
		}
	}
	return q, nil
}

// waitingPosition is wl's position in its queues where it waits (no
// quota reserved, not finished); nil otherwise. read holds the positions
// already read, by namespace/queue: one request per queue, however many
// of its Workloads are explained.
func waitingPosition(ctx context.Context, rc rest.Interface, wl *kueue.Workload, read map[string]map[string]*QueuePosition) (*QueuePosition, error) {
	if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
		apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
		return nil, nil
	}
	key := wl.Namespace + "/" + string(wl.Spec.QueueName)
	positions, ok := read[key]
	if !ok {
		var err error
		if positions, err = readPositions(ctx, rc, wl.Namespace, string(wl.Spec.QueueName)); err != nil {
			return nil, err
		}
		read[key] = positions
	}
	return positions[wl.Name], nil
}

// queueCause is why Kueue holds the workload w, as the verdict of a Job
// with no pods; ok is false when Kueue does not hold it (it has admitted
// it, or it names no queue).
func queueCause(w *Workload) (Cause, bool) {
	q := w.Queued
	if q == nil || !q.Suspended || w.Done {
		return Cause{}, false
	}
	job := w.String()
	if q.Workload == nil {
		return Cause{Layer: LayerQueue, Code: CauseQueueWaiting, Problem: problem.Problem{
			Object:  problem.Object{Kind: "Job", Namespace: w.Namespace, Name: w.Name},
			Field:   "metadata.labels[" + v1alpha1.LabelKueueQueueName + "]",
			Message: fmt.Sprintf("%s waits suspended in LocalQueue %s, but Kueue has made no Workload for it: Kueue is not running, or the queue is not Kueue's", job, q.Queue),
			Fix:     "under queueing: Kueue, berth up runs Kueue (berth-kueue); elsewhere install Kueue " + v1alpha1.KueueVersion + ", or remove the label to run the Job outside Kueue",
		}}, true
	}
	wl := q.Workload
	obj := problem.Object{Kind: "Workload", Namespace: wl.Namespace, Name: wl.Name}
	// Preempted or evicted and not admitted again: Kueue sets both back
	// to False when it reserves quota for the Workload anew. Until its
	// pods have stopped, the Workload still holds its old reservation.
	releasing := ""
	if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
		releasing = ", giving back its quota as its pods stop"
	}
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadPreempted); c != nil && c.Status == metav1.ConditionTrue {
		fix := "Kueue admits it again once its queue has quota; nothing to do unless it must not be preempted"
		if c.Reason == kueue.InCohortReclamationReason {
			fix = "it ran on GPUs its team borrowed, and their team took them back; Kueue admits it again once its own quota is free. To keep a team's work on its own GPUs, set queue.borrow: 0 for the team in the blueprint"
		}
		return Cause{Layer: LayerQueue, Code: CauseQueuePreempted, Problem: problem.Problem{Object: obj,
			Message: fmt.Sprintf("Kueue preempted %s (%s: %s) and holds it suspended in LocalQueue %s%s%s", job, c.Reason, c.Message, q.Queue, q.where(), releasing),
			Fix:     fix,
		}}, true
	}
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		return Cause{Layer: LayerQueue, Code: CauseQueuePreempted, Problem: problem.Problem{Object: obj,
			Message: fmt.Sprintf("Kueue evicted %s (%s: %s) and holds it suspended in LocalQueue %s%s%s", job, c.Reason, c.Message, q.Queue, q.where(), releasing),
			Fix:     "Kueue admits it again once its queue has quota and the reason is gone; its conditions say more: kubectl get workload " + wl.Name + " -n " + wl.Namespace + " -o yaml",
		}}, true
	}
	msg := "Kueue has not yet considered it"
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
		msg = c.Message
	}
	return Cause{Layer: LayerQueue, Code: CauseQueueWaiting, Problem: problem.Problem{Object: obj,
		Message: fmt.Sprintf("%s waits suspended in LocalQueue %s%s, holding no quota: %s", job, q.Queue, q.where(), msg),
		Fix:     queueFix(msg, wl),
	}}, true
}

// where is " (2nd of 3 waiting in the LocalQueue, 4th in its
// ClusterQueue)" where the position is known, else "".
func (q *Queued) where() string {
	if q.Position == nil {
		return ""
	}
	return " (" + q.Position.String() + ")"
}

// queueFix is the remedy for what Kueue's message says keeps a Workload
// waiting.
func queueFix(msg string, wl *kueue.Workload) string {
	switch {
	case strings.Contains(msg, "insufficient") && strings.Contains(msg, "quota"):
		return "it runs when its team's running Jobs free the quota, or when another team leaves GPUs it may borrow; to run more at once, raise the team's quota.gpu (split by queue.gpus) or queue.borrow in the blueprint"
	case strings.Contains(msg, "affinity") || strings.Contains(msg, "untolerated") || strings.Contains(msg, "doesn't match"):
		return "no flavor of its team's ClusterQueue is a pool the Job's class reaches: add the pool to the class's pools, or give the team GPUs on the class's pools (queue.gpus)"
	case strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "not found") || strings.Contains(msg, "inactive"):
		return "name the LocalQueue of the Job's namespace (kueue.x-k8s.io/queue-name: the team), and check that berth apply has run"
	}
	return "Kueue's conditions on the Workload say more: kubectl get workload " + wl.Name + " -n " + wl.Namespace + " -o yaml"
}

// readWaiting is every Job Kueue holds in namespace ("" for all): one
// per Workload of a Job that has no quota reserved and has not finished,
// as why --all lists them beside the Pending pods. None where the cluster
// serves no Kueue.
func readWaiting(ctx context.Context, c kubernetes.Interface, namespace string) ([]Workload, error) {
	rc := c.Discovery().RESTClient()
	if rc == nil {
		return nil, nil
	}
	path := "/apis/kueue.x-k8s.io/v1beta2/workloads"
	if namespace != "" {
		path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/" + namespace + "/workloads"
	}
	raw, err := rc.Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return nil, nil // no Kueue, or no right to read it
	}
	var list kueue.WorkloadList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("reading Kueue's Workloads: %w", err)
	}
	var out []Workload
	positions := map[string]map[string]*QueuePosition{}
	for i := range list.Items {
		wl := &list.Items[i]
		// Held: no quota reserved, or evicted (preempted) and still
		// giving back the quota it held; not finished.
		if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) &&
			!apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted) ||
			apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) {
			continue
		}
		for _, o := range wl.OwnerReferences {
			if o.Kind == "Job" && o.Controller != nil && *o.Controller {
				position, err := waitingPosition(ctx, rc, wl, positions)
				if err != nil {
					return nil, err
				}
				out = append(out, Workload{Kind: "Job", Namespace: wl.Namespace, Name: o.Name, UID: o.UID, Desired: -1,
					Creators: []Ref{{Kind: "Job", Name: o.Name, UID: o.UID}},
					Queued:   &Queued{Queue: string(wl.Spec.QueueName), Suspended: true, Workload: wl, Position: position}})
			}
		}
	}
	return out, nil
}
