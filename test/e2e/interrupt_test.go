package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/test/harness"
)

// An apply killed in the middle of a blue/green replacement (new nodes
// up, old ones cordoned, a drain held by a budget) converges when run
// again: `berth plan` shows the replacement being finished, and `berth
// apply` finishes it.
func TestKilledApplyConverges(t *testing.T) {
	ctx := context.Background()
	removeNodesOf(t, "killed")
	if err := applyBlueprint(ctx, loadBlueprint(t, poolBlueprint("killed", "bg=old:NoSchedule")), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	createDeployment(t, objtest.MakeDeployment(ns, "serve", 2).NodeSelector(v1alpha1.LabelPool, "killed-gpu").Tolerate("bg").Obj())
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "serve", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=serve", 2)

	home := t.TempDir()
	file := filepath.Join(home, "killed.yaml")
	if err := os.WriteFile(file, []byte(poolBlueprint("killed", "bg=new:NoSchedule")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := harness.Command(t, home, "apply", "--kubeconfig", kubeconfig, "-f", file, "--drain-timeout", "10m")
	var out harness.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the apply to reach the blocked drain", func() (bool, error) {
		return strings.Contains(out.String(), "held by a disruption budget"), nil
	})
	cmd.Process.Kill()
	cmd.Wait()

	out2, code := berth(t, home, "plan", "--kubeconfig", kubeconfig, "-f", file)
	if code != 2 || !strings.Contains(out2, "finishing the replacement of generation 1 by 2") {
		t.Fatalf("plan after the kill exited %d, want 2 and the replacement being finished:\n%s", code, out2)
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "serve", types.MergePatchType, []byte(`{"spec":{"minAvailable":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, home, "apply", "--kubeconfig", kubeconfig, "-f", file)
	out3, code := berth(t, home, "plan", "--kubeconfig", kubeconfig, "-f", file)
	if code != 0 {
		t.Errorf("plan after the second apply exited %d, want 0:\n%s", code, out3)
	}
	// apply returns once the drained pods run again: both replicas are
	// ready now, and only on the new generation's nodes.
	ready := readyPods(t, ns, "serve")
	if len(ready) != 2 {
		t.Errorf("%d serve pods ready after the finished replacement, want 2", len(ready))
	}
	for _, p := range ready {
		if !strings.HasPrefix(p.Spec.NodeName, "killed-gpu-g2-") {
			t.Errorf("pod %s runs on %s after the finished replacement", p.Name, p.Spec.NodeName)
		}
	}
}
