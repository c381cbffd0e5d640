package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// Scaling says how a class's workloads scale (seed 000): inference with an
// HPA on requests per second or GPU utilisation and a long scale-down
// window, batch with KEDA on a queue's depth, down to zero.
type Scaling struct {
	// Metric is what the HPA scales on: rps (requests per second per pod),
	// gpuUtilization or cpu (percent). Empty means none: only a class
	// with a queue may leave it out.
	Metric ScalingMetric `json:"metric,omitempty"`
	// Target is the metric's value per pod: requests per second for rps,
	// percent for gpuUtilization and cpu. Zero means unset; required
	// with a metric.
	Target int32 `json:"target,omitempty"`
	// MinReplicas is the fewest replicas. Nil means 1, or 0 for a class
	// with a queue (KEDA scales it to zero when the queue is empty).
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas. Required.
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// ScaleDownWindow is how long the load must stay low before replicas
	// go (an HPA's scaleDown stabilization window, a ScaledObject's
	// cooldownPeriod). Nil means 10m for a class on a GPU pool, whose
	// replicas take minutes to start and load a model, 5m otherwise.
	ScaleDownWindow *metav1.Duration `json:"scaleDownWindow,omitempty"`
	// Queue, for a batch class, scales it with KEDA on a queue's depth.
	// Nil means no queue.
	Queue *Queue `json:"queue,omitempty"`
}

// ScalingMetric is what an inference class's HPA scales on.
type ScalingMetric string

const (
	MetricRPS            ScalingMetric = "rps"
	MetricGPUUtilization ScalingMetric = "gpuUtilization"
	MetricCPU            ScalingMetric = "cpu"
)

// QueueType is the KEDA scaler a queue is read by.
type QueueType string

const (
	QueueRabbitMQ QueueType = "rabbitmq"
	QueueKafka    QueueType = "kafka"
	QueueSQS      QueueType = "sqs"
)

// Queue is the work queue a batch class drains. Each type takes only the
// fields its KEDA trigger needs.
type Queue struct {
	// Type is rabbitmq, kafka or sqs. Required.
	Type QueueType `json:"type"`
	// QueueName (rabbitmq) is the queue to read.
	QueueName string `json:"queueName,omitempty"`
	// HostSecret (rabbitmq) names a Secret in the workload's namespace
	// whose key "host" holds the AMQP URL with its credentials
	// (amqp://user:password@host:5672/vhost).
	HostSecret string `json:"hostSecret,omitempty"`
	// BootstrapServers (kafka) is the comma-separated brokers, host:port.
	BootstrapServers string `json:"bootstrapServers,omitempty"`
	// ConsumerGroup (kafka) is the group whose lag is measured.
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	// Topic (kafka) is the topic whose lag is measured.
	Topic string `json:"topic,omitempty"`
	// QueueURL (sqs) is the queue's full URL.
	QueueURL string `json:"queueURL,omitempty"`
	// AWSRegion (sqs) is the queue's region.
	AWSRegion string `json:"awsRegion,omitempty"`
	// Target is the messages (kafka: lag) one replica works through: KEDA
	// runs ceil(depth / target) replicas. Zero means 5, KEDA's default
	// for sqs and kafka.
	Target int32 `json:"target,omitempty"`
	// ActivationThreshold is the depth above which the class wakes from
	// zero replicas. Zero means any message wakes it.
	ActivationThreshold int32 `json:"activationThreshold,omitempty"`
}

// Scale-down windows a class gets when it names none.
const (
	DefaultGPUScaleDownWindow = 10 * time.Minute
	DefaultScaleDownWindow    = 5 * time.Minute
	DefaultQueueTarget        = int32(5)
)

// setScalingDefaults fills a class's scaling: its window from whether it
// runs on a GPU pool, its floor from whether it has a queue.
func setScalingDefaults(c *Class, pools []Pool) {
	s := c.Scaling
	if s == nil {
		return
	}
	if s.ScaleDownWindow == nil {
		w := DefaultScaleDownWindow
		if classOnGPU(c, pools) {
			w = DefaultGPUScaleDownWindow
		}
		s.ScaleDownWindow = &metav1.Duration{Duration: w}
	}
	if s.MinReplicas == nil {
		n := int32(1)
		if s.Queue != nil {
			n = 0
		}
		s.MinReplicas = &n
	}
	if q := s.Queue; q != nil && q.Target == 0 {
		q.Target = DefaultQueueTarget
	}
}

// classOnGPU reports whether any of the class's pools has GPUs.
func classOnGPU(c *Class, pools []Pool) bool {
	for _, name := range c.Pools {
		for i := range pools {
			if pools[i].Name == name && pools[i].Machine.GPU != nil {
				return true
			}
		}
	}
	return false
}

