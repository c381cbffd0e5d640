package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/internal/cli"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/why"
)

// whyCLI runs `berth why ARGS` in this process against the e2e cluster
// and returns what it printed.
func whyCLI(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	var out bytes.Buffer
	root := cli.NewRootCommand(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig, "why"}, args...))
	err := root.Execute()
	return out.String(), err
}

// whyVerdict runs `berth why ARGS -f testdata/e2e.yaml -o json`.
func whyVerdict(t *testing.T, args ...string) why.Verdict {
	t.Helper()
	out, err := whyCLI(t, append(args, "-f", "testdata/e2e.yaml", "-o", "json")...)
	if err != nil {
		t.Fatalf("berth why %v: %v\n%s", args, err, out)
	}
	var v why.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("berth why -o json: %v\n%s", err, out)
	}
	return v
}

// wantVerdict checks the verdict's cause and that message and fix hold
// the given parts.
func wantVerdict(t *testing.T, v why.Verdict, code string, message, fix []string) {
	t.Helper()
	if v.Top.Code != code {
		t.Errorf("berth why: cause %s, want %s: %s", v.Top.Code, code, v.Top.Message)
	}
	for _, m := range message {
		if !strings.Contains(v.Top.Message, m) {
			t.Errorf("verdict lacks %q:\n%s", m, v.Top.Message)
		}
	}
	for _, f := range fix {
		if !strings.Contains(v.Top.Fix, f) {
			t.Errorf("fix lacks %q:\n%s", f, v.Top.Fix)
		}
	}
}

func hasCause(v why.Verdict, code string) bool {
	for _, c := range v.Causes {
		if c.Code == code {
			return true
		}
	}
	return false
}

// createPending creates the pod and waits until the scheduler has found
// no node for it.
func createPending(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	eventually(t, time.Minute, "pod "+p.Name+" unschedulable", func() (bool, error) {
		got, err := client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
}

func plainPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
}

// A GPU pod without the GPU taint's toleration: no pool tolerates it,
// and in a namespace without GPU quota the guardrails would refuse the
// toleration, which the fix says.
func TestWhyUntoleratedGPUTaint(t *testing.T) {
	ns := namespace(t)
	p := plainPod(ns, "gpu-no-toleration")
	p.Spec.Containers[0].Resources.Limits = gpuLimits("1")
	createPending(t, p)

	v := whyVerdict(t, p.Name, "-n", ns)
	wantVerdict(t, v, why.CauseTaint,
		[]string{"no pool tolerates the pod: pool gpu has taint gpu=true:NoSchedule; pool gpu-x4 has taint gpu-x4=true:NoSchedule; pool spot-gpu has taints gpu=true:NoSchedule, berth.io/capacity=spot:NoSchedule"},
		[]string{`{key: gpu, operator: Equal, value: "true", effect: NoSchedule}`, "namespace " + ns + " has no GPU quota", "team-a, team-b, gpu-lab"})
	if v.Scheduler == nil || !strings.Contains(v.Scheduler.Message, "untolerated taint") {
		t.Errorf("the scheduler's own account is not quoted: %+v", v.Scheduler)
	}

	out, err := whyCLI(t, p.Name, "-n", ns, "-f", "testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Pod " + ns + "/gpu-no-toleration is Pending", "Verdict: no pool tolerates the pod", "cause: untolerated-taint", "Scheduler\n  PodScheduled=False Unschedulable: 0/", "Pools\n  POOL"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth why text lacks %q:\n%s", want, out)
		}
	}
}

