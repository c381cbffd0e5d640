package objtest

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
)

// DeploymentWrapper builds a Deployment: MakeDeployment(...), its
// setters, then Obj().
type DeploymentWrapper struct{ appsv1.Deployment }

// MakeDeployment is a Deployment of replicas pods labelled app=name, each
// one container "app" that requests nothing.
func MakeDeployment(namespace, name string, replicas int32) *DeploymentWrapper {
	labels := map[string]string{"app": name}
	return &DeploymentWrapper{appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}}
}

// Obj is the Deployment built.
func (d *DeploymentWrapper) Obj() *appsv1.Deployment { return &d.Deployment }

// NodeSelector has the pods select nodes labelled k=v.
func (d *DeploymentWrapper) NodeSelector(k, v string) *DeploymentWrapper {
	spec := &d.Spec.Template.Spec
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[k] = v
	return d
}

// Tolerate has the pods tolerate every taint with key.
func (d *DeploymentWrapper) Tolerate(key string) *DeploymentWrapper {
	d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations,
		corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return d
}

// ZoneSpread spreads the pods over zones, at most one apart.
func (d *DeploymentWrapper) ZoneSpread() *DeploymentWrapper {
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     d.Spec.Selector,
	}}
	return d
}

// MinAvailable is a PodDisruptionBudget named app that keeps n pods
// labelled app=app available.
func MinAvailable(namespace, app string, n int32) *policyv1.PodDisruptionBudget {
	m := intstr.FromInt32(n)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &m,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// TrainingJob is a one-pod Job of berth's training class (the label
// berth.io/class: training and the priority class training-low, as the
// retail template's team-a has them) asking for one GPU.
func TrainingJob(namespace, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelClass: "training"}},
			Spec: corev1.PodSpec{
				PriorityClassName: "training-low",
				RestartPolicy:     corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "pytorch", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{GPU: resource.MustParse("1")}}}},
			},
		}},
	}
}
