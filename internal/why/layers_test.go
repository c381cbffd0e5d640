package why

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/problem"
)

// threeZones is one apps node per zone.
func threeZones() []corev1.Node {
	return nodes(poolNode("a-1", "apps").Zone("zone-1"), poolNode("a-2", "apps").Zone("zone-2"), poolNode("a-3", "apps").Zone("zone-3"))
}

func spreadPod(name string, ignoreAffinity bool) *objtest.PodWrapper {
	b := objtest.MakePod("ns", name).Label("app", "web")
	tsc := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	if ignoreAffinity {
		ignore := corev1.NodeInclusionPolicyIgnore
		tsc.NodeAffinityPolicy = &ignore
	}
	b.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc}
	return b
}

func TestTopologySpread(t *testing.T) {
	// The pod may only run in zone-3, but its constraint counts every
	// zone (nodeAffinityPolicy Ignore): zone-3 already has one.
	s := snapshotOf(threeZones(), *spreadPod("web-0", true).On("a-3").Obj())
	v := Explain(s, spreadPod("web-1", true).NodeSelector(corev1.LabelTopologyZone, "zone-3").Obj())
	want := Cause{Layer: LayerPools, Code: CauseSpread, Problem: problem.Problem{
		Message: "pool apps: topology spread over topology.kubernetes.io/zone: zone-3 has 1 matching pod, zone-1 has 0; placing the pod there makes skew 2 > maxSkew 1; no node in zone-1 passes the pod's other filters, so the skew cannot shrink by itself",
		Fix:     "let the pod reach zone-1 (its node selector or affinity keeps it out; nodeAffinityPolicy Ignore still counts that domain), raise maxSkew, or set whenUnsatisfiable: ScheduleAnyway"}}
	if d := cmp.Diff(want, v.Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}

	// Honouring node affinity (the default), zone-3 is the only domain:
	// no skew, it fits.
	v = Explain(s, spreadPod("web-1", false).NodeSelector(corev1.LabelTopologyZone, "zone-3").Obj())
	wantTop(t, v, CauseFits, nil, nil)

	// A key no node has.
	p := spreadPod("web-1", false).Obj()
	p.Spec.TopologySpreadConstraints[0].TopologyKey = "example.com/rack"
	wantTop(t, Explain(s, p), CauseSpread, []string{"the node has no example.com/rack label"}, []string{"label pool apps's nodes with example.com/rack"})
}

func TestLimitRangeDefaultsDoNotFit(t *testing.T) {
	s := snapshotOf(cluster())
	s.LimitRanges = []corev1.LimitRange{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "huge-defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}}}},
	}}
	pod := objtest.MakePod("lab", "p").ContainerName("app").CPU("100").
		Annotate(limitRangerAnnotation, "LimitRanger plugin set: cpu request for container app; cpu limit for container app").Obj()
	v := Explain(s, pod)
	wantTop(t, v, CauseLimitRange, []string{
		"LimitRange huge-defaults set cpu request 100 on app (the pod asked for none)",
		"no node is big enough for the pod: cpu requested 100, the largest allocatable is 24 (node gpu-0, pool gpu)",
	}, []string{"set resources.requests (cpu) on the container", "lower the LimitRange's defaultRequest"})
	want := []Default{
		{LimitRange: "huge-defaults", Container: "app", Kind: "request", Resource: "cpu", Value: "100"},
		{LimitRange: "huge-defaults", Container: "app", Kind: "limit", Resource: "cpu"},
	}
	if d := cmp.Diff(want, v.Defaults); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}

	// When the pod's own request is what does not fit, the LimitRange is
	// context only.
	own := objtest.MakePod("lab", "p").ContainerName("app").CPU("100").Memory("1Gi").
		Annotate(limitRangerAnnotation, "LimitRanger plugin set: memory request for container app").Obj()
	v = Explain(s, own)
	wantTop(t, v, CauseResources, nil, nil)
	if c := cause(v, CauseLimitRange); c == nil || !strings.Contains(c.Message, "set memory request 1Gi on app") {
		t.Errorf("limitrange layer = %+v", c)
	}
}

