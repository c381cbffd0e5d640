package trace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/scaffold"
)

// ImportOptions say how a public trace becomes a berth trace.
type ImportOptions struct {
	// TeamMap maps the source's owner of a job (Alibaba's user, Philly's
	// virtual cluster, openb's QoS class) to a blueprint team.
	TeamMap map[string]string
	// DefaultTeam takes the jobs of owners TeamMap lacks. Empty means
	// such jobs are dropped, and counted in the report.
	DefaultTeam string
	// From and To are the window of the source's time kept, for a source
	// whose times are dates (Alibaba's 2020 trace, Philly): a job
	// submitted before From, or at To or later, is dropped. Zero means
	// no bound on that side. The trace starts at From when it is set,
	// else at its first job's submission. A source of offsets (openb)
	// refuses them: its window is Offset and For.
	From, To time.Time
	// Offset is the window's start for a source whose times are offsets
	// from its own start (openb): a job submitted before it is dropped.
	// The trace starts at Offset when it is more than zero, else at its
	// first job's submission. A source of dates refuses it.
	Offset time.Duration
	// For is the window's length: a job submitted For or more after
	// From (Offset) is dropped. It takes To's place, and needs From in a
	// source of dates. Zero means To (no bound, in a source of offsets).
	For time.Duration
	// MaxGPUs caps each pod's GPUs: a job whose pods ask more (once
	// rounded up to whole GPUs) is dropped, and counted in the report
	// (an Alibaba 2020 task rounded up past the cap is also counted as
	// rounded). Zero or less means no cap.
	MaxGPUs int64
	// Kind is every imported job's kind. Empty means Training: the
	// sources are mostly training.
	Kind scaffold.Kind
	// Checkpoint is every imported job's checkpoint interval; a job no
	// longer than it gets none. Zero means none.
	Checkpoint time.Duration
}

// ImportReport says what an import kept and what it left out or changed.
type ImportReport struct {
	// Read is the jobs (Alibaba: tasks; openb: pods) read from the source.
	Read int
	// Kept is the jobs in the trace.
	Kept int
	// Dropped counts the jobs left out, by reason.
	Dropped map[string]int
	// RoundedGPUs counts the jobs whose part of a GPU per pod was rounded
	// up to a whole GPU.
	RoundedGPUs int
}

// String says it in a line: "read 40, kept 31; dropped 6 outside the
// window, 3 of users not in the team map; 2 rounded up to whole GPUs".
func (r ImportReport) String() string {
	s := fmt.Sprintf("read %d, kept %d", r.Read, r.Kept)
	var reasons []string
	for reason := range r.Dropped {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for i, reason := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", r.Dropped[reason], reason)
	}
	if len(reasons) > 0 {
		s += "; dropped " + strings.Join(reasons, ", ")
	}
	if r.RoundedGPUs > 0 {
		s += fmt.Sprintf("; %d rounded up to whole GPUs", r.RoundedGPUs)
	}
	return s
}

// Reasons a job is dropped, as the report counts them.
const (
	droppedTeam       = "of owners not in the team map"
	droppedWindow     = "outside the window"
	droppedUnfinished = "without a start or an end (still running, waiting, or never run)"
)

// droppedOverGPUs is the reason a job over the MaxGPUs cap is dropped.
func droppedOverGPUs(n int64) string { return fmt.Sprintf("of more than %d GPUs a pod", n) }

// importer turns the jobs of a source into a trace.
type importer struct {
	opts ImportOptions
	// zone is where the source's times keep their hour of the day.
	zone     *time.Location
	report   ImportReport
	problems problem.List
	jobs     []Job
	submits  []time.Time
	names    map[string]bool
	// waits are the recorded waits of the jobs kept, by Team/Name.
	waits map[string]time.Duration
}

