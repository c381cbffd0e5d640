package record

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/words"
)

// Summary is what a recording says beside its rows: what it left out and
// why, and each object it read with a problem, with the fix.
type Summary struct {
	// Jobs and Services are the rows recorded of each; Kinds the Jobs'
	// rows by kind.
	Jobs, Services int
	Kinds          map[scaffold.Kind]int
	// Running and Waiting are Jobs left out because they have not
	// finished: running, or suspended (waiting in Kueue's queue).
	Running, Waiting int
	// Before are finished Jobs submitted before Options.Since.
	Before int
	// NeverRan are finished Jobs none of whose pods started.
	NeverRan int
	// ServicesBefore are services made before Options.Since, recorded
	// from Since. CPUServices are Deployments and StatefulSets without
	// GPUs, which are not recorded.
	ServicesBefore, CPUServices int
	// WithTTL counts the Jobs held that set ttlSecondsAfterFinished, and
	// ShortestTTL is the least of them.
	WithTTL     int
	ShortestTTL time.Duration
	// Gone are the Jobs (NAMESPACE/NAME) that events name but the
	// cluster no longer holds, sorted.
	Gone []string
	// Queued are recorded Jobs Kueue admitted; QueueWait their waits from
	// submission to admission, summed, and LongestWait the longest.
	Queued                 int
	QueueWait, LongestWait time.Duration
	// Fractional counts the workloads that asked for part of a GPU.
	Fractional int
	// Problems are the objects that map to no team or were recorded with
	// a rule that changes them, each with its fix.
	Problems problem.List
}

func (s *Summary) noteTTL(ttl time.Duration) {
	if s.WithTTL == 0 || ttl < s.ShortestTTL {
		s.ShortestTTL = ttl
	}
	s.WithTTL++
}

func (s *Summary) noteKind(k scaffold.Kind) {
	if s.Kinds == nil {
		s.Kinds = map[scaffold.Kind]int{}
	}
	s.Kinds[k]++
}

// gone notes the Jobs that events name and the cluster no longer holds.
func (r *recorder) gone(events []corev1.Event) {
	seen := map[string]bool{}
	for _, e := range events {
		o := e.InvolvedObject
		key := o.Namespace + "/" + o.Name
		if o.Kind != "Job" || r.held[key] || seen[key] {
			continue
		}
		if last := eventTime(e); !last.IsZero() && last.Before(r.o.Since) {
			continue
		}
		seen[key] = true
		r.summary.Gone = append(r.summary.Gone, key)
	}
	slices.Sort(r.summary.Gone)
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Render writes s for people: what was recorded, what was left out and
// why, what the cluster could not show, then the problems (at most max
// of them, and how many more).
func (s Summary) Render(w io.Writer, max int) {
	var kinds []string
	for _, k := range scaffold.Kinds {
		if n := s.Kinds[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	line := fmt.Sprintf("Recorded %s", words.Count(s.Jobs, "Job"))
	if len(kinds) > 0 {
		line += " (" + strings.Join(kinds, ", ") + ")"
	}
	line += fmt.Sprintf(" and %s with GPUs.", words.Count(s.Services, "service"))
	fmt.Fprintln(w, line)
	var out []string
	if s.Running > 0 {
		out = append(out, fmt.Sprintf("%s still running", words.Count(s.Running, "Job")))
	}
	if s.Waiting > 0 {
		out = append(out, fmt.Sprintf("%s waiting, suspended", words.Count(s.Waiting, "Job")))
	}
	if s.Before > 0 {
		out = append(out, fmt.Sprintf("%s submitted before the window", words.Count(s.Before, "Job")))
	}
	if s.NeverRan > 0 {
		out = append(out, fmt.Sprintf("%s whose pods never started", words.Count(s.NeverRan, "finished Job")))
	}
	if s.CPUServices > 0 {
		out = append(out, fmt.Sprintf("%d %s without GPUs", s.CPUServices, words.Pick(s.CPUServices, "Deployment or StatefulSet", "Deployments and StatefulSets")))
	}
	if len(out) > 0 {
		fmt.Fprintf(w, "Left out: %s.\n", strings.Join(out, "; "))
	}
	if s.ServicesBefore > 0 {
		fmt.Fprintf(w, "%s made before the window %s recorded from its start.\n", words.Count(s.ServicesBefore, "service"), words.Pick(s.ServicesBefore, "is", "are"))
	}
	if s.Queued > 0 {
		fmt.Fprintf(w, "Kueue admitted %s after %s on average (the longest %s); a replay queues them again.\n",
			words.Count(s.Queued, "recorded Job"), words.Duration((s.QueueWait / time.Duration(s.Queued)).Round(time.Second)), words.Duration(s.LongestWait))
	}
	fmt.Fprintln(w, s.Unseen())
	ps := s.Problems
	for i, p := range ps {
		if max > 0 && i == max {
			fmt.Fprintf(w, "... and %d more %s.\n", len(ps)-max, words.Pick(len(ps)-max, "problem", "problems"))
			break
		}
		fmt.Fprintln(w, p)
	}
}

// Unseen says what the cluster could not show: Jobs deleted before the
// recording, which only events still name, and the TTLs that delete them.
func (s Summary) Unseen() problem.Problem {
	var b strings.Builder
	if len(s.Gone) > 0 {
		n := len(s.Gone)
		fmt.Fprintf(&b, "%s %s gone, deleted by a ttlSecondsAfterFinished or by hand; only events still name %s (%s), so %s not recorded. ",
			words.Count(n, "Job"), words.Pick(n, "is", "are"), words.Pick(n, "it", "them"), words.List(s.Gone, 5), words.Pick(n, "it is", "they are"))
	}
	b.WriteString("Jobs that the cluster deleted before this recording (events last an hour or so) cannot be seen at all")
	if s.WithTTL > 0 {
		fmt.Fprintf(&b, "; %s here set ttlSecondsAfterFinished (the shortest %s)", words.Count(s.WithTTL, "Job"), words.Duration(s.ShortestTTL))
	}
	b.WriteString(".")
	return problem.Problem{Message: b.String(), Warning: true,
		Fix: "give Jobs a ttlSecondsAfterFinished longer than the window you record (or none), or record with --watch, which writes each Job as it finishes"}
}
