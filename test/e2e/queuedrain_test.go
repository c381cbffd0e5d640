package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/test/harness"
)

// A queue with an item time drains as its workers run: a worker from
// `berth new batch --queue`, scaled by the real HPA on the queue's depth
// (external.metrics.k8s.io), takes an item every item time per Ready pod.
// Filled before any worker exists, the queue holds; once the HPA has
// scaled the worker up, the depth falls while its pods run, reaches 0 and
// stays there, and the HPA scales the worker back to zero. An empty queue
// writes nothing.
func TestQueueDrainsAsWorkersRun(t *testing.T) {
	ctx := context.Background()
	const ns = "team-a"
	name := fmt.Sprint("drain-", time.Now().UnixNano()%100000)
	queue := name
	setQueue := func(args ...string) string {
		return mustBerth(t, t.TempDir(), append([]string{"load", "queue", queue, "--kubeconfig", kubeconfig}, args...)...)
	}
	t.Cleanup(func() {
		berth(t, t.TempDir(), "load", "queue", queue, "--depth", "0", "--item-time", "0", "--kubeconfig", kubeconfig)
	})
	depth := func() int64 {
		var l emv1beta1.ExternalMetricValueList
		getRaw(t, client, "/apis/external.metrics.k8s.io/v1beta1/namespaces/"+ns+"/rabbitmq_queue_messages_ready", "queue="+queue, &l)
		if len(l.Items) != 1 {
			t.Fatalf("external metrics API returned %d values for queue=%s; want 1: %+v", len(l.Items), queue, l.Items)
		}
		return l.Items[0].Value.Value()
	}

	// 60 items of 2 s each: with nothing to take them, they stay.
	out := setQueue("--depth", "60", "--item-time", "2s")
	if !strings.Contains(out, "Drains as its workers run") || !strings.Contains(out, "every 2s") {
		t.Errorf("berth load queue --item-time 2s does not say the queue drains, an item every 2s:\n%s", out)
	}
	// The metrics server reads the queue through its watch of the load:
	// it may serve the depth before for a moment.
	eventually(t, 5*time.Second, "the external metrics API serving the queue at 60", func() (bool, error) {
		return depth() == 60, nil
	})
	// Past an item's time, checked throughout: the depth is worked out
	// from the time and the workers, so a drain would show at once.
	harness.Holds(t, 2*time.Second+time.Second, "a queue without workers stays at 60", func() (bool, error) {
		return depth() == 60, nil
	})
	show := mustBerth(t, t.TempDir(), "load", "show", "--kubeconfig", kubeconfig)
	if !strings.Contains(show, "ITEM TIME") || !strings.Contains(show, queue) || !strings.Contains(show, "2s") {
		t.Errorf("berth load show does not list the queue with its item time:\n%s", show)
	}

	// The worker: one replica to start, an HPA on the queue's depth, 5
	// items a replica, up to 10, down to 0; its window shortened.
	createScaffold(t, "batch", name, "--team", "team-a", "--class", "batch", "--queue", "amqp://mq.example/"+queue)
	want := fmt.Sprintf("External rabbitmq_queue_messages_ready{queue=%s} AverageValue 5", queue)
	hpa, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeMetric(hpa.Spec.Metrics); got != want {
		t.Fatalf("scaffold HPA metric = %q; want %q", got, want)
	}
	patchHPAWindow(t, client, ns, name, 5*time.Second)

	readyPods := func() int {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					n++
				}
			}
		}
		return n
	}
	start := time.Now()
	var (
		most     int   // Ready workers at most
		between  int64 // a depth seen between full and empty, with workers
		last     = int64(60)
		emptied  time.Duration
		scaledUp time.Duration
	)
	eventually(t, 2*time.Minute, "the queue drained by its workers", func() (bool, error) {
		n, d := readyPods(), depth()
		if d > last {
			return false, fmt.Errorf("the depth rose from %d to %d with nothing added", last, d)
		}
		last = d
		if n > most {
			most = n
			if n > 1 && scaledUp == 0 {
				scaledUp = time.Since(start)
			}
		}
		if n > 0 && d > 0 && d < 60 {
			between = d
		}
		if d == 0 {
			emptied = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	if between == 0 || most < 2 {
		t.Errorf("saw depth %d with workers running and at most %d Ready worker(s); want a depth between 60 and 0 while the HPA's workers (more than one) ran", between, most)
	}
	t.Logf("60 items of 2 s: the HPA scaled the worker to %d Ready pods (more than one after %s), the queue empty after %s", most, scaledUp.Round(time.Second), emptied.Round(time.Second))

	// Empty, the worker goes back to zero, and the depth stays at 0.
	eventually(t, 2*time.Minute, "the HPA scaling the worker back to zero", func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0, nil
	})
	if d := depth(); d != 0 {
		t.Errorf("depth %d after the queue emptied; want 0", d)
	}

	// Nothing to drain: the load is not written again.
	// Watched for three of the queue controller's periods (it writes at
	// most once a second), and failed at the first write.
	cm, err := client.CoreV1().ConfigMaps(metricsapi.LoadNamespace).Get(ctx, metricsapi.LoadConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().ConfigMaps(metricsapi.LoadNamespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + metricsapi.LoadConfigMap, ResourceVersion: cm.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		t.Errorf("the load was written while its queues were empty: %s %v", ev.Type, ev.Object)
	case <-time.After(3 * time.Second):
	}
}
