package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"berth.io/berth/internal/audit/corpus"
)

const (
	kubeScoreBin     = "bin/kube-score"
	kubeScoreModule  = "github.com/zegl/kube-score/cmd/kube-score"
	kubeScoreVersion = "v1.20.0"
	polarisModule    = "github.com/fairwindsops/polaris"
)

// dump is one corpus written to disk.
type dump struct {
	label string
	dir   string
	files []string
	mib   float64
}

// measured is one tool's runs over one dump.
type measured struct {
	secs    []float64
	peakMiB float64 // the largest peak resident memory of the timed runs
	floor   float64 // the bench's own resident memory when it started them, in MiB
	objects int
	kinds   string // objects by kind, most first
}

// auditFigures is what benchAudit measured, for the benchmarks page.
type auditFigures struct {
	runs                                   int
	nodes, pods, compareNodes, comparePods int
	shapes                                 []shapeFigures // the full corpus in every shape
	dumps                                  []dump         // compare JSON, compare YAML
	berthJSON, berthYAML                   measured
	ksJSON, ksYAML                         measured
	kubeScoreErr                           error // why kube-score was not measured
	polaris                                string
}

// shapeFigures is berth's runs over the full corpus in one shape.
type shapeFigures struct {
	name string
	dump dump
	m    measured
}

