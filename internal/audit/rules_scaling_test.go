package audit

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// The scaling rules hold autoscalers to their workload's class: what
// follows the class passes, and each way of missing it is one finding on
// the object to fix.
func TestScalingRules(t *testing.T) {
	const gpuNode = `apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {agentpool: gpu}}
status: {capacity: {nvidia.com/gpu: "1"}}
`
	workload := func(kind, name, class string, replicas int) string {
		return `---
apiVersion: apps/v1
kind: ` + kind + `
metadata: {name: ` + name + `, namespace: q}
spec:
  replicas: ` + strconv.Itoa(replicas) + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `, berth.io/class: ` + class + `}}
    spec:
      containers: [{name: w, image: w:1, resources: {limits: {nvidia.com/gpu: "1"}}}]
`
	}
	hpa := func(name, extra string) string {
		return `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: ` + name + `, namespace: q` + extra + `}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ` + name + `}
  maxReplicas: 4
`
	}
	scaledObject := func(name, spec string) string {
		return `---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: ` + name + `, namespace: q}
spec:
  scaleTargetRef: {name: ` + name + `}
` + spec
	}
	classes := []v1alpha1.Class{
		{Name: "chat", Pools: []string{"cpu", "gpu"}, Scaling: &v1alpha1.Scaling{Metric: v1alpha1.MetricRPS, Target: 20, MaxReplicas: 4}},
		{Name: "chat-short", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{Metric: v1alpha1.MetricRPS, Target: 20, MaxReplicas: 4,
			ScaleDownWindow: &metav1.Duration{Duration: 2 * time.Minute}}},
		{Name: "queue", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{MaxReplicas: 4, Queue: &v1alpha1.Queue{Type: v1alpha1.QueueKafka}}},
		{Name: "queue-floor", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{MaxReplicas: 4, MinReplicas: ptr.To[int32](1), Queue: &v1alpha1.Queue{Type: v1alpha1.QueueKafka}}},
		{Name: "queue-cpu", Pools: []string{"cpu"}, Scaling: &v1alpha1.Scaling{MaxReplicas: 4, Queue: &v1alpha1.Queue{Type: v1alpha1.QueueKafka}}},
		{Name: "plain", Pools: []string{"gpu"}},
	}
	for _, c := range []struct {
		name, files string
		want        []string
	}{
		{"window as the class's", workload("Deployment", "a", "chat", 2) + hpa("a", "") + "  behavior: {scaleDown: {stabilizationWindowSeconds: 600}}\n", nil},
		{"window unset", workload("Deployment", "a", "chat", 2) + hpa("a", ""),
			[]string{"berth/hpa-class-window HorizontalPodAutoscaler q/a spec.behavior.scaleDown.stabilizationWindowSeconds"}},
		{"class with a short window", workload("Deployment", "a", "chat-short", 2) + hpa("a", ""), nil},
		{"class without scaling", workload("Deployment", "a", "plain", 2) + hpa("a", ""), nil},
		{"KEDA's own HPA", workload("Deployment", "a", "chat", 2) + hpa("a", ", labels: {scaledobject.keda.sh/name: a}") + "  behavior: {scaleDown: {stabilizationWindowSeconds: 60}}\n", nil},
		{"ScaledObject to zero, slowly", workload("Deployment", "a", "queue", 0) + scaledObject("a", "  cooldownPeriod: 600\n"), nil},
		{"ScaledObject with a short advanced window", workload("Deployment", "a", "queue", 0) + scaledObject("a", "  cooldownPeriod: 600\n  advanced: {horizontalPodAutoscalerConfig: {behavior: {scaleDown: {stabilizationWindowSeconds: 120}}}}\n"),
			[]string{"berth/hpa-class-window ScaledObject q/a spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds"}},
		{"ScaledObject with the default cooldown and a floor", workload("Deployment", "a", "queue", 0) + scaledObject("a", "  minReplicaCount: 2\n"),
			[]string{"berth/hpa-class-window ScaledObject q/a spec.cooldownPeriod", "berth/queue-never-zero ScaledObject q/a spec.minReplicaCount"}},
		{"at zero, nothing scales it", workload("Deployment", "a", "queue", 0), nil},
		{"replicas, nothing scales it", workload("StatefulSet", "a", "queue", 1),
			[]string{"berth/queue-never-zero StatefulSet q/a spec.replicas"}},
		{"HPA to zero", workload("Deployment", "a", "queue", 1) + hpa("a", "") + "  minReplicas: 0\n  behavior: {scaleDown: {stabilizationWindowSeconds: 600}}\n", nil},
		{"HPA floor unset", workload("Deployment", "a", "queue", 1) + hpa("a", "") + "  behavior: {scaleDown: {stabilizationWindowSeconds: 600}}\n",
			[]string{"berth/queue-never-zero HorizontalPodAutoscaler q/a spec.minReplicas"}},
		{"queue class with a floor", workload("Deployment", "a", "queue-floor", 1), nil},
		{"queue class on CPU", workload("Deployment", "a", "queue-cpu", 1), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.yaml")
			writeFile(t, path, []byte(gpuNode+c.files))
			r := loadAndCheck(t, Options{Classes: classes}, path)
			var got []string
			for _, f := range r.Findings {
				if f.Rule == v1alpha1.RuleHPAClassWindow || f.Rule == v1alpha1.RuleQueueNeverZero {
					got = append(got, f.Rule+" "+f.Object.String()+" "+f.Field)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
