package rehearse

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
)

// workload is what one trace row submits: its objects, as `berth new`
// writes them and sized as the row says, in the namespace of its team.
type workload struct {
	job       trace.Job
	namespace string
	class     string
	objects   []runtime.Object
	// claimed marks a Job with a checkpoint claim: its pods run only in
	// its volume's zone.
	claimed bool
	// minAvailable is an inference service's budget: its class's
	// disruption.minAvailable, or the 1 `berth new` writes for a class
	// without one. The budget's status refines it once it is computed.
	minAvailable int32
}

// workloadFor builds the objects of a trace row on bp, the blueprint the
// cluster runs: a Job of j.Pods pods for training and batch, each
// annotated to run j.Duration, and for checkpointed training of one pod
// the checkpoint claim `berth new training` writes, of the blueprint's
// default class (its pods then run only where its volume is); for
// inference the Deployment, Service, HPA and budget `berth new inference`
// writes, at least j.Pods replicas.
func workloadFor(bp *v1alpha1.Blueprint, j trace.Job) (*workload, error) {
	o := scaffold.Options{Kind: j.Kind, Name: j.Name, Team: j.Team, Class: j.Class, Model: j.Model, GPUs: int(j.GPUs), GPUsGiven: true,
		CheckpointClaim: keepsClaim(bp, j)}
	if j.Kind != scaffold.Inference {
		job, claim, class, err := scaffold.Job(bp, o)
		if err != nil {
			return nil, err
		}
		job.Spec.Parallelism = ptr.To(j.Pods)
		job.Spec.Completions = ptr.To(j.Pods)
		mark(&job.ObjectMeta, j.Kind)
		mark(&job.Spec.Template.ObjectMeta, j.Kind)
		if job.Spec.Template.Annotations == nil {
			job.Spec.Template.Annotations = map[string]string{}
		}
		job.Spec.Template.Annotations[v1alpha1.AnnotationDuration] = runTime(j.Duration)
		if j.Checkpoint > 0 {
			if job.Annotations == nil {
				job.Annotations = map[string]string{}
			}
			job.Annotations[v1alpha1.AnnotationCheckpoint] = j.Checkpoint.String()
		}
		size(&job.Spec.Template.Spec, j)
		w := &workload{job: j, namespace: job.Namespace, class: class.Name}
		if claim != nil {
			mark(&claim.ObjectMeta, j.Kind)
			w.objects = append(w.objects, claim)
			w.claimed = true
		}
		w.objects = append(w.objects, job)
		return w, nil
	}
	s, err := scaffold.New(bp, o)
	if err != nil {
		return nil, err
	}
	w := &workload{job: j, namespace: s.Namespace, class: s.Class.Name, minAvailable: 1}
	if d := s.Class.Disruption; d != nil && d.MinAvailable != nil && d.MinAvailable.Type == intstr.Int {
		w.minAvailable = d.MinAvailable.IntVal
	}
	for _, obj := range s.Objects {
		switch o := obj.Object.(type) {
		case *appsv1.Deployment:
			mark(&o.ObjectMeta, j.Kind)
			mark(&o.Spec.Template.ObjectMeta, j.Kind)
			o.Spec.Replicas = ptr.To(max(ptr.Deref(o.Spec.Replicas, 1), j.Pods))
			size(&o.Spec.Template.Spec, j)
		case *autoscalingv2.HorizontalPodAutoscaler:
			mark(&o.ObjectMeta, j.Kind)
			o.Spec.MinReplicas = ptr.To(max(ptr.Deref(o.Spec.MinReplicas, 1), j.Pods))
			o.Spec.MaxReplicas = max(o.Spec.MaxReplicas, *o.Spec.MinReplicas)
		case *corev1.Service:
			mark(&o.ObjectMeta, j.Kind)
		case *policyv1.PodDisruptionBudget:
			mark(&o.ObjectMeta, j.Kind)
		default:
			continue // a rehearsal runs no KEDA; the HPA scales
		}
		w.objects = append(w.objects, obj.Object)
	}
	return w, nil
}

