package dash

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"berth.io/berth/internal/rehearse/report"
)

// Rehearsal is one report directory `berth rehearse --report DIR`
// wrote: report.json beside report.html.
type Rehearsal struct {
	// Name is the directory's path under the reports directory.
	Name string `json:"name"`
	// Blueprint and Trace are the rehearsal's; Vs the second design's
	// blueprint when it compared two (--vs), empty otherwise.
	Blueprint string `json:"blueprint"`
	Vs        string `json:"vs,omitempty"`
	Trace     string `json:"trace"`
	Jobs      int    `json:"jobs"`
	Rehearsed string `json:"rehearsed"`
	Partial   bool   `json:"partial,omitempty"`
	// HTML is true when report.html is there to show, the report's own
	// page, side by side when it compared two designs.
	HTML bool `json:"html"`
}

// rehearsals reads the report directories under dir, at any depth, by
// name; none when dir is empty or missing. A report.json that does not
// decode is left out.
func rehearsals(dir string) ([]Rehearsal, error) {
	out := []Rehearsal{}
	if dir == "" {
		return out, nil
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != "report.json" {
			return nil
		}
		r, ok := readRehearsal(path)
		if !ok {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		r.Name = filepath.ToSlash(rel)
		out = append(out, r)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

func readRehearsal(path string) (Rehearsal, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Rehearsal{}, false
	}
	var pair struct{ A, B *report.Report }
	if json.Unmarshal(raw, &pair) != nil || pair.A == nil {
		var one report.Report
		if err := json.Unmarshal(raw, &one); err != nil || one.Blueprint == "" {
			return Rehearsal{}, false
		}
		pair.A, pair.B = &one, nil
	}
	a := pair.A
	r := Rehearsal{Blueprint: a.Design(), Trace: a.Trace, Jobs: len(a.Jobs), Rehearsed: a.Rehearsed.String(), Partial: a.Partial,
		HTML: exists(filepath.Join(filepath.Dir(path), "report.html"))}
	if pair.B != nil {
		r.Blueprint, r.Vs = report.Designs(a, pair.B)
		r.Partial = r.Partial || pair.B.Partial
	}
	return r, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
