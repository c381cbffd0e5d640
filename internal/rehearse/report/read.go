package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"berth.io/berth/internal/problem"
)

// Read reads one rehearsal's report: a report.json, a directory holding
// one (--report DIR), or what `berth rehearse -o json` printed. A file
// that holds two designs (written by --vs) is refused: it already
// compares them.
func Read(path string) (*Report, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, "report.json")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, problem.Errorf("pass a report.json, or the directory `berth rehearse --report DIR` wrote", "%s: no such report", file)
		}
		return nil, problem.Errorf("check the report's path and permissions", "%s: %w", file, err)
	}
	var pair struct{ A, B *Report }
	if json.Unmarshal(raw, &pair) == nil && pair.A != nil && pair.B != nil {
		return nil, problem.Errorf("its report.html shows the two side by side; to compare one of them with another rehearsal, rehearse it alone with --report DIR",
			"%s holds two designs already (written by --vs, --vs-provisioner or --vs-queueing)", file)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, problem.Errorf("pass the report.json a rehearsal wrote (--report DIR), or its -o json output", "%s is not a rehearsal's report: %w", file, err)
	}
	if rep.Blueprint == "" || rep.Trace == "" {
		return nil, problem.Errorf("pass the report.json a rehearsal wrote (--report DIR), or its -o json output", "%s is not a rehearsal's report: it names no blueprint or trace", file)
	}
	return &rep, nil
}

// FiguresFile is the file `berth rehearse --repeat N --report DIR`
// writes in DIR: the replications' reports and their figures.
const FiguresFile = "figures.json"

// ReadReplications reads one design's replications as `berth rehearse
// --repeat N` wrote them: its figures.json, the --report directory that
// holds one, or its -o json output. ok is false when path holds a single
// rehearsal's report instead (Read reads that).
func ReadReplications(path string) (reps []*Report, ok bool, err error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, FiguresFile)
		if _, err := os.Stat(file); err != nil {
			return nil, false, nil
		}
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, false, nil // Read says what is wrong with the path
	}
	var doc struct {
		Replications []*Report `json:"replications"`
		A, B         []*Report
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil, false, nil
	}
	if len(doc.A) > 0 || len(doc.B) > 0 {
		return nil, false, problem.Errorf("rehearse each design with --repeat N --report DIR of its own, then compare the two directories",
			"%s holds two designs' replications already (written by --repeat with --vs)", file)
	}
	return doc.Replications, len(doc.Replications) > 0, nil
}

// Comparable says whether two rehearsals replayed the same trace with
// the same seed, as --vs would have: the same jobs, by team, name and
// submit time, and the same random draws (spot interruptions, the
// autoscaler's expander). Otherwise a difference between them is not
// the designs'. A rehearsal lists the jobs submitted before it stopped,
// so a job only one lists must come after the other's end.
func Comparable(a, b *Report) error {
	if a.Seed != b.Seed {
		return problem.Errorf("rehearse both with the same --seed",
			"the two rehearsals drew with different seeds (%d and %d): their spot interruptions and the autoscaler's choices differ, not only their designs", a.Seed, b.Seed)
	}
	differ := func(format string, args ...any) error {
		return problem.Errorf("rehearse both on the same --trace", "the two rehearsals replayed different traces: "+format, args...)
	}
	type key struct{ team, name string }
	in := func(r *Report) map[key]JobResult {
		m := make(map[key]JobResult, len(r.Jobs))
		for _, j := range r.Jobs {
			m[key{j.Team, j.Name}] = j
		}
		return m
	}
	ja, jb := in(a), in(b)
	for _, side := range []struct {
		name string
		rep  *Report
		them map[key]JobResult
		end  Duration
	}{{"A", a, jb, b.Rehearsed}, {"B", b, ja, a.Rehearsed}} {
		for _, x := range side.rep.Jobs {
			k := key{x.Team, x.Name}
			y, ok := side.them[k]
			switch {
			case !ok && x.Submitted < side.end:
				return differ("%s has job %s/%s submitted at %s, and the other, which ran to %s, has none", side.name, k.team, k.name, x.Submitted, side.end)
			case ok && x.Submitted != y.Submitted:
				return differ("job %s/%s is submitted at %s in one and at %s in the other", k.team, k.name, x.Submitted, y.Submitted)
			}
		}
	}
	return nil
}

// Uneven says what makes two comparable rehearsals' figures cover
// different spans: one stopped early, or each ran to a different
// trace time. Empty when they cover the same.
func Uneven(a, b *Report) []string {
	var out []string
	for _, r := range []struct {
		name string
		rep  *Report
	}{{"A", a}, {"B", b}} {
		if r.rep.Partial {
			out = append(out, fmt.Sprintf("%s was stopped before its end: its figures are partial", r.name))
		}
	}
	if a.Rehearsed != b.Rehearsed {
		out = append(out, fmt.Sprintf("A covers %s of trace and B %s (--until, or one was stopped): jobs after the shorter count as never ran there", a.Rehearsed, b.Rehearsed))
	}
	return out
}