// A node selector no pool's nodes carry; without -f the retail template
// (which these nodes do not belong to) is not used.
func TestWhyNodeSelectorMatchesNoPool(t *testing.T) {
	ns := namespace(t)
	p := plainPod(ns, "lost")
	p.Spec.NodeSelector = map[string]string{"agentpool": "why-nowhere"}
	createPending(t, p)

	v := whyVerdict(t, p.Name, "-n", ns)
	wantVerdict(t, v, why.CauseNodeAffinity,
		[]string{"nodeSelector agentpool=why-nowhere: nodes have agentpool=", "appsnodepool", "spot-gpu"},
		[]string{"select one of the pools"})

	// No ./berth.yaml here, and no saved blueprint for context berth-e2e
	// in this BERTH_HOME: berth why takes the blueprint the cluster
	// records when it records one (e2e, the nodes' own), and otherwise
	// (other tests here record blueprints of their own) says that none
	// describes the pools, rather than judge them by the retail template.
	t.Setenv("BERTH_HOME", t.TempDir())
	out, err := whyCLI(t, p.Name, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "no blueprint describes this cluster's pools") && !strings.Contains(out, "(blueprint e2e from the cluster's record") {
		t.Errorf("without -f, berth why used a blueprint the nodes do not belong to:\n%s", out)
	}

	if out, err := whyCLI(t, "no-such-pod", "-n", ns); err == nil || !strings.Contains(err.Error(), "berth why deployment/NAME") {
		t.Errorf("berth why of a missing pod: %v, want the not-found error with the fix\n%s", err, out)
	}
}

// With both GPUs of pool gpu taken, a pod that must run there waits: the
// numbers, preemption (impossible for an equal priority, off for a
// training pod) and the pool at its maximum.
func TestWhyGPUPoolFull(t *testing.T) {
	ctx := context.Background()
	ns := gpuLab
	clearPods(t, ns)
	onGPUPool := func(name string) *corev1.Pod {
		p := gpuPod(ns, name)
		p.Spec.NodeSelector = map[string]string{poolLabel: "gpu"}
		return p
	}
	for _, name := range []string{"why-fill-0", "why-fill-1"} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, onGPUPool(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, "both GPUs of pool gpu taken", func() (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, nil
	})

	createPending(t, onGPUPool("why-plain"))
	v := whyVerdict(t, "why-plain", "-n", ns)
	wantVerdict(t, v, why.CauseResources, []string{
		"pool gpu is full: nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes",
		"preemption cannot help",
		"pool gpu is at its maximum of 2 nodes (autoscale 0-2)",
	}, []string{"raise pool gpu's autoscale.max in the blueprint"})

	never := onGPUPool("why-never")
	never.Spec.PriorityClassName = "training-low"
	createPending(t, never)
	v = whyVerdict(t, "why-never", "-n", ns)
	wantVerdict(t, v, why.CauseResources, []string{
		"pool gpu is full: nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes",
		"preemption is off: PriorityClass training-low, value 1000, sets preemptionPolicy Never, so the pod waits rather than evict gpu-lab/why-fill-",
	}, []string{"give the pod a PriorityClass that may preempt"})
	if !hasCause(v, why.CausePreemptNever) || !hasCause(v, why.CausePoolAtMax) {
		t.Errorf("supporting causes lack preemption-never or pool-at-max: %+v", v.Causes)
	}
	if v.Priority == nil || v.Priority.Value != 1000 || v.Priority.PreemptionPolicy != "Never" {
		t.Errorf("priority = %+v", v.Priority)
	}
}

// A zone spread the pod can never satisfy: it may only run in zone-3,
// but its constraint (nodeAffinityPolicy Ignore) counts every zone.
func TestWhyTopologySpread(t *testing.T) {
	ns := namespace(t)
	ignore := corev1.NodeInclusionPolicyIgnore
	spread := func(name string) *corev1.Pod {
		p := plainPod(ns, name)
		p.Labels = map[string]string{"app": "why-spread"}
		p.Spec.NodeSelector = map[string]string{"agentpool": "appsnodepool"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:      &metav1.LabelSelector{MatchLabels: p.Labels},
			NodeAffinityPolicy: &ignore,
		}}
		return p
	}
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), spread("spread-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=why-spread", 1)
	createPending(t, spread("spread-1"))

	v := whyVerdict(t, "spread-1", "-n", ns)
	wantVerdict(t, v, why.CauseSpread, []string{
		"pool appsnodepool: topology spread over topology.kubernetes.io/zone: zone-3 has 1 matching pod, zone-1 has 0; placing the pod there makes skew 2 > maxSkew 1",
		"no node in zone-1 passes the pod's other filters",
	}, []string{"raise maxSkew"})
}

