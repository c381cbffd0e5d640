package blueprint

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// queued is a blueprint under Kueue with two GPU pools and two teams;
// each case breaks it in one place. Its line numbers are part of the
// expectations.
const queued = `apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata:
  name: t
spec:
  queueing: Kueue
  pools:
  - name: system
    mode: System
    machine: {cpu: 4, memory: 16Gi}
    count: 1
    taints: ["CriticalAddonsOnly=true:NoSchedule"]
  - name: gpu
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
  - name: spot-gpu
    capacity: Spot
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 4}
    taints: ["gpu=true:NoSchedule", "berth.io/capacity=spot:NoSchedule"]
  teams:
  - name: team-a
    quota: {gpu: 4}
    queue:
      gpus: [{pool: spot-gpu, count: 3}, {pool: gpu, count: 1}]
      lend: 2
  - name: team-b
    quota: {gpu: 2}
  classes:
  - name: training
    pools: [spot-gpu, gpu]
`

func editQueued(t *testing.T, pairs ...string) string {
	t.Helper()
	return editDoc(t, queued, pairs...)
}

func TestQueueingLoads(t *testing.T) {
	bp, warnings, err := Parse("bp.yaml", []byte(queued))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Parse = %v, %v", warnings, err)
	}
	if !bp.Spec.UsesKueue() {
		t.Error("queueing: Kueue did not make the blueprint use Kueue")
	}
	// team-a's split as written; team-b's 2 GPUs by the pools' sizes
	// (4 and 2 GPUs at most): 2×4/6 = 1.33 and 2×2/6 = 0.67, so one
	// each, the left-over GPU going to the larger remainder (gpu).
	for i, want := range [][]v1alpha1.PoolGPUs{
		{{Pool: "spot-gpu", Count: 3}, {Pool: "gpu", Count: 1}},
		{{Pool: "spot-gpu", Count: 1}, {Pool: "gpu", Count: 1}},
	} {
		if diff := cmp.Diff(want, bp.Spec.TeamGPUs(&bp.Spec.Teams[i])); diff != "" {
			t.Errorf("%s's GPUs by pool (-want +got):\n%s", bp.Spec.Teams[i].Name, diff)
		}
	}
}

// The default split gives out exactly the quota, spot pools first.
func TestTeamGPUsSplitsTheWholeQuota(t *testing.T) {
	for _, tc := range []struct {
		quota string
		want  []v1alpha1.PoolGPUs
	}{
		{"6", []v1alpha1.PoolGPUs{{Pool: "spot-gpu", Count: 4}, {Pool: "gpu", Count: 2}}},
		{"5", []v1alpha1.PoolGPUs{{Pool: "spot-gpu", Count: 3}, {Pool: "gpu", Count: 2}}},
		{"1", []v1alpha1.PoolGPUs{{Pool: "spot-gpu", Count: 1}, {Pool: "gpu", Count: 0}}},
		{"0", []v1alpha1.PoolGPUs{{Pool: "spot-gpu", Count: 0}, {Pool: "gpu", Count: 0}}},
	} {
		bp, _, err := Parse("bp.yaml", []byte(editQueued(t, "quota: {gpu: 2}", "quota: {gpu: "+tc.quota+"}")))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, bp.Spec.TeamGPUs(&bp.Spec.Teams[1])); diff != "" {
			t.Errorf("quota %s by pool (-want +got):\n%s", tc.quota, diff)
		}
	}
}

