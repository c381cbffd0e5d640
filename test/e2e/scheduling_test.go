package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var readFile = os.ReadFile

// Behaviour 1: the system pool takes only pods that tolerate
// CriticalAddonsOnly; add-ons that tolerate and select it land there.
func TestSystemPoolTakesOnlyCriticalAddons(t *testing.T) {
	ns := namespace(t)
	makeDeployment(ns, "web", 12).create(t)
	// Add-ons run in a system namespace: only those may tolerate the
	// System pool's taint.
	dnsName := "coredns-" + fmt.Sprint(time.Now().UnixNano()%100000)
	makeDeployment(systemNS, dnsName, 2).toleration("CriticalAddonsOnly").nodeSelector(poolLabel, "system").create(t)
	t.Cleanup(func() {
		client.AppsV1().Deployments(systemNS).Delete(context.Background(), dnsName, metav1.DeleteOptions{})
	})

	web := runningPods(t, ns, "app=web", 12)
	if n := countBy(t, web, poolLabel)["system"]; n != 0 {
		t.Errorf("%d pods without the CriticalAddonsOnly toleration landed on the system pool", n)
	}
	dns := runningPods(t, systemNS, "app="+dnsName, 2)
	if diff := cmp.Diff(map[string]int{"system": 2}, countBy(t, dns, poolLabel)); diff != "" {
		t.Errorf("CoreDNS-like pods by pool (-want +got):\n%s", diff)
	}
}

// Behaviour 1: an nginx Deployment never lands on a GPU node; a pod that
// tolerates the GPU taint and asks for a GPU does, and GPUs are counted
// per node.
func TestGPUPoolTakesOnlyGPUPods(t *testing.T) {
	ns := namespace(t)
	makeDeployment(ns, "nginx", 20).create(t)
	nginx := runningPods(t, ns, "app=nginx", 20)
	if n := countBy(t, nginx, poolLabel)["gpu"]; n != 0 {
		t.Errorf("%d nginx pods landed on the GPU pool", n)
	}

	// GPU pods run in a namespace whose team has a GPU quota: the
	// guardrails refuse the GPU toleration anywhere else.
	clearPods(t, gpuLab)
	ctx := context.Background()
	for _, name := range []string{"train-0", "train-1", "train-2"} {
		if _, err := client.CoreV1().Pods(gpuLab).Create(ctx, gpuPod(gpuLab, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pool has two nodes of one GPU each: two pods run, one per node,
	// and the third waits for a GPU.
	var placed map[string]string
	eventually(t, time.Minute, "two GPU pods bound", func() (bool, error) {
		placed = map[string]string{}
		for _, name := range []string{"train-0", "train-1", "train-2"} {
			p, err := client.CoreV1().Pods(gpuLab).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				placed[name] = p.Spec.NodeName
			}
		}
		return len(placed) == 2, nil
	})
	nodes := nodeLabels(t)
	perNode := map[string]int{}
	for _, node := range placed {
		if nodes[node][poolLabel] != "gpu" {
			t.Errorf("GPU pod ran on %s, pool %q, not the GPU pool", node, nodes[node][poolLabel])
		}
		perNode[node]++
	}
	for node, n := range perNode {
		if n > 1 {
			t.Errorf("node %s runs %d one-GPU pods but has one GPU", node, n)
		}
	}
	eventually(t, time.Minute, "the third GPU pod to be unschedulable for lack of GPUs", func() (bool, error) {
		for _, name := range []string{"train-0", "train-1", "train-2"} {
			if _, ok := placed[name]; ok {
				continue
			}
			p, err := client.CoreV1().Pods(gpuLab).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					return strings.Contains(c.Message, "Insufficient nvidia.com/gpu"), nil
				}
			}
		}
		return false, nil
	})
}

// Behaviour 2: the AKS article's app-deploy.yaml puts all 100 pods on the
// pool it selects with agentpool: appsnodepool.
func TestAppDeployLandsOnItsPool(t *testing.T) {
	ns := namespace(t)
	var d appsv1.Deployment
	decodeFile(t, "testdata/app-deploy.yaml", &d)
	d.Namespace = ns
	if _, err := client.AppsV1().Deployments(ns).Create(context.Background(), &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := runningPods(t, ns, "app=app-deploy", 100)
	if diff := cmp.Diff(map[string]int{"appsnodepool": 100}, countBy(t, pods, "agentpool")); diff != "" {
		t.Errorf("app-deploy pods by pool (-want +got):\n%s", diff)
	}
}

// Behaviour 7: a zone TopologySpreadConstraint spreads six replicas 2/2/2.
func TestZoneSpread(t *testing.T) {
	ns := namespace(t)
	// The eligible nodes are uneven: cpu has one node per zone, appsnodepool
	// five in zone-3. Only the constraint keeps zone-3 from taking most.
	makeDeployment(ns, "inference", 6).zoneSpread().create(t)
	pods := runningPods(t, ns, "app=inference", 6)
	want := map[string]int{"zone-1": 2, "zone-2": 2, "zone-3": 2}
	if diff := cmp.Diff(want, countBy(t, pods, corev1.LabelTopologyZone)); diff != "" {
		t.Errorf("replicas by zone (-want +got):\n%s", diff)
	}
}
