package metricsapi

import (
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"berth.io/berth/api/v1alpha1"
)

// queueMetrics are the queue depth metrics (external.metrics.k8s.io) of
// each broker, named as its Prometheus exporter names them.
var queueMetrics = map[v1alpha1.QueueType]string{
	v1alpha1.QueueRabbitMQ: v1alpha1.MetricRabbitMQDepth,
	v1alpha1.QueueKafka:    v1alpha1.MetricKafkaLag,
	v1alpha1.QueueSQS:      v1alpha1.MetricSQSDepth,
}

// QueueMetric is the external metric a queue of type t is read as.
func QueueMetric(t v1alpha1.QueueType) string { return queueMetrics[t] }

func isQueueMetric(name string) bool {
	for _, m := range queueMetrics {
		if m == name {
			return true
		}
	}
	return false
}

// window is the window the values are said to be measured over, as
// metrics-server reports its own.
const window = 30

// ready reports whether a pod is Ready and not on its way out: only such
// pods take traffic and report metrics.
func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// owner is a workload a load may be set on, with its pods' selector.
type owner struct {
	kind, namespace, name string
	selector              labels.Selector
}

// podLoad is the share of its workload's load one Ready pod carries.
type podLoad struct {
	rps        float64
	gpuPercent float64 // of the pod's GPUs
	cpuPercent float64 // of the pod's CPU request
}

// share divides a workload's load over its n Ready pods.
func share(w WorkloadLoad, n int) podLoad {
	if n == 0 {
		return podLoad{}
	}
	var s podLoad
	if w.RPS != nil {
		s.rps = *w.RPS / float64(n)
	}
	if w.GPUWork != nil {
		s.gpuPercent = math.Min(100, *w.GPUWork/float64(n))
	}
	if w.CPUWork != nil {
		s.cpuPercent = *w.CPUWork / float64(n)
	}
	return s
}

// gpus is the GPUs a pod holds: its limits of any device plugin's GPU
// resource (nvidia.com/gpu, or a blueprint's own name ending in /gpu).
func gpus(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if strings.HasSuffix(string(name), "/gpu") {
				n += q.Value()
			}
		}
	}
	return n
}

// containerUsage is a container's simulated usage: CPU its share of the
// load times its request (never above its limit, where the kubelet would
// throttle it), memory its request (a loaded model holds its memory).
func containerUsage(c *corev1.Container, cpuPercent float64) corev1.ResourceList {
	cpuReq := c.Resources.Requests[corev1.ResourceCPU]
	milli := float64(cpuReq.MilliValue()) * cpuPercent / 100
	if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		milli = math.Min(milli, float64(lim.MilliValue()))
	}
	mem := c.Resources.Requests[corev1.ResourceMemory]
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(milli)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem.Value(), resource.BinarySI),
	}
}

// quantity writes v with millis, as adapters do for rates.
func quantity(v float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI)
}

func ownerOfDeployment(d *appsv1.Deployment) (owner, bool) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return owner{}, false
	}
	return owner{"Deployment", d.Namespace, d.Name, sel}, true
}

func ownerOfStatefulSet(s *appsv1.StatefulSet) (owner, bool) {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil || sel.Empty() {
		return owner{}, false
	}
	return owner{"StatefulSet", s.Namespace, s.Name, sel}, true
}

// findOwner is the Deployment or StatefulSet (kind) namespace/name, with
// its pods' selector; false when there is none.
func findOwner(deployments appslisters.DeploymentLister, statefulSets appslisters.StatefulSetLister, namespace, kind, name string) (owner, bool) {
	switch kind {
	case "Deployment":
		d, err := deployments.Deployments(namespace).Get(name)
		if err != nil {
			return owner{}, false
		}
		return ownerOfDeployment(d)
	case "StatefulSet":
		st, err := statefulSets.StatefulSets(namespace).Get(name)
		if err != nil {
			return owner{}, false
		}
		return ownerOfStatefulSet(st)
	}
	return owner{}, false
}

func resourceQuantity(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
