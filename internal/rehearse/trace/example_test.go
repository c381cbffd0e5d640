package trace_test

import (
	"fmt"

	"berth.io/berth/internal/rehearse/trace"
)

// The YAML form, as the package documentation shows it.
func ExampleParse() {
	t, err := trace.Parse("trace.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Trace
spec:
  start: 2026-01-05T00:00:00Z
  jobs:
  - {submit: 0s, team: ml, kind: inference, name: reco, pods: 2, gpus: 1}
  - {submit: 1h, team: ml, kind: training, name: bert, pods: 4, gpus: 1, duration: 6h, checkpoint: 30m}
  load:
    steps:
    - {at: 0s, workloads: [{namespace: ml, name: reco, rps: 40}]}
    - {at: 2h, queues: {images: 100}}
  queues:
  - {name: images, itemTime: 30s}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range t.Jobs {
		fmt.Printf("%s: %s %s/%s, %d pods of %d GPU, for %s (checkpoint %s)\n", j.Submit, j.Kind, j.Team, j.Name, j.Pods, j.GPUs, j.Duration, j.Checkpoint)
	}
	fmt.Printf("ends at %s; queue %s items take %s\n", t.End(), t.Queues[0].Name, t.Queues[0].ItemTime)
	// Output:
	// 0s: inference ml/reco, 2 pods of 1 GPU, for 0s (checkpoint 0s)
	// 1h0m0s: training ml/bert, 4 pods of 1 GPU, for 6h0m0s (checkpoint 30m0s)
	// ends at 7h0m0s; queue images items take 30s
}
