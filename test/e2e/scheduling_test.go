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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/status"
)

var readFile = os.ReadFile

// Behaviour 1: the system pool takes only pods that tolerate
// CriticalAddonsOnly; add-ons that tolerate and select it land there.
func TestSystemPoolTakesOnlyCriticalAddons(t *testing.T) {
	ns := namespace(t)
	createDeployment(t, objtest.MakeDeployment(ns, "web", 12).Obj())
	// Add-ons run in a system namespace: only those may tolerate the
	// System pool's taint.
	dnsName := "coredns-" + fmt.Sprint(time.Now().UnixNano()%100000)
	createDeployment(t, objtest.MakeDeployment(systemNS, dnsName, 2).Tolerate("CriticalAddonsOnly").NodeSelector(poolLabel, "system").Obj())
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
	createDeployment(t, objtest.MakeDeployment(ns, "nginx", 20).Obj())
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

// spreadBlueprint has pools of its own for TestZoneSpread: four big
// nodes in zone-1 and one small node in each of zone-2 and zone-3, all
// labelled e2e-spread=yes and tainted so that no other pod lands there.
const spreadBlueprint = `
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: spread}
spec:
  guardrails: Off # the suite's blueprint holds the cluster's guardrails
  zones: [zone-1, zone-2, zone-3]
  pools:
  - {name: spread-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1, zones: [zone-1], taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - name: spread-big
    machine: {cpu: 32, memory: 128Gi}
    count: 4
    zones: [zone-1]
    labels: {e2e-spread: "yes"}
    taints: ["e2e-spread=yes:NoSchedule"]
  - name: spread-small
    machine: {cpu: 16, memory: 64Gi}
    count: 2
    zones: [zone-2, zone-3]
    labels: {e2e-spread: "yes"}
    taints: ["e2e-spread=yes:NoSchedule"]
`

// Behaviour 7: a zone TopologySpreadConstraint spreads six replicas 2/2/2
// where the scheduler's scoring alone would not: zone-1 has four big
// empty nodes, zone-2 and zone-3 one node each with room for just two
// replicas. Without the constraint the same Deployment crowds into
// zone-1 (the default spreading is soft, and loses to free capacity);
// with it, every zone gets two.
func TestZoneSpread(t *testing.T) {
	ctx := context.Background()
	removeNodesOf(t, "spread")
	if err := applyBlueprint(ctx, loadBlueprint(t, spreadBlueprint), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	clearPods(t, ns)
	replica := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	// A pod that succeeded and one that failed on a small node: status's
	// field selector leaves them out of the pool's requests, as the
	// scheduler does (a fake client ignores field selectors, so this is
	// the selector's test).
	finishedOn(t, ns, "spread-small-0", corev1.PodSucceeded, replica)
	finishedOn(t, ns, "spread-small-1", corev1.PodFailed, replica)
	// Fill each small node to leave room for exactly two replicas.
	for _, node := range []string{"spread-small-0", "spread-small-1"} {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fill := corev1.ResourceList{}
		for name, r := range replica {
			q := n.Status.Allocatable[name]
			q.Sub(r)
			q.Sub(r)
			fill[name] = q
		}
		p := plainPod(ns, "fill-"+node)
		p.Labels = map[string]string{"app": "fill"}
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "e2e-spread", Operator: corev1.TolerationOpExists}}
		p.Spec.Containers[0].Resources.Requests = fill
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runningPods(t, ns, "app=fill", 2)
	statusCountsPool(t, "spread-small")

	byZone := func(name string, spread bool) map[string]int {
		d := objtest.MakeDeployment(ns, name, 6).NodeSelector("e2e-spread", "yes").Tolerate("e2e-spread")
		d.Spec.Template.Spec.Containers[0].Resources.Requests = replica
		if spread {
			d.ZoneSpread()
		}
		createDeployment(t, d.Obj())
		by := countBy(t, runningPods(t, ns, "app="+name, 6), corev1.LabelTopologyZone)
		deleteDeployment(t, ns, name)
		eventually(t, time.Minute, "the pods of "+name+" gone", func() (bool, error) {
			l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			return err == nil && len(l.Items) == 0, err
		})
		return by
	}
	by := byZone("unconstrained", false)
	t.Logf("without the constraint, replicas by zone: %v", by)
	if by["zone-1"] <= 2 {
		t.Fatalf("without the constraint the replicas spread %v by zone; zone-1 should take most, or this test cannot tell the constraint's work from the scheduler's scoring", by)
	}
	want := map[string]int{"zone-1": 2, "zone-2": 2, "zone-3": 2}
	if diff := cmp.Diff(want, byZone("spread", true)); diff != "" {
		t.Errorf("replicas by zone with the constraint (-want +got):\n%s", diff)
	}
}

// finishedOn runs a pod requesting req on node and, once it runs, sets
// its phase to a finished one (Succeeded or Failed), as a kubelet would
// when its containers exit; KWOK's stages leave a finished pod alone.
func finishedOn(t *testing.T, ns, node string, phase corev1.PodPhase, req corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	p := plainPod(ns, strings.ToLower(string(phase))+"-on-"+node)
	p.Labels = map[string]string{"app": "finished"}
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "e2e-spread", Operator: corev1.TolerationOpExists}}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers[0].Resources.Requests = req
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "pod "+p.Name+" running, then "+string(phase), func() (bool, error) {
		got, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch got.Status.Phase {
		case phase:
			return true, nil
		case corev1.PodRunning:
			got.Status.Phase = phase
			_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				err = nil
			}
			return false, err
		}
		return false, nil
	})
}

// statusCountsPool checks that berth status's requested resources for a
// pool, read by pages with field selectors on the server, are the requests
// of the pods that a plain list of every pod finds on the pool's nodes.
func statusCountsPool(t *testing.T, pool string) {
	t.Helper()
	ctx := context.Background()
	sum, err := status.Collect(ctx, client, listing.FromAPI(client), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.ResourceList
	for _, p := range sum.Pools {
		if p.Name == pool {
			got = p.Requested
		}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "berth.io/pool=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	onPool := map[string]bool{}
	for _, n := range nodes.Items {
		onPool[n.Name] = true
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !onPool[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			cur := want[name]
			cur.Add(q)
			want[name] = cur
		}
	}
	if want.Cpu().IsZero() {
		t.Fatalf("no pod requests CPU on pool %s: nothing to compare status with", pool)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if g, w := got[name], want[name]; g.Cmp(w) != 0 {
			t.Errorf("berth status: pool %s requests %s %s; its nodes' pods request %s", pool, g.String(), name, w.String())
		}
	}
}
