package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/internal/problem"
)

// openbColumns are the header of an openb_pod_list_*.csv file of
// Alibaba's cluster-trace-gpu-v2023, as published.
var openbColumns = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}

// openbResourcesOnly is the header of the lists published without times
// (openb_pod_list_multigpu*.csv): they cannot be replayed.
const openbResourcesOnly = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"

// The columns ImportOpenB reads, by index.
const (
	obName = iota
	obCPU
	obMemory
	obNumGPU
	obGPUMilli
	obGPUSpec
	obQoS
	obPhase
	obCreation
	obDeletion
	obScheduled
)

const (
	droppedNeverScheduled = "never scheduled (no scheduled_time: pending, or deleted while pending)"
	droppedNeverDeleted   = "never deleted (no deletion_time: running when the trace was taken)"
	droppedNoRun          = "deleted as they were scheduled (no run time)"
)

// openbEpoch is where the importer puts the trace's offsets on a
// clock, so that they window and sort as the dated sources' times do.
// The trace it makes has no date.
var openbEpoch = time.Unix(0, 0).UTC()

// ImportOpenB reads a pod list of Alibaba's cluster-trace-gpu-v2023
// (openb_pod_list_*.csv, with its header row, as published) into a trace
// of a job per pod; file names it in problems. Its times are offsets
// from the trace's start, so its window is opts.Offset and opts.For, and
// the trace has no date. Each pod's recorded wait (scheduled_time less
// creation_time) is kept in the trace's RecordedWaits. See the package
// documentation for what each column becomes. A row that is not in the
// published layout is a problem at its line; rows the layout allows but
// a trace cannot use are dropped and counted in the report.
func ImportOpenB(r io.Reader, file string, opts ImportOptions) (*Trace, ImportReport, error) {
	window := opts
	window.From, window.To, window.Offset, window.For = time.Time{}, time.Time{}, 0, 0
	if opts.Offset > 0 {
		window.From = openbEpoch.Add(opts.Offset)
	}
	if opts.For > 0 {
		window.To = openbEpoch.Add(opts.Offset + opts.For)
	}
	im := newImporter(window, time.UTC)
	switch {
	case !opts.From.IsZero() || !opts.To.IsZero():
		im.fail("", 0, "From", "openb's times are offsets from the trace's start, not dates", "set Offset and For")
	case opts.Offset < 0 || opts.For < 0:
		im.fail("", 0, "Offset", fmt.Sprintf("the window (offset %s, for %s) is negative", opts.Offset, opts.For), "set Offset and For to zero or more")
	}
	if len(im.problems) == 0 {
		readOpenB(im, r, file)
	}
	t, report, err := im.trace()
	if t != nil {
		t.Start = time.Time{} // offsets only: the source has no date
	}
	return t, report, err
}

// readOpenB reads the pod list row by row after its header.
func readOpenB(im *importer, r io.Reader, file string) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	switch {
	case errors.Is(err, io.EOF):
		im.fail(file, 0, "", "the file is empty", "pass an openb_pod_list_*.csv of cluster-trace-gpu-v2023, unedited")
		return
	case err != nil:
		im.problems = append(im.problems, problem.FromCSV(file, err, strings.Join(openbColumns, ",")))
		return
	}
	line, _ := cr.FieldPos(0)
	switch got := strings.Join(header, ","); got {
	case strings.Join(openbColumns, ","):
	case openbResourcesOnly:
		im.fail(file, line, "", "the pod list has no times (the multigpu lists publish only the pods' resources)", "import openb_pod_list_default.csv, or another list with creation_time, deletion_time and scheduled_time")
		return
	default:
		im.fail(file, line, "", fmt.Sprintf("the header is %q", got), "pass an openb_pod_list_*.csv of cluster-trace-gpu-v2023 with its header row, unedited: "+strings.Join(openbColumns, ","))
		return
	}
	for {
		v, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			im.problems = append(im.problems, problem.FromCSV(file, err, strings.Join(openbColumns, ",")))
			return
		}
		line, _ := cr.FieldPos(0)
		if len(v) != len(openbColumns) {
			im.fail(file, line, "", fmt.Sprintf("the row has %d columns; the header %d", len(v), len(openbColumns)), "check that the file is a pod list, unedited")
			continue
		}
		im.openbPod(v, file, line)
	}
}

