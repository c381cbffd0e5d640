package why

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/problem"
)

// cluster is two cpu nodes and two tainted GPU nodes.
func cluster() []corev1.Node {
	return nodes(poolNode("cpu-0", "cpu"), poolNode("cpu-1", "cpu").Zone("zone-2"), gpuNode("gpu-0"), gpuNode("gpu-1").Zone("zone-2"))
}

// wantTop checks the verdict's cause and that its message and fix hold
// the given parts.
func wantTop(t *testing.T, v Verdict, code string, message []string, fix []string) {
	t.Helper()
	if v.Top.Code != code {
		t.Errorf("verdict cause = %s, want %s\nmessage: %s", v.Top.Code, code, v.Top.Message)
	}
	for _, m := range message {
		if !strings.Contains(v.Top.Message, m) {
			t.Errorf("verdict message lacks %q:\n%s", m, v.Top.Message)
		}
	}
	for _, f := range fix {
		if !strings.Contains(v.Top.Fix, f) {
			t.Errorf("fix lacks %q:\n%s", f, v.Top.Fix)
		}
	}
}

func cause(v Verdict, code string) *Cause {
	for i := range v.Causes {
		if v.Causes[i].Code == code {
			return &v.Causes[i]
		}
	}
	return nil
}

func TestUntoleratedTaint(t *testing.T) {
	s := snapshotOf(cluster())
	s.Blueprint = testBlueprint(t, "")
	pod := objtest.MakePod("team-a", "train").GPU("1").Obj()
	v := Explain(s, pod)
	want := Cause{Layer: LayerPools, Code: CauseTaint, Problem: problem.Problem{
		Message: "no pool tolerates the pod: pool gpu has taint gpu=true:NoSchedule",
		Fix:     `add to the pod's spec.tolerations {key: gpu, operator: Equal, value: "true", effect: NoSchedule} (pool gpu), or label the workload berth.io/class=inference or berth.io/class=training: the class gives it the tolerations and node affinity of its pools`}}
	if d := cmp.Diff(want, v.Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	// The cpu pool fails on GPUs it does not have: too small, so farther.
	if got := v.Pools[1]; got.Name != "cpu" || !strings.Contains(strings.Join(got.Reasons, "\n"), "nvidia.com/gpu: requested 1, free 0 of 0 on each of 2 nodes") {
		t.Errorf("cpu pool row = %+v", got)
	}

	// In a namespace without GPU quota the guardrails would refuse the
	// toleration: the fix says so.
	v = Explain(s, objtest.MakePod("web", "train").GPU("1").Obj())
	wantTop(t, v, CauseTaint, nil, []string{"namespace web has no GPU quota", "only in team-a"})
}

func TestNodeSelectorMatchesNoPool(t *testing.T) {
	v := Explain(snapshotOf(cluster()), objtest.MakePod("ns", "web").NodeSelector("agentpool", "nope").Obj())
	wantTop(t, v, CauseNodeAffinity,
		[]string{"nodeSelector agentpool=nope: nodes have agentpool=cpu, gpu"},
		[]string{"select one of the pools (cpu, gpu)"})
}

func TestRequiredNodeAffinity(t *testing.T) {
	pod := objtest.MakePod("ns", "web").Obj()
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
	}}}
	v := Explain(snapshotOf(nodes(poolNode("a", "cpu").Label("disk", "hdd"), poolNode("b", "cpu"))), pod)
	wantTop(t, v, CauseNodeAffinity, []string{"node affinity disk In [ssd]: nodes have disk=hdd (1 node without it)"}, []string{"blueprint pools[].labels"})
}

func TestInsufficientCPUAndMemory(t *testing.T) {
	s := snapshotOf(cluster(),
		*objtest.MakePod("ns", "big-0").CPU("12").Memory("60Gi").On("cpu-0").Obj(),
		*objtest.MakePod("ns", "big-1").CPU("12").Memory("60Gi").On("cpu-1").Obj())
	v := Explain(s, objtest.MakePod("ns", "p").CPU("8").Memory("8Gi").Obj())
	want := "pool cpu is full: cpu: requested 8, free 4 of 16 on each of 2 nodes; memory: requested 8Gi, free 4Gi of 64Gi on each of 2 nodes"
	if !strings.HasPrefix(v.Top.Message, want) {
		t.Errorf("verdict = %s\nwant it to start with %s", v.Top.Message, want)
	}
	wantTop(t, v, CauseResources, []string{"preemption cannot help"}, []string{"free room in pool cpu", "lower the pod's requests"})
}

