package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

// jobFor is a one-pod Job whose pod is annotated berth.io/duration: d
// (not at all when d is empty).
func jobFor(ns, name, d string) *batchv1.Job {
	var annotations map[string]string
	if d != "" {
		annotations = map[string]string{v1alpha1.AnnotationDuration: d}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "train", Image: "pytorch"}},
			},
		}},
	}
}

// jobPod returns the Job's one pod, or nil while it has none.
func jobPod(ctx context.Context, ns, job string) (*corev1.Pod, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

// succeeded checks that the pod finished as KWOK's pod-complete finishes
// one, and returns how long it ran by its own timestamps (whole seconds).
func succeeded(t *testing.T, p *corev1.Pod) time.Duration {
	t.Helper()
	if p.Status.StartTime == nil || len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s succeeded without a start time or its container's status: %+v", p.Name, p.Status)
	}
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("pod %s succeeded, but its container is %+v; want terminated, Completed, exit code 0", p.Name, p.Status.ContainerStatuses[0].State)
	}
	return term.FinishedAt.Sub(p.Status.StartTime.Time)
}

// A Job pod annotated berth.io/duration runs that long from its start, then
// succeeds (internal/cluster/stages/pod-complete-after-duration.yaml); one
// without the annotation succeeds as soon as it starts, as before; and a
// Deployment's pod runs on whatever it is annotated.
func TestJobPodDuration(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	for _, j := range []*batchv1.Job{jobFor(ns, "runs", "3s"), jobFor(ns, "instant", "")} {
		if _, err := client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating job %s: %v", j.Name, err)
		}
	}
	server := objtest.MakeDeployment(ns, "server", 1)
	server.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDuration: "1s"}
	createDeployment(t, server.Obj())

	t.Run("without a duration: at once", func(t *testing.T) {
		t.Parallel()
		var got *corev1.Pod
		eventually(t, time.Minute, "pod of job instant Succeeded", func() (bool, error) {
			var err error
			got, err = jobPod(ctx, ns, "instant")
			return got != nil && got.Status.Phase == corev1.PodSucceeded, err
		})
		if d := succeeded(t, got); d > time.Second {
			t.Errorf("a Job pod without a duration ran %v; want it to complete as it starts", d)
		}
	})

	t.Run("3s: Running, then Succeeded", func(t *testing.T) {
		t.Parallel()
		var got *corev1.Pod
		eventually(t, time.Minute, "pod of job runs Running", func() (bool, error) {
			var err error
			got, err = jobPod(ctx, ns, "runs")
			return got != nil && got.Status.Phase != corev1.PodPending, err
		})
		if got.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s of a 3s Job is %s as it starts; want Running", got.Name, got.Status.Phase)
		}
		running := time.Now()
		// Polled every 100ms: the pod must stay Running for 1 s after it
		// was first seen Running, and be Succeeded before 3 s and slack
		// have passed. Its start time has whole seconds, so it may finish
		// up to a second short of 3 s after it was first seen.
		var lastRunning time.Time
		eventually(t, 10*time.Second, "pod "+got.Name+" Succeeded", func() (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, got.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got = p
			switch p.Status.Phase {
			case corev1.PodRunning:
				lastRunning = time.Now()
				return false, nil
			case corev1.PodSucceeded:
				return true, nil
			}
			return false, fmt.Errorf("pod %s of a 3s Job is %s; want Running, then Succeeded", p.Name, p.Status.Phase)
		})
		done := time.Now()
		if lastRunning.Sub(running) < time.Second {
			t.Errorf("pod %s was last seen Running %v after it was first; want it Running at 1 s", got.Name, lastRunning.Sub(running))
		}
		if d := done.Sub(running); d > 3*time.Second+2*time.Second {
			t.Errorf("pod %s Succeeded %v after it was first seen Running; want 3 s (up to 2 s late)", got.Name, d)
		}
		if d := succeeded(t, got); d < 3*time.Second || d > 4*time.Second {
			t.Errorf("pod %s ran %v from its start to its container's finish; want 3 s (up to 1 s late)", got.Name, d)
		}
		eventually(t, time.Minute, "job runs Complete", func() (bool, error) {
			j, err := client.BatchV1().Jobs(ns).Get(ctx, "runs", metav1.GetOptions{})
			return err == nil && j.Status.Succeeded == 1, err
		})
	})

	t.Run("a Deployment's pod runs on", func(t *testing.T) {
		t.Parallel()
		pods := runningPods(t, ns, "app=server", 1)
		// A second after a Job pod with its 1s would have completed.
		eventually(t, 5*time.Second, "the server pod 2 s old", func() (bool, error) {
			return time.Since(pods[0].Status.StartTime.Time) >= 2*time.Second, nil
		})
		p, err := client.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("a Deployment's pod annotated %s: 1s is %s 2 s after its start; want Running", v1alpha1.AnnotationDuration, p.Status.Phase)
		}
	})
}
