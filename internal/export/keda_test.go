package export

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
)

// TestKEDATriggerMetadata pins each trigger's type and metadata to the
// names KEDA's scaler documentation gives (keda.sh/docs/latest/scalers:
// rabbitmq-queue, apache-kafka, aws-sqs).
func TestKEDATriggerMetadata(t *testing.T) {
	for _, tc := range []struct {
		queue v1alpha1.Queue
		typ   string
		want  map[string]any
	}{
		{v1alpha1.Queue{Type: v1alpha1.QueueRabbitMQ, QueueName: "jobs", HostSecret: "rmq", Target: 10, ActivationThreshold: 1}, "rabbitmq",
			map[string]any{"queueName": "jobs", "mode": "QueueLength", "value": "10", "activationValue": "1"}},
		{v1alpha1.Queue{Type: v1alpha1.QueueKafka, BootstrapServers: "kafka.svc:9092", ConsumerGroup: "g", Topic: "t", Target: 5}, "kafka",
			map[string]any{"bootstrapServers": "kafka.svc:9092", "consumerGroup": "g", "topic": "t", "lagThreshold": "5", "activationLagThreshold": "0"}},
		{v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: "https://sqs.eu-west-1.amazonaws.com/1/q", AWSRegion: "eu-west-1", Target: 5, ActivationThreshold: 2}, "aws-sqs-queue",
			map[string]any{"queueURL": "https://sqs.eu-west-1.amazonaws.com/1/q", "awsRegion": "eu-west-1", "queueLength": "5", "activationQueueLength": "2"}},
	} {
		if got := kedaTriggerType(tc.queue.Type); got != tc.typ {
			t.Errorf("%s: trigger type %q, want %q", tc.queue.Type, got, tc.typ)
		}
		if diff := cmp.Diff(tc.want, kedaMetadata(&tc.queue)); diff != "" {
			t.Errorf("%s: metadata (-want +got):\n%s", tc.queue.Type, diff)
		}
	}
}

// TestScaledObjectScalesToZero: a queue class's ScaledObject starts at
// zero and cools down over the class's window.
func TestScaledObjectScalesToZero(t *testing.T) {
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{
		Pools:   []v1alpha1.Pool{{Name: "gpu", Machine: v1alpha1.Machine{GPU: &v1alpha1.GPU{Count: 1}}}},
		Classes: []v1alpha1.Class{{Name: "batch", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{MaxReplicas: 3, Queue: &v1alpha1.Queue{Type: v1alpha1.QueueKafka}}}},
	}}
	v1alpha1.SetDefaults(bp)
	objs, _ := scalingTemplates(&bp.Spec.Classes[0])
	spec := objs[len(objs)-1]["spec"].(map[string]any)
	if spec["minReplicaCount"] != int32(0) || spec["maxReplicaCount"] != int32(3) || spec["cooldownPeriod"] != int64(600) {
		t.Errorf("ScaledObject spec %v: want minReplicaCount 0, maxReplicaCount 3, cooldownPeriod 600", spec)
	}
}
