package trace

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/scaffold"
)

// Header is the CSV form's header line, column for column. The YAML form's
// jobs have the same fields.
const Header = "submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model"

// The columns, in Header's order.
const (
	colSubmit = iota
	colTeam
	colKind
	colName
	colPods
	colGPUs
	colCPU
	colMemory
	colDuration
	colCheckpoint
	colClass
	colModel
	numColumns
)

var columns = strings.Split(Header, ",")

// row is one job as written, before it is read: its values by column,
// and where each was written (the field path people see, and its line).
type row struct {
	values [numColumns]string
	fields [numColumns]string
	lines  [numColumns]int
	line   int
}

// rows reads the rows of one trace file into jobs, collecting every
// problem of the file rather than stopping at the first.
type rows struct {
	file     string
	problems problem.List
	// start is the trace's start when the file says it; zero otherwise.
	start time.Time
	// jobs are the rows read without a problem. A submit written as a
	// time is kept in at (zero for an offset), and its row in written,
	// until finish resolves it against the start.
	jobs    []Job
	at      []time.Time
	written []row
	// names holds TEAM/NAME of each row read, with the row's line.
	names map[string]int
}

func (rs *rows) fail(r row, col int, message, fix string) {
	rs.problems = append(rs.problems, problem.Problem{File: rs.file, Line: r.lines[col], Field: r.fields[col], Message: message, Fix: fix})
}

// add reads one row; a row with a problem adds none.
func (rs *rows) add(r row) {
	before := len(rs.problems)
	for i := range r.values {
		r.values[i] = strings.TrimSpace(r.values[i])
	}
	v := &r.values
	j := Job{Team: v[colTeam], Kind: scaffold.Kind(v[colKind]), Name: v[colName], Class: v[colClass], Model: v[colModel], File: rs.file, Line: r.line}

	offset, at, ok := rs.submit(r)
	j.Submit = offset
	rs.label(r, colTeam, true, "team-a")
	switch j.Kind {
	case Training, Batch, Inference:
	case "":
		rs.fail(r, colKind, "a kind is required", "write training, batch or inference")
	default:
		rs.fail(r, colKind, fmt.Sprintf("%q is not training, batch or inference", v[colKind]), "write one of them, in lower case")
	}
	if rs.label(r, colName, true, "resnet-1") && j.Team != "" {
		key := j.Team + "/" + j.Name
		if first, dup := rs.names[key]; dup {
			rs.fail(r, colName, fmt.Sprintf("team %s has a row named %s already, on line %d", j.Team, j.Name, first), "give each of a team's rows its own name")
		} else {
			rs.names[key] = r.line
		}
	}
	j.Pods = rs.pods(r)
	j.GPUs = rs.gpus(r)
	j.CPU = rs.quantity(r, colCPU, "8, 500m or 2.5")
	j.Memory = rs.quantity(r, colMemory, "32Gi or 512Mi")
	j.Duration, j.Checkpoint = rs.durations(r, j.Kind)
	rs.label(r, colClass, false, "training")
	if j.Model != "" {
		ref, err := model.ParseRef(j.Model)
		switch {
		case j.Kind != Inference:
			rs.fail(r, colModel, "a model is for inference rows, as `berth new --model` is", "leave model empty, or make the row inference")
		case err != nil || (ref.Alias == "" && ref.Version == 0):
			rs.fail(r, colModel, fmt.Sprintf("%q is not NAME@ALIAS or NAME:VERSION", j.Model), "write the model as `berth new --model` takes it, e.g. reco@production or reco:4")
		}
	}
	if len(rs.problems) > before || !ok {
		return
	}
	rs.jobs = append(rs.jobs, j)
	rs.at = append(rs.at, at)
	rs.written = append(rs.written, r)
}

// submit reads the submit column: an offset from the trace's start (a
// Go duration) or a time (RFC 3339), returned as whichever it is.
func (rs *rows) submit(r row) (offset time.Duration, at time.Time, ok bool) {
	s := r.values[colSubmit]
	if s == "" {
		rs.fail(r, colSubmit, "a submit time is required", "write an offset from the trace's start like 0s or 2h30m, or a time like 2026-01-05T09:00:00Z")
		return 0, time.Time{}, false
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			rs.fail(r, colSubmit, fmt.Sprintf("%s is before the trace's start", s), "write an offset of 0s or more")
			return 0, time.Time{}, false
		}
		return d, time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		rs.fail(r, colSubmit, fmt.Sprintf("%q is neither a duration nor an RFC 3339 time", s), "write an offset from the trace's start like 0s or 2h30m, or a time like 2026-01-05T09:00:00Z")
		return 0, time.Time{}, false
	}
	if !rs.start.IsZero() && t.Before(rs.start) {
		rs.fail(r, colSubmit, fmt.Sprintf("%s is before the trace's start, %s", s, rs.start.Format(time.RFC3339)), "submit it at the start or later, or move the start")
		return 0, time.Time{}, false
	}
	return 0, t, true
}

// label checks a column that holds a DNS-1123 label, reporting whether
// it does.
func (rs *rows) label(r row, col int, required bool, example string) bool {
	s := r.values[col]
	if s == "" {
		if required {
			rs.fail(r, col, fmt.Sprintf("a %s is required", columns[col]), fmt.Sprintf("write one, like %s", example))
		}
		return false
	}
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		rs.fail(r, col, fmt.Sprintf("%q is not a DNS-1123 label: %s", s, strings.Join(errs, "; ")), fmt.Sprintf("use lower-case letters, digits and '-', like %s", example))
		return false
	}
	return true
}

