package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// Appender writes the CSV form a row at a time, each submit as a time
// (RFC 3339, UTC) rather than an offset, so that a file can grow as jobs
// finish, stop at any row and be resumed, and still read as one trace:
// berth record's output. Each Append writes one whole line.
type Appender struct {
	w  io.Writer
	cw *csv.Writer
}

// NewAppender writes rows to w. With header set it first writes the
// comments given (each line after "# "), a `# start:` line when start is
// not zero, and the header; without, w already holds them (a file being
// resumed).
func NewAppender(w io.Writer, header bool, start time.Time, comments ...string) (*Appender, error) {
	a := &Appender{w: w, cw: csv.NewWriter(w)}
	if !header {
		return a, nil
	}
	var b strings.Builder
	for _, c := range comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	if !start.IsZero() {
		fmt.Fprintf(&b, "%s %s\n", startComment, start.UTC().Format(time.RFC3339))
	}
	b.WriteString(Header + "\n")
	_, err := io.WriteString(w, b.String())
	return a, err
}

// Append writes j as a row submitted at at (j.Submit is not read).
func (a *Appender) Append(j Job, at time.Time) error {
	record := csvRecord(j)
	record[colSubmit] = at.UTC().Format(time.RFC3339)
	if err := a.cw.Write(record[:]); err != nil {
		return err
	}
	a.cw.Flush()
	return a.cw.Error()
}

// csvRecord is j's row in the CSV form, but for its submit, which is
// written as an offset (Write) or a time (Appender).
func csvRecord(j Job) [numColumns]string {
	var record [numColumns]string
	record[colTeam] = j.Team
	record[colKind] = string(j.Kind)
	record[colName] = j.Name
	record[colPods] = fmt.Sprint(j.Pods)
	record[colGPUs] = fmt.Sprint(j.GPUs)
	if !j.CPU.IsZero() {
		record[colCPU] = j.CPU.String()
	}
	if !j.Memory.IsZero() {
		record[colMemory] = j.Memory.String()
	}
	if j.Duration > 0 {
		record[colDuration] = words.Duration(j.Duration)
	}
	if j.Checkpoint > 0 {
		record[colCheckpoint] = words.Duration(j.Checkpoint)
	}
	record[colClass] = j.Class
	record[colModel] = j.Model
	return record
}

// RowNames reads the CSV form in r, as written so far, for an Appender
// resuming it: TEAM/NAME of each row, and whether the file has its header
// (an empty file has none; a file of comments and the header alone is a
// trace with no rows yet, which Read would refuse). file names it in
// problems.
func RowNames(file string, r io.Reader) (names map[string]bool, header bool, err error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	names = map[string]bool{}
	first, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return names, false, nil
	}
	if err != nil {
		p := problem.FromCSV(file, err, Header)
		return nil, false, &p
	}
	if got := strings.Join(first, ","); got != Header {
		line, _ := cr.FieldPos(0)
		return nil, false, &problem.Problem{File: file, Line: line, Message: fmt.Sprintf("the header is %q, not a trace's", got), Fix: "record into a new file, or one berth record wrote"}
	}
	for {
		record, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return names, true, nil
		}
		if err != nil {
			p := problem.FromCSV(file, err, Header)
			return nil, true, &p
		}
		if len(record) != numColumns {
			line, _ := cr.FieldPos(0)
			return nil, true, &problem.Problem{File: file, Line: line, Message: fmt.Sprintf("the row has %d columns, the header %d", len(record), numColumns), Fix: "mend or remove the row, then record again"}
		}
		names[record[colTeam]+"/"+record[colName]] = true
	}
}
