package metricsapi

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/objtest"
)

// queueHPA scales namespace/name (a Deployment) on queue, as `berth new
// batch` writes it.
func queueHPA(namespace, name, queue string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MaxReplicas:    5,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{
						Name:     v1alpha1.MetricRabbitMQDepth,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.MetricQueueLabel: queue}},
					},
				},
			}},
		},
	}
}

// queueEnv is a QueueController on a fake cluster, at a time the test
// sets.
type queueEnv struct {
	t      *testing.T
	client *fake.Clientset
	c      *QueueController
	now    time.Time
}

func newQueueEnv(t *testing.T, start time.Time, objs ...runtime.Object) *queueEnv {
	t.Helper()
	client := fake.NewClientset(objs...)
	shared := informers.NewSharedInformerFactory(client, 0)
	e := &queueEnv{t: t, client: client, now: start}
	e.c = NewQueueController(client, shared)
	e.c.Now = func() time.Time { return e.now }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); shared.Shutdown(); e.c.loadFactory.Shutdown() })
	shared.Start(ctx.Done())
	e.c.loadFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), e.c.hpaInformer.HasSynced, e.c.podInformer.HasSynced, e.c.deploymentInformer.HasSynced,
		e.c.statefulSetInformer.HasSynced, e.c.loadFactory.Core().V1().ConfigMaps().Informer().HasSynced) {
		t.Fatal("caches did not sync")
	}
	return e
}

// reconcile runs Reconcile at the test's time after d more.
func (e *queueEnv) reconcile(d time.Duration) controller.Result {
	e.t.Helper()
	e.now = e.now.Add(d)
	res, err := e.c.Reconcile(context.Background(), queuesKey)
	if err != nil {
		e.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// load is the load in the cluster, once the controller's cache holds it
// too.
func (e *queueEnv) load() *Load {
	e.t.Helper()
	cm, err := e.client.CoreV1().ConfigMaps(LoadNamespace).Get(context.Background(), LoadConfigMap, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		cached, err := e.c.loads.Get(LoadConfigMap)
		if err == nil && cached.Data[loadKey] == cm.Data[loadKey] {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the controller's cache never saw the load")
		}
		time.Sleep(5 * time.Millisecond)
	}
	l, err := DecodeLoad(cm)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// writes counts the updates of the load so far.
func (e *queueEnv) writes() int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "configmaps" {
			n++
		}
	}
	return n
}

func TestQueueControllerDrains(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	sel := map[string]string{"app": "worker"}
	load := &Load{
		Queues:    map[string]int64{"jobs": 10, "idle": 7, "stuck": 4},
		ItemTimes: map[string]metav1.Duration{"jobs": {Duration: time.Second}, "idle": {Duration: time.Second}},
	}
	e := newQueueEnv(t, start,
		loadConfigMap(t, load),
		deployment("b", "worker", sel),
		queueHPA("b", "worker", "jobs"),
		// stuck has workers but no item time: it never drains.
		deployment("b", "other", map[string]string{"app": "other"}),
		queueHPA("b", "other", "stuck"),
		objtest.MakePod("b", "other-1").Labels(map[string]string{"app": "other"}).Ready().Obj(),
		objtest.MakePod("b", "w1").Labels(sel).Ready().Obj(),
		objtest.MakePod("b", "w2").Labels(sel).Ready().Obj(),
		objtest.MakePod("b", "w3").Labels(sel).NotReady().Obj(), // not Ready: no worker
		objtest.MakePod("c", "w4").Labels(sel).Ready().Obj(),    // another namespace's
	)

	// The first look: two workers, an item a second each, the next item
	// done in half a second. Nothing to write yet.
	if res := e.reconcile(0); res.RequeueAfter != 500*time.Millisecond {
		t.Errorf("first look: again after %s; want 500ms (2 workers, 1 s items)", res.RequeueAfter)
	}
	if n := e.writes(); n != 0 {
		t.Fatalf("%d write(s) before any time passed; want none", n)
	}

	// 2.5 s: 5 items done.
	e.reconcile(2500 * time.Millisecond)
	l := e.load()
	if l.Queues["jobs"] != 5 || l.Queues["idle"] != 7 || l.Queues["stuck"] != 4 {
		t.Fatalf("after 2.5 s: depths %v; want jobs 5 (2 workers × 2.5 items), idle 7 and stuck 4 (no workers, no item time)", l.Queues)
	}

	// Half a second later another item is done, but the last write was
	// less than a second ago: it waits.
	res := e.reconcile(500 * time.Millisecond)
	if n := e.writes(); n != 1 || res.RequeueAfter != 500*time.Millisecond {
		t.Errorf("0.5 s after a write: %d write(s), again after %s; want still 1, and again in 500ms", n, res.RequeueAfter)
	}

	// 10 s on, the queue is empty (not below), and the controller rests.
	res = e.reconcile(10 * time.Second)
	if l := e.load(); l.Queues["jobs"] != 0 {
		t.Errorf("after 13 s: jobs %d; want 0", l.Queues["jobs"])
	}
	if res.RequeueAfter != 0 {
		t.Errorf("queue empty, the others without workers: again after %s; want never", res.RequeueAfter)
	}
	writes := e.writes()
	e.reconcile(time.Minute)
	if n := e.writes(); n != writes {
		t.Errorf("an idle minute wrote the load %d more time(s); want none", n-writes)
	}

	// Someone sets the depth: it drains from there, from now.
	if _, err := UpdateLoad(context.Background(), e.client, func(l *Load) error { l.SetQueue("jobs", 9); return nil }); err != nil {
		t.Fatal(err)
	}
	e.load()
	e.reconcile(0)
	e.reconcile(2 * time.Second)
	if l := e.load(); l.Queues["jobs"] != 5 {
		t.Errorf("2 s after being set to 9: jobs %d; want 5", l.Queues["jobs"])
	}
}

// Under a profile, a step fills the queue when it is reached, and the
// workers drain it in profile time.
func TestQueueControllerPlayback(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	sel := map[string]string{"app": "worker"}
	load := &Load{}
	load.Play(&Profile{
		Steps: []Step{
			{At: metav1.Duration{}, Queues: map[string]int64{"jobs": 0}},
			{At: metav1.Duration{Duration: time.Hour}, Queues: map[string]int64{"jobs": 100}},
		},
		Queues: []QueueItems{{Name: "jobs", ItemTime: metav1.Duration{Duration: 30 * time.Second}}},
	}, start, 60)
	e := newQueueEnv(t, start,
		loadConfigMap(t, load),
		deployment("b", "worker", sel),
		queueHPA("b", "worker", "jobs"),
		objtest.MakePod("b", "w1").Labels(sel).Ready().Obj(),
	)
	// Empty until the step an hour in, a minute of wall time at speed 60.
	if res := e.reconcile(0); res.RequeueAfter < time.Minute || res.RequeueAfter > time.Minute+10*time.Millisecond {
		t.Errorf("an empty queue filled in an hour of profile time: again after %s; want a minute", res.RequeueAfter)
	}
	// Two seconds after the step (2 min of profile time): 4 items of 30 s.
	e.reconcile(time.Minute + 2*time.Second)
	l := e.load()
	if d := l.At(e.now).Queues["jobs"]; d != 96 || l.Playback.Folded != 2 {
		t.Errorf("2 min of profile time after the step to 100: jobs %d, %d step(s) folded; want 96 and 2", d, l.Playback.Folded)
	}
}