func (rs *rows) pods(r row) int32 {
	s := r.values[colPods]
	n, err := strconv.ParseInt(s, 10, 32)
	switch {
	case s == "":
		rs.fail(r, colPods, "a count of pods is required", "write 1 for a single pod, more for a parallel job or a service's fewest replicas")
	case err != nil || n < 1:
		rs.fail(r, colPods, fmt.Sprintf("%q is not a whole number of 1 or more", s), "write how many pods, like 1 or 4")
	}
	return int32(n)
}

func (rs *rows) gpus(r row) int64 {
	s := r.values[colGPUs]
	if s == "" {
		return 0
	}
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil:
		rs.fail(r, colGPUs, fmt.Sprintf("%q is not a quantity", s), "write a whole number of GPUs per pod, like 1 or 8, or leave it empty for none")
	case q.Sign() < 0:
		rs.fail(r, colGPUs, fmt.Sprintf("%s: a count of GPUs cannot be negative", s), "write 0 or more")
	case q.MilliValue()%1000 != 0:
		rs.fail(r, colGPUs, fmt.Sprintf("%s is part of a GPU; Kubernetes gives GPUs whole", s), fmt.Sprintf("write %d: the pod holds a whole GPU either way", (q.MilliValue()+999)/1000))
	default:
		return q.Value()
	}
	return 0
}

// quantity reads a CPU or memory column: empty, or a quantity above zero.
func (rs *rows) quantity(r row, col int, example string) resource.Quantity {
	s := r.values[col]
	if s == "" {
		return resource.Quantity{}
	}
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil:
		rs.fail(r, col, fmt.Sprintf("%q is not a quantity", s), fmt.Sprintf("write a Kubernetes quantity per pod, like %s, or leave it empty for what `berth new` asks", example))
	case q.Sign() <= 0:
		rs.fail(r, col, fmt.Sprintf("%s: a pod's %s must be more than zero", s, columns[col]), fmt.Sprintf("write a quantity like %s, or leave it empty for what `berth new` asks", example))
	default:
		return q
	}
	return resource.Quantity{}
}

// durations reads the duration and checkpoint columns of a row of kind k.
func (rs *rows) durations(r row, k scaffold.Kind) (duration, checkpoint time.Duration) {
	duration, ok := rs.duration(r, colDuration)
	switch {
	case !ok:
	case duration == 0 && k != Inference && r.values[colDuration] == "":
		rs.fail(r, colDuration, fmt.Sprintf("a %s row needs a run time", k), "write how long each pod runs, like 45m or 6h")
	case duration == 0 && r.values[colDuration] != "":
		rs.fail(r, colDuration, "a run time must be more than zero", "write how long each pod runs, like 45m, or leave it empty for a service that runs to the end of the trace")
	}
	checkpoint, cok := rs.duration(r, colCheckpoint)
	switch {
	case !cok || r.values[colCheckpoint] == "":
	case k == Inference:
		rs.fail(r, colCheckpoint, "a service keeps no checkpoints: it loses no work when interrupted", "leave checkpoint empty")
	case checkpoint == 0:
		rs.fail(r, colCheckpoint, "a checkpoint interval must be more than zero", "write how often the job saves its work, like 15m, or leave it empty for never")
	case ok && duration > 0 && checkpoint >= duration:
		rs.fail(r, colCheckpoint, fmt.Sprintf("%s is not less than the run time, %s: the job would finish before its first checkpoint", r.values[colCheckpoint], r.values[colDuration]), "write a shorter interval, or leave it empty for never")
	}
	return duration, checkpoint
}

// duration reads a column that holds a Go duration or nothing.
func (rs *rows) duration(r row, col int) (time.Duration, bool) {
	s := r.values[col]
	if s == "" {
		return 0, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		rs.fail(r, col, fmt.Sprintf("%q is not a duration", s), "write a Go duration, like 90s, 45m or 2h30m")
		return 0, false
	}
	if d < 0 {
		rs.fail(r, col, fmt.Sprintf("%s: a duration cannot be negative", s), "write 0s or more")
		return 0, false
	}
	return d, true
}

// finish resolves the submits written as times against the start, by
// the rule the package documents, and returns the jobs and the start.
func (rs *rows) finish() ([]Job, time.Time) {
	start := rs.start
	if start.IsZero() {
		// Without a start, the submits must all be offsets or all be
		// times; the first row says which.
		first := -1
		for i := range rs.jobs {
			if first < 0 {
				first = i
				continue
			}
			if rs.at[i].IsZero() != rs.at[first].IsZero() {
				r := rs.written[i]
				rs.fail(r, colSubmit, fmt.Sprintf("%s mixes an offset and a time: the row on line %d wrote its submit the other way, and the trace says no start", r.values[colSubmit], rs.written[first].line), "write every submit the same way, or say when the trace starts (a `# start: TIME` line above the CSV header, spec.start in YAML)")
			}
		}
		for _, at := range rs.at {
			if !at.IsZero() && (start.IsZero() || at.Before(start)) {
				start = at
			}
		}
	}
	for i := range rs.jobs {
		if !rs.at[i].IsZero() {
			rs.jobs[i].Submit = rs.at[i].Sub(start)
		}
	}
	sortJobs(rs.jobs)
	return rs.jobs, start
}
