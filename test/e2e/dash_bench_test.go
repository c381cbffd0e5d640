package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/dash"
	"berth.io/berth/internal/pools"
)

// BenchmarkDashLarge measures the dashboard on the suite's cluster grown
// to $BERTH_DASH_NODES nodes (default 1,000) and $BERTH_DASH_PODS running
// pods (default 20,000): how long until the first page is ready (the
// first reading of the cluster), how long a change takes to reach the
// page (a node added, until the overview's content fetched after the
// stream's notice shows it), and the server's heap beside the cluster
// (this process's live heap with the server running, less without).
func BenchmarkDashLarge(b *testing.B) {
	nodes, pods := envInt(b, "BERTH_DASH_NODES", 1000), envInt(b, "BERTH_DASH_PODS", 20000)
	addBenchNodes(b, nodes)
	ns := benchNamespace(b)
	addBenchPods(b, ns, pods)
	c := dashClient(b)
	heapBefore := liveHeap()
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		s, err := dash.New(dash.Options{Client: c, Blueprint: bp, Context: "e2e", Listen: "127.0.0.1:8470"})
		if err != nil {
			b.Fatal(err)
		}
		go s.Run(ctx)
		h := s.Handler()
		if code, _ := dashGet(h, "/", false); code != http.StatusOK {
			b.Fatalf("GET /: %d", code)
		}
		ready := time.Since(start)
		srv := httptest.NewServer(h)
		latency := dashUpdate(b, c, srv.URL, fmt.Sprintf("dash-bench-%d", time.Now().UnixNano()%100000))
		heap := liveHeap() - heapBefore
		b.ReportMetric(ready.Seconds(), "s/first-page")
		b.ReportMetric(latency.Seconds(), "s/update")
		b.ReportMetric(float64(heap)/(1<<20), "MiB-heap")
		b.Logf("%d nodes, %d pods: first page ready in %v, an update on the page %v after the change, server heap %d MiB",
			countNodes(b), pods, ready.Round(time.Millisecond), latency.Round(time.Millisecond), heap>>20)
		srv.Close()
		cancel()
	}
}

// dashClient is a client paced as berth's commands are, speaking protobuf.
func dashClient(b *testing.B) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 100, 200
	c.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// dashUpdate adds a node to a pool of its own and returns how long until
// the overview's content, fetched when the event stream names the
// overview, shows it.
func dashUpdate(b *testing.B, c kubernetes.Interface, url, name string) time.Duration {
	req, _ := http.NewRequest(http.MethodGet, url+"/events", nil)
	req.Host = "127.0.0.1:8470"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	pool := bp.Spec.Pools[1]
	pool.Name = name
	pool.Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint(benchPool + "=true:NoSchedule")}
	owner := *bp
	owner.Metadata.Name = benchPool
	node := pools.NewNode(&owner, &pool, 0)
	b.Cleanup(func() { client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	start := time.Now()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				b.Fatal("the event stream ended")
			}
			if strings.HasPrefix(l, "data: ") && (strings.Contains(l, "overview") || strings.Contains(l, "all")) {
				if _, body := dashGetURL(b, url+"/"); strings.Contains(body, fmt.Sprintf("data-pool=%q", name)) {
					return time.Since(start)
				}
			}
		case <-timeout:
			b.Fatal("the new node did not reach the overview within a minute")
		}
	}
}

func dashGet(h http.Handler, path string, fragment bool) (int, string) {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8470"+path, nil)
	if fragment {
		r.Header.Set("X-Berth-Fragment", "1")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func dashGetURL(b *testing.B, url string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "127.0.0.1:8470"
	req.Header.Set("X-Berth-Fragment", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		sb.WriteString(sc.Text())
		sb.WriteByte('\n')
	}
	return resp.StatusCode, sb.String()
}

// addBenchPods runs n pods on the benchmark's nodes, placed by the
// scheduler (the admission policy refuses spec.nodeName outside system
// namespaces), and waits until they are Running.
func addBenchPods(b *testing.B, ns string, n int) {
	ctx := context.Background()
	if nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + benchPool}); err != nil || len(nodes.Items) == 0 {
		b.Fatalf("no benchmark nodes to run pods on: %v", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			p := plainPod(ns, fmt.Sprintf("p-%05d", i))
			p.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: benchPool}
			p.Spec.Tolerations = []corev1.Toleration{{Key: benchPool, Operator: corev1.TolerationOpExists}}
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
			_, err := client.CoreV1().Pods(ns).Create(gctx, p, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("creating pods: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running", ResourceVersion: "0"})
		return err == nil && len(l.Items) == n, nil
	})
	if err != nil {
		b.Fatalf("waiting for %d pods Running: %v", n, err)
	}
}

func envInt(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			b.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	return def
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
