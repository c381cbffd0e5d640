package stages

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"

	"berth.io/berth/api/v1alpha1"
)

func parse(t *testing.T, raw string) *internalversion.Stage {
	t.Helper()
	s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// berth's pod-ready must stay KWOK's, apart from the selectors berth adds.
func TestPodReadyIsKWOKsWithBerthsSelectors(t *testing.T) {
	sameAsKWOKs(t, PodReady, podfast.DefaultPodReady, map[string]internalversion.SelectorOperator{
		".spec.containers.[].readinessProbe":                                             internalversion.SelectorOpDoesNotExist,
		`.spec.containers.[].image | select( test(":(404|non-existent|nonexistent)$") )`: internalversion.SelectorOpDoesNotExist,
	})
}

// berth's pod-complete must stay KWOK's, apart from the selector berth adds.
func TestPodCompleteIsKWOKsWithBerthsSelector(t *testing.T) {
	sameAsKWOKs(t, PodComplete, podfast.DefaultPodComplete, map[string]internalversion.SelectorOperator{
		`.metadata.annotations["berth.io/duration"] // "" | test("^([0-9]+(\\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$")`: internalversion.SelectorOpNotIn,
	})
}

// sameAsKWOKs fails unless stage ours is stage theirs with the JQ
// selectors added.
func sameAsKWOKs(t *testing.T, ours, theirs string, added map[string]internalversion.SelectorOperator) {
	t.Helper()
	o, th := parse(t, ours), parse(t, theirs)
	var kept []internalversion.MatchExpression
	for _, e := range o.Spec.Selector.MatchExpressions {
		if e.JQ != nil && added[e.JQ.Key] == e.JQ.Operator {
			delete(added, e.JQ.Key)
			continue
		}
		kept = append(kept, e)
	}
	if len(added) != 0 {
		t.Errorf("%s lacks berth's selectors %v", o.Name, added)
	}
	o.Spec.Selector.MatchExpressions = kept
	if d := cmp.Diff(th, o); d != "" {
		t.Errorf("%s differs from KWOK's beyond berth's selectors (-kwok +berth):\n%s", o.Name, d)
	}
}

var start = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			NodeName:   "n",
			Containers: []corev1.Container{{Name: "app", Image: "img"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// probe gives container i (added if missing) a readiness probe.
func probe(i int, pr corev1.Probe) podOpt {
	return func(p *corev1.Pod) {
		for len(p.Spec.Containers) <= i {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+len(p.Spec.Containers))), Image: "img"})
		}
		p.Spec.Containers[i].ReadinessProbe = &pr
	}
}

// running is the pod as pod-start-probed leaves it.
func running(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &metav1.Time{Time: start}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func ownedByJob(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", APIVersion: "batch/v1"}}
}

func ownedByReplicaSet(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", APIVersion: "apps/v1"}}
}

// runFor annotates the pod with v1alpha1.AnnotationDuration.
func runFor(d string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.AnnotationDuration] = d
	}
}

// startedAgo moves the pod's start into the past.
func startedAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: start.Add(-d)} }
}

func image(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Image = name }
}

// backingOff is the pod as pod-image-pull-failed leaves it.
func backingOff(p *corev1.Pod) {
	p.Status.StartTime = &metav1.Time{Time: start}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
}

func deleting(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: start}
}

func httpProbe(initial, period, success int32) corev1.Probe {
	return corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}},
		InitialDelaySeconds: initial, PeriodSeconds: period, SuccessThreshold: success,
	}
}

func execProbe(cmd ...string) corev1.Probe {
	return corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}, PeriodSeconds: 10, SuccessThreshold: 1}
}

