package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// A second cluster, driven through the real command line: objects survive
// `berth down` and `berth up`; a running cluster's state is not taken
// twice; a broken blueprint starts nothing.
func TestUpDownResume(t *testing.T) {
	home := t.TempDir()
	bpFile := filepath.Join(home, "minimal.yaml")
	mustBerth(t, home, "init", "--template", "minimal", bpFile)

	out := mustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "resume")
	for _, want := range []string{`Cluster "resume" started and ready`, "system", "workers", "kubectl --context berth-resume"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth up output lacks %q:\n%s", want, out)
		}
	}
	t.Cleanup(func() { berth(t, home, "down", "--name", "resume", "--purge") })

	// up applied the blueprint: plan (the saved blueprint of the current
	// context berth-resume) finds nothing to do.
	if out, code := berth(t, home, "plan"); code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("berth plan right after berth up exited %d, want 0 and no changes:\n%s", code, out)
	}

	// The context was merged into the user's kubeconfig, as kind does.
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-resume"}).ClientConfig()
	if err != nil {
		t.Fatalf("context berth-resume: %v", err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives", Namespace: "default"}, Data: map[string]string{"model": "v7"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if out, code := berth(t, home, "up", "-d", "-f", bpFile, "--name", "resume"); code == 0 || !strings.Contains(out, "already running") {
		t.Errorf("a second `berth up` of a running cluster: exit %d, want an error saying it is already running:\n%s", code, out)
	}

	mustBerth(t, home, "down", "--name", "resume")
	if out, code := berth(t, home, "plan"); code != 1 || !strings.Contains(out, "cannot reach the API server of context berth-resume") || !strings.Contains(out, "berth up --name resume") {
		t.Errorf("berth plan of a stopped cluster exited %d, want 1 with the fix:\n%s", code, out)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{}); err == nil {
		t.Fatal("the API still answers after `berth down`")
	}
	out = mustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "resume")
	if !strings.Contains(out, `Cluster "resume" resumed`) {
		t.Errorf("second `berth up` did not say it resumed:\n%s", out)
	}
	got, err := c.CoreV1().ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap after down and up: %v", err)
	}
	if got.Data["model"] != "v7" {
		t.Errorf("ConfigMap data after resume = %v", got.Data)
	}

	out = mustBerth(t, home, "status", "--context", "berth-resume")
	for _, want := range []string{"system", "workers", "2/2"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth status lacks %q:\n%s", want, out)
		}
	}
}

func TestUpRefusesBrokenBlueprint(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(home, "bad.yaml")
	os.WriteFile(bad, []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: bad}
spec:
  pools:
  - name: system
    mode: System
    machine: {cpu: 4, memory: 16Gi}
    count: 2
    taints: ["CriticalAddonsOnly=true:NoSchedual"]
`), 0o600)
	out, code := berth(t, home, "up", "-f", bad, "--name", "bad")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if want := bad + `:10: spec.pools[0].taints[0]: effect "NoSchedual" is not one of NoSchedule, PreferNoSchedule, NoExecute`; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if _, err := os.Stat(filepath.Join(home, "clusters", "bad")); !os.IsNotExist(err) {
		t.Errorf("a refused blueprint left state behind (stat: %v)", err)
	}
}

// Start-up problems are explained, and nothing is started.
func TestUpExplainsBadState(t *testing.T) {
	home := t.TempDir()
	bpFile := filepath.Join(home, "minimal.yaml")
	mustBerth(t, home, "init", "--template", "minimal", bpFile)

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port

	foreign := filepath.Join(home, "foreign")
	os.MkdirAll(foreign, 0o700)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o600)
	corrupt := filepath.Join(home, "corrupt")
	os.MkdirAll(corrupt, 0o700)
	os.WriteFile(filepath.Join(corrupt, "cluster.json"), []byte("{not json"), 0o600)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port in use", []string{"--name", "busy", "--port", fmt.Sprint(port)}, fmt.Sprintf("port %d on 127.0.0.1, wanted for the API server, is in use", port)},
		{"foreign directory", []string{"--state-dir", foreign}, "is not empty and holds no berth cluster"},
		{"corrupt state", []string{"--state-dir", corrupt}, "is corrupt or was not written by this berth"},
		{"unknown pool in --nodes", []string{"--name", "n", "--nodes", "gpu=2"}, `has no pool "gpu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := berth(t, home, append([]string{"up", "-f", bpFile}, tc.args...)...)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 1 with %q in:\n%s", code, tc.want, out)
			}
		})
	}
	if data, _ := os.ReadFile(filepath.Join(foreign, "notes.txt")); string(data) != "mine" {
		t.Error("berth touched a foreign directory's files")
	}
}
