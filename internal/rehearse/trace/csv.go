package trace

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// startComment begins the CSV form's one meaningful comment, the line
// that says when the trace starts: "# start: 2026-01-05T00:00:00Z".
const startComment = "# start:"

// parseCSV reads the CSV form: comment lines (the start among them),
// the header exactly, then a row per job.
func parseCSV(file string, data []byte) (*Trace, problem.List) {
	rs := &rows{file: file, names: map[string]int{}}
	// The start comment comes before the header; the csv reader skips
	// every comment, so it is read here.
	i := -1
	for line := range strings.SplitSeq(string(data), "\n") {
		i++
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			break
		}
		if v, ok := strings.CutPrefix(line, startComment); ok {
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
			if err != nil {
				rs.problems = append(rs.problems, problem.Problem{File: file, Line: i + 1, Field: "start", Message: fmt.Sprintf("%q is not an RFC 3339 time", strings.TrimSpace(v)), Fix: "write the start like # start: 2026-01-05T00:00:00Z"})
			}
			rs.start = t
		}
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, append(rs.problems, problem.FromCSV(file, err, Header))
	}
	if got := strings.Join(header, ","); got != Header {
		line, _ := r.FieldPos(0)
		return nil, append(rs.problems, problem.Problem{File: file, Line: line, Message: fmt.Sprintf("the header is %q", got), Fix: "write the header exactly: " + Header})
	}
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The reader cannot say where the next row starts.
			return nil, append(rs.problems, problem.FromCSV(file, err, Header))
		}
		line, _ := r.FieldPos(0)
		if len(record) != numColumns {
			rs.problems = append(rs.problems, problem.Problem{File: file, Line: line, Message: fmt.Sprintf("the row has %d columns, the header %d", len(record), numColumns), Fix: "write every column, empty ones too (a row ends in ,, for no class and no model)"})
			continue
		}
		rw := row{line: line}
		for i := range record {
			rw.values[i] = record[i]
			rw.fields[i] = columns[i]
			rw.lines[i], _ = r.FieldPos(i)
		}
		rs.add(rw)
	}
	jobs, start := rs.finish()
	if len(rs.problems) > 0 {
		return nil, rs.problems
	}
	if len(jobs) == 0 {
		return nil, problem.List{{File: file, Message: "the trace has no jobs", Fix: "write a row per job under the header"}}
	}
	return &Trace{Start: start, Jobs: jobs}, nil
}

// Write writes t in the CSV form: the start (when t has one) as a
// comment, the header, and a row per job, so that an import can be saved
// and edited. The CSV form holds jobs only: a trace with a load or
// queues, interruptions or drains is refused, as it could not be read
// back whole.
func Write(w io.Writer, t *Trace) error {
	if t.Load != nil || len(t.Queues) > 0 || len(t.Interruptions) > 0 || len(t.Drains) > 0 {
		return problem.New("write it in the YAML form", "the CSV form holds jobs only, and this trace has a load, queues, interruptions or drains")
	}
	if !t.Start.IsZero() {
		if _, err := fmt.Fprintf(w, "%s %s\n", startComment, t.Start.Format(time.RFC3339)); err != nil {
			return err
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(columns); err != nil {
		return err
	}
	for _, j := range t.Jobs {
		record := csvRecord(j)
		record[colSubmit] = words.Duration(j.Submit)
		if err := cw.Write(record[:]); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
