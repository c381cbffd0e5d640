package autoscaler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/objtest"
)

// cpuPool is one autoscaled 4-CPU pool beside the system pool, and a
// tainted 1-GPU pool.
const cpuPool = `  zones: [zone-1]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 10}}
  - name: gpu
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 4}
    taints: ["gpu=true:NoSchedule"]
`

// blocker is why the autoscaler keeps node, as its NoScaleDown event
// says it, "" when it could go.
func blocker(t *testing.T, w *world, node string) string {
	t.Helper()
	ctx := context.Background()
	v := w.view()
	sim, err := v.simulation(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range v.groups {
		for _, n := range g.nodes {
			if n.Name == node {
				if p := w.c.unremovable(ctx, v, sim, g, n, podsToMove(v, n), newBudgetCounter(v.budgets), 0); p != nil {
					return p.String()
				}
				return ""
			}
		}
	}
	t.Fatalf("no node %s", node)
	return ""
}

func TestScaleDownBlockers(t *testing.T) {
	// cpu-0 runs the pod under test (half a CPU: well under the
	// threshold); cpu-1 is empty and could take it.
	emptyDir := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	hostPath := corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/data"}}}
	for _, tc := range []struct {
		name  string
		pod   func(*objtest.PodWrapper) *objtest.PodWrapper
		setup func(*world)
		want  string // the reason code, "" for removable
	}{
		{name: "a movable pod", want: ""},
		{name: "safe-to-evict false", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Annotate(v1alpha1.AnnotationSafeToEvict, "false")
		}, want: "NotSafeToEvictAnnotation"},
		{name: "no controller", pod: (*objtest.PodWrapper).NoOwner, want: "NotReplicated"},
		{name: "emptyDir", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Volume(emptyDir) }, want: "LocalStorageRequested"},
		{name: "hostPath", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Volume(hostPath) }, want: "LocalStorageRequested"},
		{name: "emptyDir with skipNodesWithLocalStorage false", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Volume(emptyDir) },
			setup: func(w *world) { w.profile().SkipNodesWithLocalStorage = ptr.To(false) }, want: ""},
		{name: "kube-system pod without a PDB", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Namespace("kube-system") }, want: "UnmovableKubeSystemPod"},
		{name: "kube-system pod with skipNodesWithSystemPods false", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Namespace("kube-system") },
			setup: func(w *world) { w.profile().SkipNodesWithSystemPods = ptr.To(false) }, want: ""},
		{name: "kube-system pod with a PDB allowing one", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Namespace("kube-system") },
			setup: func(w *world) { w.budgets = append(w.budgets, budget("kube-system", "app", 1)) }, want: ""},
		{name: "kube-system pod with a PDB allowing none", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.Namespace("kube-system") },
			setup: func(w *world) { w.budgets = append(w.budgets, budget("kube-system", "app", 0)) }, want: "NotEnoughPdb"},
		{name: "PDB allowing no disruption", setup: func(w *world) { w.budgets = append(w.budgets, budget("team-a", "app", 0)) }, want: "NotEnoughPdb"},
		{name: "PDB of another namespace", setup: func(w *world) { w.budgets = append(w.budgets, budget("team-b", "app", 0)) }, want: ""},
		{name: "node annotated scale-down-disabled", setup: func(w *world) {
			n := w.node("cpu-0")
			n.Annotations[v1alpha1.AnnotationScaleDownDisabled] = "true"
			w.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		}, want: "ScaleDownDisabledAnnotation"},
		{name: "pool at min", setup: func(w *world) { w.pool("cpu").Autoscale.Min = 2 }, want: "NodeGroupMinSizeReached"},
		{name: "no place to move", setup: func(w *world) { w.add(replica("big", "big").CPU("3600m").On("cpu-1").Obj()) }, want: "NoPlaceToMovePods"},
		{name: "safe-to-evict true overrides no controller, local storage and kube-system", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.NoOwner().Volume(emptyDir).Volume(hostPath).Namespace("kube-system").Annotate(v1alpha1.AnnotationSafeToEvict, "true")
		}, want: ""},
		{name: "safe-to-evict true does not move a pod with no place to go", pod: func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Annotate(v1alpha1.AnnotationSafeToEvict, "true")
		}, setup: func(w *world) { w.add(replica("big", "big").CPU("3600m").On("cpu-1").Obj()) }, want: "NoPlaceToMovePods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, cpuPool, 1)
			w.addNodes("cpu", 2)
			pod := replica("under-test", "app").CPU("500m")
			if tc.pod != nil {
				pod = tc.pod(pod)
			}
			w.add(pod.On("cpu-0").Obj())
			if tc.setup != nil {
				tc.setup(w)
			}
			got := blocker(t, w, "cpu-0")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("cpu-0 kept: %s; want it removable", got)
			case tc.want != "" && !strings.Contains(got, "("+tc.want+")"):
				t.Errorf("cpu-0: %q; want the reason code (%s)", got, tc.want)
			case tc.want != "" && !strings.Contains(got, "fix: "):
				t.Errorf("cpu-0: %q; want a fix", got)
			}
		})
	}
}

