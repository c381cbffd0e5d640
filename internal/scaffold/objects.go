package scaffold

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit"
	"berth.io/berth/internal/compile"
)

// CheckpointDir is where training writes and resumes its checkpoints.
const CheckpointDir = "/checkpoints"

type builder struct {
	bp    *v1alpha1.Blueprint
	o     Options
	ns    string
	class *v1alpha1.Class
}

func (b builder) meta(name string, kind Kind) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.ns, Labels: b.labels(kind)}
}

func (b builder) labels(kind Kind) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      b.o.Name,
		"app.kubernetes.io/component": string(kind),
		compile.LabelClass:            b.class.Name,
	}
}

func (b builder) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": b.o.Name}}
}

// resources are the container's requests, the same limits, and its GPU
// limit: only a GPU limit is honoured, and the request follows it.
func (b builder) resources(cpu, memory string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		// Limits written out: the team's LimitRange would otherwise
		// default them, and a request above its default limit is refused.
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
	}
	if b.o.GPUs > 0 {
		r.Limits[corev1.ResourceName(b.gpuResource())] = *resource.NewQuantity(int64(b.o.GPUs), resource.DecimalSI)
	}
	return r
}

func (b builder) gpuResource() string {
	if p := classPools(b.bp, b.class, true); len(p) > 0 {
		return p[0].GPUResource()
	}
	return v1alpha1.DefaultGPUResource
}

func (b builder) podSpec(c corev1.Container) corev1.PodSpec {
	c.Name, c.Image = b.o.Name, b.o.Image
	return corev1.PodSpec{
		// What the class gives on admission anyway; written so that the
		// manifests say it before they reach a cluster.
		PriorityClassName: b.class.PriorityClassName(),
		Containers:        []corev1.Container{c},
	}
}

func (b builder) classNote() string {
	return fmt.Sprintf("Class %s (label %s) gives its pods, on admission, the tolerations and\n"+
		"node affinity of its pools (%s)%s.", b.class.Name, compile.LabelClass, joinPools(b.class.Pools), b.priorityNote())
}

func (b builder) priorityNote() string {
	if pc := b.class.PriorityClassName(); pc != "" {
		return " and the PriorityClass " + pc
	}
	return ""
}

func joinPools(p []string) string { return strings.Join(p, ", ") }

// zoneSpread keeps replicas in several zones. With a class of spread
// zone it is the constraint the class would add (DoNotSchedule, a dead
// zone's tainted nodes not counted); otherwise a preference.
func (b builder) zoneSpread() corev1.TopologySpreadConstraint {
	c := corev1.TopologySpreadConstraint{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     b.selector(),
		MatchLabelKeys:    []string{"pod-template-hash"},
	}
	if b.class.Spread == v1alpha1.SpreadZone {
		c.WhenUnsatisfiable = corev1.DoNotSchedule
		c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
	}
	return c
}

func (b builder) inference() []Object {
	name := b.o.Name
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(name, Inference),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: b.selector(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Inference)},
				Spec: b.podSpec(corev1.Container{
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Resources: b.resources("1", "4Gi"),
				}),
			},
		},
	}
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{b.zoneSpread()}
	comment := "Inference server " + name + ".\n" + b.classNote()
	if b.o.Model != "" {
		d.Annotations = map[string]string{v1alpha1.AnnotationModel: b.o.Model}
		comment += fmt.Sprintf("\nWith spec.models, the model wiring adds the puller: the model is at\n/models/current in the container (berth.io/model: %s).", b.o.Model)
		if strings.Contains(b.o.Model, ":") {
			// Pinned: every pod of a ReplicaSet pulls this version;
			// berth model promote and rollback re-pin it.
			d.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationModelRef: b.o.Model}
		}
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(name, Inference),
		Spec: corev1.ServiceSpec{
			Selector: b.selector().MatchLabels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	objs := []Object{{Comment: comment, Object: d}, {Object: svc}}
	if b.class.Disruption == nil {
		objs = append(objs, Object{
			Comment: "Class " + b.class.Name + " has no disruption budget: this one keeps a replica\nserving through drains and upgrades.",
			Object: &policyv1.PodDisruptionBudget{
				TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
				ObjectMeta: b.meta(name, Inference),
				Spec: policyv1.PodDisruptionBudgetSpec{
					MinAvailable: ptr.To(intstr.FromInt32(1)),
					Selector:     b.selector(),
				},
			},
		})
	} else {
		objs[0].Comment += "\nIts disruption budget is the class's: berth gives this Deployment one of\nits own on admission (deployment-" + name + "-budget)."
	}
	window := int32(300)
	if b.o.GPUs > 0 {
		// A GPU replica takes minutes to come back (node, image, model):
		// do not give one up for a dip.
		window = 600
	}
	minReplicas, maxReplicas, cpuTarget := int32(2), int32(10), int32(70)
	note := ""
	if sc := b.class.Scaling; sc != nil {
		// The class's own scaling, as far as a CPU HPA can follow it.
		if sc.ScaleDownWindow != nil {
			window = max(window, int32(sc.ScaleDownWindow.Duration/time.Second))
		}
		if sc.MinReplicas != nil {
			minReplicas = max(minReplicas, *sc.MinReplicas)
		}
		if sc.MaxReplicas > 0 {
			maxReplicas = max(sc.MaxReplicas, minReplicas)
		}
		if sc.Metric == v1alpha1.MetricCPU && sc.Target > 0 {
			cpuTarget = sc.Target
		} else if sc.Metric != "" {
			note = fmt.Sprintf("\nClass %s scales on %s: until then, CPU stands in.", b.class.Name, sc.Metric)
		}
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: b.meta(name, Inference),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(minReplicas),
			MaxReplicas:    maxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(cpuTarget)},
				},
			}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window)},
			},
		},
	}
	objs = append(objs, Object{
		Comment: "Scales on CPU utilization for now; scaling on requests in flight or queue\n" +
			"time (custom metrics) comes with the scaling step of issue 14.\n" +
			"Scale-down waits " + strconv.Itoa(int(window)) + " s before giving up replicas." + note,
		Object: hpa,
	})
	return objs
}

