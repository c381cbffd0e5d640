package metricsapi

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/slim"
)

// writeInterval is the least time between two writes of the load while
// queues drain: the HPA reads a depth every 15 s, and a write a second
// keeps what it reads at most a second old.
const writeInterval = time.Second

// queuesKey names the one thing the QueueController reconciles: the load.
const queuesKey = LoadNamespace + "/" + LoadConfigMap

// QueueController drains the simulated queues that have an item time: the
// Ready pods of each workload an HPA scales on a queue (an External
// metric selecting queue=NAME, as `berth new batch` writes it) each take
// an item off it every item time. It writes the depths into the load at
// most once a second, and only while some such queue has items and
// workers: on an idle cluster it writes nothing.
type QueueController struct {
	client kubernetes.Interface
	// The informers Register watches, and their listers.
	hpaInformer, podInformer, deploymentInformer, statefulSetInformer cache.SharedIndexInformer
	hpas                                                              autoscalinglisters.HorizontalPodAutoscalerLister
	pods                                                              corelisters.PodLister
	deployments                                                       appslisters.DeploymentLister
	statefulSets                                                      appslisters.StatefulSetLister
	// loadFactory watches the load's ConfigMap alone; the controller
	// starts it.
	loadFactory informers.SharedInformerFactory
	loads       corelisters.ConfigMapNamespaceLister
	// Now is the clock: the manager's, from Register, unless a test sets
	// it first.
	Now func() time.Time

	// Reconcile is called one key at a time, so nothing below needs a
	// lock. queues are the draining queues by name.
	queues map[string]*drain
	// seen is the load as last read or written: a queue whose depth or
	// item time differs from it was set by someone else.
	seen *Load
	// wroteAt is when the controller last wrote the load, over the
	// ConfigMap's version basedOn: while the cache still holds that
	// version, it has not seen the write yet.
	wroteAt time.Time
	basedOn string
}

// NewQueueController watches HPAs, pods and workloads from shared (the
// factory berth's controllers share; its owner starts it), and the load
// from a factory of its own.
func NewQueueController(client kubernetes.Interface, shared informers.SharedInformerFactory) *QueueController {
	loadFactory := slim.Informers(client, 0, informers.WithNamespace(LoadNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", LoadConfigMap).String()
		}))
	hpas, pods := shared.Autoscaling().V2().HorizontalPodAutoscalers(), shared.Core().V1().Pods()
	deployments, statefulSets := shared.Apps().V1().Deployments(), shared.Apps().V1().StatefulSets()
	return &QueueController{
		client:              client,
		hpaInformer:         hpas.Informer(),
		podInformer:         pods.Informer(),
		deploymentInformer:  deployments.Informer(),
		statefulSetInformer: statefulSets.Informer(),
		hpas:                hpas.Lister(),
		pods:                pods.Lister(),
		deployments:         deployments.Lister(),
		statefulSets:        statefulSets.Lister(),
		loadFactory:         loadFactory,
		loads:               loadFactory.Core().V1().ConfigMaps().Lister().ConfigMaps(LoadNamespace),
		queues:              map[string]*drain{},
	}
}

// Register watches the load, the HPAs on queues and the pods of their
// namespaces, each queueing the load; and runs the load's informer.
func (c *QueueController) Register(m *controller.Manager) error {
	if c.Now == nil {
		c.Now = m.Clock().Now
	}
	m.Add("queues-load", func(ctx context.Context) error {
		c.loadFactory.Start(ctx.Done())
		<-ctx.Done()
		c.loadFactory.Shutdown()
		return nil
	})
	load := func(any) []string { return []string{queuesKey} }
	onQueue := func(obj any) []string {
		if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok && len(queuesOf(h)) > 0 {
			return []string{queuesKey}
		}
		return nil
	}
	// Only a pod's readiness changes the work done; only pods where an
	// HPA scales on a queue can be workers.
	readiness := func(old, cur any) bool { return ready(old.(*corev1.Pod)) != ready(cur.(*corev1.Pod)) }
	podOnQueue := func(obj any) []string {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil
		}
		hpas, _ := c.hpas.HorizontalPodAutoscalers(p.Namespace).List(labels.Everything())
		for _, h := range hpas {
			if len(queuesOf(h)) > 0 {
				return []string{queuesKey}
			}
		}
		return nil
	}
	return m.Controller("queues").
		Watches(c.loadFactory.Core().V1().ConfigMaps().Informer(), load).
		Watches(c.hpaInformer, onQueue).
		WatchesChanges(c.podInformer, readiness, podOnQueue).
		Reads(c.deploymentInformer, c.statefulSetInformer).
		Complete(c)
}