// scaleDown runs one scale-down pass and returns what it found.
func scaleDown(t *testing.T, w *world) scanResult {
	t.Helper()
	var res scanResult
	if err := w.c.scaleDown(context.Background(), w.view(), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func candidateNames(res scanResult) []string {
	var out []string
	for _, cd := range res.candidates {
		out = append(out, cd.node.Name+" ("+cd.util+")")
	}
	return out
}

func TestScaleDownUtilization(t *testing.T) {
	w := newWorld(t, cpuPool, 1)
	w.addNodes("cpu", 4)
	w.addNodes("gpu", 2)
	w.add(
		replica("busy", "busy").CPU("2400m").On("cpu-0").Obj(),                   // 60% CPU: needed
		replica("light", "light").CPU("1").On("cpu-1").Obj(),                     // 25%: unneeded, moves
		replica("memory", "memory").CPU("100m").Memory("10Gi").On("cpu-2").Obj(), // 62% memory: needed
		// cpu-3 is empty.
		replica("train", "train").GPU("1").CPU("1").Tolerate("gpu").On("gpu-0").Obj(), // all its GPU: needed
		replica("cpu-heavy", "heavy").CPU("20").Tolerate("gpu").On("gpu-1").Obj(),     // 83% CPU, no GPU: unneeded
	)
	res := candidateNames(scaleDown(t, w))
	want := []string{"cpu-1 (cpu 25%, memory 0%)", "cpu-3 (cpu 0%, memory 0%)", "gpu-1 (gpu 0%)"}
	if !slices.Equal(res, want) {
		t.Errorf("candidates %q; want %q", res, want)
	}
	if n := len(w.nodes()); n != 7 {
		t.Errorf("%d nodes after the first scan; want all 7 (unneeded for less than scaleDownUnneededTime)", n)
	}
}

// A node whose pods request its threshold's share or more (50% of CPU or
// memory, 50% of its GPUs) is no candidate, even with every pod movable
// and room elsewhere: a scan of pools running flat out removes nothing and
// keeps no node by a blocker, since it looks at none.
// BenchmarkScaleDownBusy times such a scan at 1,000 nodes.
func TestScaleDownBusy(t *testing.T) {
	w := newWorld(t, cpuPool, 1)
	w.profile().ScaleDownUnneededTime = &metav1.Duration{}
	w.addNodes("cpu", 3)
	w.addNodes("gpu", 1)
	w.add(
		replica("cpu-half", "cpu-half").CPU("2").On("cpu-0").Obj(),           // 50% CPU: at the threshold
		replica("mem-half", "mem-half").Memory("8Gi").On("cpu-1").Obj(),      // 50% memory
		replica("most", "most").CPU("3").Memory("1Gi").On("cpu-2").Obj(),     // 75% CPU
		replica("train", "train").GPU("1").Tolerate("gpu").On("gpu-0").Obj(), // its one GPU
	)
	before := w.nodeNames("cpu")
	res := scaleDown(t, w)
	if got := candidateNames(res); len(got) != 0 {
		t.Errorf("candidates %q; want none, every node is at or over its threshold", got)
	}
	if len(res.blockedBy) != 0 {
		t.Errorf("nodes kept by a blocker: %v; want none looked at", res.blockedBy)
	}
	if got := w.nodeNames("cpu"); !slices.Equal(got, before) || len(w.nodeNames("gpu")) != 1 {
		t.Errorf("nodes cpu %v, gpu %v after the scan; want cpu %v and gpu-0 kept", got, w.nodeNames("gpu"), before)
	}
	if ev := w.events(); countPrefix(ev, "Normal "+castatus.ReasonScaleDown) != 0 {
		t.Errorf("events %q; want no scale-down", ev)
	}
}

func TestScaleDownEmptyInBulk(t *testing.T) {
	w := newWorld(t, cpuPool, 1)
	w.pool("cpu").Autoscale.Min = 1
	w.profile().MaxEmptyBulkDelete = ptr.To(int32(3))
	w.addNodes("cpu", 6)

	// First scan: five candidates (cpu-5 would take the pool below its
	// min), none unneeded for 10m yet.
	if got := candidateNames(scaleDown(t, w)); len(got) != 5 {
		t.Errorf("candidates %q; want cpu-0 to cpu-4", got)
	}
	if got := w.nodeNames("cpu"); len(got) != 6 {
		t.Fatalf("nodes %v deleted before scaleDownUnneededTime", got)
	}
	// 10m on: three go at once, maxEmptyBulkDelete.
	w.clock.Step(10 * time.Minute)
	scaleDown(t, w)
	if got, want := w.nodeNames("cpu"), []string{"cpu-3", "cpu-4", "cpu-5"}; !slices.Equal(got, want) {
		t.Errorf("after the bulk delete nodes %v; want %v", got, want)
	}
	if ev := w.events(); countPrefix(ev, "Normal "+castatus.ReasonScaleDownEmpty+" ") != 3 {
		t.Errorf("events %q; want 3 ScaleDownEmpty", ev)
	}
	// Then scaleDownDelayAfterDelete (the scan interval, 10s), then the
	// rest down to the min of 1 and no further.
	if res := scaleDown(t, w); !strings.Contains(res.cooldown, "scaleDownDelayAfterDelete") {
		t.Errorf("cooldown %q right after a delete; want scaleDownDelayAfterDelete", res.cooldown)
	}
	for range 5 {
		w.clock.Step(10 * time.Second)
		scaleDown(t, w)
	}
	if got, want := w.nodeNames("cpu"), []string{"cpu-5"}; !slices.Equal(got, want) {
		t.Errorf("nodes %v; want %v (the pool's min of 1)", got, want)
	}
}

func TestScaleDownNeverBelowMin(t *testing.T) {
	w := newWorld(t, cpuPool, 1)
	w.pool("cpu").Autoscale.Min = 3
	w.profile().ScaleDownUnneededTime = &metav1.Duration{}
	w.addNodes("cpu", 5)
	scaleDown(t, w)
	if got := w.nodeNames("cpu"); len(got) != 3 {
		t.Errorf("nodes %v after one scan; want 3, the pool's min", got)
	}
}

func TestScaleDownCooldowns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(c *Controller, at time.Time)
		delay time.Duration
		word  string
	}{
		{"after a scale-up", func(c *Controller, at time.Time) { c.lastScaleUp = at }, 10 * time.Minute, "scaleDownDelayAfterAdd"},
		{"after a delete", func(c *Controller, at time.Time) { c.lastScaleDown = at }, 10 * time.Second, "scaleDownDelayAfterDelete"},
		{"after a failure", func(c *Controller, at time.Time) { c.lastFailure = at }, 3 * time.Minute, "scaleDownDelayAfterFailure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, cpuPool, 1)
			w.profile().ScaleDownUnneededTime = &metav1.Duration{}
			w.addNodes("cpu", 2)
			tc.set(w.c, w.clock.Now())
			w.clock.Step(tc.delay - time.Second)
			res := scaleDown(t, w)
			if !strings.Contains(res.cooldown, tc.word) {
				t.Errorf("cooldown %q; want %s", res.cooldown, tc.word)
			}
			if got := candidateNames(res); len(got) != 2 {
				t.Errorf("candidates %q during the cooldown; want both nodes counted", got)
			}
			if got := w.nodeNames("cpu"); len(got) != 2 {
				t.Errorf("nodes %v during the cooldown; want both kept", got)
			}
			// The status ConfigMap counts them.
			w.c.last = res
			v := w.view()
			if err := w.c.publish(context.Background(), v); err != nil {
				t.Fatal(err)
			}
			cm, err := w.client.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(context.Background(), castatus.ConfigMapName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st, _, err := castatus.Read(cm)
			if err != nil {
				t.Fatal(err)
			}
			if sd := st.ClusterWide.ScaleDown; sd.Status != castatus.CandidatesPresent || sd.Candidates != 2 || !strings.Contains(st.Message, tc.word) {
				t.Errorf("status: scale-down %+v, message %q; want 2 candidates and the cooldown named", sd, st.Message)
			}
			w.clock.Step(time.Second)
			if res := scaleDown(t, w); res.cooldown != "" {
				t.Errorf("cooldown %q after %s; want none", res.cooldown, tc.delay)
			}
			if got := w.nodeNames("cpu"); len(got) != 0 {
				t.Errorf("nodes %v after the cooldown; want both removed", got)
			}
		})
	}
}
