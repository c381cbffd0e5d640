package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/objtest"
)

// upgradeBlueprint is poolBlueprint with the workload pool at a
// Kubernetes version ("" for the default, the control plane's).
func upgradeBlueprint(t *testing.T, version string) string {
	t.Helper()
	doc := poolBlueprint("upgrade", "bg=v:NoSchedule")
	if version == "" {
		return doc
	}
	return strings.Replace(doc, "  - name: upgrade-gpu\n", fmt.Sprintf("  - name: upgrade-gpu\n    kubernetesVersion: %q\n", version), 1)
}

// Seed 001's upgrade, rehearsed: a pool a minor behind the control plane
// is raised to it by a blue/green replacement; the plan spells out the
// order, the budget is kept throughout, and the new nodes report the new
// kubelet version.
func TestVersionChangeReplacesPool(t *testing.T) {
	ctx := context.Background()
	n, ok := v1alpha1.MinorOf(v1alpha1.ControlPlaneVersion())
	if !ok {
		t.Fatalf("the control plane reports no version: %q", v1alpha1.ControlPlaneVersion())
	}
	from, to := fmt.Sprintf("v1.%d.0", n-1), v1alpha1.ControlPlaneVersion()
	removeNodesOf(t, "upgrade")
	if err := applyBlueprint(ctx, loadBlueprint(t, upgradeBlueprint(t, fmt.Sprintf("1.%d", n-1))), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the old nodes' kubelet version", func() (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, "upgrade-gpu-0", metav1.GetOptions{})
		return err == nil && node.Status.NodeInfo.KubeletVersion == from, err
	})
	ns := namespace(t)
	createDeployment(t, objtest.MakeDeployment(ns, "serve", 3).NodeSelector(v1alpha1.LabelPool, "upgrade-gpu").Tolerate("bg").Obj())
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "serve", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=serve", 3)

	next := loadBlueprint(t, upgradeBlueprint(t, ""))
	plan, err := apply.Compute(ctx, clients, next, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	plan.Render(&text)
	for _, want := range []string{
		"± replace pool upgrade-gpu: blue/green",
		"kubernetes version: " + from + " → " + to,
		"1. control plane first: the local cluster's is already " + to,
		"2. create upgrade-gpu-g2-0, upgrade-gpu-g2-1 at kubelet " + to,
		"4. drain them one at a time",
		"5. delete upgrade-gpu-0, upgrade-gpu-1 (kubelet " + from + ")",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan does not say %q:\n%s", want, text.String())
		}
	}

	ready := watchReady(t, ns, "serve")
	var progress strings.Builder
	if err := apply.Execute(ctx, clients, plan, apply.ExecOptions{Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "verified: the new node(s) report kubelet "+to) {
		t.Errorf("progress does not show the verification:\n%s", progress.String())
	}
	final := readyPods(t, ns, "serve")
	if fewest := ready.until(t, final); fewest < 2 {
		t.Errorf("during the upgrade only %d pods were ready; the budget asks for 2", fewest)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=upgrade-gpu"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, node := range nodes.Items {
		names = append(names, node.Name)
		if got := node.Status.NodeInfo.KubeletVersion; got != to {
			t.Errorf("node %s reports kubelet %s, want %s", node.Name, got, to)
		}
	}
	if strings.Join(names, ",") != "upgrade-gpu-g2-0,upgrade-gpu-g2-1" {
		t.Errorf("pool nodes after the upgrade = %v, want the two of generation 2", names)
	}
	if len(final) != 3 {
		t.Fatalf("%d serve pods ready after the upgrade, want 3", len(final))
	}
	for _, p := range final {
		if !strings.HasPrefix(p.Spec.NodeName, "upgrade-gpu-g2-") {
			t.Errorf("pod %s runs on %s, not on the new nodes", p.Name, p.Spec.NodeName)
		}
	}
	plan, err = apply.Compute(ctx, clients, next, apply.Options{})
	if err != nil || !plan.Empty() {
		t.Errorf("plan after the upgrade: %v, empty %v; want nothing left to do", err, plan != nil && plan.Empty())
	}
}
