package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	mv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// An inference Deployment from `berth new`, scaled by the real HPA
// controller on requests per second that berth's custom metrics API
// serves from `berth load set`: load rises, replicas rise to the count the
// HPA computes; load falls, replicas stay for the scale-down
// stabilization window, then fall to the minimum.
func TestHPAScalesOnLoad(t *testing.T) {
	ctx := context.Background()
	const ns = "team-a"
	name := fmt.Sprint("chat-", time.Now().UnixNano()%100000)
	createScaffold(t, "inference", name, "--team", "team-a")

	hpa, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The scaffold follows the class: requests_per_second, 20 per pod,
	// 2 to 6 replicas, the 600 s window of a class on a GPU pool.
	if got := describeMetric(hpa.Spec.Metrics); got != "Pods requests_per_second AverageValue 20" {
		t.Fatalf("scaffold HPA metric = %q; want Pods requests_per_second AverageValue 20", got)
	}
	if w := hpa.Spec.Behavior.ScaleDown.StabilizationWindowSeconds; w == nil || *w != 600 {
		t.Fatalf("scaffold HPA scale-down window = %v; want the class's 600 s", w)
	}
	if hpa.Spec.MaxReplicas != 6 {
		t.Fatalf("scaffold HPA maxReplicas = %d; want the class's 6", hpa.Spec.MaxReplicas)
	}
	// Ten minutes is too long for a test: the window is shortened, and
	// the test checks it is kept.
	const window = 45 * time.Second
	patchHPAWindow(t, client, ns, name, window)
	waitReplicas(t, client, ns, name, 2, 2*time.Minute)

	load := func(rps string) {
		mustBerth(t, t.TempDir(), "load", "set", "deployment/"+name, "-n", ns, "--rps", rps, "--kubeconfig", kubeconfig)
	}
	// 50% CPU on each of the 2 Ready pods: one CPU of work in all, which
	// metrics.k8s.io spreads over the Ready pods however many there are.
	mustBerth(t, t.TempDir(), "load", "set", "deployment/"+name, "-n", ns, "--cpu-util", "50", "--kubeconfig", kubeconfig)
	var usage mv1beta1.PodMetricsList
	var cpu int64
	getRawSettled(t, client, "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods", "app.kubernetes.io/name="+name, &usage, func() bool {
		cpu = 0
		for _, p := range usage.Items {
			for _, c := range p.Containers {
				cpu += c.Usage.Cpu().MilliValue()
			}
		}
		return len(usage.Items) > 0 && cpu >= 997 && cpu <= 1000
	})
	for _, p := range usage.Items {
		for _, c := range p.Containers {
			if mem := c.Usage.Memory(); mem.Cmp(resource.MustParse("4Gi")) != 0 {
				t.Errorf("pod %s: memory usage %s; want its request, 4Gi", p.Name, mem)
			}
		}
	}
	if len(usage.Items) == 0 || cpu < 997 || cpu > 1000 {
		t.Errorf("metrics.k8s.io: %d pods using %dm CPU in all; want one CPU (50%% of 2 pods' 1-CPU requests)", len(usage.Items), cpu)
	}
	load("100")
	// The API the HPA reads, as `kubectl get --raw` reads it: 100 rps
	// over 2 Ready pods.
	var values cmv1beta2.MetricValueList
	getRawSettled(t, client, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+ns+"/pods/*/requests_per_second",
		"app.kubernetes.io/name="+name, &values, func() bool {
			for _, v := range values.Items {
				if v.Value.MilliValue() != 50_000 {
					return false
				}
			}
			return len(values.Items) == 2
		})
	if len(values.Items) != 2 {
		t.Fatalf("custom metrics API returned %d values; want one per Ready pod (2): %+v", len(values.Items), values.Items)
	}
	for _, v := range values.Items {
		if v.Value.MilliValue() != 50_000 {
			t.Errorf("pod %s: requests_per_second = %s; want 50 (100 over 2 pods)", v.DescribedObject.Name, v.Value.String())
		}
	}
	// ceil(2 × 50 / 20) = 5.
	start := time.Now()
	waitReplicas(t, client, ns, name, 5, 2*time.Minute)
	t.Logf("100 rps: 2 → 5 replicas in %s", time.Since(start).Round(time.Second))
	if !hpaEvent(t, client, ns, name, "New size: 5") {
		t.Error("no SuccessfulRescale event with New size: 5 on the HPA")
	}
	// berth status shows the workload's replicas, metric and last scale.
	eventually(t, 30*time.Second, "berth status showing the HPA at 5/5", func() (bool, error) {
		out := mustBerth(t, t.TempDir(), "status", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "deployment/"+name) {
				return strings.Contains(line, "5/5") && strings.Contains(line, "requests_per_second 20/20 per pod") &&
					strings.Contains(line, "New size: 5"), nil
			}
		}
		return false, nil
	})

	// 10 rps asks for one replica, held at the minimum of 2: but not
	// before the window has passed since the last high recommendation
	// (at the latest sync before the load fell, at most one 15 s sync
	// period earlier).
	load("10")
	fell := time.Now()
	var dropped time.Duration
	eventually(t, window+time.Minute+30*time.Second, "replicas back to 2 after the window", func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if *d.Spec.Replicas < 5 && dropped == 0 {
			dropped = time.Since(fell)
		}
		return *d.Spec.Replicas == 2, nil
	})
	const syncPeriod = 15 * time.Second
	if dropped < window-syncPeriod {
		t.Errorf("replicas fell %s after the load did; the %s scale-down window should have held them at least %s", dropped, window, window-syncPeriod)
	}
	t.Logf("10 rps: 5 → 2 replicas %s after the load fell (window %s)", dropped.Round(time.Second), window)

	// A profile played by the cluster: its first step (at 0s) is in
	// effect at once, 300 rps over the Ready pods.
	profile := filepath.Join(t.TempDir(), "day.yaml")
	doc := fmt.Sprintf("steps:\n- at: 0s\n  workloads: [{namespace: %s, name: %s, rps: 300}]\n- at: 1h\n  workloads: [{namespace: %s, name: %s, rps: 0}]\n", ns, name, ns, name)
	if err := os.WriteFile(profile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, t.TempDir(), "load", "play", profile, "--kubeconfig", kubeconfig)
	t.Cleanup(func() { berth(t, t.TempDir(), "load", "stop", "--kubeconfig", kubeconfig) })
	var total int64
	getRawSettled(t, client, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+ns+"/pods/*/requests_per_second",
		"app.kubernetes.io/name="+name, &values, func() bool {
			total = 0
			for _, v := range values.Items {
				total += v.Value.MilliValue()
			}
			return len(values.Items) > 0 && total >= 299_990 && total <= 300_010
		})
	if len(values.Items) == 0 || total < 299_990 || total > 300_010 {
		t.Errorf("with the profile playing, %d pods report %dm requests/s in all; want 300", len(values.Items), total)
	}
}

