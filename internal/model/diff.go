package model

import (
	"fmt"
	"io"
	"sort"
)

// Diff is what changed between two versions.
type Diff struct {
	From, To string
	Metrics  []Change `json:"metrics,omitempty"`
	Params   []Change `json:"params,omitempty"`
	Files    []Change `json:"files,omitempty"`
	Source   *Change  `json:"source,omitempty"`
	// Same is how many files are identical in both.
	Same int `json:"sameFiles"`
}

// Change is one key's old and new value ("" when absent).
type Change struct {
	Key  string `json:"key"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	Note string `json:"note,omitempty"`
}

// Compare diffs two full versions.
func Compare(a, b *Version) *Diff {
	d := &Diff{From: a.Ref(), To: b.Ref()}
	for _, k := range union(a.Metrics, b.Metrics) {
		av, aok := a.Metrics[k]
		bv, bok := b.Metrics[k]
		if aok && bok && av == bv {
			continue
		}
		c := Change{Key: k, Old: fmtMetric(av, aok), New: fmtMetric(bv, bok)}
		if aok && bok {
			c.Note = fmt.Sprintf("%+.4g", bv-av)
		}
		d.Metrics = append(d.Metrics, c)
	}
	for _, k := range union(a.Params, b.Params) {
		if a.Params[k] != b.Params[k] {
			d.Params = append(d.Params, Change{Key: k, Old: a.Params[k], New: b.Params[k]})
		}
	}
	af, bf := map[string]File{}, map[string]File{}
	for _, f := range a.Files {
		af[f.Path] = f
	}
	for _, f := range b.Files {
		bf[f.Path] = f
	}
	for _, p := range union(af, bf) {
		x, xok := af[p]
		y, yok := bf[p]
		switch {
		case xok && yok && x.Digest == y.Digest:
			d.Same++
		case xok && yok:
			d.Files = append(d.Files, Change{Key: p, Old: x.Digest, New: y.Digest, Note: fmt.Sprintf("%d → %d bytes", x.Size, y.Size)})
		case xok:
			d.Files = append(d.Files, Change{Key: p, Old: x.Digest, Note: "removed"})
		default:
			d.Files = append(d.Files, Change{Key: p, New: y.Digest, Note: "added"})
		}
	}
	if a.Source != b.Source {
		d.Source = &Change{Key: "source", Old: a.Source, New: b.Source}
	}
	return d
}

// Write prints the diff for people.
func (d *Diff) Write(w io.Writer) {
	fmt.Fprintf(w, "%s → %s\n", d.From, d.To)
	for _, c := range d.Metrics {
		fmt.Fprintf(w, "metric  %-20s %s → %s %s\n", c.Key, orDash(c.Old), orDash(c.New), c.Note)
	}
	for _, c := range d.Params {
		fmt.Fprintf(w, "param   %-20s %s → %s\n", c.Key, orDash(c.Old), orDash(c.New))
	}
	if d.Source != nil {
		fmt.Fprintf(w, "source  %s → %s\n", orDash(d.Source.Old), orDash(d.Source.New))
	}
	for _, c := range d.Files {
		fmt.Fprintf(w, "file    %-20s %s\n", c.Key, c.Note)
	}
	fmt.Fprintf(w, "%d files identical\n", d.Same)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtMetric(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf("%g", v)
}

func union[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