func validateScaling(cp *field.Path, c *Class) problem.List {
	s := c.Scaling
	if s == nil {
		return nil
	}
	var errs problem.List
	sp := cp.Child("scaling")
	switch {
	case s.Metric != "":
		errs = append(errs, oneOf(sp.Child("metric"), string(s.Metric), MetricRPS, MetricGPUUtilization, MetricCPU)...)
		if s.Target <= 0 {
			errs = append(errs, invalid(sp.Child("target"), "must be greater than zero with a metric", "give requests per second per pod for rps, or a percent for gpuUtilization and cpu, e.g. target: 70"))
		} else if s.Metric != MetricRPS && s.Target > 100 {
			errs = append(errs, invalid(sp.Child("target"), fmt.Sprintf("%s is a percent, at most 100", s.Metric), "e.g. target: 70"))
		}
	case s.Queue == nil:
		errs = append(errs, invalid(sp.Child("metric"), "a class scales on a metric or a queue", "set metric: rps, gpuUtilization or cpu with a target, or a queue"))
	}
	if s.MaxReplicas < 1 {
		errs = append(errs, invalid(sp.Child("maxReplicas"), "the most replicas must be at least 1", "e.g. maxReplicas: 4"))
	}
	if m := s.MinReplicas; m != nil {
		if *m < 0 {
			errs = append(errs, invalid(sp.Child("minReplicas"), "must not be negative", "0 for a queue, 1 or more otherwise"))
		} else if *m == 0 && s.Queue == nil {
			errs = append(errs, invalid(sp.Child("minReplicas"), "only a class with a queue scales to zero: an HPA keeps at least one replica", "set minReplicas: 1, or add a queue"))
		} else if s.MaxReplicas >= 1 && *m > s.MaxReplicas {
			errs = append(errs, invalid(sp.Child("minReplicas"), fmt.Sprintf("is greater than maxReplicas (%d)", s.MaxReplicas), fmt.Sprintf("set minReplicas to at most %d", s.MaxReplicas)))
		}
	}
	if w := s.ScaleDownWindow; w != nil && (w.Duration < 0 || w.Duration > time.Hour || w.Duration%time.Second != 0) {
		errs = append(errs, invalid(sp.Child("scaleDownWindow"), "must be whole seconds from 0s to 1h, as an HPA's stabilization window is", "e.g. 10m for GPU inference, 5m otherwise"))
	}
	return append(errs, validateQueue(sp.Child("queue"), s.Queue)...)
}

func validateQueue(qp *field.Path, q *Queue) problem.List {
	if q == nil {
		return nil
	}
	errs := oneOf(qp.Child("type"), string(q.Type), QueueRabbitMQ, QueueKafka, QueueSQS)
	need := func(name, v, example string) {
		if v == "" {
			errs = append(errs, invalid(qp.Child(name), fmt.Sprintf("a %s queue needs %s", q.Type, name), fmt.Sprintf("e.g. %s: %s", name, example)))
		}
	}
	forbid := func(name, v string) {
		if v != "" {
			errs = append(errs, invalid(qp.Child(name), fmt.Sprintf("a %s queue does not use %s", q.Type, name), "remove it"))
		}
	}
	switch q.Type {
	case QueueRabbitMQ:
		need("queueName", q.QueueName, "jobs")
		need("hostSecret", q.HostSecret, "rabbitmq-host")
		if q.HostSecret != "" {
			errs = append(errs, dnsLabel(qp.Child("hostSecret"), q.HostSecret)...)
		}
		forbid("bootstrapServers", q.BootstrapServers)
		forbid("consumerGroup", q.ConsumerGroup)
		forbid("topic", q.Topic)
		forbid("queueURL", q.QueueURL)
		forbid("awsRegion", q.AWSRegion)
	case QueueKafka:
		need("bootstrapServers", q.BootstrapServers, "kafka.svc:9092")
		need("consumerGroup", q.ConsumerGroup, "batch")
		need("topic", q.Topic, "jobs")
		forbid("queueName", q.QueueName)
		forbid("hostSecret", q.HostSecret)
		forbid("queueURL", q.QueueURL)
		forbid("awsRegion", q.AWSRegion)
	case QueueSQS:
		need("queueURL", q.QueueURL, "https://sqs.eu-west-1.amazonaws.com/ACCOUNT/jobs")
		need("awsRegion", q.AWSRegion, "eu-west-1")
		forbid("queueName", q.QueueName)
		forbid("hostSecret", q.HostSecret)
		forbid("bootstrapServers", q.BootstrapServers)
		forbid("consumerGroup", q.ConsumerGroup)
		forbid("topic", q.Topic)
	}
	if q.Target < 0 {
		errs = append(errs, invalid(qp.Child("target"), "must not be negative", "give the messages one replica works through, e.g. target: 5"))
	}
	if q.ActivationThreshold < 0 {
		errs = append(errs, invalid(qp.Child("activationThreshold"), "must not be negative", "0 wakes the class on any message"))
	}
	return errs
}
