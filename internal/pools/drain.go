package pools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Drainer empties nodes as `kubectl drain` does: cordon, then evict every
// pod but DaemonSet and mirror pods through the Eviction API, so that
// PodDisruptionBudgets are honoured, and wait for the evicted pods'
// controllers to have them running again elsewhere. It is the one drain:
// blue/green replacements and upgrades use Drain, and the autoscaler's
// scale-down uses Evict with cluster-autoscaler's settings (MaxGrace,
// its clock, an event per evicted pod) on the node it has tainted.
type Drainer struct {
	Client kubernetes.Interface
	// Progress receives a line per node drained and per eviction a
	// budget holds back. Nil discards them.
	Progress io.Writer
	// Timeout bounds how long a budget may hold back one eviction, and
	// how long moved pods may take to run again. Zero means 5 minutes.
	Timeout time.Duration
	// Retry is how often a refused eviction is retried. Zero means 1s.
	Retry time.Duration
	// GoneTimeout bounds how long an evicted pod may take to be gone.
	// Zero means Timeout.
	GoneTimeout time.Duration
	// MaxGrace, when set, caps each evicted pod's termination grace
	// period in seconds (cluster-autoscaler's
	// max-graceful-termination-sec). Nil leaves each pod its own.
	MaxGrace *int64
	// Clock times the retries and the timeouts. Nil means the real one.
	Clock clock.WithDelayedExecution
	// Evicted, when set, is told of each pod the API server evicted (or
	// found gone already).
	Evicted func(*corev1.Pod)
}

// BlockedError is a drain a PodDisruptionBudget held back for longer than
// the timeout.
type BlockedError struct {
	Node, Pod string
	// Budget is the API server's account of the budget in the way.
	Budget string
	Waited time.Duration
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("draining %s: a PodDisruptionBudget has refused to let pod %s go for %s: %s", e.Node, e.Pod, e.Waited.Round(time.Second), e.Budget)
}

func (d *Drainer) progress() io.Writer {
	if d.Progress == nil {
		return io.Discard
	}
	return d.Progress
}

func (d *Drainer) timeout() time.Duration {
	if d.Timeout == 0 {
		return 5 * time.Minute
	}
	return d.Timeout
}

func (d *Drainer) goneTimeout() time.Duration {
	if d.GoneTimeout == 0 {
		return d.timeout()
	}
	return d.GoneTimeout
}

func (d *Drainer) retry() time.Duration {
	if d.Retry == 0 {
		return time.Second
	}
	return d.Retry
}

func (d *Drainer) clock() clock.WithDelayedExecution {
	if d.Clock == nil {
		return clock.RealClock{}
	}
	return d.Clock
}

// Cordon marks a node unschedulable.
func (d *Drainer) Cordon(ctx context.Context, node string) error {
	_, err := d.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{FieldManager: v1alpha1.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cordoning %s: %w", node, err)
	}
	return nil
}

// Drain cordons node and evicts its pods, returning those it evicted.
func (d *Drainer) Drain(ctx context.Context, node string) ([]*corev1.Pod, error) {
	if err := d.Cordon(ctx, node); err != nil {
		return nil, err
	}
	list, err := d.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("listing pods on %s: %w", node, err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if !isDaemon(p) && !isMirror(p) && !isDone(p) {
			pods = append(pods, p)
		}
	}
	if err := d.Evict(ctx, node, pods); err != nil {
		return nil, err
	}
	return pods, nil
}

