package trace

import (
	"bytes"
	"os"
	"slices"
	"strings"

	"berth.io/berth/internal/problem"
)

// Read reads the trace file at path, in either form. Its error is a
// problem.List of every problem in the file, each at FILE:LINE with its
// fix, or the error reading the file.
func Read(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, problem.Errorf("check the path to the trace", "reading the trace: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a trace in either form from data; name names it in
// problems. The form is told by the content: a file whose first line
// that is neither blank nor a # comment holds a comma and no colon is the
// CSV form (its header), anything else a YAML document.
func Parse(name string, data []byte) (*Trace, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // as spreadsheets save CSV
	var (
		t        *Trace
		problems problem.List
	)
	if isCSV(data) {
		t, problems = parseCSV(name, data)
	} else {
		t, problems = parseYAML(name, data)
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b problem.Problem) int { return a.Line - b.Line })
		return nil, problems
	}
	return t, nil
}

func isCSV(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.Contains(line, ",") && !strings.Contains(line, ":")
	}
	return false
}
