package rehearse

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
)

// queues is what the recorder keeps of the teams' queues under Kueue:
// how long their Jobs waited suspended, the GPUs each team used beyond
// its own on each pool (borrowed) and the share of its own others used
// (lent), and the preemptions Kueue made, by its reason.
type queues struct {
	// nominal is each team's GPUs of its own on each pool (its
	// ClusterQueue's nominal quota per flavor, compile's TeamGPUs).
	nominal map[string]map[string]float64
	// lends is the most of its own GPUs on a pool each team lends
	// (queue.lend, Kueue's lendingLimit); absent, all of them.
	lends map[string]float64
	teams []string
	// used is the GPUs each team's Jobs' pods hold on each pool: the
	// pods of Jobs alone, which Kueue admits (a Deployment's are not
	// its).
	used               map[string]map[string]float64
	borrowed, lent     map[string]*level
	reclaim, priority  map[string]int
	fairSharing, other map[string]int
	// counted is each of Kueue's events as far as counted: an event
	// that recurs is the same object with a higher count.
	counted map[types.UID]int32
}

func newQueues(bp *v1alpha1.Blueprint, start time.Time) *queues {
	q := &queues{
		nominal: map[string]map[string]float64{}, used: map[string]map[string]float64{}, lends: map[string]float64{},
		borrowed: map[string]*level{}, lent: map[string]*level{},
		reclaim: map[string]int{}, priority: map[string]int{}, fairSharing: map[string]int{}, other: map[string]int{},
		counted: map[types.UID]int32{},
	}
	for i := range bp.Spec.Teams {
		t := &bp.Spec.Teams[i]
		q.teams = append(q.teams, t.Name)
		q.nominal[t.Name] = map[string]float64{}
		q.used[t.Name] = map[string]float64{}
		for _, g := range bp.Spec.TeamGPUs(t) {
			q.nominal[t.Name][g.Pool] = float64(g.Count)
		}
		if t.Queue != nil && t.Queue.Lend != nil {
			q.lends[t.Name] = float64(t.Queue.Lend.Value())
		}
		q.borrowed[t.Name], q.lent[t.Name] = &level{}, &level{}
		q.borrowed[t.Name].set(start, 0)
		q.lent[t.Name].set(start, 0)
	}
	return q
}

// use changes the GPUs team's Jobs hold on pool by gpus, and what each
// team borrows and lends from now on.
func (q *queues) use(now time.Time, team, pool string, gpus float64) {
	if q.used[team] == nil {
		return
	}
	q.used[team][pool] += gpus
	borrowed := map[string]float64{}
	lent := map[string]float64{}
	pools := map[string]bool{}
	for _, t := range q.teams {
		for p := range q.nominal[t] {
			pools[p] = true
		}
		for p := range q.used[t] {
			pools[p] = true
		}
	}
	for p := range pools {
		// What the teams use beyond their own on p comes out of what the
		// others leave unused there and lend: each lends in proportion
		// to that (Kueue borrows from the cohort, not from a team).
		var beyond, lendable float64
		for _, t := range q.teams {
			if over := q.used[t][p] - q.nominal[t][p]; over > 0 {
				borrowed[t] += over
				beyond += over
			}
			lendable += q.lendable(t, p)
		}
		if beyond == 0 || lendable == 0 {
			continue
		}
		share := min(beyond, lendable) / lendable
		for _, t := range q.teams {
			lent[t] += q.lendable(t, p) * share
		}
	}
	for _, t := range q.teams {
		q.borrowed[t].set(now, borrowed[t])
		q.lent[t].set(now, lent[t])
	}
}

// lendable is what team leaves unused of its own GPUs on pool and may
// lend.
func (q *queues) lendable(team, pool string) float64 {
	idle := max(q.nominal[team][pool]-q.used[team][pool], 0)
	if limit, ok := q.lends[team]; ok {
		idle = min(idle, limit)
	}
	return idle
}

// Kueue's words: its Job reconciler's event when it stops a Job
// (jobframework.ReasonStopped), whose message for a preemption is the
// preemptor's (preemption.preemptionMessage), naming the reason in
// words (preemption.HumanReadablePreemptionReasons).
const (
	kueueStopped         = "Stopped"
	kueuePreempted       = "Preempted to accommodate a workload"
	kueueReclaim         = "due to reclamation within the cohort"
	kueuePriority        = "due to prioritization in the ClusterQueue"
	kueueFairSharing     = "due to Fair Sharing within the cohort"
	kueueEventSourceKind = "Job"
)

// preempted counts the preemptions Kueue made of one of team's Jobs
// that its event tells of and were not counted yet, by the reason it
// gives.
func (q *queues) preempted(e *corev1.Event, team string) {
	if e.InvolvedObject.Kind != kueueEventSourceKind || e.Reason != kueueStopped || !strings.Contains(e.Message, kueuePreempted) {
		return
	}
	n := int(max(e.Count, 1) - q.counted[e.UID])
	if n <= 0 {
		return
	}
	q.counted[e.UID] = max(e.Count, 1)
	switch {
	case strings.Contains(e.Message, kueueReclaim):
		// Also "reclamation within the cohort while borrowing".
		q.reclaim[team] += n
	case strings.Contains(e.Message, kueuePriority):
		q.priority[team] += n
	case strings.Contains(e.Message, kueueFairSharing):
		q.fairSharing[team] += n
	default:
		q.other[team] += n
	}
}

// results are each team's queue figures at now: its Jobs' time
// suspended (closed or still open), GPU-hours borrowed and lent, and
// Kueue's preemptions.
func (q *queues) results(now time.Time, jobs map[string]*jobRun) []report.QueueResult {
	suspended := map[string]time.Duration{}
	most := map[string]time.Duration{}
	for _, j := range jobs {
		d := j.suspended
		if !j.suspendedSince.IsZero() {
			d += now.Sub(j.suspendedSince)
		}
		suspended[j.w.job.Team] += d
		most[j.w.job.Team] = max(most[j.w.job.Team], d)
	}
	var out []report.QueueResult
	for _, t := range q.teams {
		b, l := q.borrowed[t].at(now), q.lent[t].at(now)
		out = append(out, report.QueueResult{
			Team:                 t,
			Suspended:            report.Duration(suspended[t]),
			SuspendedMax:         report.Duration(most[t]),
			BorrowedGPUHours:     b.area / 3600,
			LentGPUHours:         l.area / 3600,
			PreemptedReclaim:     q.reclaim[t],
			PreemptedPriority:    q.priority[t],
			PreemptedFairSharing: q.fairSharing[t],
			PreemptedOther:       q.other[t],
		})
	}
	slices.SortFunc(out, func(a, b report.QueueResult) int { return strings.Compare(a.Team, b.Team) })
	return out
}
