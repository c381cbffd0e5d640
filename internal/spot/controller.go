package spot

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/slim"
)

// Controller carries out interruption notices: it plays the kubelet's
// graceful node shutdown on the interrupted node and the cloud that
// deletes it.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	// clock is the cluster's (the manager's): a notice's deadline and
	// the random interruptions count it.
	clock      clock.WithTicker
	nodes      cache.SharedIndexInformer
	pods       cache.SharedIndexInformer
	blueprints *recorded.Store
	// err is a failure to set the informers up, returned by Register.
	err error
	// seen are the nodes whose interruption is recorded already. Only
	// Reconcile, one key at a time, touches it.
	seen map[string]bool
}

// NewController returns a controller that works through client. It
// takes the cluster's nodes and pods from factory and the recorded
// blueprints from blueprints, both shared with berth's other controllers,
// whose owner starts them once every controller is registered.
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory, blueprints *recorded.Store) *Controller {
	c := &Controller{
		client:     client,
		seen:       map[string]bool{},
		blueprints: blueprints,
		nodes:      factory.Core().V1().Nodes().Informer(),
		pods:       factory.Core().V1().Pods().Informer(),
	}
	c.err = slim.IndexPodsByNode(c.pods)
	return c
}

// Register reconciles each interrupted node, and runs the random
// interruptions the recorded blueprints ask for.
func (c *Controller) Register(m *controller.Manager) error {
	if c.err != nil {
		return c.err
	}
	c.recorder = m.Recorder("spot-interruption")
	c.clock = m.Clock()
	m.Add("spot-random", c.rehearse)
	return m.Controller("spot").Watches(c.nodes, interrupted).Complete(c)
}

// interrupted is the key of a node with an interruption notice.
func interrupted(obj any) []string {
	if n, ok := obj.(*corev1.Node); ok {
		if _, _, ok := Deadline(n); ok {
			return []string{n.Name}
		}
	}
	return nil
}

// Reconcile moves the interrupted node name along, and looks at it again
// when its next pod or the node itself is due.
func (c *Controller) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	after, err := c.reconcile(ctx, name, c.clock.Now())
	if err != nil {
		return controller.Result{}, fmt.Errorf("carrying out the spot interruption of node %s: %w", name, err)
	}
	return controller.Result{RequeueAfter: after}, nil
}

// reconcile moves one interrupted node along and returns when to look
// again (0: done).
func (c *Controller) reconcile(ctx context.Context, name string, now time.Time) (time.Duration, error) {
	obj, ok, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		delete(c.seen, name)
		return 0, err
	}
	node := obj.(*corev1.Node)
	end, notice, ok := Deadline(node)
	if !ok || node.DeletionTimestamp != nil {
		// A node being deleted has gone with the cloud already; a
		// finalizer (Karpenter's, while it drains) may keep its object
		// a while, and its interruption is recorded once.
		return 0, nil
	}
	start := end.Add(-notice)
	pods, err := c.pods.GetIndexer().ByIndex(slim.PodsByNode, name)
	if err != nil {
		return 0, err
	}
	if !c.seen[name] {
		c.seen[name] = true
		c.recorder.Eventf(node, corev1.EventTypeWarning, "SpotInterruption", "spot capacity reclaimed: the node is deleted at %s (notice %s); its %d pod(s) are terminated within the notice", end.Format(time.RFC3339), notice, len(pods))
		if err := remember(ctx, c.client, node, start, notice, len(pods)); err != nil {
			return 0, err
		}
	}
	next := end.Sub(now)
	for _, obj := range pods {
		p := obj.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || isDaemon(p) {
			continue
		}
		if !hasDisruptionTarget(p) {
			if err := c.disrupt(ctx, p, notice, now); err != nil {
				return 0, err
			}
			c.recorder.Eventf(p, corev1.EventTypeWarning, "SpotInterruption", "node %s is being reclaimed (spot interruption, notice %s): terminating the pod", name, notice)
		}
		// The kubelet gives the pod its grace period, cut to the notice.
		grace := 30 * time.Second
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		due := start.Add(min(grace, notice))
		if now.Before(due) {
			next = min(next, due.Sub(now))
			continue
		}
		if err := c.fail(ctx, p, notice); err != nil {
			return 0, err
		}
	}
	if now.Before(end) {
		return max(next, 100*time.Millisecond), nil
	}
	err = c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	delete(c.seen, name)
	return 0, err
}

// disrupt gives a pod the condition a kubelet gives the pods of a node
// shutting down.
func (c *Controller) disrupt(ctx context.Context, p *corev1.Pod, notice time.Duration, now time.Time) error {
	return c.patchStatus(ctx, p, map[string]any{"conditions": []map[string]any{{
		"type": corev1.DisruptionTarget, "status": corev1.ConditionTrue, "reason": corev1.PodReasonTerminationByKubelet,
		"message":            fmt.Sprintf("Pod was terminated in response to imminent node shutdown (spot interruption, notice %s).", notice),
		"lastTransitionTime": now.UTC().Format(time.RFC3339),
	}}})
}

// fail ends a pod as the kubelet ends one it shut down: Failed.
func (c *Controller) fail(ctx context.Context, p *corev1.Pod, notice time.Duration) error {
	return c.patchStatus(ctx, p, map[string]any{
		"phase":   corev1.PodFailed,
		"reason":  "Terminated",
		"message": fmt.Sprintf("Pod was terminated in response to imminent node shutdown (spot interruption, notice %s).", notice),
		"conditions": []map[string]any{
			{"type": corev1.PodReady, "status": corev1.ConditionFalse, "reason": "PodFailed"},
			{"type": corev1.ContainersReady, "status": corev1.ConditionFalse, "reason": "PodFailed"},
		},
	})
}

func (c *Controller) patchStatus(ctx context.Context, p *corev1.Pod, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerSpot}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func hasDisruptionTarget(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func isDaemon(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet"
}