// keepsClaim reports whether a row's Job keeps its checkpoint claim:
// training with a checkpoint, of one pod, on a blueprint with a default
// class. A Job of several pods would share one ReadWriteOnce claim,
// which a cloud's disk attaches to one node only (the local cluster's
// drivers attach nothing, so it would not stop them): those keep their
// progress without a claim, as before.
func keepsClaim(bp *v1alpha1.Blueprint, j trace.Job) bool {
	return j.Kind == scaffold.Training && j.Checkpoint > 0 && j.Pods == 1 && bp.Spec.DefaultStorageClassName() != ""
}

// workerFor builds a queue's worker on bp, the blueprint the cluster
// runs: the Deployment and HPA trace.QueueWorker writes, without
// the Secret a real broker needs (the rehearsal's queue is berth's).
func workerFor(bp *v1alpha1.Blueprint, q trace.Queue) (*workload, error) {
	s, err := trace.QueueWorker(bp, q)
	if err != nil {
		return nil, err
	}
	j := trace.Job{Kind: scaffold.Batch, Team: q.Team, Name: q.Worker(), Class: s.Class.Name, Pods: 1, Line: q.Line}
	w := &workload{job: j, namespace: s.Namespace, class: s.Class.Name}
	for _, obj := range s.Objects {
		switch o := obj.Object.(type) {
		case *appsv1.Deployment:
			mark(&o.ObjectMeta, j.Kind)
			mark(&o.Spec.Template.ObjectMeta, j.Kind)
		case *autoscalingv2.HorizontalPodAutoscaler:
			mark(&o.ObjectMeta, j.Kind)
		default:
			continue
		}
		w.objects = append(w.objects, obj.Object)
	}
	return w, nil
}

// mark labels an object as a rehearsal's, with its row's kind.
func mark(m *metav1.ObjectMeta, kind scaffold.Kind) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[v1alpha1.LabelRehearsal] = string(kind)
}

// size gives the pod's container the row's requests, as limits too (a
// team's LimitRange would otherwise default the limits); scaffold has
// set its GPUs.
func size(spec *corev1.PodSpec, j trace.Job) {
	c := &spec.Containers[0]
	set := func(name corev1.ResourceName, q resource.Quantity) {
		if q.IsZero() {
			return
		}
		c.Resources.Requests[name] = q.DeepCopy()
		c.Resources.Limits[name] = q.DeepCopy()
	}
	set(corev1.ResourceCPU, j.CPU)
	set(corev1.ResourceMemory, j.Memory)
}

// runTime is the berth.io/duration of a pod that runs d: whole
// milliseconds, at least one (0 would complete it at once). KWOK counts
// it on the cluster's clock from the pod's start time.
func runTime(d time.Duration) string {
	ms := max(int64(d/time.Millisecond), 1)
	return strconv.FormatInt(ms, 10) + "ms"
}

// create makes each of w's objects; the first refusal stops it, and is
// returned with the object it refused.
func (w *workload) create(ctx context.Context, c kubernetes.Interface) error {
	for _, obj := range w.objects {
		var err error
		switch o := obj.(type) {
		case *corev1.PersistentVolumeClaim:
			_, err = c.CoreV1().PersistentVolumeClaims(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		case *batchv1.Job:
			_, err = c.BatchV1().Jobs(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		case *appsv1.Deployment:
			_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		case *corev1.Service:
			_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		case *autoscalingv2.HorizontalPodAutoscaler:
			_, err = c.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		case *policyv1.PodDisruptionBudget:
			_, err = c.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		}
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, w.namespace, w.job.Name, err)
		}
	}
	return nil
}

// remove deletes an inference service's objects when its row's duration
// ends; a Job stays, as a finished Job does.
func (w *workload) remove(ctx context.Context, c kubernetes.Interface) error {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, obj := range w.objects {
		var err error
		switch o := obj.(type) {
		case *appsv1.Deployment:
			err = c.AppsV1().Deployments(o.Namespace).Delete(ctx, o.Name, opts)
		case *corev1.Service:
			err = c.CoreV1().Services(o.Namespace).Delete(ctx, o.Name, opts)
		case *autoscalingv2.HorizontalPodAutoscaler:
			err = c.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Delete(ctx, o.Name, opts)
		case *policyv1.PodDisruptionBudget:
			err = c.PolicyV1().PodDisruptionBudgets(o.Namespace).Delete(ctx, o.Name, opts)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