// newImporter starts an import of a source whose times are dates; a
// source of offsets makes its window From and To before it calls it.
func newImporter(opts ImportOptions, zone *time.Location) *importer {
	if opts.Kind == "" {
		opts.Kind = Training
	}
	im := &importer{opts: opts, zone: zone, report: ImportReport{Dropped: map[string]int{}}, names: map[string]bool{}}
	switch {
	case opts.Offset != 0:
		im.fail("", 0, "Offset", "the source's times are dates, not offsets from its start", "set From (and To or For)")
	case opts.For < 0:
		im.fail("", 0, "For", fmt.Sprintf("the window's length %s is negative", opts.For), "set For more than zero, or zero for no end")
	case opts.For > 0 && opts.From.IsZero():
		im.fail("", 0, "For", "the window's length counts from From, which is unset", "set From too, or To instead")
	case opts.For > 0 && !opts.To.IsZero():
		im.fail("", 0, "For", "both To and For end the window", "set one of them")
	case opts.For > 0:
		im.opts.To = opts.From.Add(opts.For)
	}
	return im
}

func (im *importer) drop(reason string) { im.report.Dropped[reason]++ }

func (im *importer) fail(file string, line int, field, message, fix string) {
	im.problems = append(im.problems, problem.Problem{File: file, Line: line, Field: field, Message: message, Fix: fix})
}

// team is the blueprint team of a source owner, false when the job is
// dropped.
func (im *importer) team(owner string) (string, bool) {
	if t, ok := im.opts.TeamMap[owner]; ok {
		return t, true
	}
	if im.opts.DefaultTeam != "" {
		return im.opts.DefaultTeam, true
	}
	im.drop(droppedTeam)
	return "", false
}

// inWindow reports whether a job submitted at t is kept.
func (im *importer) inWindow(t time.Time) bool {
	if (!im.opts.From.IsZero() && t.Before(im.opts.From)) || (!im.opts.To.IsZero() && !t.Before(im.opts.To)) {
		im.drop(droppedWindow)
		return false
	}
	return true
}

// add keeps a job submitted at submit, unless its pods ask more GPUs
// than the cap, and reports whether it did; its name is made a DNS-1123
// label, unique in its team.
func (im *importer) add(j Job, submit time.Time) bool {
	if c := im.opts.MaxGPUs; c > 0 && j.GPUs > c {
		im.drop(droppedOverGPUs(c))
		return false
	}
	j.Kind = im.opts.Kind
	if c := im.opts.Checkpoint; c > 0 && c < j.Duration && j.Kind != Inference {
		j.Checkpoint = c
	}
	base := labelName(j.Name)
	j.Name = base
	for n := 2; im.names[j.Team+"/"+j.Name]; n++ {
		suffix := fmt.Sprintf("-%d", n)
		j.Name = strings.TrimRight(base[:min(len(base), 63-len(suffix))], "-") + suffix
	}
	im.names[j.Team+"/"+j.Name] = true
	im.jobs = append(im.jobs, j)
	im.submits = append(im.submits, submit)
	return true
}

// recordWait keeps the source's recorded wait of the job add kept last.
func (im *importer) recordWait(wait time.Duration) {
	j := im.jobs[len(im.jobs)-1]
	if im.waits == nil {
		im.waits = map[string]time.Duration{}
	}
	im.waits[waitKey(j)] = wait
}

// trace is the jobs kept, their submits made offsets from the start.
func (im *importer) trace() (*Trace, ImportReport, error) {
	if len(im.problems) > 0 {
		return nil, im.report, im.problems
	}
	start := im.opts.From
	if start.IsZero() {
		for _, s := range im.submits {
			if start.IsZero() || s.Before(start) {
				start = s
			}
		}
	}
	start = start.In(im.zone)
	for i := range im.jobs {
		im.jobs[i].Submit = im.submits[i].Sub(start)
	}
	sortJobs(im.jobs)
	im.report.Kept = len(im.jobs)
	return &Trace{Start: start, Jobs: im.jobs, RecordedWaits: im.waits}, im.report, nil
}

// labelName makes a source's job name a DNS-1123 label: lower case,
// anything but letters and digits a '-', at most 63 characters.
func labelName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	if out == "" {
		return "job"
	}
	return out
}

// wholeGPUs is a request in percent of a GPU as whole GPUs, rounded up
// (Kubernetes gives GPUs whole: a pod asking for half holds one), and
// whether it was rounded.
func wholeGPUs(percent float64) (int64, bool) {
	whole := int64(percent / 100)
	if float64(whole)*100 < percent {
		return whole + 1, true
	}
	return whole, false
}
