package rehearse

import (
	"math"
	"time"
)

// Karpenter's timers, as sigs.k8s.io/karpenter v1.14.1 sets them.
// Its batch windows take flags, so a rehearsal compresses them; its
// disruption loop's timers are constants in its code, so a rehearsal
// runs them in wall time and says what that costs in trace time.
var (
	karpenterBatchTimers = []controlPlaneTimer{
		{"--batch-idle-duration", time.Second, time.Millisecond, "a provisioning batch ends after this long with no new pending pod"},
		{"--batch-max-duration", 10 * time.Second, time.Millisecond, "a provisioning batch ends after this long at most"},
	}
	karpenterFixedTimers = []struct {
		name  string
		value time.Duration
		note  string
	}{
		{"disruption pollingPeriod", 10 * time.Second,
			"Karpenter looks for nodes to consolidate, expire or replace for drift this often (pkg/controllers/disruption)"},
		{"consolidation commandValidationDelay", 15 * time.Second,
			"a consolidation it finds waits this long and is checked again before a node goes"},
	}
)

// KarpenterFlags are Karpenter's flags that compress its batch windows
// at speed, and those timers as run.
func KarpenterFlags(speed float64) ([]string, []Timer) {
	var flags []string
	var timers []Timer
	for _, t := range karpenterBatchTimers {
		ran := max(time.Duration(float64(t.value)/speed), t.least)
		flags = append(flags, t.flag+"="+ran.String())
		timers = append(timers, Timer{Name: t.flag, Owner: "Karpenter", Value: Duration(t.value), Ran: Duration(ran), Scaled: true, Note: t.note})
	}
	return flags, timers
}

// KarpenterUnscaled are Karpenter's timers a rehearsal cannot compress,
// with the floor each puts under the figures at speed: a node Karpenter
// removes goes up to their sum in wall time, times speed in trace time,
// later than consolidateAfter alone says.
func KarpenterUnscaled(speed float64) []Timer {
	var timers []Timer
	for _, t := range karpenterFixedTimers {
		floor := Duration(time.Duration(math.Round(float64(t.value) * speed)))
		timers = append(timers, Timer{Name: t.name, Owner: "Karpenter", Value: Duration(t.value), Ran: Duration(t.value), Floor: floor, Note: t.note})
	}
	return timers
}
