package rehearse

import (
	"strings"
	"testing"
	"time"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// At speed 60 the retail blueprint's timers run 60 times faster, each
// listed as run; the blueprint as written is left alone.
func TestCompressScalesEveryTimerBerthOwns(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	before := bp.Spec.Autoscaler.ScanInterval.Duration
	out, timers, err := Compress(bp, 60)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Spec.Autoscaler.ScanInterval.Duration != before {
		t.Errorf("Compress changed the blueprint it was given")
	}
	if got := out.Spec.Autoscaler.ScanInterval.Duration; got != before/60 {
		t.Errorf("scanInterval %s; want %s", got, before/60)
	}
	byName := map[string]Timer{}
	for _, tm := range timers {
		byName[tm.Name] = tm
		if !tm.Scaled || time.Duration(tm.Ran) > time.Duration(tm.Value)/59 && tm.Value != 0 && !strings.Contains(tm.Name, "scaleDownWindow") {
			t.Errorf("timer %s: %+v, not 60 times faster", tm.Name, tm)
		}
	}
	for i, p := range out.Spec.Pools {
		if p.Capacity == v1alpha1.Spot {
			if got, want := p.SpotNotice(), bp.Spec.Pools[i].SpotNotice()/60; got != want {
				t.Errorf("pool %s: spot notice %s; want %s", p.Name, got, want)
			}
			if _, ok := byName["pools["+p.Name+"].spot.notice"]; !ok {
				t.Errorf("pool %s's spot notice is not listed among the timers", p.Name)
			}
		}
	}
	for _, c := range out.Spec.Classes {
		if c.Scaling != nil && c.Scaling.ScaleDownWindow != nil && c.Scaling.ScaleDownWindow.Duration%time.Second != 0 {
			t.Errorf("class %s: scaleDownWindow %s is not whole seconds", c.Name, c.Scaling.ScaleDownWindow.Duration)
		}
	}
}

func TestCompressRefusesASlowerClock(t *testing.T) {
	bp, _ := blueprint.LoadTemplate("minimal")
	if _, _, err := Compress(bp, 0.5); err == nil || !strings.Contains(err.Error(), "--speed") {
		t.Errorf("Compress at speed 0.5: %v; want an error naming --speed", err)
	}
}

// The controller manager's timers are never run below their floors, and
// a timer held at its floor is listed as unscaled with the trace time it
// stands for.
func TestControllerManagerFlagsHoldTheirFloors(t *testing.T) {
	flags, timers := ControllerManagerFlags(600)
	if !strings.Contains(strings.Join(flags, " "), "--horizontal-pod-autoscaler-sync-period=200ms") {
		t.Errorf("flags %v: the HPA sync period is not held at 200ms", flags)
	}
	for _, tm := range timers {
		if tm.Name == "--horizontal-pod-autoscaler-sync-period" && (tm.Scaled || time.Duration(tm.Floor) != 2*time.Minute) {
			t.Errorf("%+v: want unscaled with a floor of 2m (200ms at speed 600)", tm)
		}
	}
}

// Karpenter's batch windows run at 1/speed of its defaults; its
// disruption loop's constants run in wall time, and each says the trace
// time it stands for at speed.
func TestKarpenterTimersAtSpeed(t *testing.T) {
	flags, timers := KarpenterFlags(60)
	want := []string{"--batch-idle-duration=16.666666ms", "--batch-max-duration=166.666666ms"}
	if strings.Join(flags, " ") != strings.Join(want, " ") {
		t.Errorf("flags %v; want %v", flags, want)
	}
	for _, tm := range timers {
		if !tm.Scaled {
			t.Errorf("%+v: want scaled", tm)
		}
	}
	floors := map[string]time.Duration{}
	for _, tm := range KarpenterUnscaled(60) {
		if tm.Scaled {
			t.Errorf("%+v: want unscaled", tm)
		}
		floors[tm.Name] = time.Duration(tm.Floor)
	}
	if floors["disruption pollingPeriod"] != 10*time.Minute || floors["consolidation commandValidationDelay"] != 15*time.Minute {
		t.Errorf("floors %v; want 10m for the polling period and 15m for the validation delay at speed 60", floors)
	}
}