func (b builder) training() []Object {
	name := b.o.Name
	claim := name + "-checkpoints"
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: b.meta(claim, Training),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}},
		},
	}
	spec := b.podSpec(corev1.Container{
		Env: []corev1.EnvVar{
			{Name: "CHECKPOINT_DIR", Value: CheckpointDir},
		},
		Resources:    b.resources("4", "16Gi"),
		VolumeMounts: []corev1.VolumeMount{{Name: "checkpoints", MountPath: CheckpointDir}},
	})
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.TerminationGracePeriodSeconds = ptr.To(grace(classPools(b.bp, b.class, b.o.GPUs > 0)))
	spec.Volumes = []corev1.Volume{{Name: "checkpoints", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(name, Training),
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Training)},
				Spec:       spec,
			},
		},
	}
	return []Object{
		{Comment: "Durable storage for " + name + "'s checkpoints: it outlives the node.", Object: pvc},
		{Comment: "Training Job " + name + ".\n" + b.classNote() + "\n" +
			"On a spot pool the class also adds a podFailurePolicy rule, so an interrupted\n" +
			"pod does not count against backoffLimit.\n" +
			"Checkpoint contract: on SIGTERM write a checkpoint to $CHECKPOINT_DIR within\n" +
			"terminationGracePeriodSeconds (the spot notice, " + strconv.FormatInt(*spec.TerminationGracePeriodSeconds, 10) + " s); at start resume from\n" +
			"the latest one there. Otherwise a replacement pod starts from zero.",
			Object: job},
	}
}

func (b builder) globalDefault() bool {
	for i := range b.bp.Spec.Classes {
		if b.bp.Spec.Classes[i].GlobalDefault {
			return true
		}
	}
	return false
}

func (b builder) batch() []Object {
	name := b.o.Name
	c := corev1.Container{Resources: b.resources("500m", "1Gi")}
	if b.o.Queue != "" {
		c.Env = []corev1.EnvVar{{Name: "QUEUE_URL", Value: b.o.Queue}}
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(name, Batch),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: b.selector(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Batch)},
				Spec:       b.podSpec(c),
			},
		},
	}
	comment := "Batch worker " + name + ".\n" + b.classNote() + "\n"
	if b.class.PriorityClassName() == "" && !b.globalDefault() {
		// The blueprint runs the class at priority 0 on purpose: say
		// so where audit would ask for a PriorityClass.
		d.Annotations = map[string]string{audit.IgnoreAnnotation: "berth/priority-class-missing"}
		comment += "Class " + b.class.Name + " has no priority and the blueprint no default: its pods run\n" +
			"at priority 0, as the blueprint intends (hence the audit exemption).\n"
	}
	return []Object{{
		Comment: comment +
			"It starts at 0 replicas: the queue scaler (a KEDA ScaledObject on the queue,\n" +
			"or an HPA on a local cluster) comes with the scaling step of issue 14; until\n" +
			"then scale it by hand (kubectl scale deployment/" + name + " --replicas=N).",
		Object: d,
	}}
}
