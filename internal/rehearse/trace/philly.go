package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"berth.io/berth/internal/problem"
)

// phillyJob is a job of the Philly trace's cluster_job_log, as its README
// lists the keys.
type phillyJob struct {
	Status        string          `json:"status"`
	VC            string          `json:"vc"`
	JobID         string          `json:"jobid"`
	Attempts      []phillyAttempt `json:"attempts"`
	SubmittedTime *string         `json:"submitted_time"`
	User          string          `json:"user"`
}

type phillyAttempt struct {
	StartTime *string `json:"start_time"`
	EndTime   *string `json:"end_time"`
	Detail    []struct {
		IP   string   `json:"ip"`
		GPUs []string `json:"gpus"`
	} `json:"detail"`
}

// phillyTimeLayout is how the log writes times, without a zone.
const phillyTimeLayout = "2006-01-02 15:04:05"

const droppedNoMachine = "without a machine recorded"

// ImportPhilly reads the Philly trace's cluster_job_log (a JSON list of
// jobs) into a trace of a job per Philly job; name names the log in
// problems. See the package documentation for what each key becomes. A
// job that is not in the published layout is a problem at its line;
// jobs the layout allows but a trace cannot use are dropped and counted
// in the report.
func ImportPhilly(log io.Reader, name string, opts ImportOptions) (*Trace, ImportReport, error) {
	im := newImporter(opts, time.UTC)
	data, err := io.ReadAll(log)
	if err != nil {
		return nil, im.report, problem.Errorf("check the path to the log", "reading %s: %w", name, err)
	}
	lines := &lineCounter{data: data, line: 1}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, im.report, problem.List{{File: name, Line: lines.at(nextValue(data, 0)), Message: "the log is not a JSON list of jobs", Fix: "pass cluster_job_log from the Philly trace, unedited"}}
	}
	for dec.More() {
		line := lines.at(nextValue(data, int(dec.InputOffset())))
		var j phillyJob
		if err := dec.Decode(&j); err != nil {
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) {
				im.fail(name, lines.at(int(syntax.Offset)), "", "invalid JSON: "+syntax.Error(), "pass cluster_job_log from the Philly trace, unedited")
				break // the decoder cannot find the next job
			}
			im.fail(name, line, jsonField(err), err.Error(), "pass cluster_job_log from the Philly trace, unedited")
			continue
		}
		im.philly(j, name, line)
	}
	return im.trace()
}

func (im *importer) philly(pj phillyJob, file string, line int) {
	before := len(im.problems)
	when := func(field string, s *string) (time.Time, bool) {
		if s == nil || *s == "" || *s == "None" {
			return time.Time{}, false
		}
		t, err := time.Parse(phillyTimeLayout, *s)
		if err != nil {
			im.fail(file, line, field, fmt.Sprintf("%q is not a time like 2017-10-07 01:11:39", *s), "pass cluster_job_log from the Philly trace, unedited")
			return time.Time{}, false
		}
		return t, true
	}
	if pj.JobID == "" {
		im.fail(file, line, "jobid", "the job has no jobid", "pass cluster_job_log from the Philly trace, unedited")
	}
	submit, hasSubmit := when("submitted_time", pj.SubmittedTime)
	var run time.Duration
	pods, gpus, finished := 0, 0, len(pj.Attempts) > 0
	for i, a := range pj.Attempts {
		start, hasStart := when(fmt.Sprintf("attempts[%d].start_time", i), a.StartTime)
		end, hasEnd := when(fmt.Sprintf("attempts[%d].end_time", i), a.EndTime)
		if i == len(pj.Attempts)-1 && !hasEnd {
			finished = false // running when the log was taken
		}
		if !hasStart || !hasEnd || !end.After(start) {
			continue // a gap in the log, as its README warns
		}
		run += end.Sub(start)
		if pods == 0 {
			for _, d := range a.Detail {
				pods++
				gpus += len(d.GPUs)
			}
		}
	}
	if len(im.problems) > before {
		return
	}
	im.report.Read++
	switch {
	case !hasSubmit:
		im.drop(droppedNoSubmit)
		return
	case !finished || run <= 0:
		im.drop(droppedUnfinished)
		return
	case pods == 0:
		im.drop(droppedNoMachine)
		return
	}
	team, ok := im.team(pj.VC)
	if !ok || !im.inWindow(submit) {
		return
	}
	// A job's GPUs spread evenly over its machines, rounded up: a pod
	// per machine.
	im.add(Job{Team: team, Name: pj.JobID, Pods: int32(pods), GPUs: int64((gpus + pods - 1) / pods), Duration: run, File: file, Line: line}, submit)
}

// jsonField is the key an encoding/json type error names.
func jsonField(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return typ.Field
	}
	return ""
}

// nextValue is the offset of the first byte at or after off that is not
// white space or a comma: where the next JSON value starts.
func nextValue(data []byte, off int) int {
	for off < len(data) && bytes.IndexByte([]byte(" \t\r\n,"), data[off]) >= 0 {
		off++
	}
	return off
}

// lineCounter finds the line of offsets that only grow, counting each
// newline once.
type lineCounter struct {
	data []byte
	off  int
	line int
}

func (c *lineCounter) at(off int) int {
	off = min(off, len(c.data))
	if off < c.off { // a syntax error's offset may fall before the last job's start
		return c.line - bytes.Count(c.data[off:c.off], []byte("\n"))
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}
