package cli

import (
	"errors"
	"io/fs"
	"os"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/trace"
)

// readTrace reads the trace at path with the waits recorded beside it
// (trace.WaitsPath: what `berth rehearse import` keeps of a source that
// records them), for the report to set beside the rehearsal's. Without
// that file the trace has no recorded waits; a problem in it is one of
// the trace's, at its line.
func readTrace(path string) (*trace.Trace, error) {
	t, err := trace.Read(path)
	if err != nil {
		return nil, err
	}
	waits := trace.WaitsPath(path)
	f, err := os.Open(waits)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, problem.Errorf("check the file's permissions, or move it away to rehearse without recorded waits", "reading the recorded waits: %w", err)
	}
	defer f.Close()
	if err := trace.ReadWaits(f, waits, t); err != nil {
		return nil, err
	}
	return t, nil
}
