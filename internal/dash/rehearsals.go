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
// wrote: report.json beside report.html, or, for --repeat N, the
// replications' figures.json beside figures.html (each seed's report in
// seed-N below it, listed as a rehearsal of its own).
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
	// Replications is how many seeds a --repeat set ran; 0 for one
	// rehearsal.
	Replications int `json:"replications,omitempty"`
	// HTML is true when the directory's page is there to show: the
	// report's own (side by side when it compared two designs), or the
	// set's figures.html, which draws the replications' spread and marks
	// the verdicts.
	HTML bool `json:"html"`
}

// Page is the file that shows r: figures.html for a set of
// replications, report.html for one rehearsal.
func (r Rehearsal) Page() string {
	if r.Replications > 0 {
		return report.FiguresPage
	}
	return "report.html"
}

// rehearsals reads the report directories under dir, at any depth, by
// name; none when dir is empty or missing. A report.json or figures.json
// that does not decode is left out.
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
		if d.IsDir() {
			return nil
		}
		var r Rehearsal
		var ok bool
		switch d.Name() {
		case "report.json":
			r, ok = readRehearsal(path)
		case report.FiguresFile:
			r, ok = readReplications(path)
		}
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

// readReplications reads the figures.json `berth rehearse --repeat N
// --report DIR` wrote: one design's replications, or two designs' paired
// on the same seeds.
func readReplications(path string) (Rehearsal, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Rehearsal{}, false
	}
	var doc struct {
		Replications []*report.Report `json:"replications"`
		A, B         []*report.Report
	}
	if json.Unmarshal(raw, &doc) != nil {
		return Rehearsal{}, false
	}
	set := doc.Replications
	if len(set) == 0 {
		set = doc.A
	}
	if len(set) == 0 || set[0] == nil || set[0].Blueprint == "" {
		return Rehearsal{}, false
	}
	a := set[0]
	r := Rehearsal{Blueprint: a.Design(), Trace: a.Trace, Jobs: len(a.Jobs), Rehearsed: a.Rehearsed.String(), Replications: len(set),
		HTML: exists(filepath.Join(filepath.Dir(path), report.FiguresPage))}
	if len(doc.B) > 0 && doc.B[0] != nil {
		r.Blueprint, r.Vs = report.Designs(a, doc.B[0])
	}
	for _, side := range [][]*report.Report{set, doc.B} {
		for _, rep := range side {
			r.Partial = r.Partial || rep != nil && rep.Partial
		}
	}
	return r, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
