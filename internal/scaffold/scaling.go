package scaffold

import (
	"fmt"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/metricsapi"
)

// Scaler is what scales a batch worker on its queue.
type Scaler string

const (
	// ScalerHPA is an autoscaling/v2 HPA on the queue's depth as an
	// External metric, down to zero replicas (HPAScaleToZero).
	ScalerHPA Scaler = "hpa"
	// ScalerKEDA is a KEDA ScaledObject on the queue.
	ScalerKEDA Scaler = "keda"
)

// Defaults of a scaffold whose class has no scaling of its own.
const (
	defaultWindow      = int32(v1alpha1.DefaultScaleDownWindow / time.Second)
	defaultGPUWindow   = int32(v1alpha1.DefaultGPUScaleDownWindow / time.Second)
	defaultMaxReplicas = int32(10)
	defaultCPUTarget   = int32(70)
)

func (b builder) hpa(kind Kind, minReplicas *int32, maxReplicas, window int32, metric autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: b.meta(b.o.Name, kind),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: b.o.Name},
			MinReplicas:    minReplicas,
			MaxReplicas:    maxReplicas,
			Metrics:        []autoscalingv2.MetricSpec{metric},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window)},
			},
		},
	}
}

func cpuMetric(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)},
		},
	}
}

func podsMetric(name string, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.PodsMetricSourceType,
		Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(int64(target), resource.DecimalSI)},
		},
	}
}

// classWindow is the class's scaleDownWindow in seconds, defaulted as the
// blueprint defaults it (10 minutes on a class with a GPU pool), and
// whether the class has scaling at all.
func (b builder) classWindow() (int32, bool) {
	sc := b.class.Scaling
	if sc == nil {
		return 0, false
	}
	if sc.ScaleDownWindow != nil {
		return int32(sc.ScaleDownWindow.Duration / time.Second), true
	}
	if len(ClassPools(b.bp, b.class, true)) > 0 {
		return defaultGPUWindow, true
	}
	return defaultWindow, true
}

// window is the scale-down window: the class's, at least 600 s for a pod
// with GPUs (a GPU replica takes minutes to come back: node, image,
// model), else 300 s; with why, for the comment.
func (b builder) window() (int32, string) {
	w, why := defaultWindow, "the HPA's default"
	if b.o.GPUs > 0 {
		w, why = defaultGPUWindow, "a GPU replica takes minutes to come back: node, image, model"
	}
	if cw, ok := b.classWindow(); ok && cw >= w {
		w, why = cw, "class "+b.class.Name+"'s scaleDownWindow"
	}
	return w, why
}

// inferenceHPA scales the inference Deployment on its class's metric:
// requests per second or GPU utilisation as a Pods metric (the names
// berth's local metrics server and real clusters' exporters share), CPU
// as a Resource metric; CPU at 70 % when the class names none.
func (b builder) inferenceHPA() Object {
	name := b.o.Name
	minReplicas, maxReplicas := b.inferenceReplicas(), defaultMaxReplicas
	metric, target := v1alpha1.MetricCPU, defaultCPUTarget
	asks := "the default (class " + b.class.Name + " names no metric)"
	note := ""
	if sc := b.class.Scaling; sc != nil {
		if sc.MinReplicas != nil {
			minReplicas = max(minReplicas, *sc.MinReplicas)
		}
		if sc.MaxReplicas > 0 {
			maxReplicas = max(sc.MaxReplicas, minReplicas)
		}
		if sc.Metric != "" && sc.Target > 0 {
			metric, target, asks = sc.Metric, sc.Target, "as class "+b.class.Name+" asks"
		}
		if metric == v1alpha1.MetricGPUUtilization && b.o.GPUs == 0 {
			// A pod without a GPU reports no GPU utilisation: the HPA
			// would never read its metric.
			metric, target = v1alpha1.MetricCPU, defaultCPUTarget
			note = "\nClass " + b.class.Name + " scales on GPU utilization, which a replica without GPUs does not\n" +
				"report: this one scales on CPU instead (pass --gpus to scale on the GPUs)."
			asks = "the default"
		}
	}
	window, why := b.window()
	load := "  berth load set deployment/" + name + " -n " + b.ns
	var spec autoscalingv2.MetricSpec
	var comment string
	switch metric {
	case v1alpha1.MetricRPS:
		spec = podsMetric(v1alpha1.MetricRequestsPerSecond, target)
		comment = fmt.Sprintf("Scales on requests per second per pod (Pods metric %s):\n"+
			"%d per pod, %s; from %d to %d replicas.\n"+
			"On a local cluster berth serves it from the load you set:\n%s --rps N\n"+
			"On a real cluster the server exports it and prometheus-adapter serves it.",
			v1alpha1.MetricRequestsPerSecond, target, asks, minReplicas, maxReplicas, load)
	case v1alpha1.MetricGPUUtilization:
		spec = podsMetric(v1alpha1.MetricGPUUtil, target)
		comment = fmt.Sprintf("Scales on GPU utilization (Pods metric %s):\n"+
			"%d %% per pod, %s; from %d to %d replicas.\n"+
			"On a local cluster berth serves it from the load you set:\n%s --gpu-util P\n"+
			"On a real cluster NVIDIA's DCGM exporter exports it and prometheus-adapter\nserves it.",
			v1alpha1.MetricGPUUtil, target, asks, minReplicas, maxReplicas, load)
	default:
		spec = cpuMetric(target)
		comment = fmt.Sprintf("Scales on CPU utilization: %d %% of the pods' CPU request,\n"+
			"%s; from %d to %d replicas.\n"+
			"On a local cluster berth serves it from the load you set:\n%s --cpu-util P\n"+
			"On a real cluster metrics-server does.", target, asks, minReplicas, maxReplicas, load)
	}
	comment += fmt.Sprintf("\nScale-down waits %d s before giving up replicas (%s).", window, why) + note
	return Object{Comment: comment, Object: b.hpa(Inference, ptr.To(minReplicas), maxReplicas, window, spec)}
}