// describeMetric says an HPA's one metric in a line.
func describeMetric(ms []autoscalingv2.MetricSpec) string {
	if len(ms) != 1 {
		return fmt.Sprintf("%d metrics", len(ms))
	}
	m := ms[0]
	switch m.Type {
	case autoscalingv2.PodsMetricSourceType:
		return fmt.Sprintf("Pods %s %s %s", m.Pods.Metric.Name, m.Pods.Target.Type, m.Pods.Target.AverageValue)
	case autoscalingv2.ExternalMetricSourceType:
		sel := ""
		if m.External.Metric.Selector != nil {
			sel = metav1.FormatLabelSelector(m.External.Metric.Selector)
		}
		return fmt.Sprintf("External %s{%s} %s %s", m.External.Metric.Name, sel, m.External.Target.Type, m.External.Target.AverageValue)
	case autoscalingv2.ResourceMetricSourceType:
		return fmt.Sprintf("Resource %s", m.Resource.Name)
	}
	return string(m.Type)
}

func patchHPAWindow(t *testing.T, c kubernetes.Interface, ns, name string, window time.Duration) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":%d}}}}`, int(window.Seconds()))
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReplicas waits for the Deployment to want n replicas and have n
// Ready.
func waitReplicas(t *testing.T, c kubernetes.Interface, ns, name string, n int32, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("deployment %s/%s at %d Ready replicas", ns, name, n), func() (bool, error) {
		d, err := c.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == n && d.Status.ReadyReplicas == n && d.Status.Replicas == n, nil
	})
}

