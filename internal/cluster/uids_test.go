package cluster

import (
	"testing"

	"github.com/google/uuid"
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