func TestPodStages(t *testing.T) {
	var all []*internalversion.Stage
	for _, raw := range []string{PodReady, PodStartProbed, PodProbeReady, PodImagePullFailed, PodComplete, PodCompleteAfterDuration, podfast.DefaultPodDelete} {
		all = append(all, parse(t, raw))
	}
	lc, err := lifecycle.NewLifecycle(all)
	if err != nil {
		t.Fatal(err)
	}
	const none = ""
	cases := []struct {
		name      string
		pod       *corev1.Pod
		wantStage string
		// wantDelay is checked for the stages that wait for a time, at
		// the pod's start.
		wantDelay time.Duration
	}{
		{"no probe starts ready", pod(), "pod-ready", 0},
		{"probe starts unready", pod(probe(0, httpProbe(0, 10, 1))), "pod-start-probed", 0},
		{"probe on a second container starts unready", pod(probe(1, httpProbe(0, 10, 1))), "pod-start-probed", 0},
		{"no initial delay: first probe at start", pod(running, probe(0, httpProbe(0, 10, 1))), "pod-probe-ready", 0},
		{"initial delay on a period tick", pod(running, probe(0, httpProbe(20, 10, 1))), "pod-probe-ready", 20 * time.Second},
		{"initial delay waits for the next tick", pod(running, probe(0, httpProbe(5, 10, 1))), "pod-probe-ready", 10 * time.Second},
		{"success threshold adds periods", pod(running, probe(0, httpProbe(12, 5, 3))), "pod-probe-ready", 25 * time.Second},
		{"the slowest container decides", pod(running, probe(0, httpProbe(20, 10, 1)), probe(1, httpProbe(0, 30, 2))), "pod-probe-ready", 30 * time.Second},
		// The upstream DisruptionController UnhealthyPodEvictionPolicy
		// specs keep pods unready with PodStartTimeout + 30 s.
		{"upstream's long delay", pod(running, probe(0, httpProbe(330, 10, 1))), "pod-probe-ready", 330 * time.Second},
		{"exec probe that can succeed", pod(running, probe(0, execProbe("cat", "/tmp/healthy"))), "pod-probe-ready", 0},
		{"false never succeeds", pod(running, probe(0, execProbe("false"))), none, 0},
		{"/bin/false never succeeds", pod(running, probe(0, execProbe("/bin/false"))), none, 0},
		{"exit 1 never succeeds", pod(running, probe(0, execProbe("/bin/sh", "-c", "exit 1"))), none, 0},
		{"one failing container keeps the pod unready", pod(running, probe(0, httpProbe(0, 10, 1)), probe(1, execProbe("false"))), none, 0},
		{"ready pods stay", pod(running, ready, probe(0, httpProbe(0, 10, 1))), none, 0},
		{"Job pods complete, ready or not", pod(running, ownedByJob, probe(0, httpProbe(20, 10, 1))), "pod-complete", 0},
		{"an image that cannot be pulled", pod(image("webserver:404")), "pod-image-pull-failed", 0},
		{"foo:non-existent cannot be pulled, probed or not", pod(image("foo:non-existent"), probe(0, httpProbe(0, 10, 1))), "pod-image-pull-failed", 0},
		{"a pod in ImagePullBackOff stays", pod(image("foo:nonexistent"), backingOff), none, 0},
		{"a pod whose image is fixed starts", pod(backingOff), "pod-ready", 0},
		{"an image named 404 is pulled", pod(image("registry/404:v1")), "pod-ready", 0},
		{"deleted probed pods go", pod(running, deleting, probe(0, execProbe("false"))), "pod-delete", 0},
		{"a Job pod with a duration runs that long", pod(running, ownedByJob, runFor("10m")), "pod-complete-after-duration", 10 * time.Minute},
		{"seconds", pod(running, ownedByJob, runFor("90s")), "pod-complete-after-duration", 90 * time.Second},
		{"hours and minutes", pod(running, ownedByJob, runFor("1h30m")), "pod-complete-after-duration", 90 * time.Minute},
		{"a fraction", pod(running, ownedByJob, runFor("1.5h")), "pod-complete-after-duration", 90 * time.Minute},
		{"milliseconds add up exactly", pod(running, ownedByJob, runFor("1000ms")), "pod-complete-after-duration", time.Second},
		{"a fraction of a second is rounded up", pod(running, ownedByJob, runFor("2s1ms")), "pod-complete-after-duration", 3 * time.Second},
		{"measured from the pod's own start", pod(running, ownedByJob, runFor("10m"), startedAgo(4*time.Minute)), "pod-complete-after-duration", 6 * time.Minute},
		{"a probed Job pod with a duration runs that long", pod(running, ownedByJob, runFor("3s"), probe(0, httpProbe(20, 10, 1))), "pod-complete-after-duration", 3 * time.Second},
		{"a pending Job pod with a duration starts as usual", pod(ownedByJob, runFor("10m")), "pod-ready", 0},
		{"not a Go duration completes at once", pod(running, ownedByJob, runFor("10 min")), "pod-complete", 0},
		{"a negative duration completes at once", pod(running, ownedByJob, runFor("-5m")), "pod-complete", 0},
		{"an empty duration completes at once", pod(running, ownedByJob, runFor("")), "pod-complete", 0},
		{"a Deployment's pod never completes", pod(running, ready, ownedByReplicaSet, runFor("10m")), none, 0},
		{"a bare pod never completes", pod(running, ready, runFor("10m")), none, 0},
		{"deleted Job pods with a duration go", pod(running, deleting, ownedByJob, runFor("10m")), "pod-delete", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			event := &lifecycle.Event{Labels: tc.pod.Labels, Annotations: tc.pod.Annotations, Data: tc.pod}
			matched, err := lc.ListAllPossible(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range matched {
				names = append(names, s.Name())
			}
			want := []string{tc.wantStage}
			if tc.wantStage == none {
				want = nil
			}
			if d := cmp.Diff(want, names); d != "" {
				t.Fatalf("matching stages (-want +got):\n%s", d)
			}
			if tc.wantStage != "pod-probe-ready" && tc.wantStage != "pod-complete-after-duration" {
				return
			}
			delay, ok, err := matched[0].Delay(ctx, event, start)
			if err != nil || !ok {
				t.Fatalf("delay: ok=%v err=%v", ok, err)
			}
			if delay != tc.wantDelay {
				t.Errorf("delay = %v, want %v", delay, tc.wantDelay)
			}
			// The delay is a time: asked later, it is shorter.
			later, _, _ := matched[0].Delay(ctx, event, start.Add(3*time.Second))
			if later != tc.wantDelay-3*time.Second {
				t.Errorf("delay 3 s later = %v, want %v", later, tc.wantDelay-3*time.Second)
			}
		})
	}
}