// queueScaling is the batch worker's scaling on q, defaulted: the class's
// replicas and window when it has scaling (its floor only when the class
// drains a queue: a class without one floors at 1), else 0 to 10 replicas
// over 300 s, 600 s with GPUs.
func (b builder) queueScaling(q *workQueue) (*v1alpha1.Scaling, string) {
	queue := *q.Queue
	if queue.Target == 0 {
		queue.Target = v1alpha1.DefaultQueueTarget
	}
	s := &v1alpha1.Scaling{MinReplicas: ptr.To[int32](0), MaxReplicas: defaultMaxReplicas, Queue: &queue}
	window, why := defaultWindow, "the default"
	if b.o.GPUs > 0 {
		window, why = defaultGPUWindow, "the default with GPUs"
	}
	if sc := b.class.Scaling; sc != nil {
		window, _ = b.classWindow()
		why = "class " + b.class.Name + "'s scaleDownWindow"
		if sc.MaxReplicas > 0 {
			s.MaxReplicas = sc.MaxReplicas
		}
		if sc.Queue != nil && sc.MinReplicas != nil {
			s.MinReplicas = ptr.To(*sc.MinReplicas)
		}
	}
	s.ScaleDownWindow = &metav1.Duration{Duration: time.Duration(window) * time.Second}
	return s, why
}

// queueSource says where the worker's queue comes from.
func (b builder) queueSource(q *workQueue) string {
	if q.fromClass {
		return "class " + b.class.Name + "'s scaling.queue"
	}
	return "--queue"
}

// queueHPA scales the worker on its queue's depth, an External metric
// named as the broker's exporter names it, down to zero.
func (b builder) queueHPA(q *workQueue) Object {
	s, why := b.queueScaling(q)
	window := int32(s.ScaleDownWindow.Duration / time.Second)
	metric := metricsapi.QueueMetric(q.Type)
	spec := autoscalingv2.MetricSpec{
		Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{
				Name:     metric,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.MetricQueueLabel: q.name}},
			},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(int64(s.Queue.Target), resource.DecimalSI)},
		},
	}
	comment := fmt.Sprintf("Scales %s on the depth of %s queue %s\n(from %s): External metric\n"+
		"%s{%s=%s},\n"+
		"%d %s per replica, from %d to %d replicas. Replicas go once the depth\n"+
		"has stayed low for %d s (%s);\nwith the queue empty "+
		"that long, the HPA takes the worker to zero (HPAScaleToZero).\n"+
		"On a local cluster berth serves the metric, and the gate is on:\n"+
		"  berth load queue %s --depth N\n"+
		"On a real cluster the broker's Prometheus exporter gives the same metric through\n"+
		"an external metrics adapter (prometheus-adapter), with the gate on; or scale\n"+
		"with KEDA instead: berth new batch %s ... --scaler keda.",
		b.o.Name, q.Type, q.name, b.queueSource(q), metric, v1alpha1.MetricQueueLabel, q.name, s.Queue.Target, depthUnit(q.Type),
		*s.MinReplicas, s.MaxReplicas, window, why, q.name, b.o.Name)
	return Object{Comment: comment, Object: b.hpa(Batch, s.MinReplicas, s.MaxReplicas, window, spec)}
}

// kedaObjects scale the worker with KEDA, as export's templates do, named
// for the worker and in its namespace.
func (b builder) kedaObjects(q *workQueue) []Object {
	s, why := b.queueScaling(q)
	auth := b.o.Name + "-rabbitmq"
	raw := export.KEDAObjects(s, export.KEDATarget{Workload: b.o.Name, Namespace: b.ns, Auth: auth, Labels: b.labels(Batch)})
	wake := "any message wakes it from zero"
	if s.Queue.ActivationThreshold > 0 {
		wake = "more than " + strconv.Itoa(int(s.Queue.ActivationThreshold)) + " messages wake it from zero (activationThreshold)"
	}
	var objs []Object
	for _, m := range raw {
		o := Object{Object: &unstructured.Unstructured{Object: m}}
		switch m["kind"] {
		case "TriggerAuthentication":
			o.Comment = fmt.Sprintf("KEDA reads the RabbitMQ address from Secret %s, key host:\n"+
				"the AMQP URL with its credentials.", s.Queue.HostSecret)
			if q.fromClass {
				o.Comment += " The Secret is the class's hostSecret."
			} else {
				o.Comment += fmt.Sprintf(" Create it first:\n"+
					"kubectl create secret generic %s -n %s --from-literal=host='amqp://USER:PASSWORD@HOST:5672/VHOST'", s.Queue.HostSecret, b.ns)
			}
		case "ScaledObject":
			o.Comment = fmt.Sprintf("KEDA scales %s on %s queue %s\n(from %s; install KEDA first):\n"+
				"%d %s per replica, from %d to %d replicas; %s.\n"+
				"Replicas go once the queue has been idle for %s s (%s):\n"+
				"the cooldownPeriod, and the scale-down window of the HPA KEDA makes.",
				b.o.Name, q.Type, q.name, b.queueSource(q), s.Queue.Target, depthUnit(q.Type), *s.MinReplicas, s.MaxReplicas, wake,
				strconv.Itoa(int(s.ScaleDownWindow.Duration/time.Second)), why)
		}
		objs = append(objs, o)
	}
	return objs
}

// depthUnit is what a queue's depth counts.
func depthUnit(t v1alpha1.QueueType) string {
	if t == v1alpha1.QueueKafka {
		return "messages of lag"
	}
	return "messages"
}