// benchAudit writes a synthetic cluster dump in every shape audit reads,
// times `berth audit` on each through the real binary, and, with compare,
// times kube-score and berth on smaller dumps.
func benchAudit(berth string, nodes, pods, compareNodes, comparePods, runs int, compare bool, shapes string) error {
	if runs < 1 {
		return fmt.Errorf("-runs %d: time at least one run", runs)
	}
	want, err := pickShapes(shapes)
	if err != nil {
		return err
	}
	berth, err = filepath.Abs(berth)
	if err != nil {
		return err
	}
	if _, err := os.Stat(berth); err != nil {
		return fmt.Errorf("%w (build it first: go build -o bin/berth ./cmd/berth)", err)
	}
	f := auditFigures{runs: runs, nodes: nodes, pods: pods, compareNodes: compareNodes, comparePods: comparePods}
	tmp, err := os.MkdirTemp("", "berth-bench-audit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// One shape on disk at a time: together they are several gigabytes.
	for _, sh := range corpus.Shapes {
		if !want[sh.Name] {
			continue
		}
		s := sh.Spec
		s.Nodes, s.Pods = nodes, pods
		d, err := writeDump(tmp, sh.Name, s)
		if err != nil {
			return err
		}
		m, err := measure("berth audit", d, runs, countBerth, berth, "audit", d.dir, "-o", "json")
		if err != nil {
			return err
		}
		f.shapes = append(f.shapes, shapeFigures{name: sh.Name, dump: d, m: m})
		if err := os.RemoveAll(d.dir); err != nil {
			return err
		}
	}
	if !compare {
		f.kubeScoreErr = errors.New("not asked for (-compare=false)")
		f.print()
		return nil
	}
	kubeScore, err := buildKubeScore()
	f.kubeScoreErr = err
	f.polaris = polaris()
	for _, s := range []struct {
		label string
		spec  corpus.Spec
	}{
		{"compare, JSON", corpus.Spec{Nodes: compareNodes, Pods: comparePods}},
		{"compare, YAML", corpus.Spec{Nodes: compareNodes, Pods: comparePods, YAML: true}},
	} {
		d, err := writeDump(tmp, s.label, s.spec)
		if err != nil {
			return err
		}
		f.dumps = append(f.dumps, d)
	}
	for i, m := range []*measured{&f.berthJSON, &f.berthYAML} {
		d := f.dumps[i]
		if *m, err = measure("berth audit", d, runs, countBerth, berth, "audit", d.dir, "-o", "json"); err != nil {
			return err
		}
	}
	for i, m := range []*measured{&f.ksJSON, &f.ksYAML} {
		if f.kubeScoreErr != nil {
			break
		}
		d := f.dumps[i]
		*m, f.kubeScoreErr = measure("kube-score", d, runs, countKubeScore, kubeScore, append([]string{"score"}, d.files...)...)
	}
	f.print()
	return nil
}

// pickShapes reads -shapes: the names of corpus.Shapes to time, every one
// when empty.
func pickShapes(list string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, sh := range corpus.Shapes {
		want[sh.Name] = list == ""
	}
	for _, name := range strings.Split(list, ",") {
		if name == "" {
			continue
		}
		if _, ok := want[name]; !ok {
			return nil, fmt.Errorf("-shapes: no shape %q (the shapes: %s)", name, shapeNames())
		}
		want[name] = true
	}
	return want, nil
}

// shapeNames lists corpus.Shapes' names.
func shapeNames() string {
	var names []string
	for _, sh := range corpus.Shapes {
		names = append(names, sh.Name)
	}
	return strings.Join(names, ", ")
}

func (f *auditFigures) print() {
	fmt.Printf("berth audit on a synthetic cluster dump (internal/audit/corpus), %d timed runs each after one untimed\nmachine: %s\n\n", f.runs, machine())
	fmt.Printf("%s nodes and %s pods in every shape (`berth audit DIR -o json`):\n", thousands(f.nodes), thousands(f.pods))
	fmt.Printf("%-24s %6s %7s %9s %8s %8s %8s %10s\n", "shape", "MiB", "files", "objects", "min", "median", "max", "peak RSS*")
	for _, s := range f.shapes {
		t := summarize(s.m.secs)
		fmt.Printf("%-24s %6.0f %7d %9s %7.2fs %7.2fs %7.2fs %6.0f MiB\n", s.name, s.dump.mib, len(s.dump.files), thousands(s.m.objects), t.min, t.median, t.max, s.m.peakMiB)
	}
	floor := 0.0
	for _, s := range f.shapes {
		floor = max(floor, s.m.floor)
	}
	if len(f.dumps) > 0 {
		fmt.Println()
		for _, d := range f.dumps {
			fmt.Printf("  %-14s %6.0f MiB in %d files\n", d.label, d.mib, len(d.files))
		}
		fmt.Printf("  (compare: %s nodes, %s pods)\n\n", thousands(f.compareNodes), thousands(f.comparePods))
		fmt.Printf("%-26s %9s %8s %8s %8s %10s\n", "", "objects", "min", "median", "max", "peak RSS*")
		row := func(name string, m measured) {
			s := summarize(m.secs)
			fmt.Printf("%-26s %9s %7.2fs %7.2fs %7.2fs %6.0f MiB\n", name, thousands(m.objects), s.min, s.median, s.max, m.peakMiB)
		}
		row("berth, compare, JSON", f.berthJSON)
		row("berth, compare, YAML", f.berthYAML)
		if f.kubeScoreErr == nil {
			row("kube-score, compare, JSON", f.ksJSON)
			row("kube-score, compare, YAML", f.ksYAML)
		}
		floor = max(floor, f.berthJSON.floor, f.berthYAML.floor, f.ksJSON.floor, f.ksYAML.floor)
	}
	fmt.Printf("* the child's ru_maxrss; it cannot read below the bench's own %.0f MiB\n", floor)

	if f.kubeScoreErr != nil {
		fmt.Printf("\nkube-score: not measured: %v\n", f.kubeScoreErr)
	} else {
		fmt.Printf("\nobjects in the compare corpus:\n  berth read        %s\n", f.berthYAML.kinds)
		fmt.Printf("  kube-score scored %s\n  (kube-score reports only the kinds it has checks for)\n", f.ksYAML.kinds)
		if f.ksJSON.kinds != f.ksYAML.kinds || f.berthJSON.kinds != f.berthYAML.kinds {
			fmt.Printf("  from the JSON Lists: berth %s, kube-score %s\n", f.berthJSON.kinds, f.ksJSON.kinds)
		}
		ratio := func(ks, b measured) float64 { return summarize(ks.secs).median / summarize(b.secs).median }
		fmt.Printf("\nkube-score %s time / berth time on the same files (`kube-score score FILE...` vs `berth audit DIR -o json`):\n", kubeScoreVersion)
		fmt.Printf("  %.1fx on JSON Lists, %.1fx on YAML Lists (as kubectl get -o yaml writes)\n", ratio(f.ksJSON, f.berthJSON), ratio(f.ksYAML, f.berthYAML))
		fmt.Println("The tools check different rules: kube-score generic best practices (probes, security contexts,")
		fmt.Println("NetworkPolicies, limits, image tags) on workloads, berth the GPU design across every object")
		fmt.Println("(nodes, quotas, LimitRanges, priorities, budgets). The ratio is throughput on the same input,")
		fmt.Println("not equivalent work.")
	}
	if f.polaris != "" {
		fmt.Println()
		fmt.Println(f.polaris)
	}
}

// resetPeak returns the memory the bench no longer uses to the system and
// resets its peak resident memory to what it holds now, which it returns
// in MiB. Linux carries a parent's peak into a child's ru_maxrss across
// fork and exec, so without this every tool would read the bench's own peak
// (writing the corpus, holding a report).
func resetPeak() (float64, error) {
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, fmt.Errorf("resetting the bench's peak memory, %w", err)
	}
	_, peak, err := memory(os.Getpid())
	return peak, err
}

// writeDump writes a corpus into its own directory under tmp.
func writeDump(tmp, label string, s corpus.Spec) (dump, error) {
	d := dump{label: label, dir: filepath.Join(tmp, strings.NewReplacer(", ", "-").Replace(label))}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		return d, err
	}
	fmt.Fprintf(os.Stderr, "writing the %s corpus (%d nodes, %d pods)...\n", label, s.Nodes, s.Pods)
	files, err := corpus.Write(d.dir, s)
	if err != nil {
		return d, fmt.Errorf("writing the %s corpus, %w", label, err)
	}
	d.files = files
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			d.mib += float64(fi.Size()) / (1 << 20)
		}
	}
	return d, nil
}

