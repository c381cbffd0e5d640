package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"berth.io/berth/api/v1alpha1"
	"k8s.io/utils/ptr"
)

// ignoreDisruption is the rule class mutation gives a spot class's Jobs.
var ignoreDisruption = batchv1.PodFailurePolicyRule{
	Action:          batchv1.PodFailurePolicyActionIgnore,
	OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
}

// trainingJob is a one-pod GPU Job of class training (spot-gpu, gpu).
func trainingJob(name string, restart corev1.RestartPolicy, pfp *batchv1.PodFailurePolicy) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: name, Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec: batchv1.JobSpec{
			PodFailurePolicy: pfp,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: restart,
				Containers:    []corev1.Container{{Name: "train", Image: "trainer", Resources: corev1.ResourceRequirements{Limits: gpuLimits("1")}}},
			}},
		},
	}
}

// A training Job (its class runs on the spot GPU pool) is given the
// DisruptionTarget Ignore rule, first and beside the user's own rules; a
// Job that has a DisruptionTarget rule keeps it alone; a Job that
// restarts OnFailure, for which Kubernetes allows no podFailurePolicy,
// is admitted unchanged; a CronJob's jobTemplate gets the rule too; and
// updates of a Job (whose policy is immutable) are admitted as they are.
func TestSpotJobsIgnoreDisruption(t *testing.T) {
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	userRule := batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}
	userDisruption := batchv1.PodFailurePolicyRule{
		Action:          batchv1.PodFailurePolicyActionCount,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}
	for _, tc := range []struct {
		name    string
		restart corev1.RestartPolicy
		pfp     *batchv1.PodFailurePolicy
		want    *batchv1.PodFailurePolicy
	}{
		{"never", corev1.RestartPolicyNever, nil, &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{ignoreDisruption}}},
		{"user-rules", corev1.RestartPolicyNever, &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{userRule}},
			&batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{ignoreDisruption, userRule}}},
		{"user-disruption", corev1.RestartPolicyNever, &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{userRule, userDisruption}},
			&batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{userRule, userDisruption}}},
		{"on-failure", corev1.RestartPolicyOnFailure, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.BatchV1().Jobs(gpuLab).Create(ctx, trainingJob("spot-"+tc.name, tc.restart, tc.pfp), dry)
			if err != nil {
				t.Fatalf("a training Job with restartPolicy %s: %v", tc.restart, err)
			}
			if d := cmp.Diff(tc.want, got.Spec.PodFailurePolicy); d != "" {
				t.Errorf("podFailurePolicy (-want +got):\n%s", d)
			}
			// The API allows a podFailurePolicy only with podReplacementPolicy Failed.
			wantReplacement := batchv1.Failed
			if tc.want == nil {
				wantReplacement = batchv1.TerminatingOrFailed
			}
			if got.Spec.PodReplacementPolicy == nil || *got.Spec.PodReplacementPolicy != wantReplacement {
				t.Errorf("podReplacementPolicy = %v, want %s", got.Spec.PodReplacementPolicy, wantReplacement)
			}
			if len(got.Spec.Template.Spec.Tolerations) != 2 {
				t.Errorf("the Job was not given its class's tolerations: %v", got.Spec.Template.Spec.Tolerations)
			}
		})
	}

	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: "nightly-spot", Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec:       batchv1.CronJobSpec{Schedule: "0 2 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: trainingJob("", corev1.RestartPolicyNever, nil).Spec}},
	}
	gotCJ, err := client.BatchV1().CronJobs(gpuLab).Create(ctx, cj, dry)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{ignoreDisruption}}, gotCJ.Spec.JobTemplate.Spec.PodFailurePolicy); d != "" {
		t.Errorf("CronJob jobTemplate podFailurePolicy (-want +got):\n%s", d)
	}

	// Stored Jobs, updated: the rule is neither added again nor added to
	// a Job that had none (its policy cannot change after creation).
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	propagation := metav1.DeletePropagationBackground
	for _, restart := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure} {
		name := "spot-upd-" + suffix + "-" + map[corev1.RestartPolicy]string{corev1.RestartPolicyNever: "never", corev1.RestartPolicyOnFailure: "onfailure"}[restart]
		j := trainingJob(name, restart, nil)
		j.Spec.Suspend = ptr.To(true) // nothing to schedule
		created, err := client.BatchV1().Jobs(gpuLab).Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			client.BatchV1().Jobs(gpuLab).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &propagation})
		})
		var updated *batchv1.Job
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error { // the Job controller writes too
			cur, err := client.BatchV1().Jobs(gpuLab).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Labels["updated"] = "yes"
			updated, err = client.BatchV1().Jobs(gpuLab).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("updating the %s Job %s: %v", restart, name, err)
		}
		if d := cmp.Diff(created.Spec.PodFailurePolicy, updated.Spec.PodFailurePolicy); d != "" {
			t.Errorf("an update changed the %s Job's podFailurePolicy (-created +updated):\n%s", restart, d)
		}
	}
}
