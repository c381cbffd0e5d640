package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// rehearseOptions are what `bench rehearse` replays.
type rehearseOptions struct {
	file, trace, until, vs, cloud string
	// queueing and vsQueueing are berth rehearse's --queueing and
	// --vs-queueing: the same blueprint under ResourceQuota or Kueue.
	queueing, vsQueueing string
	speed                float64
	// against is a second speed ceiling to replay the same at, whose
	// report must equal the first's in every figure.
	against float64
	// busy keeps every core busy with a loop in a process of its own
	// while the first replay runs.
	busy bool
	// save is a file to write the first report to (JSON), and the
	// second's to save+".against".
	save string
}

// benchRehearse replays a trace through the real binary (berth rehearse
// -o json) and prints what the clock did, how long it took and the peak
// memory; with against, it replays it again at that ceiling and says
// whether the two reports are equal, the wall time and the clock's
// settling left out.
func benchRehearse(berth string, o rehearseOptions) error {
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.home)
	if o.file == "" {
		o.file = filepath.Join(e.home, "berth.yaml")
		if _, _, err := e.run("init", "--template", "retail", o.file); err != nil {
			return err
		}
	}
	fmt.Printf("machine: %s; %s\n", machine(), time.Now().UTC().Format("2006-01-02"))
	first, err := e.rehearse(o, o.speed, o.busy, o.save)
	if err != nil {
		return err
	}
	if o.against == 0 {
		return nil
	}
	save := ""
	if o.save != "" {
		save = o.save + ".against"
	}
	second, err := e.rehearse(o, o.against, false, save)
	if err != nil {
		return err
	}
	if diff := differing(first, second); len(diff) > 0 {
		fmt.Printf("the reports at speed %g and %g differ in: %s\n", o.speed, o.against, strings.Join(diff, ", "))
		return fmt.Errorf("the reports differ")
	}
	fmt.Printf("the reports at speed %g and %g are equal in every figure\n", o.speed, o.against)
	return nil
}

// rehearse runs one rehearsal and prints its figures; it returns the
// report as JSON.
func (e *env) rehearse(o rehearseOptions, speed float64, busy bool, save string) (map[string]any, error) {
	args := []string{"rehearse", "-f", o.file, "--trace", o.trace, "-o", "json", "--speed", fmt.Sprint(speed)}
	if o.until != "" {
		args = append(args, "--until", o.until)
	}
	if o.vs != "" {
		args = append(args, "--vs", o.vs)
	}
	if o.queueing != "" {
		args = append(args, "--queueing", o.queueing)
	}
	if o.vsQueueing != "" {
		args = append(args, "--vs-queueing", o.vsQueueing)
	}
	if o.cloud != "" {
		args = append(args, "--cloud", o.cloud)
	}
	if busy {
		stop, err := keepCoresBusy()
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	cmd := exec.Command(e.berth, args...)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+e.home, "KUBECONFIG="+e.kubeconfig())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("berth %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	wall := time.Since(start)
	// The largest resident set of the process and the children it
	// waited for (a --vs design's).
	peak := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 / 1024
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("reading the report: %w", err)
	}
	if save != "" {
		if err := os.WriteFile(save, out.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	fmt.Printf("berth %s%s\n  %s in all, peak resident %.2f GiB\n", strings.Join(args, " "), map[bool]string{true: " (every core busy)"}[busy], wall.Round(time.Second), peak)
	reports := map[string]map[string]any{"": rep}
	if _, ok := rep["blueprint"]; !ok { // --vs: the two designs by name
		reports = map[string]map[string]any{}
		for name, r := range rep {
			if m, ok := r.(map[string]any); ok {
				reports[name] = m
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		printClock(name, reports[name])
	}
	return rep, nil
}

// printClock prints what one design's clock did.
func printClock(name string, r map[string]any) {
	c, _ := r["clock"].(map[string]any)
	if name != "" {
		name = "design " + name + ": "
	}
	fmt.Printf("  %s%s of trace in %s of wall time: %v clock steps (%v timers), %s settling (the longest %s; counted work %s, goroutines running %s, retry grace %s, quiet windows %s), %v pods placed one at a time\n",
		name, r["rehearsed"], short(r["wall"]), c["steps"], c["timers"], short(c["settling"]), short(c["maxSettle"]),
		short(c["counted"]), short(c["running"]), short(c["grace"]), short(c["windows"]), c["gated"])
	// What bounded it: the components whose timers the cluster settled
	// after longest, and the API server's longest work.
	causes, _ := c["causes"].([]any)
	for _, v := range causes[:min(len(causes), 4)] {
		k, _ := v.(map[string]any)
		fmt.Printf("    settled %s after timers of %s (%v moments, %v of them its alone)\n", short(k["settling"]), k["component"], k["moments"], k["alone"])
	}
	requests, _ := c["requests"].([]any)
	for _, v := range requests[:min(len(requests), 5)] {
		k, _ := v.(map[string]any)
		refused := ""
		if n, ok := k["refused"].(float64); ok && n > 0 {
			refused = fmt.Sprintf(", %v refused", n)
		}
		fmt.Printf("    served %s: %s %s (%v requests%s)\n", short(k["served"]), k["verb"], k["resource"], k["count"], refused)
	}
}

// short rounds a duration string of the report to the millisecond.
func short(v any) string {
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	return d.Round(time.Millisecond).String()
}

// differing lists the top-level fields of two reports (or of each
// design's, with --vs) that differ, leaving out what the machine spent.
func differing(a, b map[string]any) []string {
	var out []string
	if _, ok := a["blueprint"]; !ok {
		for name, ra := range a {
			ma, _ := ra.(map[string]any)
			mb, _ := b[name].(map[string]any)
			for _, f := range differing(ma, mb) {
				out = append(out, name+"."+f)
			}
		}
		slices.Sort(out)
		return out
	}
	for k, va := range a {
		switch k {
		case "wall", "clock", "speed":
			continue
		}
		if !reflect.DeepEqual(va, b[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// keepCoresBusy starts a busy loop per core, each in a process of its
// own, as another user's work would load the machine.
func keepCoresBusy() (stop func(), err error) {
	var loops []*exec.Cmd
	stop = func() {
		for _, c := range loops {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		loops = append(loops, c)
	}
	return stop, nil
}
