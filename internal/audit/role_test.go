package audit

import (
	"path/filepath"
	"strings"
	"testing"
)

// A queue's worker on GPUs, labelled a batch component, is no inference
// server, however its class is named: one replica, no budget and no
// spread are right for it. Without the label the same Deployment is read
// as a server.
func TestBatchWorkerIsNoServer(t *testing.T) {
	const worker = `apiVersion: apps/v1
kind: Deployment
metadata: {name: embed, namespace: team-b, labels: {berth.io/class: batch-inference, app.kubernetes.io/component: COMPONENT}}
spec:
  selector: {matchLabels: {app: embed}}
  template:
    metadata: {labels: {app: embed, berth.io/class: batch-inference, app.kubernetes.io/component: COMPONENT}}
    spec:
      containers:
      - {name: embed, image: embed:1, resources: {limits: {nvidia.com/gpu: 1}}}
`
	for _, c := range []struct {
		component string
		server    bool
	}{{"batch", false}, {"worker", false}, {"server", true}} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "w.yaml"), []byte(strings.ReplaceAll(worker, "COMPONENT", c.component)))
		r := loadAndCheck(t, Options{}, dir)
		var inference []string
		for _, f := range r.Findings {
			if strings.HasPrefix(f.Rule, "berth/inference-") {
				inference = append(inference, f.Rule)
			}
		}
		if got := len(inference) > 0; got != c.server {
			t.Errorf("component %s: inference findings %v; want read as a server: %v", c.component, inference, c.server)
		}
	}
}