// Evict evicts pods from node and waits for them to be gone. It evicts
// them all at once, as kubectl and cluster-autoscaler do: the budgets,
// not the order, decide how many may go at a time.
func (d *Drainer) Evict(ctx context.Context, node string, pods []*corev1.Pod) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.evict(ctx, node, p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// evict evicts one pod, retrying while a budget refuses, and waits for it
// to be gone.
func (d *Drainer) evict(ctx context.Context, node string, p *corev1.Pod) error {
	clk := d.clock()
	start := clk.Now()
	reported := false
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	if d.MaxGrace != nil {
		grace := *d.MaxGrace
		if t := p.Spec.TerminationGracePeriodSeconds; t != nil && *t < grace {
			grace = *t
		}
		eviction.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: &grace}
	}
	for {
		err := d.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, eviction)
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if !apierrors.IsTooManyRequests(err) {
			return fmt.Errorf("evicting pod %s/%s from %s: %w", p.Namespace, p.Name, node, err)
		}
		budget := budgetMessage(err)
		if !reported {
			fmt.Fprintf(d.progress(), "      waiting: %s/%s is held by a disruption budget: %s\n", p.Namespace, p.Name, budget)
			reported = true
		}
		if waited := clk.Since(start); waited > d.timeout() {
			return &BlockedError{Node: node, Pod: p.Namespace + "/" + p.Name, Budget: budget, Waited: waited}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(d.retry()):
		}
	}
	if d.Evicted != nil {
		d.Evicted(p)
	}
	evicted := clk.Now()
	// Each look waits for the clock first (at once on the wall clock; on
	// a rehearsal's, after the moment's work has settled), then every
	// 100 ms.
	for wait := time.Duration(0); ; wait = 100 * time.Millisecond {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(wait):
		}
		got, err := d.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.UID != p.UID) {
			return nil
		}
		if waited := clk.Since(evicted); waited > d.goneTimeout() {
			return fmt.Errorf("pod %s/%s, evicted from %s, is still there after %s", p.Namespace, p.Name, node, waited.Round(time.Second))
		}
	}
}

// budgetMessage is the API server's account of the budget that refused
// an eviction.
func budgetMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			var msgs []string
			for _, c := range d.Causes {
				msgs = append(msgs, c.Message)
			}
			if len(msgs) > 0 {
				return strings.Join(msgs, "; ")
			}
		}
	}
	return err.Error()
}

// WaitMoved waits until the controllers of the evicted pods have as many
// ready pods as they want again, none of them an evicted one. Pods of
// Jobs and of other kinds of controller are not waited for.
func (d *Drainer) WaitMoved(ctx context.Context, evicted []*corev1.Pod) error {
	gone := map[types.UID]bool{}
	owners := map[types.UID]owner{}
	for _, p := range evicted {
		gone[p.UID] = true
		if o := metav1.GetControllerOf(p); o != nil {
			owners[o.UID] = owner{o.Kind, p.Namespace, o.Name}
		}
	}
	clk := d.clock()
	for uid, o := range owners {
		var last string
		moved := func(ctx context.Context) (bool, error) {
			want, err := d.replicas(ctx, o)
			if apierrors.IsNotFound(err) {
				return true, nil // deleted meanwhile: nothing to wait for
			}
			if err != nil || want == 0 {
				return want == 0, err
			}
			pods, err := d.Client.CoreV1().Pods(o.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			ready := int32(0)
			for i := range pods.Items {
				p := &pods.Items[i]
				if c := metav1.GetControllerOf(p); c != nil && c.UID == uid && !gone[p.UID] && p.DeletionTimestamp == nil && podReady(p) {
					ready++
				}
			}
			last = fmt.Sprintf("%d of %d ready", ready, want)
			return ready >= want, nil
		}
		// Polled on the drainer's clock (at once, then every 100 ms; on a
		// rehearsal's, each look once the moment's work has settled), so
		// that a rehearsal's drain waits in its trace time.
		start := clk.Now()
		var err error
		for wait := time.Duration(0); ; wait = 100 * time.Millisecond {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-clk.After(wait):
			}
			if err != nil {
				break
			}
			var done bool
			if done, err = moved(ctx); done || err != nil {
				break
			}
			if waited := clk.Since(start); waited > d.timeout() {
				err = fmt.Errorf("still not ready after %s", waited.Round(time.Second))
				break
			}
		}
		if err != nil {
			return problem.Errorf(fmt.Sprintf("see why its pods are not ready with `kubectl -n %s get pods`", o.ns), "waiting for %s %s/%s to run again after the drain (%s): %w", o.kind, o.ns, o.name, last, err)
		}
	}
	return nil
}

type owner struct{ kind, ns, name string }

// replicas is how many pods a controller wants; kinds berth does not wait
// for want 0.
func (d *Drainer) replicas(ctx context.Context, o owner) (int32, error) {
	switch o.kind {
	case "ReplicaSet":
		rs, err := d.Client.AppsV1().ReplicaSets(o.ns).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return deref(rs.Spec.Replicas), nil
	case "StatefulSet":
		ss, err := d.Client.AppsV1().StatefulSets(o.ns).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return deref(ss.Spec.Replicas), nil
	case "ReplicationController":
		rc, err := d.Client.CoreV1().ReplicationControllers(o.ns).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return deref(rc.Spec.Replicas), nil
	}
	return 0, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deref(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
