package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// benchPool is the pool the benchmark fills the cluster with; its taint
// keeps every other test's pods off it.
const benchPool = "why-bench"

// BenchmarkWhy1000Nodes times the whole `berth why POD` command (kubeconfig,
// the List calls, the analysis and the text) on a cluster of 1,000 nodes,
// the e2e pools plus simulated nodes KWOK keeps Ready, for a pod that
// tolerates the added nodes but fits none of them, so that every node is
// examined to the resource filter.
func BenchmarkWhy1000Nodes(b *testing.B) {
	ctx := context.Background()
	addBenchNodes(b, 1000)
	ns := benchNamespace(b)
	p := plainPod(ns, "why-bench")
	p.Spec.Tolerations = []corev1.Toleration{{Key: benchPool, Operator: corev1.TolerationOpExists}}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	out, err := whyCLI(b, p.Name, "-n", ns, "-f", "testdata/e2e.yaml")
	if err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	b.Logf("berth why on %d nodes:\n%s", countNodes(b), out)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if out, err := whyCLI(b, p.Name, "-n", ns, "-f", "testdata/e2e.yaml"); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

func countNodes(b *testing.B) int {
	l, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return len(l.Items)
}

// addBenchNodes adds nodes of pool why-bench until the cluster has total,
// waits until KWOK has made them Ready, and removes them (waiting until
// they are gone) when the benchmark ends, so later tests see the cluster
// they expect.
func addBenchNodes(b *testing.B, total int) {
	ctx := context.Background()
	pool := bp.Spec.Pools[1] // cpu: 16 CPUs, 64Gi
	pool.Name = benchPool
	pool.Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint(benchPool + "=true:NoSchedule")}
	pool.Labels = nil
	// The nodes belong to no blueprint the suite applies, so a plan that
	// ran while they existed would not count them as the e2e pools'.
	owner := *bp
	owner.Metadata.Name = benchPool
	have := countNodes(b)
	b.Cleanup(func() { removeBenchNodes(b) })
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range total - have {
		g.Go(func() error {
			_, err := client.CoreV1().Nodes().Create(gctx, pools.NewNode(&owner, &pool, i), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("adding nodes: %v", err)
	}
	selector := metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + benchPool}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Nodes().List(ctx, selector)
		if err != nil {
			return false, err
		}
		for i := range l.Items {
			if nodeReady(&l.Items[i]) != corev1.ConditionTrue {
				return false, nil
			}
		}
		return len(l.Items) == total-have, nil
	})
	if err != nil {
		b.Fatalf("waiting for %d nodes Ready: %v", total-have, err)
	}
}

func removeBenchNodes(b *testing.B) {
	ctx := context.Background()
	selector := metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + benchPool}
	if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		b.Errorf("removing the benchmark's nodes: %v", err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Nodes().List(ctx, selector)
		return err == nil && len(l.Items) == 0, err
	})
	if err != nil {
		b.Errorf("the benchmark's nodes are still there: %v", err)
	}
}

// benchNamespace is a namespace for one benchmark run, deleted after it.
func benchNamespace(b *testing.B) string {
	ctx := context.Background()
	name := fmt.Sprintf("why-bench-%d", time.Now().UnixNano()%100000)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		b.Fatalf("default ServiceAccount in %s: %v", name, err)
	}
	return name
}