// Each mistake in a team's queue, at the line and field it concerns.
func TestQueueingProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []string
		want  []want
	}{
		{
			name:  "queueing misspelt",
			edits: []string{"queueing: Kueue", "queueing: kueue"},
			want:  []want{{Line: 6, Field: "spec.queueing", Message: `"kueue" is not one of ResourceQuota, Kueue`, Fix: `did you mean "Kueue"?`}},
		},
		{
			name:  "a flavor naming no pool",
			edits: []string{"{pool: gpu, count: 1}", "{pool: gpus, count: 1}"},
			want: []want{{Line: 26, Field: "spec.teams[0].queue.gpus[1].pool", Message: `no pool is named "gpus", so Kueue would have no flavor for it`,
				Fix: `did you mean "gpu"?`}},
		},
		{
			name:  "a pool without GPUs",
			edits: []string{"{pool: gpu, count: 1}", "{pool: system, count: 1}"},
			want: []want{{Line: 26, Field: "spec.teams[0].queue.gpus[1].pool", Message: `pool "system" is not a User pool with nvidia.com/gpu`,
				Fix: "spot-gpu, gpu"}},
		},
		{
			name:  "counts that do not add up to the quota",
			edits: []string{"count: 3}", "count: 2}"},
			want: []want{{Line: 26, Field: "spec.teams[0].queue.gpus", Message: "the pools' counts add up to 3, but quota.gpu is 4",
				Fix: "make them add up to quota.gpu"}},
		},
		{
			name:  "a borrowing limit above the cohort",
			edits: []string{"  - name: team-b\n    quota: {gpu: 2}\n", "  - name: team-b\n    quota: {gpu: 2}\n    queue: {borrow: 3}\n"},
			// team-a lends at most 2 of its 3 spot GPUs (and its 1 on gpu).
			want: []want{{Line: 30, Field: "spec.teams[1].queue.borrow", Message: "the other teams lend at most 2 GPUs on any of this team's pools (2 on spot-gpu), so a limit of 3 can never be reached",
				Fix: "lower it to 2"}},
		},
		{
			name: "a class on GPUs Kueue does not cover",
			edits: []string{"gpu: {count: 1, product: NVIDIA-L4}}\n    autoscale: {min: 0, max: 2}", "gpu: {count: 1, product: MI300X, resource: amd.com/gpu}}\n    autoscale: {min: 0, max: 2}",
				"gpus: [{pool: spot-gpu, count: 3}, {pool: gpu, count: 1}]", "gpus: [{pool: spot-gpu, count: 4}]"},
			want: []want{
				{Line: 32, Field: "spec.classes[0].pools[1]", Message: `pool "gpu"'s GPUs are amd.com/gpu, but under Kueue the teams' ClusterQueues cover only nvidia.com/gpu`,
					Fix: "use pools with nvidia.com/gpu, or queueing: ResourceQuota"}},
		},
		{
			name:  "a fraction of a GPU",
			edits: []string{"lend: 2", "lend: 500m"},
			want:  []want{{Line: 27, Field: "spec.teams[0].queue.lend", Message: "must be a whole number of GPUs", Fix: "(no fix)"}},
		},
		{
			name:  "fair sharing under ResourceQuota",
			edits: []string{"  queueing: Kueue\n", "  queueing: ResourceQuota\n  fairSharing: true\n"},
			want: []want{{Line: 7, Field: "spec.fairSharing", Message: "is Kueue's fair sharing, but the teams queue with ResourceQuota",
				Fix: "set spec.queueing: Kueue, or remove fairSharing"},
				{Line: 26, Field: "spec.teams[0].queue", Warning: true, Message: "only Kueue reads a team's queue; under ResourceQuota it does nothing",
					Fix: "set spec.queueing: Kueue, or remove it"}},
		},
		{
			name:  "a negative weight",
			edits: []string{"  queueing: Kueue\n", "  queueing: Kueue\n  fairSharing: true\n", "lend: 2", "lend: 2\n      weight: -1"},
			want:  []want{{Line: 29, Field: "spec.teams[0].queue.weight", Message: "must not be negative", Fix: "give 0 (always last) or more"}},
		},
		{
			name:  "a pool named like the CPU flavor",
			edits: []string{"  - name: system\n", "  - name: default-flavor\n"},
			want: []want{{Line: 7, Field: "spec.pools", Message: `a pool is named "default-flavor", the ResourceFlavor under which Kueue counts every team's CPU and memory`,
				Fix: "rename the pool"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseProblems(t, editQueued(t, tc.edits...))
			if diff := cmp.Diff(tc.want, match(got, tc.want)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueueingWarnings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []string
		want  []want
	}{
		{
			name:  "a queue under ResourceQuota",
			edits: []string{"queueing: Kueue", "queueing: ResourceQuota"},
			want: []want{{Line: 25, Field: "spec.teams[0].queue", Warning: true, Message: "only Kueue reads a team's queue; under ResourceQuota it does nothing",
				Fix: "set spec.queueing: Kueue, or remove it"}},
		},
		{
			name: "a GPU quota no class of the team can use",
			edits: []string{"  - name: team-b\n    quota: {gpu: 2}\n", "  - name: team-b\n    quota: {gpu: 2}\n    classes: [etl]\n",
				"  - name: training\n", "  - name: etl\n    pools: [cpu]\n  - name: training\n",
				"  - name: gpu\n", "  - name: cpu\n    machine: {cpu: 16, memory: 64Gi}\n    autoscale: {min: 0, max: 2}\n  - name: gpu\n"},
			want: []want{{Line: 32, Field: "spec.teams[1].quota.gpu", Warning: true, Message: "none of the team's classes reaches a GPU pool, so Kueue has no flavor to admit its GPU work on",
				Fix: "add a GPU pool to one of the team's classes"}},
		},
		{
			name:  "a weight without fair sharing",
			edits: []string{"lend: 2", "lend: 2\n      weight: 2"},
			want: []want{{Line: 28, Field: "spec.teams[0].queue.weight", Warning: true, Message: "only fair sharing reads a team's weight, and spec.fairSharing is off",
				Fix: "set spec.fairSharing: true, or remove the weight"}},
		},
		{
			name:  "GPUs on a pool none of the team's classes reaches",
			edits: []string{"pools: [spot-gpu, gpu]", "pools: [spot-gpu]"},
			want: []want{{Line: 26, Field: "spec.teams[0].queue.gpus[1].pool", Warning: true, Message: `none of the team's classes reaches pool "gpu", so these GPUs can only be lent`,
				Fix: "give the GPUs to spot-gpu"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := Parse("bp.yaml", []byte(editQueued(t, tc.edits...)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, match(got, tc.want)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// At places a problem found after loading (berth up's refusal of
// queueing: Kueue) at its field's line.
func TestAtPlacesAProblemOnItsField(t *testing.T) {
	p := At("bp.yaml", []byte(queued), problem.Problem{Field: "spec.queueing", Message: "m", Fix: "f"})
	if p.File != "bp.yaml" || p.Line != 6 {
		t.Errorf("At placed spec.queueing at %s:%d; want bp.yaml:6", p.File, p.Line)
	}
	if p := At("bp.yaml", []byte(queued), problem.Problem{Field: "spec.teams[1].queue"}); p.Line != 28 {
		t.Errorf("a field the file leaves out is placed at line %d; want 28, its nearest parent (teams[1])", p.Line)
	}
}
