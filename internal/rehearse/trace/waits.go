package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// WaitsHeader is the header of the file of recorded waits, exactly.
const WaitsHeader = "name,team,recorded_wait"

// WaitsPath is where the recorded waits of the trace at path are kept:
// beside it, its extension replaced by .waits.csv (trace.csv,
// trace.waits.csv).
func WaitsPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".waits.csv"
}

// waitKey is a job's key in Trace.RecordedWaits.
func waitKey(j Job) string { return j.Team + "/" + j.Name }

// RecordedWait is the wait the source recorded for j, false when it
// recorded none.
func (t *Trace) RecordedWait(j Job) (time.Duration, bool) {
	w, ok := t.RecordedWaits[waitKey(j)]
	return w, ok
}

// WriteWaits writes t's recorded waits as CSV: the header WaitsHeader,
// then a row per job that has one, in the trace's order, the wait a Go
// duration.
func WriteWaits(w io.Writer, t *Trace) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(strings.Split(WaitsHeader, ",")); err != nil {
		return err
	}
	for _, j := range t.Jobs {
		if wait, ok := t.RecordedWait(j); ok {
			if err := cw.Write([]string{j.Name, j.Team, words.Duration(wait)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadWaits reads a file of recorded waits (as WriteWaits writes it)
// into t.RecordedWaits; file names it in problems. Each row must name a
// job of t and give a wait of zero or more. Its error is a problem.List
// of every problem in the file, each at FILE:LINE with its fix.
func ReadWaits(r io.Reader, file string, t *Trace) error {
	jobs := map[string]bool{}
	for _, j := range t.Jobs {
		jobs[waitKey(j)] = true
	}
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return problem.List{{File: file, Message: "the file is empty", Fix: "write the header: " + WaitsHeader}}
	}
	if err != nil {
		return problem.List{problem.FromCSV(file, err, WaitsHeader)}
	}
	if got := strings.Join(header, ","); got != WaitsHeader {
		line, _ := cr.FieldPos(0)
		return problem.List{{File: file, Line: line, Message: fmt.Sprintf("the header is %q", got), Fix: "write the header exactly: " + WaitsHeader}}
	}
	var problems problem.List
	waits := map[string]time.Duration{}
	for {
		v, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return append(problems, problem.FromCSV(file, err, WaitsHeader))
		}
		line, _ := cr.FieldPos(0)
		fail := func(field, message, fix string) {
			problems = append(problems, problem.Problem{File: file, Line: line, Field: field, Message: message, Fix: fix})
		}
		if len(v) != 3 {
			fail("", fmt.Sprintf("the row has %d columns, the header 3", len(v)), "write a row as name,team,recorded_wait")
			continue
		}
		key := v[1] + "/" + v[0]
		wait, err := time.ParseDuration(v[2])
		switch {
		case !jobs[key]:
			fail("name", fmt.Sprintf("the trace has no job %s of team %s", v[0], v[1]), "keep the waits file with the trace it was written beside, or remove the row")
		case err != nil || wait < 0:
			fail("recorded_wait", fmt.Sprintf("%q is not a wait", v[2]), "write it as a Go duration of zero or more, like 0s or 1h2m3s")
		default:
			if _, dup := waits[key]; dup {
				fail("name", fmt.Sprintf("job %s of team %s has two rows", v[0], v[1]), "keep one row per job")
				continue
			}
			waits[key] = wait
		}
	}
	if len(problems) > 0 {
		return problems
	}
	t.RecordedWaits = waits
	return nil
}
