package rehearse

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Timer is one of the timers that shape a rehearsal's figures: what it
// is in the design or the component, what the rehearsal ran it at, and,
// for a timer left unscaled, the floor it puts under the figures in trace
// time.
type Timer struct {
	// Name names the timer as its owner does: a blueprint field path or
	// a component's flag.
	Name string `json:"name"`
	// Owner is who runs it: berth, kube-controller-manager,
	// kube-scheduler, KWOK.
	Owner string `json:"owner"`
	// Value is the timer as the design or the component sets it.
	Value Duration `json:"value"`
	// Ran is the wall time it ran at.
	Ran Duration `json:"ran"`
	// Scaled says whether Ran is Value divided by the speed (rounded
	// where the field takes whole seconds).
	Scaled bool `json:"scaled"`
	// Floor, for a timer left unscaled, is the trace time one run of it
	// lasts: Ran times the speed.
	Floor Duration `json:"floor,omitempty"`
	// Note says what the timer does to the figures.
	Note string `json:"note,omitempty"`
}

// Compress returns a copy of bp whose timers run speed times faster: the
// node autoscaler's intervals and delays, each pool's provisioning time,
// spot notice and mean time between interruptions, and each class's HPA
// scale-down window (whole seconds, as an HPA's stabilization window is).
// It lists each timer as run. A timer the blueprint leaves unset runs at
// its default, compressed too.
func Compress(bp *v1alpha1.Blueprint, speed float64) (*v1alpha1.Blueprint, []Timer, error) {
	if speed < 1 {
		return nil, nil, problem.Errorf("pass --speed 1 or more (60, the default, plays an hour a minute)", "--speed %g: a rehearsal cannot run slower than the trace", speed)
	}
	raw, err := json.Marshal(bp)
	if err != nil {
		return nil, nil, err
	}
	out := &v1alpha1.Blueprint{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, nil, err
	}
	var timers []Timer
	scale := func(name string, d **metav1.Duration, def time.Duration, whole bool, note string) {
		v := def
		if *d != nil {
			v = (*d).Duration
		}
		ran := time.Duration(float64(v) / speed)
		if whole {
			ran = ran.Round(time.Second)
			if ran == 0 && v > 0 {
				ran = time.Second
			}
		}
		*d = &metav1.Duration{Duration: ran}
		timers = append(timers, Timer{Name: name, Owner: "berth", Value: Duration(v), Ran: Duration(ran), Scaled: true, Note: note})
	}
	if a := out.Spec.Autoscaler; a != nil {
		scale("spec.autoscaler.scanInterval", &a.ScanInterval, v1alpha1.DefaultScanInterval, false, "how often the node autoscaler looks at pending pods and unneeded nodes")
		scale("spec.autoscaler.scaleDownUnneededTime", &a.ScaleDownUnneededTime, v1alpha1.DefaultScaleDownUnneededTime, false, "how long a node stays unneeded before it is removed")
		scale("spec.autoscaler.scaleDownDelayAfterAdd", &a.ScaleDownDelayAfterAdd, v1alpha1.DefaultScaleDownDelayAfterAdd, false, "")
		if a.ScaleDownDelayAfterDelete != nil {
			scale("spec.autoscaler.scaleDownDelayAfterDelete", &a.ScaleDownDelayAfterDelete, 0, false, "")
		}
		scale("spec.autoscaler.scaleDownDelayAfterFailure", &a.ScaleDownDelayAfterFailure, v1alpha1.DefaultScaleDownDelayAfterFailure, false, "")
		scale("spec.autoscaler.maxNodeProvisionTime", &a.MaxNodeProvisionTime, v1alpha1.DefaultMaxNodeProvisionTime, false, "")
		if a.NewPodScaleUpDelay != nil {
			scale("spec.autoscaler.newPodScaleUpDelay", &a.NewPodScaleUpDelay, 0, false, "")
		}
	}
	for i := range out.Spec.Pools {
		p := &out.Spec.Pools[i]
		path := fmt.Sprintf("pools[%s]", p.Name)
		if p.Autoscale != nil {
			note := ""
			if p.Autoscale.ProvisioningTime == nil {
				note = "unset: a new node is Ready at once; on a cloud a GPU node takes minutes (set autoscale.provisioningTime)"
			}
			scale(path+".autoscale.provisioningTime", &p.Autoscale.ProvisioningTime, 0, false, note)
		}
		if p.Capacity == v1alpha1.Spot {
			if p.Spot == nil {
				p.Spot = &v1alpha1.SpotSettings{}
			}
			scale(path+".spot.notice", &p.Spot.Notice, v1alpha1.DefaultSpotNotice, false, "")
			if p.Spot.MeanTimeBetweenInterruptions != nil {
				scale(path+".spot.meanTimeBetweenInterruptions", &p.Spot.MeanTimeBetweenInterruptions, 0, false, "random interruptions, seeded")
			}
		}
	}
	for i := range out.Spec.Classes {
		c := &out.Spec.Classes[i]
		if c.Scaling != nil && c.Scaling.ScaleDownWindow != nil {
			scale(fmt.Sprintf("classes[%s].scaling.scaleDownWindow", c.Name), &c.Scaling.ScaleDownWindow, 0, true, "an HPA's stabilization window takes whole seconds")
		}
	}
	if errs, _ := v1alpha1.Validate(out); len(errs) > 0 {
		return nil, nil, fmt.Errorf("the blueprint at --speed %g does not validate (lower --speed): %w", speed, errs)
	}
	return out, timers, nil
}

