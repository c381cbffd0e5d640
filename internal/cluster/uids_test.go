package cluster

import (
	"testing"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/apis/batch"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// Two replays create the same objects under the same keys: they get the
// same UIDs, in the same order; a key created again (a pod deleted and
// made anew under its name) gets a new one; every UID is a UUID.
func TestRehearsalUIDsRepeatAndNeverRepeatWithinARun(t *testing.T) {
	keys := []string{"/registry/jobs/team-a/train", "/registry/pods/team-a/train-abc", "/registry/jobs/team-a/train"}
	replay := func() []string {
		u := &uidSource{created: map[string]int{}}
		var out []string
		for _, k := range keys {
			out = append(out, string(u.next(k)))
		}
		return out
	}
	a, b := replay(), replay()
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("creation %d of %s: UID %s in one replay, %s in the other; want the same", i, keys[i], a[i], b[i])
		}
		if seen[a[i]] {
			t.Errorf("creation %d of %s: UID %s given before; want a new one", i, keys[i], a[i])
		}
		seen[a[i]] = true
		if _, err := uuid.Parse(a[i]); err != nil {
			t.Errorf("UID %q: %v; want a UUID", a[i], err)
		}
	}
}

// The Job registry generates a Job's selector and its template's labels
// from the UID it drew; the storage's UID replaces it there too, or
// validation would refuse every later update of the Job's spec. A label
// the user set to another value stays.
func TestJobSelectorTakesTheStoredUID(t *testing.T) {
	drawn, uid := types.UID("drawn-at-random"), types.UID("from-the-key")
	job := &batch.Job{Spec: batch.JobSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUidLabel: string(drawn)}},
		Template: api.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			batch.ControllerUidLabel: string(drawn), batch.LegacyControllerUidLabel: string(drawn), "app": "train",
		}}},
	}}
	regenerateSelector(job, drawn, uid)
	if got := job.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; got != string(uid) {
		t.Errorf("selector's controller-uid %q; want %q", got, uid)
	}
	for _, key := range []string{batch.ControllerUidLabel, batch.LegacyControllerUidLabel} {
		if got := job.Spec.Template.Labels[key]; got != string(uid) {
			t.Errorf("template's %s %q; want %q", key, got, uid)
		}
	}
	if job.Spec.Template.Labels["app"] != "train" {
		t.Errorf("the user's label changed: %v", job.Spec.Template.Labels)
	}
	mine := &batch.Job{Spec: batch.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUidLabel: "chosen"}}}}
	regenerateSelector(mine, drawn, uid)
	if got := mine.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; got != "chosen" {
		t.Errorf("a selector the user wrote became %q; want it kept", got)
	}
}
