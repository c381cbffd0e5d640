package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// Files that will join a blueprint's cluster are audited with the
// blueprint's own objects present: the team's GPU quota, LimitRange and
// its class's budget are there, though the files hold none of them, and
// the present objects are neither checked nor counted.
func TestBlueprintObjectsArePresent(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reco.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: reco, namespace: team-a, labels: {berth.io/class: inference}}
spec:
  replicas: 2
  selector: {matchLabels: {app: reco}}
  template:
    metadata: {labels: {app: reco, berth.io/class: inference}}
    spec:
      priorityClassName: inference-high
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app: reco}}}
      containers:
      - name: reco
        image: reco:1
        resources: {limits: {nvidia.com/gpu: 1, cpu: 1, memory: 4Gi}, requests: {cpu: 1, memory: 4Gi}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	alone := Options{}
	alone.UseBlueprint(bp)
	withBlueprint := alone
	withBlueprint.Present = BlueprintObjects(bp)
	for _, c := range []struct {
		name string
		o    Options
		want []string
	}{
		{"alone", alone, []string{v1alpha1.RuleGPUQuotaMissing, v1alpha1.RuleInferencePDB, v1alpha1.RuleLimitRangeMissing}},
		{"beside the blueprint's objects", withBlueprint, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := loadAndCheck(t, c.o, path)
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Rule)
			}
			if diff := cmp.Diff(c.want, sortedCopy(got)); diff != "" {
				t.Errorf("rules found (-want +got):\n%s\nfindings: %+v", diff, r.Findings)
			}
			if diff := cmp.Diff(map[string]int{"Deployment": 1}, r.Objects); diff != "" {
				t.Errorf("objects counted (-want +got):\n%s", diff)
			}
		})
	}
}
