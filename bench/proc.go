package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// env is a throwaway BERTH_HOME with its own kubeconfig.
type env struct {
	berth string
	home  string
}

func newEnv(berth string) (*env, error) {
	abs, err := filepath.Abs(berth)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("%s: %w (build it first: go build -o bin/berth ./cmd/berth)", berth, err)
	}
	home, err := os.MkdirTemp("", "berth-bench-")
	if err != nil {
		return nil, err
	}
	return &env{berth: abs, home: home}, nil
}

func (e *env) kubeconfig() string { return filepath.Join(e.home, "kubeconfig") }

// run runs berth and returns its output and how long it took.
func (e *env) run(args ...string) (string, time.Duration, error) {
	cmd := exec.Command(e.berth, args...)
	cmd.Env = append(os.Environ(), "BERTH_HOME="+e.home, "KUBECONFIG="+e.kubeconfig())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return out.String(), took, fmt.Errorf("berth %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), took, nil
}

var readyRE = regexp.MustCompile(`ready in ([0-9.]+)s`)

// readySeconds is the start-up time berth itself reports.
func readySeconds(out string) float64 {
	m := readyRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// pidOf reads the pid of a named cluster's process.
func (e *env) pidOf(name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(e.home, "clusters", name, "berth.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// memory returns a process's resident and peak resident memory in MiB.
func memory(pid int) (rss, peak float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range splitLines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak, nil
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

type stats struct{ min, median, max float64 }

func summarize(xs []float64) stats {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return stats{s[0], s[len(s)/2], s[len(s)-1]}
}
