package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/compile"
)

// BenchmarkAdmission times pod creation through the API server with
// berth's policies (validating and mutating) and without them, side by
// side in one run: 1,000 creations each way, alternating in batches of
// 100 so that both see the same machine, each batch after a warm-up that
// is not counted. Pods are real creations (not
// dry runs) of a plain pod and of a class-labelled pod, left Pending on
// a pool that does not exist so that scheduling stays out of the figure.
// Run: go test ./test/e2e -run '^$' -bench Admission -benchtime 1x
func BenchmarkAdmission(b *testing.B) {
	ctx := context.Background()
	ns := fmt.Sprintf("bench-admission-%d", time.Now().UnixNano()%100000)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	waitUntil(b, "default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	// Without: the policies' bindings are deleted (the policies stay, so
	// the API server's type checker does not run again and compete with
	// the measurement); with: apply puts the bindings back.
	unbind := func() {
		for _, kind := range compile.Kinds {
			if strings.HasSuffix(kind.Kind, "Binding") {
				if err := clients.Dynamic.Resource(kind.Resource).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: compile.Selector(bp.Metadata.Name)}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	defer func() {
		if err := applyBlueprint(context.Background(), bp, apply.Options{}); err != nil {
			b.Errorf("restoring the guardrails: %v", err)
		}
		waitForGuardrails(context.Background())
	}()

	var with, without []time.Duration
	n := 0
	create := func() time.Duration {
		n++
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", n), Namespace: ns},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"berth.io/pool": "no-such-pool"},
				Containers:   []corev1.Container{{Name: "app", Image: "nginx"}},
			},
		}
		if n%2 == 0 {
			pod.Labels = map[string]string{v1alpha1.LabelClass: "batch"}
		}
		start := time.Now()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating pod %d: %v", n, err)
		}
		return time.Since(start)
	}
	for b.Loop() {
		for batch := range 20 {
			guarded := batch%2 == 0
			if guarded {
				if err := applyBlueprint(ctx, bp, apply.Options{}); err != nil {
					b.Fatal(err)
				}
			} else {
				unbind()
			}
			if guarded {
				if err := waitForGuardrails(ctx); err != nil {
					b.Fatal(err)
				}
			} else {
				waitUntil(b, "the policies to be gone", func() bool {
					_, err := client.CoreV1().Pods("web").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
						Spec: corev1.PodSpec{NodeName: "cpu-0", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					return err == nil
				})
			}
			// Steady state is what is measured: the API server recompiles
			// policies when bindings change, so the first requests after
			// a toggle are not counted.
			time.Sleep(time.Second)
			for range 20 {
				create()
			}
			for range 100 {
				d := create()
				if guarded {
					with = append(with, d)
				} else {
					without = append(without, d)
				}
			}
			zero := int64(0)
			client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		}
	}
	p := func(d []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(with, 0.5), "p50-ms-with")
	b.ReportMetric(p(with, 0.99), "p99-ms-with")
	b.ReportMetric(p(without, 0.5), "p50-ms-without")
	b.ReportMetric(p(without, 0.99), "p99-ms-without")
	b.ReportMetric(float64(len(with)), "pods-each")
}

func waitUntil(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
