package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/objtest"
)

// A Deployment that follows reco@production gets the puller, its volume
// and read-only mounts from the admission policy; `berth model promote`
// re-pins it and the Deployment controller rolls it to a new ReplicaSet
// without breaking its budget; `berth model rollback` rolls it back; the
// history holds both moves.
func TestModelRollsDeployments(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "kubeconfig"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BERTH_MODEL_STORE", "file://"+filepath.Join(home, "store"))
	t.Setenv("BERTH_USER", "e2e")
	for _, content := range []string{"weights one", "weights two"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "model.bin"), []byte(content), 0o644)
		mustBerth(t, home, "model", "push", "reco", dir)
	}
	mustBerth(t, home, "model", "promote", "reco", "1", "--alias", "production")

	ns := namespace(t)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reco"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{IntVal: 2},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "reco"}},
		},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := objtest.MakeDeployment(ns, "reco", 3)
	b.Annotations = map[string]string{v1alpha1.AnnotationModel: "reco@production"}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	b.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &one, MaxSurge: &zero}}
	d := createDeployment(t, b.Obj())

	spec := d.Spec.Template.Spec
	if got := d.Spec.Template.Annotations[v1alpha1.AnnotationModelRef]; got != "reco@production" {
		t.Errorf("template %s = %q, want the followed reco@production until promote pins it", v1alpha1.AnnotationModelRef, got)
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != compile.ModelContainer {
		t.Fatalf("init containers %+v, want the puller %s", spec.InitContainers, compile.ModelContainer)
	}
	puller := spec.InitContainers[0]
	if puller.Image != v1alpha1.DefaultPullerImage || strings.Join(puller.Args, " ") != "model pull $(BERTH_MODEL_REF) --to /models" {
		t.Errorf("puller runs %s %v", puller.Image, puller.Args)
	}
	if len(puller.EnvFrom) != 1 || puller.EnvFrom[0].SecretRef == nil || puller.EnvFrom[0].SecretRef.Name != "model-store" {
		t.Errorf("puller credentials %+v, want the Secret model-store", puller.EnvFrom)
	}
	var refFrom string
	for _, e := range puller.Env {
		if e.Name == "BERTH_MODEL_REF" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			refFrom = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if refFrom != "metadata.annotations['"+v1alpha1.AnnotationModelRef+"']" {
		t.Errorf("BERTH_MODEL_REF comes from %q, want the pod's %s annotation", refFrom, v1alpha1.AnnotationModelRef)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].EmptyDir == nil || spec.Volumes[0].EmptyDir.SizeLimit == nil || spec.Volumes[0].EmptyDir.SizeLimit.String() != "20Gi" {
		t.Errorf("volumes %+v, want one emptyDir limited to the default 20Gi", spec.Volumes)
	}
	if m := spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/models" || !m[0].ReadOnly {
		t.Errorf("container mounts %+v, want %s read-only at /models", m, compile.ModelVolume)
	}

	waitRolled := func(ref string) *appsv1.ReplicaSet {
		t.Helper()
		var rs *appsv1.ReplicaSet
		eventually(t, 2*time.Minute, "deployment reco rolled to "+ref, func() (bool, error) {
			d, err := client.AppsV1().Deployments(ns).Get(ctx, "reco", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if d.Spec.Template.Annotations[v1alpha1.AnnotationModelRef] != ref || d.Status.ObservedGeneration < d.Generation ||
				d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 || d.Status.Replicas != 3 {
				return false, nil
			}
			sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=reco"})
			if err != nil {
				return false, err
			}
			for i := range sets.Items {
				if s := &sets.Items[i]; s.Spec.Template.Annotations[v1alpha1.AnnotationModelRef] == ref && s.Status.ReadyReplicas == 3 {
					rs = s
				}
			}
			return rs != nil, nil
		})
		return rs
	}
	first := waitRolled("reco@production")

	// Watch availability through both rollouts: the budget says 2 of 3.
	stop := make(chan struct{})
	lowest := make(chan int32, 1)
	go func() {
		low := int32(3)
		for {
			select {
			case <-stop:
				lowest <- low
				return
			case <-time.After(20 * time.Millisecond):
			}
			if d, err := client.AppsV1().Deployments(ns).Get(ctx, "reco", metav1.GetOptions{}); err == nil {
				low = min(low, d.Status.AvailableReplicas)
			}
		}
	}()

	out := mustBerth(t, home, "model", "promote", "reco", "2", "--alias", "production", "--reason", "better auc")
	if !strings.Contains(out, "re-pinned deployment/"+ns+"/reco to reco:2") {
		t.Errorf("promote did not say it re-pinned the deployment:\n%s", out)
	}
	second := waitRolled("reco:2")
	if second.Name == first.Name {
		t.Errorf("promote did not roll a new ReplicaSet")
	}
	d, _ = client.AppsV1().Deployments(ns).Get(ctx, "reco", metav1.GetOptions{})
	size := d.Spec.Template.Annotations[v1alpha1.AnnotationModelSize]
	if limit := d.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit; size == "" || limit == nil || limit.String() != size {
		t.Errorf("emptyDir limit %v, want the pinned model size %q", limit, size)
	}

	mustBerth(t, home, "model", "rollback", "reco", "--alias", "production")
	third := waitRolled("reco:1")
	if third.Name == second.Name {
		t.Errorf("rollback did not roll a new ReplicaSet")
	}
	close(stop)
	if low := <-lowest; low < 2 {
		t.Errorf("availability fell to %d of 3 during the rollouts; the budget and maxUnavailable 1 keep 2", low)
	}

	hist := mustBerth(t, home, "model", "history", "reco", "--alias", "production")
	lines := strings.Split(strings.TrimSpace(hist), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "better auc") || !strings.Contains(lines[3], "rollback of move 2") {
		t.Errorf("history does not show the promotion and the rollback:\n%s", hist)
	}

	// A workload without the annotation is left alone.
	plain := createDeployment(t, objtest.MakeDeployment(ns, "plain", 1).Obj())
	if len(plain.Spec.Template.Spec.InitContainers) != 0 || len(plain.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("a Deployment that follows no model was mutated: %+v", plain.Spec.Template.Spec)
	}
}

// With spec.models.sharedVolume the policy gives an annotated Deployment
// the shared-volume variant instead: the user's ReadWriteMany claim, the
// workload's directory on it mounted read-only in its containers, and
// the puller as a native sidecar that watches and mounts it read-write.
// The cluster's policy is swapped for the shared one for the length of
// the test, and a server-side dry run shows what admission makes.
func TestModelSharedVolume(t *testing.T) {
	ctx := context.Background()
	shared := *bp
	m := *bp.Spec.Models
	m.SharedVolume = &v1alpha1.ModelSharedVolume{ClaimName: "models-rwx"}
	shared.Spec.Models = &m
	v1alpha1.SetDefaults(&shared)
	var want *admissionv1.MutatingAdmissionPolicy
	for _, o := range compile.Objects(&shared) {
		if p, ok := o.(*admissionv1.MutatingAdmissionPolicy); ok && p.Name == compile.ModelPolicy {
			want = p
		}
	}
	if want == nil {
		t.Fatalf("the blueprint compiles no %s policy", compile.ModelPolicy)
	}
	policies := client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	swap := func(spec func(*admissionv1.MutatingAdmissionPolicy)) {
		t.Helper()
		eventually(t, 30*time.Second, "policy "+compile.ModelPolicy+" updated", func() (bool, error) {
			cur, err := policies.Get(ctx, compile.ModelPolicy, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec(cur)
			_, err = policies.Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil, nil
		})
	}
	orig, err := policies.Get(ctx, compile.ModelPolicy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	dryRun := func(name string) *appsv1.Deployment {
		t.Helper()
		b := objtest.MakeDeployment(ns, name, 2)
		b.Annotations = map[string]string{v1alpha1.AnnotationModel: "reco@production"}
		d, err := client.AppsV1().Deployments(ns).Create(ctx, b.Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry run of deployment %s: %v", name, err)
		}
		return d
	}
	isShared := func(d *appsv1.Deployment) bool {
		v := d.Spec.Template.Spec.Volumes
		return len(v) == 1 && v[0].PersistentVolumeClaim != nil
	}
	swap(func(p *admissionv1.MutatingAdmissionPolicy) { p.Spec = want.Spec })
	t.Cleanup(func() {
		swap(func(p *admissionv1.MutatingAdmissionPolicy) { p.Spec = orig.Spec })
		eventually(t, time.Minute, "the emptyDir policy back in force", func() (bool, error) {
			return !isShared(dryRun("restored")), nil
		})
	})

	var d *appsv1.Deployment
	eventually(t, time.Minute, "the shared-volume policy in force", func() (bool, error) {
		d = dryRun("reco")
		return isShared(d), nil
	})
	spec := d.Spec.Template.Spec
	if c := spec.Volumes[0]; c.Name != compile.ModelVolume || c.PersistentVolumeClaim.ClaimName != "models-rwx" || c.EmptyDir != nil {
		t.Errorf("volume %+v, want %s from the claim models-rwx and no emptyDir", c, compile.ModelVolume)
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != compile.ModelContainer {
		t.Fatalf("init containers %+v, want the puller %s as a sidecar", spec.InitContainers, compile.ModelContainer)
	}
	side := spec.InitContainers[0]
	if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("puller restartPolicy %v, want Always: a native sidecar", side.RestartPolicy)
	}
	if got := strings.Join(side.Args, " "); got != "model pull $(BERTH_MODEL_REF) --to /models --watch" {
		t.Errorf("sidecar runs %q, want the watching puller", got)
	}
	if len(side.EnvFrom) != 1 || side.EnvFrom[0].SecretRef == nil || side.EnvFrom[0].SecretRef.Name != "model-store" {
		t.Errorf("sidecar credentials %+v, want the Secret model-store", side.EnvFrom)
	}
	if m := side.VolumeMounts; len(m) != 1 || m[0].Name != compile.ModelVolume || m[0].MountPath != "/models" || m[0].ReadOnly || m[0].SubPath != "deployment-reco" {
		t.Errorf("sidecar mounts %+v, want deployment-reco read-write at /models", m)
	}
	if m := spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != compile.ModelVolume || m[0].MountPath != "/models" || !m[0].ReadOnly || m[0].SubPath != "deployment-reco" {
		t.Errorf("container mounts %+v, want deployment-reco read-only at /models (the model is /models/current)", m)
	}
	if got := d.Spec.Template.Annotations[v1alpha1.AnnotationModelRef]; got != "reco@production" {
		t.Errorf("template %s = %q, want the followed reco@production", v1alpha1.AnnotationModelRef, got)
	}
}