// Reconcile drains the queues from when it last looked to now, writes
// their depths when they changed (at most once a second), and asks to be
// called again when the next item is done, or when the profile next
// fills a queue that has an item time.
func (c *QueueController) Reconcile(ctx context.Context, _ string) (controller.Result, error) {
	cm, err := c.loads.Get(LoadConfigMap)
	if apierrors.IsNotFound(err) {
		c.queues, c.seen = map[string]*drain{}, nil
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if c.basedOn != "" && cm.ResourceVersion == c.basedOn {
		// The cache has not seen the last write; its event queues the
		// load again.
		return controller.Result{}, nil
	}
	l, err := DecodeLoad(cm)
	if err != nil {
		// The metrics server reports it; nothing drains until it is set
		// right.
		klog.FromContext(ctx).Error(err, "reading the load to drain its queues")
		return controller.Result{}, nil
	}
	now := c.Now()
	c.sync(l, now)
	workers := c.workers()
	served := l.At(now)
	changed := map[string]int64{}
	for q, d := range c.queues {
		d.advance(q, l.Playback, now)
		d.workers = workers[q]
		if d.depth != served.Queues[q] {
			changed[q] = d.depth
		}
	}
	if len(changed) > 0 {
		if wait := c.wroteAt.Add(writeInterval).Sub(now); wait > 0 {
			return controller.Result{RequeueAfter: wait}, nil
		}
		if err := c.write(ctx, cm, l.fold(now, changed)); err != nil {
			return controller.Result{}, err
		}
		c.wroteAt, c.basedOn = now, cm.ResourceVersion
	}
	return controller.Result{RequeueAfter: c.again(l.Playback, now)}, nil
}

// sync makes the queues those of l with an item time, each going on from
// where it stood unless someone else set its depth or item time since the
// controller last wrote (or the profile playing changed): such a queue
// starts again from l's depth now.
func (c *QueueController) sync(l *Load, now time.Time) {
	served := l.At(now)
	same := func(q string) bool {
		w := c.seen
		return w != nil && w.Queues[q] == l.Queues[q] && w.ItemTimes[q] == l.ItemTimes[q] && samePlayback(w.Playback, l.Playback)
	}
	for q := range c.queues {
		if _, ok := l.ItemTimes[q]; !ok {
			delete(c.queues, q)
		}
	}
	for q, it := range l.ItemTimes {
		if d, ok := c.queues[q]; ok && same(q) {
			continue
		} else if ok {
			klog.V(2).InfoS("queue set anew", "queue", q, "depth", served.Queues[q], "was", d.depth)
		}
		c.queues[q] = &drain{at: now, depth: served.Queues[q], itemTime: it.Duration}
	}
	c.seen = l
}

func samePlayback(a, b *Playback) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Started.Equal(&b.Started) && a.Speed == b.Speed && a.Folded == b.Folded && len(a.Profile.Steps) == len(b.Profile.Steps)
}

// again is how long until something drains: the next item one of the
// queues' workers finishes (no sooner than the next write may be), or
// the next step of the profile that fills a queue with an item time.
// Zero when nothing will.
func (c *QueueController) again(p *Playback, now time.Time) time.Duration {
	var soonest time.Duration
	sooner := func(d time.Duration) {
		if d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	for _, d := range c.queues {
		if n := d.next(p); n > 0 {
			sooner(max(n, c.wroteAt.Add(writeInterval).Sub(now)))
		}
	}
	if p != nil && p.Speed > 0 {
		elapsed := p.Elapsed(now)
		for _, s := range p.Profile.Steps {
			if s.At.Duration <= elapsed {
				continue
			}
			for q := range s.Queues {
				if _, ok := c.queues[q]; ok {
					sooner(time.Duration(float64(s.At.Duration-elapsed)/p.Speed) + time.Millisecond)
				}
			}
		}
	}
	return soonest
}

// workers counts, per draining queue, the Ready pods of the workloads an
// HPA scales on it by name.
func (c *QueueController) workers() map[string]int {
	out := map[string]int{}
	hpas, _ := c.hpas.List(labels.Everything())
	counted := map[string]bool{}
	for _, h := range hpas {
		ref := h.Spec.ScaleTargetRef
		o, ok := findOwner(c.deployments, c.statefulSets, h.Namespace, ref.Kind, ref.Name)
		if !ok {
			continue
		}
		for _, q := range queuesOf(h) {
			key := q + " " + WorkloadLoad{Namespace: o.namespace, Kind: o.kind, Name: o.name}.Key()
			if _, draining := c.queues[q]; !draining || counted[key] {
				continue
			}
			counted[key] = true
			pods, _ := c.pods.Pods(o.namespace).List(o.selector)
			for _, p := range pods {
				if ready(p) {
					out[q]++
				}
			}
		}
	}
	return out
}

// queuesOf is the queues an HPA scales on: each External queue depth
// metric whose selector names one queue (queue=NAME).
func queuesOf(h *autoscalingv2.HorizontalPodAutoscaler) []string {
	var out []string
	for _, m := range h.Spec.Metrics {
		if m.Type != autoscalingv2.ExternalMetricSourceType || m.External == nil || !isQueueMetric(m.External.Metric.Name) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(m.External.Metric.Selector)
		if err != nil {
			continue
		}
		if q, ok := sel.RequiresExactMatch(v1alpha1.MetricQueueLabel); ok {
			out = append(out, q)
		}
	}
	return out
}

// write puts l into the load's ConfigMap cm, as of the version the cache
// holds: a write made since by someone else fails with a conflict, and the
// next Reconcile starts from theirs.
func (c *QueueController) write(ctx context.Context, cm *corev1.ConfigMap, l *Load) error {
	data, err := yaml.Marshal(l)
	if err != nil {
		return err
	}
	cm = cm.DeepCopy()
	cm.Data[loadKey] = string(data)
	updated, err := c.client.CoreV1().ConfigMaps(LoadNamespace).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("writing the drained queues' depths to %s: %w", queuesKey, err)
	}
	// What was written, as the cache will read it back.
	c.seen, err = DecodeLoad(updated)
	return err
}
