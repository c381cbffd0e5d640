package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

// The seed spreads inference over zones "so a single AZ failure doesn't
// take down all capacity". With the inference class's 2/2/2 over three
// zones, zone-1's cpu node dies (`berth node stop --pool cpu --zone
// zone-1`, pods tolerating unreachable for 5 s so the test need not wait
// the default 300 s): the four replicas in the other zones keep running
// untouched, and the two replacements are placed in the zones left
// (3/3), because the class's spread constraint honours taints
// (nodeTaintsPolicy: Honor) and so stops counting the dead zone. With
// Kubernetes' default (Ignore) the dead zone, its count now 0, would
// hold the skew and keep the replacements Pending until it came back.
// Not parallel: a node the other tests use is stopped.
func TestZoneFailureKeepsInferenceServing(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	if err := os.Symlink(kubeconfig, filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { berth(t, home, "node", "start", "--pool", "cpu", "--zone", "zone-1") })
	five := int64(5)
	d := objtest.MakeDeployment("team-a", "zonal", 6).Obj()
	d.Spec.Template.Labels["berth.io/class"] = "inference"
	d.Spec.Template.Spec.PriorityClassName = "inference-high"
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
	}
	if _, err := client.AppsV1().Deployments("team-a").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.AppsV1().Deployments("team-a").Delete(context.Background(), "zonal", metav1.DeleteOptions{})
	})
	pods := runningPods(t, "team-a", "app=zonal", 6)
	if by := countBy(t, pods, corev1.LabelTopologyZone); by["zone-1"] != 2 || by["zone-2"] != 2 || by["zone-3"] != 2 {
		t.Fatalf("replicas per zone %v; want 2/2/2", by)
	}
	if by := countBy(t, pods, v1alpha1.LabelPool); by["cpu"] != 6 {
		t.Fatalf("replicas per pool %v; want all 6 on cpu", by)
	}
	survivors := map[string]bool{}
	nodes := nodeLabels(t)
	for _, p := range pods {
		if nodes[p.Spec.NodeName][corev1.LabelTopologyZone] != "zone-1" {
			survivors[p.Name] = true
		}
	}

	mustBerth(t, home, "node", "stop", "--pool", "cpu", "--zone", "zone-1")
	var running []corev1.Pod
	// Replacements run outside zone-1 (the stopped node is the only
	// cpu node there; no new node joins the test cluster's pools).
	eventually(t, 2*time.Minute, "the zone-1 replicas replaced in zone-2 and zone-3, 3/3", func() (bool, error) {
		list, err := client.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "app=zonal"})
		if err != nil {
			return false, err
		}
		running = running[:0]
		seen := 0
		for _, p := range list.Items {
			if survivors[p.Name] {
				seen++
				if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
					t.Fatalf("replica %s in a live zone was disturbed: %s", p.Name, p.Status.Phase)
				}
			}
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && nodes[p.Spec.NodeName][corev1.LabelTopologyZone] != "zone-1" {
				running = append(running, p)
			}
		}
		if seen != len(survivors) {
			t.Fatalf("a replica in a live zone is gone")
		}
		return len(running) == 6, nil
	})
	if by := countBy(t, running, corev1.LabelTopologyZone); by["zone-2"] != 3 || by["zone-3"] != 3 {
		t.Errorf("replicas per zone with zone-1 down %v; want 3/3 in zone-2 and zone-3", by)
	}
}
