package audit

import (
	"path/filepath"
	"testing"

	"berth.io/berth/api/v1alpha1"
)

// A Deployment of a class with a disruption budget needs no PDB in the
// files: berth gives it one of its own (internal/budgets). Without the
// namespace's berth.io/budgets annotation, it does.
func TestClassBudgetCounts(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: reco, namespace: team-a, labels: {berth.io/class: inference}}
spec:
  replicas: 2
  selector: {matchLabels: {app: reco}}
  template:
    metadata: {labels: {app: reco, berth.io/class: inference}}
    spec:
      containers: [{name: server, image: reco:1}]
`
	for _, c := range []struct {
		annotation string
		want       int
	}{
		{`{"inference":{"minAvailable":1}}`, 0},
		{`{"training":{"minAvailable":1}}`, 1},
		{``, 1},
	} {
		dir := t.TempDir()
		ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, annotations: {berth.io/budgets: '" + c.annotation + "'}}\n---\n"
		writeFile(t, filepath.Join(dir, "w.yaml"), []byte(ns+deployment))
		r := loadAndCheck(t, Options{}, dir)
		got := 0
		for _, f := range r.Findings {
			if f.Rule == v1alpha1.RuleInferencePDB {
				got++
			}
		}
		if got != c.want {
			t.Errorf("budgets %q: %d inference-pdb findings, want %d", c.annotation, got, c.want)
		}
	}
}