func TestQuotaRefusesWorkload(t *testing.T) {
	s := snapshotOf(cluster(),
		*objtest.MakePod("team-a", "hog-0").GPU("1").Obj(),
		*objtest.MakePod("team-a", "hog-1").GPU("1").Obj())
	s.Blueprint = testBlueprint(t, "")
	s.Events = []corev1.Event{event("ReplicaSet", "team-a", "serve-7d9", "FailedCreate",
		`pods "serve-7d9-x2" is forbidden: exceeded quota: team-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4`)}
	w := &Workload{Kind: "Deployment", Namespace: "team-a", Name: "serve", Desired: 2,
		Creators: []Ref{{Kind: "ReplicaSet", Name: "serve-7d9", UID: types.UID("ReplicaSet/serve-7d9")}}}
	v := ExplainWorkload(s, w)
	want := Cause{Layer: LayerQuota, Code: CauseQuotaExceeded, Problem: problem.Problem{
		Message: "replicaset serve-7d9 cannot create pods: ResourceQuota team-quota refuses them: requests.nvidia.com/gpu requested 1, used 4 of 4 (0 of 2 pods exist, FailedCreate x3, last 30s ago); requests.nvidia.com/gpu is held by hog-0 (Pending), hog-1 (Pending)",
		Fix:     "lower the pods' requests; or free quota (delete or finish pods that hold it; Pending pods count too); or raise team team-a's quota.gpu in the blueprint and `berth apply`"}}
	if d := cmp.Diff(want, v.Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	if v.Workload != "deployment/team-a/serve" {
		t.Errorf("workload = %q", v.Workload)
	}

	// Any other refusal is quoted.
	s.Events[0].Message = `pods "x" is forbidden: ValidatingAdmissionPolicy 'berth-pods' denied request: berth/gpu-limit: ...`
	wantTop(t, ExplainWorkload(s, w), CauseCreateFailed, []string{"berth/gpu-limit"}, nil)

	// All listed by ExplainAll with the Pending pods.
	s.Workloads = []Workload{*w}
	all := ExplainAll(s, "team-a")
	if len(all.Pods) != 2 || len(all.Workloads) != 1 {
		t.Errorf("ExplainAll: %d pods, %d workloads; want 2 and 1", len(all.Pods), len(all.Workloads))
	}
}

// fullGPUs is two GPU nodes each running a priority-0 pod labelled app=batch.
func fullGPUs() *Snapshot {
	s := snapshotOf(cluster(),
		*objtest.MakePod("lab", "batch-0").Label("app", "batch").GPU("1").Toleration(tolerateGPU).On("gpu-0").Obj(),
		*objtest.MakePod("lab", "batch-1").Label("app", "batch").GPU("1").Toleration(tolerateGPU).On("gpu-1").Obj())
	s.PriorityClasses = []schedulingv1.PriorityClass{priorityClass("inference-high", 100000, corev1.PreemptLowerPriority), priorityClass("training-low", 1000, corev1.PreemptNever)}
	return s
}

func TestPreemptionPossible(t *testing.T) {
	s := fullGPUs()
	v := Explain(s, objtest.MakePod("lab", "serve").GPU("1").Toleration(tolerateGPU).Priority("inference-high", 100000, corev1.PreemptLowerPriority).Obj())
	wantTop(t, v, CauseResources, []string{"preemption could make room on node gpu-0 by evicting 1 lower-priority pod: lab/batch-0 (priority 0)"}, nil)
	if c := cause(v, CausePreemptPossible); c == nil {
		t.Errorf("no %s cause: %+v", CausePreemptPossible, v.Causes)
	}
	if c := cause(v, CausePDB); c != nil {
		t.Errorf("a PDB in the way without any PDB: %+v", c)
	}
}

func TestPreemptionNever(t *testing.T) {
	s := fullGPUs()
	v := Explain(s, objtest.MakePod("lab", "train").GPU("1").Toleration(tolerateGPU).Priority("training-low", 1000, corev1.PreemptNever).Obj())
	wantTop(t, v, CauseResources, []string{
		"pool gpu is full: nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes",
		"preemption is off: PriorityClass training-low, value 1000, sets preemptionPolicy Never, so the pod waits rather than evict lab/batch-0 (priority 0) on node gpu-0",
	}, []string{"give the pod a PriorityClass that may preempt"})
	if c := cause(v, CausePreemptNever); c == nil {
		t.Errorf("no %s cause: %+v", CausePreemptNever, v.Causes)
	}
}

func TestPDBInTheWay(t *testing.T) {
	s := fullGPUs()
	s.PDBs = []policyv1.PodDisruptionBudget{pdb("lab", "batch-budget", map[string]string{"app": "batch"}, 0)}
	v := Explain(s, objtest.MakePod("lab", "serve").GPU("1").Toleration(tolerateGPU).Priority("inference-high", 100000, corev1.PreemptLowerPriority).Obj())
	wantTop(t, v, CauseResources, []string{"PDBs in the way: lab/batch-budget"}, nil)
	c := cause(v, CausePDB)
	if c == nil || !strings.Contains(c.Message, "PodDisruptionBudget lab/batch-budget covers 1 victim and allows no disruption") {
		t.Errorf("PDB cause = %+v", c)
	}

	// A budget that still allows a disruption is not in the way.
	s = fullGPUs()
	s.PDBs = []policyv1.PodDisruptionBudget{pdb("lab", "batch-budget", map[string]string{"app": "batch"}, 1)}
	v = Explain(s, objtest.MakePod("lab", "serve").GPU("1").Toleration(tolerateGPU).Priority("inference-high", 100000, corev1.PreemptLowerPriority).Obj())
	if c := cause(v, CausePDB); c != nil {
		t.Errorf("a budget allowing a disruption is reported in the way: %+v", c)
	}
}

func TestPoolCanGrowFromZero(t *testing.T) {
	s := snapshotOf(cluster())
	s.Blueprint = testBlueprint(t, "  - {name: burst, machine: {cpu: 8, memory: 32Gi}, autoscale: {min: 0, max: 3}}")
	s.Local = true
	v := Explain(s, objtest.MakePod("ns", "p").NodeSelector("berth.io/pool", "burst").Obj())
	wantTop(t, v, CausePoolCanGrow, []string{
		"no node can hold the pod now, but pool burst could grow from 0 to 3 nodes (autoscale 0-3), and a new node would hold the pod, but the autoscaler is not running on this local cluster (no kube-system/cluster-autoscaler-status)",
		"the closest existing pool, cpu: 2 nodes: nodeSelector berth.io/pool=burst not matched (berth.io/pool=cpu)",
	}, []string{"`berth down`, then `berth up`", "raise pool burst's autoscale.min to 1 in the blueprint and run `berth apply`"})
	var row *PoolFit
	for i := range v.Pools {
		if v.Pools[i].Name == "burst" {
			row = &v.Pools[i]
		}
	}
	if d := cmp.Diff(&PoolFit{Name: "burst", Size: "0-3", Stage: "fits", Reasons: []string{"no nodes; a new node would fit (autoscale 0-3)"}}, row); d != "" {
		t.Errorf("burst pool row (-want +got):\n%s", d)
	}

	// On a cloud cluster an autoscaler would do it.
	s.Local = false
	wantTop(t, Explain(s, objtest.MakePod("ns", "p").NodeSelector("berth.io/pool", "burst").Obj()), CausePoolCanGrow,
		[]string{"if an autoscaler manages the pool"}, []string{"a cluster autoscaler that manages pool burst adds a node (up to 3)"})

	// Too big even for a new node: no growth promised.
	wantTop(t, Explain(s, objtest.MakePod("ns", "p").NodeSelector("berth.io/pool", "burst").Request("cpu", "12").Obj()), CauseNodeAffinity, nil, nil)
}

func TestPoolCanGrowWhenFull(t *testing.T) {
	s := fullGPUs()
	s.Blueprint = testBlueprint(t, "")
	s.Blueprint.Spec.Pools[2].Autoscale.Max = 4
	v := Explain(s, objtest.MakePod("team-a", "t").GPU("1").Toleration(tolerateGPU).Obj())
	wantTop(t, v, CauseResources, []string{"pool gpu is full", "pool gpu could grow from 2 to 4 nodes (autoscale 0-4)"},
		[]string{"a cluster autoscaler that manages pool gpu adds a node (up to 4)"})
}

func TestSchedulerAccountQuoted(t *testing.T) {
	s := snapshotOf(cluster())
	s.Events = []corev1.Event{event("Pod", "ns", "p", "FailedScheduling", "0/4 nodes are available: 2 Insufficient cpu.")}
	pod := objtest.MakePod("ns", "p").Unschedulable("0/4 nodes are available: 2 Insufficient cpu.").Obj()
	pod.UID = types.UID("Pod/p")
	v := Explain(s, pod)
	want := &SchedulerAccount{Reason: "Unschedulable", Message: "0/4 nodes are available: 2 Insufficient cpu.",
		Events: []EventLine{{Object: "pod/p", Type: "Warning", Reason: "FailedScheduling", Count: 3, Age: "30s", Message: "0/4 nodes are available: 2 Insufficient cpu."}}}
	if d := cmp.Diff(want, v.Scheduler); d != "" {
		t.Errorf("scheduler account (-want +got):\n%s", d)
	}
}

func TestWorkloadWithPendingPod(t *testing.T) {
	s := snapshotOf(cluster(),
		*objtest.MakePod("ns", "web-1").Owner("ReplicaSet", "web-1a2").On("cpu-0").Obj(),
		*objtest.MakePod("ns", "web-2").Owner("ReplicaSet", "web-1a2").NodeSelector("agentpool", "nope").Obj())
	s.Events = []corev1.Event{event("ReplicaSet", "ns", "web-1a2", "FailedCreate", `pods "web-3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`)}
	w := &Workload{Kind: "Deployment", Namespace: "ns", Name: "web", Desired: 3, Creators: []Ref{{Kind: "ReplicaSet", Name: "web-1a2", UID: "ReplicaSet/web-1a2"}}}
	s.Workloads = []Workload{*w}
	v := ExplainWorkload(s, w)
	wantTop(t, v, CauseNodeAffinity, nil, nil)
	if v.Pod != "ns/web-2" || v.Workload != "deployment/ns/web" {
		t.Errorf("explained %s of %s, want ns/web-2 of deployment/ns/web", v.Pod, v.Workload)
	}
	if c := cause(v, CauseWorkload); c == nil || c.Message != "deployment/ns/web wants 3 pod(s) and has 2, 1 Pending; explaining web-2" {
		t.Errorf("workload cause = %+v", c)
	}
	if c := cause(v, CauseOwnerEvents); c == nil || !strings.Contains(c.Message, "replicaset web-1a2 could not create more pods (FailedCreate x3, last 30s ago): pods \"web-3\" is forbidden: exceeded quota") {
		t.Errorf("owner events cause = %+v", c)
	}

	// Once every pod is scheduled, there is nothing to explain.
	s = snapshotOf(cluster(), *objtest.MakePod("ns", "web-1").Owner("ReplicaSet", "web-1a2").On("cpu-0").Obj())
	w.Desired = 1
	wantTop(t, ExplainWorkload(s, w), CauseNotPending, []string{"deployment/ns/web has 1 pod(s), 1 Running, none Pending"}, nil)
}