// measure runs a tool once untimed, to warm the page cache and count what
// it read from its output, then runs times with its output discarded. Every
// timed run must exit as the first did: both tools exit 1 on findings.
func measure(tool string, d dump, runs int, count func([]byte) (int, string, error), name string, args ...string) (measured, error) {
	var m measured
	fmt.Fprintf(os.Stderr, "%s on the %s corpus, %d+1 runs...\n", tool, d.label, runs)
	out := new(bytes.Buffer)
	first, err := run(out, name, args...)
	if err != nil {
		return m, fmt.Errorf("%s: %w", tool, err)
	}
	if first.code != 0 && first.code != 1 || out.Len() == 0 {
		return m, fmt.Errorf("%s exited %d and printed %d bytes\n%s", tool, first.code, out.Len(), first.stderr)
	}
	if m.objects, m.kinds, err = count(out.Bytes()); err != nil {
		return m, fmt.Errorf("reading %s's output, %w", tool, err)
	}
	out = nil
	for range runs {
		floor, err := resetPeak()
		if err != nil {
			return m, err
		}
		m.floor = max(m.floor, floor)
		r, err := run(nil, name, args...)
		if err != nil {
			return m, fmt.Errorf("%s: %w", tool, err)
		}
		if r.code != first.code {
			return m, fmt.Errorf("%s exited %d, the first run %d\n%s", tool, r.code, first.code, r.stderr)
		}
		m.secs = append(m.secs, r.wall.Seconds())
		m.peakMiB = max(m.peakMiB, float64(r.peakKiB)/1024)
	}
	return m, nil
}

type result struct {
	wall    time.Duration
	peakKiB int64 // the child's rusage ru_maxrss, in KiB on Linux
	code    int
	stderr  string
}

// run runs a command with stdout to w (nil is /dev/null), and reports its
// wall time and peak resident memory. A non-zero exit is no error here.
func run(w io.Writer, name string, args ...string) (result, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), stderr: stderr.String()}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return r, err
	}
	r.code = cmd.ProcessState.ExitCode()
	if r.code < 0 {
		return r, fmt.Errorf("%s: %v\n%s", filepath.Base(name), cmd.ProcessState, r.stderr)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakKiB = ru.Maxrss
	}
	return r, nil
}

// countBerth reads the objects berth's JSON report says it audited.
func countBerth(out []byte) (int, string, error) {
	var report struct {
		Objects map[string]int `json:"objects"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		return 0, "", err
	}
	n, kinds := byKind(report.Objects)
	return n, kinds, nil
}

// countKubeScore counts the objects in kube-score's human report: each
// starts with an unindented line such as "apps/v1/Deployment serve-0 in team-00".
func countKubeScore(out []byte) (int, string, error) {
	counts := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		gvk := strings.Fields(line)[0]
		counts[gvk[strings.LastIndex(gvk, "/")+1:]]++
	}
	n, kinds := byKind(counts)
	return n, kinds, sc.Err()
}

func byKind(counts map[string]int) (int, string) {
	kinds := make([]string, 0, len(counts))
	total := 0
	for k, n := range counts {
		kinds = append(kinds, k)
		total += n
	}
	sort.Slice(kinds, func(i, j int) bool {
		if counts[kinds[i]] != counts[kinds[j]] {
			return counts[kinds[i]] > counts[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = thousands(counts[k]) + " " + k
	}
	return total, thousands(total) + " (" + strings.Join(parts, ", ") + ")"
}

// buildKubeScore returns the kube-score binary, building it on first use.
func buildKubeScore() (string, error) {
	bin, err := filepath.Abs(kubeScoreBin)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(os.Stderr, "building kube-score %s into %s (once): go install -v %s@%s\n", kubeScoreVersion, kubeScoreBin, kubeScoreModule, kubeScoreVersion)
	start := time.Now()
	cmd := exec.Command("go", "install", "-v", kubeScoreModule+"@"+kubeScoreVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s@%s failed (%v), so there is no comparison", kubeScoreModule, kubeScoreVersion, err)
	}
	fmt.Fprintf(os.Stderr, "built kube-score in %.0fs\n", time.Since(start).Seconds())
	return bin, nil
}

// polaris says why Polaris is not measured, asking the module proxy once.
func polaris() string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-versions", polarisModule).CombinedOutput()
	said := strings.Join(strings.Fields(string(out)), " ")
	switch {
	case ctx.Err() != nil:
		said = "no answer in 60s"
	case err == nil:
		return fmt.Sprintf("Polaris: not measured; the module proxy now lists %q, but this benchmark does not build it", said)
	}
	return fmt.Sprintf("Polaris: not measured; it cannot be fetched here (`go list -m -versions %s` said: %s)", polarisModule, said)
}

// thousands writes n with commas, as the docs do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
