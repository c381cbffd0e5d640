package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/controller/job"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// The smoke tests: one short run of each feature whose full tests are in
// the long tier (test/long, `go test -tags long`), so that the quick
// tier still fails when one of them stops working at all.

// retailFile writes the retail template, changed by edit, into dir.
func retailFile(t *testing.T, dir string, edit func(string) string) string {
	t.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "retail.yaml")
	if err := os.WriteFile(file, []byte(edit(string(raw))), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestRehearseSmoke rehearses one one-GPU training job of an hour on the
// retail template (no provisioning time): it waits for the autoscaler's
// first scan (two on the spot pool, which the expander tries second) and
// runs its hour, and the Job completes a batch period later
// (test/long/rehearse has the hand-worked scenarios).
func TestRehearseSmoke(t *testing.T) {
	home := t.TempDir()
	bp := retailFile(t, home, func(s string) string { return s })
	trace := filepath.Join(home, "one.csv")
	if err := os.WriteFile(trace, []byte("submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model\n0s,team-a,training,one,1,1,4,16Gi,1h,,,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := berthOut(t, home, "rehearse", "-o", "json", "-f", bp, "--trace", trace)
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("berth rehearse: exit %d, %v\n%s%s", code, err, errOut, out)
	}
	if len(r.Jobs) != 1 || r.Jobs[0].Wait == nil || r.Jobs[0].Run == nil || len(r.Jobs[0].RanOn) != 1 {
		t.Fatalf("want one job that ran on one pool: %+v", r.Jobs)
	}
	j := r.Jobs[0]
	scan := v1alpha1.DefaultScanInterval
	want := map[string]time.Duration{"gpu": scan, "spot-gpu": 2 * scan}[j.RanOn[0]]
	within := func(what string, got, want time.Duration) {
		if (got - want).Abs() > time.Duration(r.Tolerance) {
			t.Errorf("the job's %s on %s is %s; want %s", what, j.RanOn[0], got, want)
		}
	}
	within("wait", time.Duration(*j.Wait), want)
	within("run", time.Duration(*j.Run), time.Hour+job.SyncJobBatchPeriod)
}

// TestKarpenterSmoke starts a cluster with provisioner: Karpenter through
// the command line, finds its NodePools as the plan would make them, and
// has Karpenter's own controllers launch a node for a training pod (test/long/karpenter has consolidation, budgets, drift,
// interruptions, limits and resume).
func TestKarpenterSmoke(t *testing.T) {
	home := t.TempDir()
	bp := retailFile(t, home, func(s string) string {
		return strings.Replace(s, "  teams:\n", "  provisioner: Karpenter\n  teams:\n", 1)
	})
	mustBerth(t, home, "up", "-d", "-f", bp, "--name", "karp-smoke")
	t.Cleanup(func() { berth(t, home, "down", "--name", "karp-smoke", "--purge") })
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-karp-smoke"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The node class and NodePools are in the plan: as berth up made
	// them, the plan has nothing to do.
	if out, code := berth(t, home, "plan", "-f", bp, "--context", "berth-karp-smoke"); code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("berth plan right after berth up: exit %d, want 0 and no changes:\n%s", code, out)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	job := objtest.TrainingJob("team-a", "smoke")
	job.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDuration: "10m"} // running while the test looks
	if _, err := c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the training pod running on a node Karpenter launched", func() (bool, error) {
		pods, err := c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=smoke"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		node, err := c.CoreV1().Nodes().Get(ctx, pods.Items[0].Spec.NodeName, metav1.GetOptions{})
		return err == nil && node.Labels[v1alpha1.LabelKarpenterNodePool] != "", err
	})
}

// TestDashSmoke serves `berth dash` on the suite's cluster and reads its
// overview, as a page and as JSON: the blueprint's pools are on both
// (test/long/dash drives every page in Chromium).
func TestDashSmoke(t *testing.T) {
	home := t.TempDir()
	if err := os.Symlink(kubeconfig, filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	url := harness.Dash(t, home, "-f", "testdata/e2e.yaml")
	for _, path := range []string{"/", "/api/overview"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, %v\n%s", path, resp.StatusCode, err, body)
		}
		for _, pool := range bp.Spec.Pools {
			if !strings.Contains(string(body), pool.Name) {
				t.Errorf("GET %s does not name pool %s:\n%s", path, pool.Name, body)
			}
		}
	}
}

// TestKueueSmoke starts the retail template with queueing: Kueue through
// the command line, with berth-kueue built for it, and submits a training
// Job that names no queue: the guardrails give it team-a's, Kueue's
// webhook suspends it at creation, and Kueue admits it onto a GPU pool
// (test/long/kueue has waiting, borrowing and reclaim, flavors, why and
// resume).
func TestKueueSmoke(t *testing.T) {
	home := t.TempDir()
	binary := filepath.Join(home, "berth-kueue")
	if out, err := exec.Command("go", "build", "-o", binary, "berth.io/berth/cmd/berth-kueue").CombinedOutput(); err != nil {
		t.Fatalf("building berth-kueue: %v\n%s", err, out)
	}
	t.Setenv(cluster.KueueBinaryEnv, binary)
	bp := retailFile(t, home, func(s string) string {
		return strings.Replace(s, "  pools:\n", "  queueing: Kueue\n  pools:\n", 1)
	})
	up := mustBerth(t, home, "up", "-d", "-f", bp, "--name", "kueue-smoke")
	t.Cleanup(func() { berth(t, home, "down", "--name", "kueue-smoke", "--purge") })
	if !strings.Contains(up, "QUEUES (Kueue)") {
		t.Errorf("berth up's ready message does not show Kueue's queues:\n%s", up)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-kueue-smoke"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	job := objtest.TrainingJob("team-a", "smoke")
	job.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDuration: "10m"}
	got, err := c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1alpha1.LabelKueueQueueName] != "team-a" || got.Spec.Suspend == nil || !*got.Spec.Suspend {
		t.Errorf("the Job came back in queue %q, suspended %v; want team-a's queue, suspended by Kueue", got.Labels[v1alpha1.LabelKueueQueueName], got.Spec.Suspend)
	}
	eventually(t, 2*time.Minute, "the training pod Kueue admitted running on a GPU pool", func() (bool, error) {
		pods, err := c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=smoke"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		node, err := c.CoreV1().Nodes().Get(ctx, pods.Items[0].Spec.NodeName, metav1.GetOptions{})
		return err == nil && strings.Contains(node.Labels[v1alpha1.LabelPool], "gpu"), err
	})
}
