package export

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
)

// Workload is the placeholder a scaling template leaves for the
// Deployment (or StatefulSet) it scales: a ScaledObject or an HPA targets
// one workload, and a class has many.
const Workload = "WORKLOAD"

// kedaPollingInterval is KEDA's default, written out so the template says
// how often the queue is read.
const kedaPollingInterval = 30

// writeScalingTemplates ends the manifests with each scaling class's
// templates, commented out: they name no real workload, so applying the
// file as it stands must not create them.
func writeScalingTemplates(w io.Writer, bp *v1alpha1.Blueprint) error {
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if c.Scaling == nil {
			continue
		}
		objs, intro := scalingTemplates(c)
		fmt.Fprintln(w)
		writeComment(w, "", intro)
		for _, obj := range objs {
			data, err := yaml.Marshal(obj)
			if err != nil {
				return fmt.Errorf("writing class %s's scaling template: %w", c.Name, err)
			}
			fmt.Fprintln(w, "#")
			for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				fmt.Fprintln(w, "#   "+l)
			}
		}
	}
	return nil
}

// scalingTemplates are a class's scaling objects as unstructured data: a
// KEDA ScaledObject (and, for rabbitmq, its TriggerAuthentication) for a
// class with a queue, an HPA for one with a metric.
func scalingTemplates(c *v1alpha1.Class) ([]map[string]any, string) {
	s := c.Scaling
	window := int64(s.ScaleDownWindow.Duration.Seconds())
	labels := map[string]string{v1alpha1.LabelClass: c.Name}
	if q := s.Queue; q != nil {
		objs := KEDAObjects(s, KEDATarget{Workload: Workload, Auth: c.Name + "-rabbitmq", Labels: labels})
		return objs, fmt.Sprintf("Class %s scales on its %s queue with KEDA (install KEDA first). A ScaledObject scales one workload: for each of the class's Deployments, copy this template into its namespace, replace %s with the Deployment's name, and apply it.", c.Name, q.Type, Workload)
	}
	return []map[string]any{{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": Workload, "labels": labels},
		"spec": map[string]any{
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": Workload},
			"minReplicas":    *s.MinReplicas,
			"maxReplicas":    s.MaxReplicas,
			"metrics":        []any{hpaMetric(s)},
			"behavior":       scaleDownBehavior(window),
		},
	}}, fmt.Sprintf("Class %s scales on %s with an HPA whose scale-down window is %ds. An HPA scales one workload: for each of the class's Deployments, copy this template into its namespace, replace %s with the Deployment's name, and apply it.", c.Name, s.Metric, window, Workload)
}

// KEDATarget is what a queue's KEDA objects scale, and what they are
// called.
type KEDATarget struct {
	// Workload is the Deployment scaled, and the ScaledObject's name.
	Workload string
	// Namespace is the objects' namespace. Empty means none is written (a
	// template, applied in the namespace it is copied to).
	Namespace string
	// Auth names the TriggerAuthentication a rabbitmq queue's trigger
	// reads its host from. Unused for the other queues.
	Auth string
	// Labels are the objects' labels.
	Labels map[string]string
}

// KEDAObjects are the KEDA objects that scale t.Workload on s's queue, as
// unstructured data: for rabbitmq a TriggerAuthentication reading the
// host from Secret s.Queue.HostSecret (key host), then the ScaledObject
// (from s.MinReplicas to s.MaxReplicas, cooling down, and stabilising its
// HPA's scale-down, over s.ScaleDownWindow). s must have a queue and be
// defaulted (MinReplicas, ScaleDownWindow set).
func KEDAObjects(s *v1alpha1.Scaling, t KEDATarget) []map[string]any {
	q := s.Queue
	window := int64(s.ScaleDownWindow.Duration.Seconds())
	meta := func(name string) map[string]any {
		m := map[string]any{"name": name, "labels": t.Labels}
		if t.Namespace != "" {
			m["namespace"] = t.Namespace
		}
		return m
	}
	trigger := map[string]any{"type": kedaTriggerType(q.Type), "metadata": kedaMetadata(q)}
	var objs []map[string]any
	if q.Type == v1alpha1.QueueRabbitMQ {
		trigger["authenticationRef"] = map[string]any{"name": t.Auth}
		objs = append(objs, map[string]any{
			"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
			"metadata": meta(t.Auth),
			"spec": map[string]any{"secretTargetRef": []any{
				map[string]any{"parameter": "host", "name": q.HostSecret, "key": "host"},
			}},
		})
	}
	return append(objs, map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": meta(t.Workload),
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"name": t.Workload},
			"minReplicaCount": *s.MinReplicas,
			"maxReplicaCount": s.MaxReplicas,
			"pollingInterval": kedaPollingInterval,
			"cooldownPeriod":  window,
			"advanced":        map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": scaleDownBehavior(window)}},
			"triggers":        []any{trigger},
		},
	})
}

func scaleDownBehavior(window int64) map[string]any {
	return map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": window}}
}

// hpaMetric is the HPA metric for the class's: cpu is a resource metric;
// rps and GPU utilisation come through a metrics adapter as pod metrics
// (requests_per_second from the server, DCGM_FI_DEV_GPU_UTIL from the
// DCGM exporter).
func hpaMetric(s *v1alpha1.Scaling) map[string]any {
	target := strconv.Itoa(int(s.Target))
	switch s.Metric {
	case v1alpha1.MetricCPU:
		return map[string]any{"type": "Resource", "resource": map[string]any{
			"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": s.Target}}}
	case v1alpha1.MetricGPUUtilization:
		return podMetric(v1alpha1.MetricGPUUtil, target)
	default:
		return podMetric(v1alpha1.MetricRequestsPerSecond, target)
	}
}

func podMetric(name, target string) map[string]any {
	return map[string]any{"type": "Pods", "pods": map[string]any{
		"metric": map[string]any{"name": name},
		"target": map[string]any{"type": "AverageValue", "averageValue": target}}}
}

// kedaTriggerType is KEDA's name for the queue's scaler.
func kedaTriggerType(t v1alpha1.QueueType) string {
	if t == v1alpha1.QueueSQS {
		return "aws-sqs-queue"
	}
	return string(t)
}

// kedaMetadata is the trigger's metadata, named as KEDA's scaler
// documentation names it; KEDA reads every value as a string.
func kedaMetadata(q *v1alpha1.Queue) map[string]any {
	target, activation := strconv.Itoa(int(q.Target)), strconv.Itoa(int(q.ActivationThreshold))
	switch q.Type {
	case v1alpha1.QueueRabbitMQ:
		// host comes from the TriggerAuthentication.
		return map[string]any{"queueName": q.QueueName, "mode": "QueueLength", "value": target, "activationValue": activation}
	case v1alpha1.QueueKafka:
		return map[string]any{"bootstrapServers": q.BootstrapServers, "consumerGroup": q.ConsumerGroup, "topic": q.Topic,
			"lagThreshold": target, "activationLagThreshold": activation}
	default:
		return map[string]any{"queueURL": q.QueueURL, "awsRegion": q.AWSRegion, "queueLength": target, "activationQueueLength": activation}
	}
}
