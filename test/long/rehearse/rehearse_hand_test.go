//go:build long

package rehearse_test

import (
	"math"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/controller/job"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
)

// The timings a hand calculation of a rehearsal needs, each taken from
// where it is set: a rehearsal runs the components on its own clock, so
// its figures are these sums, exact to the clock's step.
var (
	// scan is the node autoscaler's scan interval: a pod that needs a
	// node waits for the next point of the scan grid, which starts with
	// the replay (a pod submitted at 0 is seen by the scan at 10 s), and a
	// node unneeded at a moment of the grid is seen so at that moment.
	scan = v1alpha1.DefaultScanInterval
	// unneeded is how long a node stays unneeded before the autoscaler
	// removes it (spec.autoscaler.scaleDownUnneededTime's default).
	unneeded = v1alpha1.DefaultScaleDownUnneededTime
)

// jobDone is how long after its last pod ends a Job's Complete condition
// comes: the Job controller batches a Job's pod updates
// (job.SyncJobBatchPeriod).
var jobDone = job.SyncJobBatchPeriod

// quotaRetry is when the Job controller next tries to make the pod of a
// Job the quota refused at 0, at or after t: it retries with its API
// backoff, doubling from job.DefaultJobApiBackOff to
// job.MaxJobApiBackOff, at 1, 3, 7, 15 ... seconds.
func quotaRetry(t time.Duration) time.Duration {
	at, wait := time.Duration(0), job.DefaultJobApiBackOff
	for at < t {
		at += wait
		wait = min(2*wait, job.MaxJobApiBackOff)
	}
	return at
}

// exactly checks a duration of a report against its hand calculation:
// equal, to the report's tolerance (the clock's step).
func exactly(t *testing.T, r *report.Report, what string, got, want time.Duration) {
	t.Helper()
	if d := (got - want).Abs(); d > time.Duration(r.Tolerance) {
		t.Errorf("%s: %s is %s; the hand calculation gives %s", r.Blueprint, what, got, want)
	}
}

// exactlyHours checks hours of a report against its hand calculation,
// a span of trace time per node: equal to within a second in all.
func exactlyHours(t *testing.T, r *report.Report, what string, got float64, want time.Duration) {
	t.Helper()
	if math.Abs(got-want.Hours()) > time.Second.Hours()/2 {
		t.Errorf("%s: %s is %.5f h; the hand calculation gives %.5f h (%s)", r.Blueprint, what, got, want.Hours(), want)
	}
}

// waited is a job's wait, or the test fails.
func waited(t *testing.T, r *report.Report, j report.JobResult) time.Duration {
	t.Helper()
	if j.Wait == nil {
		t.Fatalf("%s: job %s never ran (%s)", r.Blueprint, j.Name, j.State)
	}
	return time.Duration(*j.Wait)
}

// ran is a job's run, or the test fails.
func ran(t *testing.T, r *report.Report, j report.JobResult) time.Duration {
	t.Helper()
	if j.Run == nil || j.State != report.Completed {
		t.Fatalf("%s: job %s %s with no run; want completed", r.Blueprint, j.Name, j.State)
	}
	return time.Duration(*j.Run)
}

// jobNamed is the report's job name.
func jobNamed(t *testing.T, r *report.Report, name string) report.JobResult {
	t.Helper()
	for _, j := range r.Jobs {
		if j.Name == name {
			return j
		}
	}
	t.Fatalf("%s: no job %s in %+v", r.Blueprint, name, r.Jobs)
	return report.JobResult{}
}

// cents is what the report says pool name cost, in cents, which a hand
// calculation rounds as cost does: to the nearest cent.
func cents(t *testing.T, r *report.Report, name string) int64 {
	t.Helper()
	return int64(math.Round(poolCost(t, r, name) * 100))
}

// priced is a pool's cost by hand: hours at a price in dollars an hour,
// in cents to the nearest.
func priced(hours time.Duration, dollarsPerHour float64) int64 {
	return int64(math.Round(hours.Hours() * dollarsPerHour * 100))
}

// nextScan is the first point of the scan grid at or after t: when the
// autoscaler looks at what changed at t.
func nextScan(t time.Duration) time.Duration {
	return (t + scan - 1) / scan * scan
}
