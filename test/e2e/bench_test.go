package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

// retailCopy is the retail template with every pool, team, namespace and
// class renamed with prefix, so that each benchmark iteration applies a
// blueprint the cluster has never seen: a cold apply.
func retailCopy(b *testing.B, prefix string) *v1alpha1.Blueprint {
	b.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := blueprint.Parse("retail.yaml", raw)
	if err != nil {
		b.Fatal(err)
	}
	r.Metadata.Name = prefix + r.Metadata.Name
	s := &r.Spec
	// The suite's blueprint holds the cluster's guardrails.
	s.Guardrails = v1alpha1.GuardrailsOff
	for i := range s.Pools {
		s.Pools[i].Name = prefix + s.Pools[i].Name
	}
	for i := range s.Teams {
		s.Teams[i].Name = prefix + s.Teams[i].Name
		for j := range s.Teams[i].Namespaces {
			s.Teams[i].Namespaces[j] = prefix + s.Teams[i].Namespaces[j]
		}
		for j := range s.Teams[i].Classes {
			s.Teams[i].Classes[j] = prefix + s.Teams[i].Classes[j]
		}
	}
	for i := range s.Classes {
		s.Classes[i].Name = prefix + s.Classes[i].Name
		for j := range s.Classes[i].Pools {
			s.Classes[i].Pools[j] = prefix + s.Classes[i].Pools[j]
		}
	}
	return r
}

// BenchmarkPlanRetailNoop plans the applied e2e blueprint (the retail
// design plus test pools): nothing to do.
func BenchmarkPlanRetailNoop(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		plan, err := apply.Compute(ctx, clients, bp, apply.Options{})
		if err != nil || !plan.Empty() {
			b.Fatalf("plan: %v (empty %v)", err, plan != nil && plan.Empty())
		}
	}
}

// BenchmarkApplyRetailNoop is `berth apply` of a blueprint already
// applied: a plan, and no writes.
func BenchmarkApplyRetailNoop(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if err := applyBlueprint(ctx, bp, apply.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanRetailCold plans the retail blueprint on a cluster that
// has none of it.
func BenchmarkPlanRetailCold(b *testing.B) {
	ctx := context.Background()
	r := retailCopy(b, "plan-")
	for b.Loop() {
		plan, err := apply.Compute(ctx, clients, r, apply.Options{})
		if err != nil || plan.Empty() {
			b.Fatalf("plan: %v", err)
		}
	}
}

// BenchmarkApplyRetailCold applies the retail blueprint, objects and
// pools (six nodes Ready), to a cluster that has none of it.
func BenchmarkApplyRetailCold(b *testing.B) {
	ctx := context.Background()
	i := 0
	for b.Loop() {
		b.StopTimer()
		r := retailCopy(b, fmt.Sprintf("cold%d-", i))
		i++
		b.StartTimer()
		if err := applyBlueprint(ctx, r, apply.Options{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: v1alpha1.LabelBlueprint + "=" + r.Metadata.Name})
		b.StartTimer()
	}
}

// BenchmarkReplacePool10 replaces a 10-node pool running 20 pods, blue/
// green: ten new nodes, ten drained through the Eviction API with the
// pods moved and ready again, ten deleted.
func BenchmarkReplacePool10(b *testing.B) {
	ctx := context.Background()
	spec := func(taint string) *v1alpha1.Blueprint {
		r, _, err := blueprint.Parse("replace.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: replace}
spec:
  guardrails: Off
  zones: [zone-1, zone-2, zone-3]
  pools:
  - {name: replace-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: replace-gpu, machine: {cpu: 8, memory: 32Gi}, count: 10, taints: ["`+taint+`"]}
`))
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	if err := applyBlueprint(ctx, spec("bench=0:NoSchedule"), apply.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: v1alpha1.LabelBlueprint + "=replace"})
	})
	ns := fmt.Sprintf("bench-replace-%d", time.Now().UnixNano()%1000000)
	client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	b.Cleanup(func() { client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	d := objtest.MakeDeployment(ns, "work", 20).NodeSelector(v1alpha1.LabelPool, "replace-gpu").Tolerate("bench").Obj()
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor("20 ready pods", func() bool {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		ready := 0
		for i := range l.Items {
			if isPodReady(&l.Items[i]) {
				ready++
			}
		}
		return err == nil && ready == 20
	})
	i := 1
	for b.Loop() {
		if err := applyBlueprint(ctx, spec(fmt.Sprintf("bench=%d:NoSchedule", i)), apply.Options{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