// A LimitRange whose default cpu request exceeds every node: the pod,
// which asked for nothing, can never run, and the verdict names the
// LimitRange.
func TestWhyLimitRangeDefaults(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "why-huge-defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
		}}},
	}
	if _, err := client.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPending(t, plainPod(ns, "no-requests"))

	v := whyVerdict(t, "no-requests", "-n", ns)
	wantVerdict(t, v, why.CauseLimitRange, []string{
		"LimitRange why-huge-defaults set cpu request 100 on app (the pod asked for none)",
		"no node is big enough for the pod: cpu requested 100, the largest allocatable is 24",
	}, []string{"set resources.requests (cpu) on the container", "lower the LimitRange's defaultRequest"})
	if len(v.Defaults) != 2 || v.Defaults[0].LimitRange != "why-huge-defaults" {
		t.Errorf("limitRangeDefaults = %+v", v.Defaults)
	}
}

// Team B's two GPUs of quota are held (by Pending pods: quota counts
// them too), so its Deployment's ReplicaSet cannot create a pod: the
// verdict is the quota refusal in numbers, with the blueprint fix.
func TestWhyQuotaRefusesDeployment(t *testing.T) {
	ctx := context.Background()
	ns := "team-b"
	clearPods(t, ns)
	for _, name := range []string{"why-hold-0", "why-hold-1"} {
		p := plainPod(ns, name)
		p.Spec.Containers[0].Resources.Limits = gpuLimits("1")
		createPending(t, p)
	}
	d := objtest.MakeDeployment(ns, "why-quota", 1).Tolerate("gpu").Obj()
	d.Spec.Template.Spec.Containers[0].Resources.Limits = gpuLimits("1")
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteDeployment(t, ns, d.Name) })
	eventually(t, time.Minute, "the ReplicaSet's FailedCreate", func() (bool, error) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		return err == nil && len(l.Items) > 0, err
	})

	v := whyVerdict(t, "deployment/why-quota", "-n", ns)
	wantVerdict(t, v, why.CauseQuotaExceeded, []string{
		"cannot create pods: ResourceQuota team-quota refuses them: requests.nvidia.com/gpu requested 1, used 2 of 2 (0 of 1 pods exist, FailedCreate x",
		"held by why-hold-0 (Pending), why-hold-1 (Pending)",
	}, []string{"raise team team-b's quota.gpu in the blueprint"})
	if v.Workload != "deployment/team-b/why-quota" {
		t.Errorf("workload = %q", v.Workload)
	}

	out, err := whyCLI(t, "--all", "-n", ns, "-f", "testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team-b/why-hold-0", "untolerated-taint", "deployment/team-b/why-quota", "quota-exceeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth why --all lacks %q:\n%s", want, out)
		}
	}

	// Over the whole cluster, the scheduler's events are read in the
	// namespaces with a pod waiting (team-b here), and quoted with it.
	eventually(t, time.Minute, "why --all quoting why-hold-0's FailedScheduling event", func() (bool, error) {
		out, err := whyCLI(t, "--all", "-f", "testdata/e2e.yaml", "-o", "json")
		if err != nil {
			return false, err
		}
		var sum why.Summary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			return false, fmt.Errorf("why --all -o json: %w\n%s", err, out)
		}
		for _, v := range sum.Pods {
			if v.Pod == ns+"/why-hold-0" && v.Scheduler != nil {
				for _, e := range v.Scheduler.Events {
					if e.Reason == "FailedScheduling" {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
}

func deleteDeployment(t *testing.T, ns, name string) {
	ctx := context.Background()
	fg := metav1.DeletePropagationForeground
	client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	eventually(t, time.Minute, "deployment "+name+" gone", func() (bool, error) {
		_, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// A pool of the blueprint with no nodes, autoscale 0-3, whose nodes
// would hold the pod: it could grow from zero, but this local cluster has
// no autoscaler, and the fix says how to rehearse it.
func TestWhyPoolCouldGrow(t *testing.T) {
	raw, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	grown := strings.Replace(string(raw), "  pools:\n", "  pools:\n  - name: why-grow\n    machine: {cpu: 8, memory: 32Gi}\n    autoscale: {min: 0, max: 3}\n", 1)
	file := filepath.Join(t.TempDir(), "grown.yaml")
	if err := os.WriteFile(file, []byte(grown), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	p := plainPod(ns, "burst")
	p.Spec.NodeSelector = map[string]string{poolLabel: "why-grow"}
	createPending(t, p)

	out, err := whyCLI(t, p.Name, "-n", ns, "-f", file, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var v why.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, v, why.CausePoolCanGrow, []string{
		"no node can hold the pod now, but pool why-grow could grow from 0 to 3 nodes (autoscale 0-3), and a new node would hold the pod, but ",
	}, nil)
	// The cluster's autoscaler manages the applied blueprint's pools,
	// which do not include why-grow; without its status, it is not running.
	if !strings.Contains(v.Top.Message, "the cluster's autoscaler does not manage the pool") && !strings.Contains(v.Top.Message, "the autoscaler is not running on this local cluster") {
		t.Errorf("the verdict does not say who would grow the pool: %s", v.Top.Message)
	}
	if !strings.Contains(v.Top.Fix, "`berth apply`") {
		t.Errorf("fix = %s", v.Top.Fix)
	}
}

// Every appsnodepool node cordoned (as `kubectl cordon` does): a pod
// that selects the pool waits, and the verdict is the cordon, with the
// nodes and the fix.
func TestWhyCordoned(t *testing.T) {
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "agentpool=appsnodepool"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 5 {
		t.Fatalf("pool appsnodepool has %d nodes, want the blueprint's 5", len(nodes.Items))
	}
	setUnschedulable := func(name string, on bool) error {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
		_, err := client.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		t.Cleanup(func() {
			if err := setUnschedulable(n.Name, false); err != nil {
				t.Errorf("uncordoning %s: %v", n.Name, err)
			}
		})
		if err := setUnschedulable(n.Name, true); err != nil {
			t.Fatal(err)
		}
	}
	ns := namespace(t)
	p := plainPod(ns, "maintenance")
	p.Spec.NodeSelector = map[string]string{"agentpool": "appsnodepool"}
	createPending(t, p)

	v := whyVerdict(t, p.Name, "-n", ns)
	sort.Strings(names)
	wantVerdict(t, v, why.CauseCordoned,
		[]string{"every node that could hold the pod is cordoned (spec.unschedulable): pool appsnodepool: " + strings.Join(names, ", ")},
		[]string{"`kubectl uncordon NODE`"})
	if v.Scheduler == nil || !strings.Contains(v.Scheduler.Message, "unschedulable") {
		t.Errorf("the scheduler's own account does not name the cordon: %+v", v.Scheduler)
	}
}

// An inference-high pod held by a scheduling gate (as a queue holds it)
// while both GPUs of pool gpu are taken: one by a pod of its own
// priority, one by a priority-0 pod whose budget allows no disruption.
// berth why says the gate holds it, and what happens once it goes:
// preemption could make room by evicting that pod, and the budget is in
// the way. Removing the gate, the scheduler does just that; while the
// victim terminates, the verdict is the preemption in progress.
func TestWhyGatedPreemptionAndBudget(t *testing.T) {
	ctx := context.Background()
	ns := gpuLab
	clearPods(t, ns)
	onGPUPool := func(name, class string) *corev1.Pod {
		p := gpuPod(ns, name)
		p.Spec.NodeSelector = map[string]string{poolLabel: "gpu"}
		p.Spec.PriorityClassName = class
		return p
	}
	// The victim stays terminating until the test lets it go, so that the
	// preemption can be seen in progress.
	const hold = "e2e.berth.io/hold"
	victim := onGPUPool("why-victim", "")
	victim.Labels = map[string]string{"app": "why-victim"}
	victim.Finalizers = []string{hold}
	release := func() error {
		_, err := client.CoreV1().Pods(ns).Patch(context.Background(), victim.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	t.Cleanup(func() {
		if err := release(); err != nil {
			t.Errorf("releasing %s: %v", victim.Name, err)
		}
	})
	for _, p := range []*corev1.Pod{onGPUPool("why-peer", "inference-high"), victim} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "why-victim", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.PolicyV1().PodDisruptionBudgets(ns).Delete(context.Background(), "why-victim", metav1.DeleteOptions{})
	})
	var victimNode string
	eventually(t, time.Minute, "both GPUs of pool gpu taken", func() (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			if p.Name == victim.Name {
				victimNode = p.Spec.NodeName
			}
		}
		return running == 2, nil
	})
	eventually(t, 30*time.Second, "the budget to allow no disruption", func() (bool, error) {
		b, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "why-victim", metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.CurrentHealthy == 1 && b.Status.DisruptionsAllowed == 0, err
	})

	serve := onGPUPool("why-serve", "inference-high")
	serve.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "e2e.berth.io/queue"}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, serve, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the scheduler to hold the gated pod", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, serve.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := scheduledCondition(p)
		return c != nil && c.Reason == corev1.PodReasonSchedulingGated, nil
	})
	v := whyVerdict(t, serve.Name, "-n", ns)
	wantVerdict(t, v, why.CauseGated,
		[]string{"the pod has scheduling gates e2e.berth.io/queue: the scheduler does not consider it until they are removed"},
		[]string{"remove them from spec.schedulingGates"})
	wantCause := func(code string, parts ...string) {
		t.Helper()
		for _, c := range v.Causes {
			if c.Code != code {
				continue
			}
			for _, part := range parts {
				if !strings.Contains(c.Message, part) {
					t.Errorf("cause %s lacks %q:\n%s", code, part, c.Message)
				}
			}
			return
		}
		t.Errorf("no cause %s among %+v", code, v.Causes)
	}
	possible := "preemption could make room on node " + victimNode + " by evicting 1 lower-priority pod: gpu-lab/why-victim (priority 0)"
	wantCause(why.CauseResources, possible, "PDBs in the way: gpu-lab/why-victim")
	wantCause(why.CausePreemptPossible, possible)
	wantCause(why.CausePDB, "PodDisruptionBudget gpu-lab/why-victim covers 1 victim and allows no disruption")

	if _, err := client.CoreV1().Pods(ns).Patch(ctx, serve.Name, types.MergePatchType, []byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler picks the victim berth named, budget or not: nothing
	// else makes room.
	eventually(t, time.Minute, "the scheduler to nominate "+victimNode+" and preempt the victim", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, serve.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		vp, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.NominatedNodeName == victimNode && vp.DeletionTimestamp != nil, nil
	})
	v = whyVerdict(t, serve.Name, "-n", ns)
	wantVerdict(t, v, why.CausePreempting,
		[]string{"preemption in progress: the scheduler nominated node " + victimNode + " for the pod and is making room there; victims terminating: gpu-lab/why-victim"},
		[]string{"wait: the pod is bound once the victims are gone"})

	if err := release(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the preempting pod to run on "+victimNode, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, serve.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == victimNode, err
	})
}

// A pod whose claim names a storage class the cluster does not have:
// the scheduler waits on the claim, and berth why gives the Volumes
// layer's verdict, not the pools' room, with the classes there are.
func TestWhyClaimOfUnknownClass(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	class := "gp3"
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ckpt"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := plainPod(ns, "mounts-gp3")
	p.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}}}
	createPending(t, p)

	v := whyVerdict(t, p.Name, "-n", ns)
	wantVerdict(t, v, why.CauseClaimClass,
		[]string{"claim ckpt names storage class gp3, which does not exist"},
		[]string{"standard", "spec.storage.classes"})
	if v.Top.Layer != why.LayerVolumes {
		t.Errorf("verdict layer %s; want volumes", v.Top.Layer)
	}
}
