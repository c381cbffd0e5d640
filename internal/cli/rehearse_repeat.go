package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"berth.io/berth/internal/rehearse/report"
)

// replicate runs --repeat's replications, on seeds --seed, --seed+1,
// ...: of the blueprint alone, or of both designs of a comparison on the
// same seeds, at most --parallel at a time, each in a child process (one
// cluster per process), and writes each figure's spread, or the paired
// comparison with its verdicts. A replication that fails is named and
// left out of the figures, and of its seed's pair; the others still
// count.
func (o *rehearseOptions) replicate(ctx context.Context) error {
	designs := o.designs()
	seeds := make([]int64, o.repeat)
	for i := range seeds {
		seeds[i] = o.seed + int64(i)
	}
	names := []string{""}
	if len(designs) == 2 {
		names = []string{"A ", "B "}
	}
	fmt.Fprintf(o.ErrOut, "Running %d replications on seeds %d to %d, at most %d at a time%s\n",
		len(seeds)*len(designs), seeds[0], seeds[len(seeds)-1], o.parallel, map[bool]string{true: ", each design on each seed", false: ""}[len(designs) == 2])

	reps := make([][]*report.Report, len(designs))
	errs := make([][]error, len(designs))
	for d := range designs {
		reps[d], errs[d] = make([]*report.Report, len(seeds)), make([]error, len(seeds))
	}
	var mu sync.Mutex // one progress line at a time
	slots := make(chan struct{}, o.parallel)
	var wg sync.WaitGroup
	for i, seed := range seeds {
		for d, des := range designs {
			wg.Go(func() {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					errs[d][i] = ctx.Err()
					return
				}
				defer func() { <-slots }()
				progress := &prefixWriter{out: o.ErrOut, mu: &mu, prefix: fmt.Sprintf("[%sseed %d] ", names[d], seed)}
				reps[d][i], errs[d][i] = o.childOn(ctx, des, seed, progress)
				progress.flush()
				if errs[d][i] == nil && reps[d][i].Partial {
					errs[d][i] = errors.New("its report is partial")
				}
			})
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return &ExitError{Code: 130, Err: errors.New("interrupted: the replications were stopped, and no figures are given")}
	}

	// Keep the seeds every design finished.
	var failed []string
	kept := make([][]*report.Report, len(designs))
	for i, seed := range seeds {
		ok := true
		for d := range designs {
			if errs[d][i] != nil {
				failed = append(failed, fmt.Sprintf("%sseed %d: %v", names[d], seed, errs[d][i]))
				ok = false
			}
		}
		if !ok {
			continue
		}
		for d := range designs {
			kept[d] = append(kept[d], reps[d][i])
		}
	}
	for _, f := range failed {
		fmt.Fprintf(o.ErrOut, "Replication %s; left out of the figures\n", f)
	}
	if len(kept[0]) == 0 {
		return fmt.Errorf("no replication finished (%d failed)", len(failed))
	}
	if err := writeReplications(o.Out, o.output, o.reportDir, kept); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d replications failed; the figures above are over the %d seeds that finished", len(failed), len(seeds)*len(designs), len(kept[0]))
	}
	return nil
}

// designs are the blueprints a run rehearses: the blueprint as -f,
// --provisioner and --queueing give it, and, with --vs, --vs-provisioner
// or --vs-queueing, the second design.
func (o *rehearseOptions) designs() []design {
	a := design{o.file, o.provisioner, o.queueing}
	if o.vs == "" && o.vsProvisioner == "" && o.vsQueueing == "" {
		return []design{a}
	}
	b := a
	if o.vs != "" {
		b.file = o.vs
	}
	if o.vsProvisioner != "" {
		b.provisioner = o.vsProvisioner
	}
	if o.vsQueueing != "" {
		b.queueing = o.vsQueueing
	}
	return []design{a, b}
}

// writeReplications writes the replications' figures to out: as a table
// of spreads (or, for two designs, of paired differences), or as JSON
// (output "json") that keeps every replication's report; and, with a
// report directory dir, each seed's report (or pair) in dir/seed-N and
// the figures in dir/figures.json. For --repeat and for berth rehearse
// compare of two sets.
func writeReplications(out io.Writer, output, dir string, reps [][]*report.Report) error {
	var doc any
	if len(reps) == 1 {
		doc = struct {
			Replications []*report.Report `json:"replications"`
			Spreads      []report.Spread  `json:"spreads"`
		}{reps[0], report.Spreads(reps[0])}
	} else {
		paired, err := report.Compare(reps[0], reps[1])
		if err != nil {
			return err
		}
		doc = struct {
			A          []*report.Report `json:"a"`
			B          []*report.Report `json:"b"`
			Comparison []report.Paired  `json:"comparison"`
		}{reps[0], reps[1], paired}
	}
	if dir != "" {
		for i, a := range reps[0] {
			var b *report.Report
			if len(reps) == 2 {
				b = reps[1][i]
			}
			if err := report.WriteDir(filepath.Join(dir, "seed-"+strconv.FormatInt(a.Seed, 10)), a, b); err != nil {
				return err
			}
		}
		raw, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, report.FiguresFile), append(raw, '\n'), 0o644); err != nil {
			return err
		}
		if err := report.WriteFiguresPage(dir, reps); err != nil {
			return err
		}
	}
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if len(reps) == 1 {
		return report.WriteSpreads(out, reps[0])
	}
	return report.WritePaired(out, reps[0], reps[1])
}

// prefixWriter writes each whole line written to it to out with a
// prefix, holding mu for the line, so that replications running at once
// write whole lines, each saying whose it is.
type prefixWriter struct {
	out    io.Writer
	mu     *sync.Mutex
	prefix string
	buf    bytes.Buffer
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadBytes('\n')
		if err != nil {
			// An unfinished line waits for the rest.
			w.buf.Reset()
			w.buf.Write(line)
			return len(p), nil
		}
		w.mu.Lock()
		_, werr := fmt.Fprintf(w.out, "%s%s", w.prefix, line)
		w.mu.Unlock()
		if werr != nil {
			return len(p), werr
		}
	}
}

// flush writes an unfinished last line.
func (w *prefixWriter) flush() {
	if w.buf.Len() > 0 {
		w.mu.Lock()
		fmt.Fprintf(w.out, "%s%s\n", w.prefix, w.buf.String())
		w.mu.Unlock()
		w.buf.Reset()
	}
}
