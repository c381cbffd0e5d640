package trace

import (
	"fmt"
	"io"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// WriteYAML writes t in the YAML form: the comments given (each line
// after "# "), spec.start when t has one, a line per job as the CSV
// form's columns (submits as offsets), and its interruptions and drains,
// so that a trace with interruptions can be saved (berth record writes
// the ones it sees). A load or queues are refused: WriteYAML does not
// write them.
func WriteYAML(w io.Writer, t *Trace, comments ...string) error {
	if t.Load != nil || len(t.Queues) > 0 {
		return problem.New("write the load and queues by hand beside the jobs", "WriteYAML writes jobs, interruptions and drains only, and this trace has a load or queues")
	}
	var b strings.Builder
	for _, c := range comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nspec:\n", APIVersion, KindTrace)
	if !t.Start.IsZero() {
		fmt.Fprintf(&b, "  start: %s\n", t.Start.UTC().Format(time.RFC3339))
	}
	b.WriteString("  jobs:\n")
	for _, j := range t.Jobs {
		record := csvRecord(j)
		record[colSubmit] = words.Duration(j.Submit)
		var fields []string
		for c, v := range record {
			if v == "" || (c == colGPUs && v == "0") {
				continue
			}
			fields = append(fields, columns[c]+": "+v)
		}
		fmt.Fprintf(&b, "  - {%s}\n", strings.Join(fields, ", "))
	}
	for _, l := range []struct {
		key     string
		entries []Interruption
	}{{"interruptions", t.Interruptions}, {"drains", drains(t.Drains)}} {
		if len(l.entries) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", l.key)
		for _, e := range l.entries {
			fmt.Fprintf(&b, "  - {at: %s, pool: %s}\n", words.Duration(e.At), e.Pool)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func drains(ds []Drain) []Interruption {
	out := make([]Interruption, len(ds))
	for i, d := range ds {
		out[i] = Interruption(d)
	}
	return out
}
