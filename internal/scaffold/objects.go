package scaffold

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// CheckpointDir is where training writes and resumes its checkpoints.
const CheckpointDir = "/checkpoints"

type builder struct {
	bp    *v1alpha1.Blueprint
	o     Options
	ns    string
	class *v1alpha1.Class
	// queue is a batch worker's queue; nil for none.
	queue *workQueue
	// gpuDefault is true when the class's pools all have GPUs and no
	// --gpus was given, so the pod asks for one.
	gpuDefault bool
}

func (b builder) meta(name string, kind Kind) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.ns, Labels: b.labels(kind)}
}

func (b builder) labels(kind Kind) map[string]string {
	return map[string]string{
		v1alpha1.LabelAppName:      b.o.Name,
		v1alpha1.LabelAppComponent: string(kind),
		v1alpha1.LabelClass:        b.class.Name,
	}
}

func (b builder) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelAppName: b.o.Name}}
}

// requests are the CPU and memory New asks for per pod, by kind: a
// starting point for the user to size.
var requests = map[Kind][2]string{
	Inference: {"1", "4Gi"},
	Training:  {"4", "16Gi"},
	Batch:     {"500m", "1Gi"},
}

// Requests are the CPU and memory New writes as the requests (and the
// limits) of each pod of a workload of kind k.
func Requests(k Kind) (cpu, memory resource.Quantity) {
	r := requests[k]
	return resource.MustParse(r[0]), resource.MustParse(r[1])
}

// resources are the container's requests for kind k, the same limits,
// and its GPU limit: only a GPU limit is honoured, and the request
// follows it.
func (b builder) resources(k Kind) corev1.ResourceRequirements {
	cpu, memory := Requests(k)
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory},
		// Limits written out: the team's LimitRange would otherwise
		// default them, and a request above its default limit is refused.
		Limits: corev1.ResourceList{corev1.ResourceCPU: cpu.DeepCopy(), corev1.ResourceMemory: memory.DeepCopy()},
	}
	if b.o.GPUs > 0 {
		r.Limits[corev1.ResourceName(b.gpuResource())] = *resource.NewQuantity(int64(b.o.GPUs), resource.DecimalSI)
	}
	return r
}