// controlPlaneTimer is a kube-controller-manager flag a rehearsal
// compresses.
type controlPlaneTimer struct {
	flag  string
	value time.Duration
	least time.Duration
	note  string
}

var controllerManagerTimers = []controlPlaneTimer{
	{"--horizontal-pod-autoscaler-sync-period", 15 * time.Second, 200 * time.Millisecond, "how often the HPA controller rescales"},
	{"--horizontal-pod-autoscaler-downscale-stabilization", 5 * time.Minute, time.Second, "an HPA's scale-down window where it sets none"},
	{"--horizontal-pod-autoscaler-initial-readiness-delay", 30 * time.Second, time.Second, ""},
	{"--horizontal-pod-autoscaler-cpu-initialization-period", 5 * time.Minute, time.Second, ""},
}

// ControllerManagerFlags are the kube-controller-manager flags that
// compress its timers that take a flag, and those timers as run. A timer
// is never run below a floor the component needs.
func ControllerManagerFlags(speed float64) ([]string, []Timer) {
	var flags []string
	var timers []Timer
	for _, t := range controllerManagerTimers {
		ran := max(time.Duration(float64(t.value)/speed), t.least)
		flags = append(flags, t.flag+"="+ran.String())
		tm := Timer{Name: t.flag, Owner: "kube-controller-manager", Value: Duration(t.value), Ran: Duration(ran), Scaled: true, Note: t.note}
		if ran == t.least && time.Duration(float64(t.value)/speed) < t.least {
			tm.Scaled = false
			tm.Floor = Duration(time.Duration(float64(ran) * speed))
			tm.Note = fmt.Sprintf("held at %s, its least", t.least)
		}
		timers = append(timers, tm)
	}
	return flags, timers
}

// Unscaled are the timers a rehearsal cannot compress, with the floor
// each puts under the figures at speed: a second of wall time is speed
// seconds of trace time.
func Unscaled(speed float64) []Timer {
	floor := func(d time.Duration) Duration { return Duration(time.Duration(math.Round(float64(d) * speed))) }
	return []Timer{
		{Name: "pod start time", Owner: "KWOK", Value: Duration(time.Second), Ran: Duration(time.Second), Floor: floor(time.Second),
			Note: "a pod's status.startTime has whole seconds, so a run time ends up to a second of wall time late"},
		{Name: "podInitialBackoffSeconds, podMaxBackoffSeconds", Owner: "kube-scheduler", Value: Duration(time.Second), Ran: Duration(time.Second), Floor: floor(time.Second),
			Note: "an unschedulable pod is tried again after 1 s, doubling to 10 s, or at once when the cluster changes"},
		{Name: "spot interruption check", Owner: "berth", Value: Duration(time.Second), Ran: Duration(time.Second), Floor: floor(time.Second),
			Note: "random interruptions are drawn once a second of wall time"},
		{Name: "node lease and --node-monitor-grace-period", Owner: "kubelet, kube-controller-manager", Value: Duration(40 * time.Second), Ran: Duration(40 * time.Second), Floor: floor(40 * time.Second),
			Note: "only a stopped kubelet is noticed this late; a rehearsal stops none"},
	}
}

// JobControllerTimers are the Job controller's backoffs as a rehearsal
// at speed runs them (cluster.Options.JobBackoffSpeed divides them).
func JobControllerTimers(speed float64) []Timer {
	t := func(name string, v time.Duration, note string) Timer {
		return Timer{Name: name, Owner: "kube-controller-manager (Job)", Value: Duration(v), Ran: Duration(time.Duration(float64(v) / speed)), Scaled: true, Note: note}
	}
	return []Timer{
		t("Job API backoff", time.Second, "a Job whose pods the quota refused is tried again after it, doubling to a minute"),
		t("Job API backoff, most", time.Minute, ""),
		t("Job pod failure backoff", 10*time.Second, "a failed pod that counts against backoffLimit is replaced after it, doubling to 10 minutes"),
		t("Job pod failure backoff, most", 10*time.Minute, ""),
	}
}
