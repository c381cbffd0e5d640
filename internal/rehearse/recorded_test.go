package rehearse

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
)

// A job's recorded wait comes from the trace into its result, and its
// team's comparison sets the rehearsal's wait beside it.
func TestReportSetsTheRecordedWaitBesideTheJobs(t *testing.T) {
	r, _, _ := checkpointedJob(t, epoch)                   // team-a/ft, submitted at the start
	r.onPod(jobPod("1", "ft-a", corev1.PodRunning), false) // starts an hour in
	tr := &trace.Trace{RecordedWaits: map[string]time.Duration{"team-a/ft": 7 * time.Minute}}
	rep := r.report(epoch.Add(time.Hour), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: tr})
	if len(rep.Jobs) != 1 || rep.Jobs[0].RecordedWait == nil || *rep.Jobs[0].RecordedWait != report.Duration(7*time.Minute) {
		t.Fatalf("jobs %+v; want team-a/ft with a recorded wait of 7m", rep.Jobs)
	}
	want := []report.RecordedWaitResult{{Team: "team-a", Jobs: 1,
		ReplayedP50: report.Duration(time.Hour), ReplayedP95: report.Duration(time.Hour),
		RecordedP50: report.Duration(7 * time.Minute), RecordedP95: report.Duration(7 * time.Minute)}}
	if diff := cmp.Diff(want, rep.RecordedWaits); diff != "" {
		t.Errorf("recorded waits (-want +got):\n%s", diff)
	}

	rep = r.report(epoch.Add(time.Hour), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}})
	if rep.Jobs[0].RecordedWait != nil || rep.RecordedWaits != nil {
		t.Errorf("a trace without recorded waits gave %v and %+v", rep.Jobs[0].RecordedWait, rep.RecordedWaits)
	}
}

// Per team, over the jobs with a recorded wait that ran: p50 and p95 by
// nearest rank of each side, the jobs that never ran counted apart, the
// jobs without a recorded wait left out.
func TestRecordedWaitsPerTeam(t *testing.T) {
	d := func(v time.Duration) *report.Duration { r := report.Duration(v); return &r }
	jobs := []report.JobResult{
		{Team: "team-b", Name: "b1", Wait: d(0), RecordedWait: d(4*time.Minute + 10*time.Second)},
		{Team: "team-a", Name: "a1", Wait: d(10 * time.Minute), RecordedWait: d(time.Hour)},
		{Team: "team-a", Name: "a2", Wait: d(2 * time.Minute), RecordedWait: d(0)},
		{Team: "team-a", Name: "a3", Wait: d(30 * time.Minute), RecordedWait: d(5 * time.Minute)},
		{Team: "team-a", Name: "a4", RecordedWait: d(time.Minute)}, // never ran
		{Team: "team-a", Name: "a5", Wait: d(3 * time.Hour)},       // recorded none
		{Team: "team-c", Name: "c1", RecordedWait: d(time.Minute)}, // never ran
	}
	// team-a: replayed 2m, 10m, 30m and recorded 0s, 5m, 1h: the 50th
	// percentile is the 2nd of 3 (ceil 1.5), the 95th the 3rd (ceil 2.85).
	want := []report.RecordedWaitResult{
		{Team: "team-a", Jobs: 3, NeverRan: 1,
			ReplayedP50: report.Duration(10 * time.Minute), ReplayedP95: report.Duration(30 * time.Minute),
			RecordedP50: report.Duration(5 * time.Minute), RecordedP95: report.Duration(time.Hour)},
		{Team: "team-b", Jobs: 1,
			RecordedP50: report.Duration(4*time.Minute + 10*time.Second), RecordedP95: report.Duration(4*time.Minute + 10*time.Second)},
		{Team: "team-c", NeverRan: 1},
	}
	if diff := cmp.Diff(want, recordedWaits(jobs)); diff != "" {
		t.Errorf("recorded waits (-want +got):\n%s", diff)
	}
	if got := recordedWaits(jobs[5:6]); got != nil {
		t.Errorf("a job without a recorded wait gave %+v; want nil", got)
	}
}
