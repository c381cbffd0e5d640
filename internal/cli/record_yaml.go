package cli

import (
	"bytes"
	"os"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/record"
	"berth.io/berth/internal/rehearse/trace"
)

// yamlTrace is a watch's recording in the YAML form, which holds the
// spot interruptions seen: written whole at each change (to a file
// beside it, then renamed over it), so that a stop at any moment leaves
// a trace that reads.
type yamlTrace struct {
	path    string
	comment string
	// start is the trace's start: the rehearsal's, or the file's when
	// resumed; zero takes the earliest of the watch's start and what it
	// recorded.
	start         time.Time
	rows          []record.Row
	interruptions []interruptionAt
}

// resumeYAML reads the YAML trace at path, if there is one, to go on
// with it: its rows and interruptions, and TEAM/NAME of each row.
func resumeYAML(path string, start time.Time, comment string) (*yamlTrace, map[string]bool, error) {
	y := &yamlTrace{path: path, comment: comment, start: start}
	names := map[string]bool{}
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err) || (err == nil && len(bytes.TrimSpace(data)) == 0):
		return y, names, nil
	case err != nil:
		return nil, nil, problem.Errorf("check the path of -o", "reading the trace to resume: %w", err)
	}
	t, err := trace.Parse(path, data)
	if err != nil {
		return nil, nil, err
	}
	if !start.IsZero() && !t.Start.Equal(start) {
		return nil, nil, problem.Errorf("record into a new file", "%s starts at %s, and the rehearsal's trace at %s: it is another recording", path, t.Start.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	if !t.Start.IsZero() {
		y.start = t.Start
	}
	for _, j := range t.Jobs {
		y.rows = append(y.rows, record.Row{Job: j, At: t.Start.Add(j.Submit)})
		names[j.Team+"/"+j.Name] = true
	}
	for _, i := range t.Interruptions {
		y.interruptions = append(y.interruptions, interruptionAt{at: t.Start.Add(i.At), pool: i.Pool})
	}
	return y, names, nil
}

// write writes the recording as it stands; w.mu is held.
func (y *yamlTrace) write(w *watcher) error {
	start := y.start
	if start.IsZero() {
		start = w.start
		for _, r := range y.rows {
			start = earlier(start, r.At)
		}
		for _, i := range w.interruptions {
			start = earlier(start, i.at)
		}
	}
	y.interruptions = w.interruptions
	var b bytes.Buffer
	if err := trace.WriteYAML(&b, traceOf(start.Truncate(time.Second), y.rows, y.interruptions), y.comment); err != nil {
		return err
	}
	tmp := y.path + ".part"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, y.path)
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