func (b builder) gpuResource() string {
	if p := ClassPools(b.bp, b.class, true); len(p) > 0 {
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
	note := fmt.Sprintf("Class %s (label %s) gives its pods, on admission, the tolerations and\n"+
		"node affinity of its pools (%s)%s.", b.class.Name, v1alpha1.LabelClass, joinPools(b.class.Pools), b.priorityNote())
	if b.gpuDefault {
		note += "\nIt asks for 1 GPU: every pool of class " + b.class.Name + " has GPUs, and a pod without\n" +
			"one would have no pool to run on (pass --gpus N for more)."
	}
	return note
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

// inferenceReplicas is the least an inference server runs: 2, and one
// more than its class's budget keeps available, so that a drain may still
// evict a replica (with minAvailable 2, the seed's recommendation
// service, 3).
func (b builder) inferenceReplicas() int32 {
	n := int32(2)
	if d := b.class.Disruption; d != nil && d.MinAvailable != nil && d.MinAvailable.Type == intstr.Int {
		n = max(n, d.MinAvailable.IntVal+1)
	}
	return n
}

func (b builder) inference() []Object {
	name := b.o.Name
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(name, Inference),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(b.inferenceReplicas()),
			Selector: b.selector(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Inference)},
				Spec: b.podSpec(corev1.Container{
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Resources: b.resources(Inference),
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
	return append(objs, b.inferenceHPA())
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
	// The class asked for, else the blueprint's default, named: the
	// claim binds where the design says, not on whatever the cluster's
	// default is.
	class := b.o.StorageClass
	if class == "" {
		class = b.bp.Spec.DefaultStorageClassName()
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	spec := b.podSpec(corev1.Container{
		Env: []corev1.EnvVar{
			{Name: "CHECKPOINT_DIR", Value: CheckpointDir},
		},
		Resources:    b.resources(Training),
		VolumeMounts: []corev1.VolumeMount{{Name: "checkpoints", MountPath: CheckpointDir}},
	})
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.TerminationGracePeriodSeconds = ptr.To(grace(ClassPools(b.bp, b.class, b.o.GPUs > 0)))
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
	queued := ""
	if b.bp.Spec.UsesKueue() {
		// The team's LocalQueue (compile names it after the team) and
		// the class's WorkloadPriorityClass.
		job.Labels[v1alpha1.LabelKueueQueueName] = b.o.Team
		if pc := b.class.PriorityClassName(); pc != "" {
			job.Labels[v1alpha1.LabelKueuePriorityClass] = pc
		}
		queued = "Queued with Kueue: it waits suspended, holding no quota, in LocalQueue " + b.o.Team + "\n" +
			"until team " + b.o.Team + "'s ClusterQueue admits it on one of its GPU pools.\n"
	}
	return []Object{
		{Comment: "Durable storage for " + name + "'s checkpoints: it outlives the node.", Object: pvc},
		{Comment: "Training Job " + name + ".\n" + b.classNote() + "\n" + queued +
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
	name, q := b.o.Name, b.queue
	c := corev1.Container{Resources: b.resources(Batch)}
	switch {
	case b.o.Queue != "":
		c.Env = []corev1.EnvVar{{Name: "QUEUE_URL", Value: b.o.Queue}}
	case q != nil:
		c.Env = queueEnv(q.Queue)
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(name, Batch),
		Spec: appsv1.DeploymentSpec{
			Selector: b.selector(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Batch)},
				Spec:       b.podSpec(c),
			},
		},
	}
	comment := "Batch worker " + name + ".\n" + b.classNote() + "\n"
	var ignore []string
	if b.class.PriorityClassName() == "" && !b.globalDefault() {
		// The blueprint runs the class at priority 0 on purpose: say
		// so where audit would ask for a PriorityClass.
		ignore = append(ignore, v1alpha1.RulePriorityClassMissing)
		comment += "Class " + b.class.Name + " has no priority and the blueprint no default: its pods run\n" +
			"at priority 0, as the blueprint intends (hence the audit exemption).\n"
	}
	if len(ignore) > 0 {
		d.Annotations = map[string]string{v1alpha1.AnnotationAuditIgnore: strings.Join(ignore, ",")}
	}
	switch {
	case q == nil:
		d.Spec.Replicas = ptr.To[int32](0)
		return []Object{{
			Comment: comment +
				"It starts at 0 replicas and nothing scales it: it has no queue (pass --queue URL,\n" +
				"or a --class with a queue, for an HPA on the queue's depth). Scale it by hand:\n" +
				"kubectl scale deployment/" + name + " --replicas=N.",
			Object: d,
		}}
	case b.o.Scaler == ScalerKEDA:
		return append([]Object{{
			Comment: comment +
				"It has no spec.replicas: it starts at 1, and the ScaledObject below takes it to\n" +
				"zero once the queue stays empty and back up when messages come.",
			Object: d,
		}}, b.kedaObjects(q)...)
	}
	return []Object{{
		Comment: comment +
			"It has no spec.replicas: it starts at 1, and the HPA below takes it to zero once\n" +
			"the queue stays empty. The HPA wakes a workload from zero only if it put it\n" +
			"there: one started at 0 by hand would stay at 0 whatever the queue holds.",
		Object: d,
	}, b.queueHPA(q)}
}

// queueEnv tells the worker where its class's queue is, in the names of
// the queue's KEDA trigger.
func queueEnv(q *v1alpha1.Queue) []corev1.EnvVar {
	switch q.Type {
	case v1alpha1.QueueRabbitMQ:
		return []corev1.EnvVar{
			{Name: "AMQP_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: q.HostSecret}, Key: "host"}}},
			{Name: "QUEUE_NAME", Value: q.QueueName},
		}
	case v1alpha1.QueueKafka:
		return []corev1.EnvVar{
			{Name: "KAFKA_BOOTSTRAP_SERVERS", Value: q.BootstrapServers},
			{Name: "KAFKA_TOPIC", Value: q.Topic},
			{Name: "KAFKA_CONSUMER_GROUP", Value: q.ConsumerGroup},
		}
	}
	return []corev1.EnvVar{{Name: "QUEUE_URL", Value: q.QueueURL}, {Name: "AWS_REGION", Value: q.AWSRegion}}
}
