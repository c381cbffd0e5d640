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

// The columns of Alibaba's cluster-trace-gpu-v2020 tables, as its README
// and .header files list them. The CSV files have no header row.
var (
	alibabaJobColumns  = []string{"job_name", "inst_id", "user", "status", "start_time", "end_time"}
	alibabaTaskColumns = []string{"job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"}
)

const (
	droppedNoJob    = "of tasks whose job pai_job_table lacks"
	droppedNoSubmit = "of jobs without a submission time"
)

// alibabaJob is what a trace needs of a pai_job_table row.
type alibabaJob struct {
	user   string
	submit time.Time
	ok     bool // false when the job has no submission time
}

// ImportAlibaba reads Alibaba's cluster-trace-gpu-v2020 (pai_job_table
// and pai_task_table, without header rows, as published) into a trace of
// a job per task; jobFile and taskFile name the tables in problems. See
// the package documentation for what each column becomes. A row that is
// not in the published layout is a problem at its line; rows the layout
// allows but a trace cannot use are dropped and counted in the report.
func ImportAlibaba(jobTable, taskTable io.Reader, jobFile, taskFile string, opts ImportOptions) (*Trace, ImportReport, error) {
	im := newImporter(opts, alibabaZone)
	jobs := map[string]alibabaJob{}
	readAlibaba(im, jobTable, jobFile, alibabaJobColumns, func(line int, v []string, num func(col int) (float64, bool)) {
		name := v[0]
		if name == "" {
			im.fail(jobFile, line, "job_name", "the job has no name", "give every row its job_name")
			return
		}
		if _, dup := jobs[name]; dup {
			im.fail(jobFile, line, "job_name", fmt.Sprintf("job %s appears twice", name), "keep one row per job")
			return
		}
		start, ok := num(4)
		jobs[name] = alibabaJob{user: v[2], submit: unixSeconds(start), ok: ok && start > 0}
	})
	readAlibaba(im, taskTable, taskFile, alibabaTaskColumns, func(line int, v []string, num func(col int) (float64, bool)) {
		instNum, hasInst := num(2)
		start, hasStart := num(4)
		end, hasEnd := num(5)
		cpu, hasCPU := num(6)
		mem, hasMem := num(7)
		gpu, _ := num(8)
		if len(im.problems) > 0 {
			return // the trace is refused; only problems matter now
		}
		im.report.Read++
		job, known := jobs[v[0]]
		switch {
		case !known:
			im.drop(droppedNoJob)
			return
		case !job.ok:
			im.drop(droppedNoSubmit)
			return
		case !hasStart || !hasEnd || start <= 0 || end <= start || !hasInst || instNum < 1:
			// The trace's analysis reads a start of 0 as none, too.
			im.drop(droppedUnfinished)
			return
		}
		team, ok := im.team(job.user)
		if !ok || !im.inWindow(job.submit) {
			return
		}
		j := Job{
			Team: team, Name: v[0] + "-" + v[1], Pods: int32(math.Ceil(instNum)),
			Duration: time.Duration((end - start) * float64(time.Second)),
			File:     taskFile, Line: line,
		}
		var rounded bool
		j.GPUs, rounded = wholeGPUs(gpu)
		if rounded {
			im.report.RoundedGPUs++
		}
		if hasCPU && cpu > 0 {
			j.CPU = *resource.NewMilliQuantity(int64(math.Ceil(cpu*10)), resource.DecimalSI) // percent of a core
		}
		if hasMem && mem > 0 {
			j.Memory = *resource.NewQuantity(int64(math.Ceil(mem*1024))<<20, resource.BinarySI) // GiB
		}
		im.add(j, job.submit)
	})
	return im.trace()
}

// readAlibaba reads one table row by row. Each row must have the
// table's columns; row gets its values and num, which reads a numeric
// column: false when it is empty, a problem when it is not a number.
func readAlibaba(im *importer, r io.Reader, file string, cols []string, row func(line int, v []string, num func(col int) (float64, bool))) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	first := true
	for {
		v, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			im.problems = append(im.problems, problem.FromCSV(file, err, Header))
			return
		}
		// The published files have no header row; one pasted from the
		// .header file is skipped.
		if first && strings.Join(v, ",") == strings.Join(cols, ",") {
			first = false
			continue
		}
		first = false
		if len(v) != len(cols) {
			im.fail(file, line, "", fmt.Sprintf("the row has %d columns; the table has %d (%s)", len(v), len(cols), strings.Join(cols, ",")), "check that the file is this table, unedited")
			continue
		}
		num := func(col int) (float64, bool) {
			s := strings.TrimSpace(v[col])
			if s == "" {
				return 0, false
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				im.fail(file, line, cols[col], fmt.Sprintf("%q is not a number", s), fmt.Sprintf("write %s as the table does, like 4550879.0, or leave it empty", cols[col]))
				return 0, false
			}
			return f, true
		}
		row(line, v, num)
	}
}

// unixSeconds is a time of Alibaba's trace: seconds, read as Unix time.
// The trace shifted its times by a constant; read in UTC+8, they keep
// the hour of the day and the day of the week they had.
func unixSeconds(s float64) time.Time {
	return time.Unix(0, int64(s*float64(time.Second))).In(alibabaZone)
}

var alibabaZone = time.FixedZone("UTC+8", 8*60*60)