func TestInitContainersCount(t *testing.T) {
	// An init container's request counts when it is the largest.
	pod := objtest.MakePod("ns", "p").CPU("1").Obj()
	pod.Spec.InitContainers = []corev1.Container{{Name: "fetch", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")}}}}
	v := Explain(snapshotOf(nodes(poolNode("a", "cpu"))), pod)
	wantTop(t, v, CauseResources, []string{"no node is big enough for the pod: cpu requested 20, the largest allocatable is 16 (node a, pool cpu)"}, nil)
}

func TestInsufficientGPUPoolAtMax(t *testing.T) {
	s := snapshotOf(cluster(),
		*objtest.MakePod("team-a", "t0").GPU("1").Toleration(tolerateGPU).On("gpu-0").Obj(),
		*objtest.MakePod("team-a", "t1").GPU("1").Toleration(tolerateGPU).On("gpu-1").Obj())
	s.Blueprint = testBlueprint(t, "")
	v := Explain(s, objtest.MakePod("team-a", "late").GPU("1").Toleration(tolerateGPU).Obj())
	wantTop(t, v, CauseResources, []string{
		"pool gpu is full: nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes",
		"preemption cannot help",
		"pool gpu is at its maximum of 2 nodes (autoscale 0-2)",
	}, []string{"raise pool gpu's autoscale.max in the blueprint"})
	if c := cause(v, CausePoolAtMax); c == nil {
		t.Errorf("no %s cause in %+v", CausePoolAtMax, v.Causes)
	}
	if d := cmp.Diff(PoolFit{Name: "gpu", Nodes: 2, Size: "0-2", Stage: "resources",
		Reasons: []string{"insufficient nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes"},
		Filters: []string{"NodeResourcesFit: Insufficient nvidia.com/gpu (2 nodes)"}}, v.Pools[0]); d != "" {
		t.Errorf("gpu pool row (-want +got):\n%s", d)
	}
}

func TestTooManyPods(t *testing.T) {
	s := snapshotOf(nodes(poolNode("a", "apps").Allocatable(corev1.ResourcePods, "1")), *objtest.MakePod("ns", "x").On("a").Obj())
	v := Explain(s, objtest.MakePod("ns", "p").Obj())
	wantTop(t, v, CauseResources, []string{"pool apps is full: pods: requested 1, free 0 of 1 on a"}, nil)
}

func TestNominatedPodsReserveRoom(t *testing.T) {
	other := *objtest.MakePod("ns", "first").GPU("1").Toleration(tolerateGPU).Obj()
	other.Status.NominatedNodeName = "gpu-0"
	s := snapshotOf(nodes(gpuNode("gpu-0")), other)
	v := Explain(s, objtest.MakePod("ns", "second").GPU("1").Toleration(tolerateGPU).Obj())
	wantTop(t, v, CauseResources, []string{"nvidia.com/gpu: requested 1, free 0 of 1 on gpu-0"}, nil)
}

func TestCordoned(t *testing.T) {
	v := Explain(snapshotOf(nodes(poolNode("a", "cpu").Cordon(), gpuNode("g"))), objtest.MakePod("ns", "p").Obj())
	wantTop(t, v, CauseCordoned, []string{"every node that could hold the pod is cordoned (spec.unschedulable): pool cpu: a"}, []string{"kubectl uncordon"})
}

func TestFitsAndPodAffinity(t *testing.T) {
	pod := objtest.MakePod("ns", "p").Unschedulable("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.").Obj()
	v := Explain(snapshotOf(nodes(poolNode("a", "cpu"))), pod)
	wantTop(t, v, CauseFits, []string{"berth finds room", "pool cpu: 1 of 1", "the scheduler last said: 0/1 nodes"}, nil)

	// Required anti-affinity against a pod already on the only node: the
	// scheduler's InterPodAffinity rejects it, in its own words.
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	v = Explain(snapshotOf(nodes(poolNode("a", "cpu")), *objtest.MakePod("ns", "web-0").Label("app", "web").On("a").Obj()), pod)
	wantTop(t, v, CausePodAffinity, []string{"pool cpu: the scheduler's InterPodAffinity filter rejects the pod: node(s) didn't match pod anti-affinity rules"},
		[]string{"change the pod's required pod (anti-)affinity"})
	if v.Pools[0].Stage != "InterPodAffinity" {
		t.Errorf("pool row = %+v", v.Pools[0])
	}
}

func TestNotASchedulingProblem(t *testing.T) {
	s := snapshotOf(cluster())
	running := objtest.MakePod("ns", "p").On("cpu-0").Obj()
	wantTop(t, Explain(s, running), CauseNotPending, []string{"the pod is Running on node cpu-0"}, nil)

	bound := objtest.MakePod("ns", "p").Obj()
	bound.Spec.NodeName = "cpu-0"
	bound.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
	wantTop(t, Explain(s, bound), CauseBound, []string{"scheduled to node cpu-0", "container app waiting: ImagePullBackOff (Back-off pulling image)"}, nil)

	gated := objtest.MakePod("ns", "p").Obj()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	v := Explain(s, gated)
	wantTop(t, v, CauseGated, []string{"scheduling gates kueue.x-k8s.io/admission"}, []string{"spec.schedulingGates"})
	if len(v.Pools) == 0 {
		t.Error("a gated pod's pools are not shown: they say what happens once the gate goes")
	}

	victim := *objtest.MakePod("ns", "victim").On("gpu-0").Obj()
	victim.DeletionTimestamp = &metav1.Time{Time: now}
	nominated := objtest.MakePod("ns", "p").Obj()
	nominated.Status.NominatedNodeName = "gpu-0"
	wantTop(t, Explain(snapshotOf(cluster(), victim), nominated), CausePreempting, []string{"nominated node gpu-0", "victims terminating: ns/victim"}, nil)
}

func TestOtherScheduler(t *testing.T) {
	pod := objtest.MakePod("ns", "p").Obj()
	pod.Spec.SchedulerName = "volcano"
	v := Explain(snapshotOf(cluster()), pod)
	if c := cause(v, CauseOtherScheduler); c == nil || !strings.Contains(c.Message, "spec.schedulerName volcano") {
		t.Errorf("no note of the other scheduler: %+v", v.Causes)
	}
}

func TestSeveralFiltersFail(t *testing.T) {
	// No toleration, and the GPUs are taken anyway: the first filter
	// leads, the rest follow.
	s := snapshotOf(cluster(),
		*objtest.MakePod("lab", "t0").GPU("1").Toleration(tolerateGPU).On("gpu-0").Obj(),
		*objtest.MakePod("lab", "t1").GPU("1").Toleration(tolerateGPU).On("gpu-1").Obj())
	v := Explain(s, objtest.MakePod("demo", "notebook").GPU("1").Obj())
	wantTop(t, v, CauseTaint, []string{"no pool tolerates the pod: pool gpu has taint gpu=true:NoSchedule; and besides, pool gpu: insufficient nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes"}, nil)
}

// Replicas that differ only in name and token volume share one
// diagnosis; another app's, another namespace's or a nominated pod's is
// their own. Sharing changes no verdict: every replica's is the one
// explaining it alone gives.
func TestEquivalentPodsShareDiagnosis(t *testing.T) {
	ns, pods := replicaFixture(30, 3)
	web0, web1, api0 := &pods[30], &pods[31], &pods[33]
	k0, ok0 := equivalenceKey(web0)
	k1, ok1 := equivalenceKey(web1)
	ka, _ := equivalenceKey(api0)
	if !ok0 || !ok1 || k0 != k1 {
		t.Errorf("two web replicas have different keys:\n%s\n%s", k0, k1)
	}
	if k0 == ka {
		t.Error("a web and an api replica share a key")
	}
	other := web1.DeepCopy()
	other.Namespace = "other"
	if k, _ := equivalenceKey(other); k == k0 {
		t.Error("replicas in two namespaces share a key")
	}
	nominated := web1.DeepCopy()
	nominated.Status.NominatedNodeName = "n-0"
	if _, ok := equivalenceKey(nominated); ok {
		t.Error("a nominated pod shares a key")
	}

	all := ExplainAll(snapshotOf(ns, pods...), "")
	s := snapshotOf(ns, pods...)
	if got := len(s.index().diagnoses); got != 0 {
		t.Fatalf("a fresh snapshot holds %d diagnoses", got)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
	}
	if len(all.Pods) != 6 {
		t.Fatalf("%d pods explained, want the six pending replicas", len(all.Pods))
	}
	for _, v := range all.Pods {
		alone := Explain(snapshotOf(ns, pods...), byName[v.Pod])
		if v.Top.Message != alone.Top.Message || len(v.Causes) != len(alone.Causes) {
			t.Errorf("%s: shared verdict %q (%d causes), alone %q (%d causes)", v.Pod, v.Top.Message, len(v.Causes), alone.Top.Message, len(alone.Causes))
		}
	}
	ExplainAll(s, "")
	if got := len(s.index().diagnoses); got != 2 {
		t.Errorf("%d diagnoses for two apps' six replicas, want 2", got)
	}
}
