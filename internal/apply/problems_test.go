package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
)

// What stops apply names the object or pool it concerns and carries its
// fix apart from the message, so that it renders as every other problem.
func TestPlanProblems(t *testing.T) {
	conflict := apierrors.NewApplyConflict([]metav1.StatusCause{{
		Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1`, Field: ".spec.limits",
	}}, `Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .spec.limits`)
	plan := &Plan{
		Objects: []ObjectChange{
			{Kind: kind("Namespace"), Name: "team-c", Action: Create},
			{Kind: kind("LimitRange"), Namespace: "team-a", Name: "team-defaults", Action: Conflict, Note: conflictNote(conflict)},
		},
		Pools: []pools.Change{{Pool: "cpu", Action: pools.Update,
			Blockers: problem.List{{Message: "pod ns/debug on cpu-3 has no controller", Fix: "delete it"}}}},
	}
	want := problem.List{
		{Object: problem.Object{Kind: "LimitRange", Namespace: "team-a", Name: "team-defaults"},
			Message: `spec.limits is managed by "kubectl-edit" using v1; berth will not overwrite another manager's fields`,
			Fix:     "change the value back, or hand the field to berth with `berth apply --force-conflicts`"},
		{Object: problem.Object{Kind: "Pool", Name: "cpu"}, Message: "pod ns/debug on cpu-3 has no controller", Fix: "delete it"},
	}
	if diff := cmp.Diff(want, plan.Problems()); diff != "" {
		t.Errorf("Problems() (-want +got):\n%s", diff)
	}
	if plan.Pools[0].Blockers[0].Object != (problem.Object{}) {
		t.Error("Problems() named the pool in the plan's own blocker")
	}
}
