package apply

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
)

var update = flag.Bool("update", false, "rewrite golden files")

func kind(name string) compile.Kind {
	for _, k := range compile.Kinds {
		if k.Kind == name {
			return k
		}
	}
	panic("no kind " + name)
}

// The plan is what users read before anything changes: its rendering is
// pinned by a golden file.
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan *Plan
	}{
		{"empty", &Plan{Blueprint: "retail-analytics", PoolsManaged: true}},
		{"objects", &Plan{
			Blueprint: "retail-analytics",
			Objects: []ObjectChange{
				{Kind: kind("Namespace"), Name: "team-c", Action: Create, Fields: []FieldChange{{Path: `metadata.labels["berth.io/team"]`, To: "team-c"}}},
				{Kind: kind("ResourceQuota"), Namespace: "team-a", Name: "team-quota", Action: Update,
					Fields: []FieldChange{{Path: `spec.hard["requests.nvidia.com/gpu"]`, From: "4", To: "6"}, {Path: "spec.hard.pods", From: "20"}}},
				{Kind: kind("PriorityClass"), Name: "training-low", Action: Replace, Note: "replace: value cannot change in place, so the object is deleted and created again",
					Fields: []FieldChange{{Path: "value", From: "1000", To: "500"}}},
				{Kind: kind("LimitRange"), Namespace: "team-a", Name: "team-defaults", Action: Conflict,
					Note: conflictNote(apierrors.NewApplyConflict([]metav1.StatusCause{{
						Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1`, Field: ".spec.limits",
					}}, `Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .spec.limits`)),
					Fields: []FieldChange{{Path: "spec.limits[0].max.cpu", From: "32", To: "24"}}},
				{Kind: kind("PodDisruptionBudget"), Namespace: "team-b", Name: "inference-budget", Action: Delete},
			},
			Kept:    []string{"Namespace team-b"},
			Ignored: []string{"ResourceQuota team-a/team-quota-2 carries berth's labels, but berth did not create it"},
		}},
		{"remote", &Plan{
			Blueprint:   "retail-analytics",
			Objects:     []ObjectChange{{Kind: kind("Namespace"), Name: "team-a", Action: Update, Note: "adopt: berth did not create it; from now on berth manages the fields it sets", Fields: []FieldChange{{Path: `metadata.labels["berth.io/team"]`, To: "team-a"}}}},
			Unsupported: []string{"4 ValidatingAdmissionPolicy(s): this cluster does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, so " + unsupportedMeans["ValidatingAdmissionPolicy"]},
		}},
		{"pools", &Plan{
			Blueprint:    "retail-analytics",
			PoolsManaged: true,
			Pools: []pools.Change{{Pool: "cpu", Action: pools.Update, From: 4, To: 4, Fields: []string{"label tier: (none) → general"},
				Blockers: problem.List{{Message: "pod ns/debug on cpu-3 has no controller, so nothing would recreate it after eviction", Fix: "delete it"}}},
				// Adds and removes are the planner's; a version change
				// alone shows the control plane's step.
				{Pool: "web", Action: pools.Replace, From: 2, To: 2, Fields: []string{"kubernetes version: v1.35.0 → v1.36.3"}, FromVersion: "v1.35.0", ToVersion: "v1.36.3"}},
		}},
		{"budgets", &Plan{
			Blueprint:    "retail-analytics",
			PoolsManaged: true,
			Budgets: []budgets.Change{
				{Action: budgets.Create, Namespace: "team-a", Name: "deployment-search-budget", Detail: "Deployment search, class inference: minAvailable 2"},
				{Action: budgets.Delete, Namespace: "team-a", Name: "deployment-gone-budget", Detail: "its workload is gone or needs no budget"},
			},
			Shared: []string{"StorageClass standard: blueprint shop's, which this cluster shares"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.plan.Render(&b)
			golden := "testdata/" + tc.name + ".plan"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if d := cmp.Diff(string(want), b.String()); d != "" {
				t.Errorf("rendered plan (-want +got):\n%s", d)
			}
		})
	}
}
