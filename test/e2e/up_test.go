package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gpuOnly is a design whose classes all have a priority, and whose GPU
// classes have only GPU pools: inferencePools are the pools of its
// inference class.
func gpuOnly(inferencePools string) string {
	return `apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: gpu-only}
spec:
  pools:
  - name: system
    mode: System
    machine: {cpu: 4, memory: 16Gi}
    count: 1
    taints: ["CriticalAddonsOnly=true:NoSchedule"]
  - name: cpu
    machine: {cpu: 8, memory: 32Gi}
    count: 1
  - name: gpu
    machine: {cpu: 8, memory: 32Gi, gpu: {count: 1, product: NVIDIA-L4}}
    count: 1
    taints: ["gpu=true:NoSchedule"]
  teams:
  - name: team-a
    quota: {gpu: 4}
  classes:
  - name: inference
    priority: high
    pools: ` + inferencePools + `
  - name: training
    priority: low
    preemption: Never
    pools: [gpu]
`
}

// berth up is ready for a blueprint with no class a bare CPU pod of no
// priority could be placed by: its readiness probe is a pod each class's
// policies place and its guardrails admit (the class's priority class,
// and a GPU where its pools all have GPUs).
func TestUpWithoutAPlainCPUClass(t *testing.T) {
	for _, c := range []struct{ name, pools string }{
		{"GPU classes only", "[gpu]"},
		{"inference on cpu and gpu", "[cpu, gpu]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			bpFile := filepath.Join(home, "gpu-only.yaml")
			if err := os.WriteFile(bpFile, []byte(gpuOnly(c.pools)), 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := berth(t, home, "up", "-d", "-f", bpFile, "--name", "gpu-only")
			t.Cleanup(func() { berth(t, home, "down", "--name", "gpu-only", "--purge") })
			if code != 0 || !strings.Contains(out, "guardrails in force") {
				t.Fatalf("berth up exited %d; want 0 with the guardrails in force:\n%s", code, out)
			}
		})
	}
}

// What berth up prints at ready is true when printed: the autoscaler's
// table counts the nodes the pools table shows Ready (its status was
// written before they registered).
func TestUpPrintsTheAutoscalerOfItsNodes(t *testing.T) {
	home := t.TempDir()
	bpFile := filepath.Join(home, "retail.yaml")
	mustBerth(t, home, "init", bpFile)
	out := mustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "fresh")
	t.Cleanup(func() { berth(t, home, "down", "--name", "fresh", "--purge") })

	pools, scaled := tableRows(out, "POOL  ", 2), tableRows(out, "AUTOSCALER", 1)
	if pools["cpu"] != "4/4" {
		t.Fatalf("berth up's pools table shows cpu %q Ready; want the retail template's 4/4:\n%s", pools["cpu"], out)
	}
	if len(scaled) != 3 {
		t.Fatalf("berth up's autoscaler table has pools %v; want the retail template's three autoscaled pools:\n%s", scaled, out)
	}
	for pool, readyTarget := range scaled {
		if readyTarget != pools[pool] {
			t.Errorf("berth up's autoscaler table shows pool %s at %s ready/target; its nodes are %s Ready:\n%s", pool, readyTarget, pools[pool], out)
		}
	}
}

// tableRows reads the first table after the line that starts with
// title: each row's first column and its column col, up to the first
// line that is blank or indented (a note under the table). A header
// line right after title is skipped.
func tableRows(out, title string, col int) map[string]string {
	rows := map[string]string{}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, title) {
			continue
		}
		start := i + 1
		if strings.HasPrefix(lines[start], "POOL") {
			start++
		}
		for _, row := range lines[start:] {
			f := strings.Fields(row)
			if len(f) <= col || strings.HasPrefix(row, " ") {
				break
			}
			rows[f[0]] = f[col]
		}
		break
	}
	return rows
}