// getRaw reads a metrics API path through the API server (the
// aggregator), as `kubectl get --raw PATH?labelSelector=...` does.
func getRaw(t *testing.T, c kubernetes.Interface, path, selector string, into any) {
	t.Helper()
	req := c.CoreV1().RESTClient().Get().AbsPath(path)
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	raw, err := req.DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET %s?labelSelector=%s: %v\n%s", path, selector, err, raw)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, raw)
	}
}

// getRawSettled reads path as getRaw does, again every 200 ms for up to
// 5 s until settled accepts what it read, and leaves the last read in
// into for the caller to check. berth's metrics server learns of
// `berth load` through its watch of the load, so a read just after one
// may still see the load before (seen in CI); a value that never comes
// fails the caller's check, not this one.
func getRawSettled(t *testing.T, c kubernetes.Interface, path, selector string, into any, settled func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		getRaw(t, c, path, selector, into)
		if settled() || time.Now().After(deadline) {
			return
		}
	}
}

func hpaEvent(t *testing.T, c kubernetes.Interface, ns, name, substr string) bool {
	t.Helper()
	list, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=SuccessfulRescale"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

func hpaCondition(t *testing.T, c kubernetes.Interface, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	t.Helper()
	h, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Status.Conditions {
		if h.Status.Conditions[i].Type == typ {
			return &h.Status.Conditions[i]
		}
	}
	return nil
}

// queueToZero is the retail example's GPU pool, "0–2 nodes, scale-to-zero
// on queue", end to end: a batch-inference worker from `berth new`, its
// HPA on the queue's depth (external.metrics.k8s.io, served by berth from
// `berth load queue`), the HPA controller with HPAScaleToZero, and the
// node autoscaler. Empty queue: no pod, no GPU node. Depth 20: two pods,
// the pool grows to its max of 2 and never past it, the pods run. Empty
// again: no pod, and the pool shrinks back to zero.
func (a *scaleEnv) queueToZero(t *testing.T, bpFile string) {
	ctx := context.Background()
	const ns, name, queue = "team-b", "embed", "batch-inference"
	a.eventually(3*time.Minute, "pool gpu empty before the test", func() (bool, error) { return a.poolSize("gpu") == 0, nil })

	createScaffoldOn(t, dynamic.NewForConfigOrDie(a.cfg), bpFile, "batch", name, "--team", "team-b", "--class", "batch-inference", "--gpus", "1")
	hpa, err := a.c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("berth new batch --class batch-inference wrote no HPA: %v", err)
	}
	want := "External rabbitmq_queue_messages_ready{queue=batch-inference} AverageValue 10"
	if got := describeMetric(hpa.Spec.Metrics); got != want {
		t.Fatalf("scaffold HPA metric = %q; want %q (the class's queue and target)", got, want)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 0 || hpa.Spec.MaxReplicas != 2 {
		t.Fatalf("scaffold HPA replicas %v..%d; want 0..2 (the class's)", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	// The class's 10-minute window, shortened for the test.
	patchHPAWindow(t, a.c, ns, name, 5*time.Second)

	// The pool is watched all along: it must never pass its max.
	var mu sync.Mutex
	most := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			list, err := a.c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "berth.io/pool=gpu"})
			if err == nil {
				mu.Lock()
				most = max(most, len(list.Items))
				mu.Unlock()
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
		if most > 2 {
			t.Errorf("pool gpu reached %d nodes; its max is 2", most)
		}
	}()

	// Empty queue: the HPA takes the scaffold's one replica to zero (and
	// only a workload the HPA scaled to zero is woken by it).
	a.eventually(2*time.Minute, "the HPA scaling "+name+" to zero on the empty queue", func() (bool, error) {
		c := hpaCondition(t, a.c, ns, name, autoscalingv2.ScaledToZero)
		d, err := a.c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && c != nil && c.Status == corev1.ConditionTrue && *d.Spec.Replicas == 0 && d.Status.Replicas == 0, nil
	})
	a.eventually(2*time.Minute, "pool gpu at zero nodes with the queue empty", func() (bool, error) { return a.poolSize("gpu") == 0, nil })

	setDepth := func(n int) {
		mustBerth(t, a.home, "load", "queue", queue, "--depth", fmt.Sprint(n), "--context", "berth-scale")
	}
	external := func() int64 {
		var l emv1beta1.ExternalMetricValueList
		getRaw(t, a.c, "/apis/external.metrics.k8s.io/v1beta1/namespaces/"+ns+"/rabbitmq_queue_messages_ready", "queue="+queue, &l)
		if len(l.Items) != 1 {
			t.Fatalf("external metrics API returned %d values for queue=%s; want 1: %+v", len(l.Items), queue, l.Items)
		}
		return l.Items[0].Value.Value()
	}
	if d := external(); d != 0 {
		t.Fatalf("external metric for the empty queue = %d; want 0", d)
	}

	setDepth(20)
	start := time.Now()
	if d := external(); d != 20 {
		t.Fatalf("external metric after `berth load queue %s --depth 20` = %d; want 20", queue, d)
	}
	// ceil(20 / 10) = 2 pods, each a GPU node of its own.
	a.eventually(4*time.Minute, "2 Running workers on 2 gpu nodes", func() (bool, error) {
		pods, err := a.c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2 && a.poolSize("gpu") == 2, nil
	})
	t.Logf("queue depth 20 → 2 pods Running on 2 new gpu nodes in %s (HPA sync 15 s, autoscaler scan 1 s, the gpu pool's provisioning time)", time.Since(start).Round(time.Second))

	// More work than the pool can take: the HPA stops at its max, and so
	// does the pool.
	setDepth(60)
	a.eventually(time.Minute, "the HPA limited at its max of 2", func() (bool, error) {
		c := hpaCondition(t, a.c, ns, name, autoscalingv2.ScalingLimited)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "TooManyReplicas", nil
	})
	if n := a.poolSize("gpu"); n != 2 {
		t.Errorf("pool gpu has %d nodes with the HPA at max; want 2", n)
	}
	out := mustBerth(t, a.home, "why", "deployment/"+name, "-n", ns, "--context", "berth-scale")
	if !strings.Contains(out, "at its maximum of 2") || !strings.Contains(out, "asks for 6") {
		t.Errorf("berth why on the worker at its max does not say so (maximum of 2, the queue asks for 6):\n%s", out)
	}

	setDepth(0)
	a.eventually(2*time.Minute, "the workers scaled to zero on the empty queue", func() (bool, error) {
		d, err := a.c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0, nil
	})
	a.eventually(2*time.Minute, "pool gpu back to zero nodes", func() (bool, error) { return a.poolSize("gpu") == 0, nil })
	out = mustBerth(t, a.home, "why", "deployment/"+name, "-n", ns, "--context", "berth-scale")
	if !strings.Contains(out, "at zero") || !strings.Contains(out, "berth load queue "+queue) {
		t.Errorf("berth why on the worker at zero does not say the queue is empty and how to fill it:\n%s", out)
	}
}