// openbPod reads one row: a pod.
func (im *importer) openbPod(v []string, file string, line int) {
	// num reads a column of numbers: false when it is empty, a problem
	// when it is not a number of zero or more.
	num := func(col int, fix string) (float64, bool) {
		s := strings.TrimSpace(v[col])
		if s == "" {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			im.fail(file, line, openbColumns[col], fmt.Sprintf("%q is not a number", s), fix)
			return 0, false
		case f < 0:
			im.fail(file, line, openbColumns[col], fmt.Sprintf("%s is negative", s), fix)
			return 0, false
		}
		return f, true
	}
	const timeFix = "write it as the trace does: whole seconds from the trace's start, like 9437497, or empty for none"
	const sizeFix = "write it as the trace does, like 4000, unedited"
	cpu, _ := num(obCPU, sizeFix)
	mem, _ := num(obMemory, sizeFix)
	numGPU, _ := num(obNumGPU, sizeFix)
	milli, _ := num(obGPUMilli, sizeFix)
	created, hasCreated := num(obCreation, timeFix)
	deleted, hasDeleted := num(obDeletion, timeFix)
	scheduled, hasScheduled := num(obScheduled, timeFix)
	if v[obName] == "" {
		im.fail(file, line, "name", "the pod has no name", "give every row its name")
	}
	if numGPU != math.Trunc(numGPU) {
		im.fail(file, line, "num_gpu", fmt.Sprintf("%s is not a whole number of GPUs", v[obNumGPU]), "num_gpu counts whole GPUs; a part of one is gpu_milli, with num_gpu 1")
	}
	if milli > 1000 {
		im.fail(file, line, "gpu_milli", fmt.Sprintf("%s is more than one GPU (1000)", v[obGPUMilli]), "gpu_milli is thousandths of one GPU; more GPUs are num_gpu")
	}
	if hasCreated && hasScheduled && scheduled < created {
		im.fail(file, line, "scheduled_time", fmt.Sprintf("the pod is scheduled (%s) before it is created (%s)", v[obScheduled], v[obCreation]), "pass the pod list unedited")
	}
	if hasScheduled && hasDeleted && deleted < scheduled {
		im.fail(file, line, "deletion_time", fmt.Sprintf("the pod is deleted (%s) before it is scheduled (%s)", v[obDeletion], v[obScheduled]), "pass the pod list unedited")
	}
	if len(im.problems) > 0 {
		return // the trace is refused; only problems matter now
	}
	im.report.Read++
	switch {
	case !hasCreated:
		im.drop(droppedNoSubmit)
		return
	case !hasScheduled:
		im.drop(droppedNeverScheduled)
		return
	case !hasDeleted:
		im.drop(droppedNeverDeleted)
		return
	case deleted == scheduled:
		im.drop(droppedNoRun)
		return
	}
	team, ok := im.team(v[obQoS])
	submit := openbEpoch.Add(seconds(created))
	if !ok || !im.inWindow(submit) {
		return
	}
	j := Job{Team: team, Name: v[obName], Pods: 1, GPUs: int64(numGPU), Duration: seconds(deleted - scheduled), File: file, Line: line}
	// gpu_milli is the part of its one GPU a GPU-sharing pod asks
	// (num_gpu 1); Kubernetes gives it the whole GPU.
	rounded := numGPU == 1 && milli > 0 && milli < 1000
	if cpu > 0 {
		j.CPU = *resource.NewMilliQuantity(int64(math.Ceil(cpu)), resource.DecimalSI)
	}
	if mem > 0 {
		j.Memory = *resource.NewQuantity(int64(math.Ceil(mem))<<20, resource.BinarySI)
	}
	if !im.add(j, submit) {
		return
	}
	if rounded {
		im.report.RoundedGPUs++
	}
	im.recordWait(seconds(scheduled - created))
}

// seconds is a time or a length of the trace, in seconds, as a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
