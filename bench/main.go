// Command bench measures berth's local cluster from the outside, through
// the real berth binary, and prints the figures the README quotes.
//
//	go build -o bin/berth ./cmd/berth
//	go run ./bench up    [-runs 5]                      # start-up, cold and resumed; idle memory
//	go run ./bench scale [-nodes 5000 -pods 50000]      # nodes Ready, pods/s, time until every pod Runs; peak memory
//	go run ./bench audit [-nodes 5000 -pods 150000]     # audit time and peak memory per input shape; kube-score on the same files
//	                     [-shapes yaml-stream-bare-flow]
//	go run ./bench autoscale [-runs 5]                  # pending GPU pod -> new node Ready -> pod Running
//	go run ./bench queue [-runs 3]                      # queue depth -> HPA from zero -> GPU nodes -> workers Running
//
// It links only client-go, never the control plane, so it measures the
// binary users run.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench up|scale|audit|autoscale|queue [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	berth := fs.String("berth", "bin/berth", "the berth binary to measure")
	var err error
	switch os.Args[1] {
	case "up":
		runs := fs.Int("runs", 5, "start-ups of each kind")
		idle := fs.Duration("idle", 0, "how long to let the cluster idle before reading its memory (default 15s)")
		file := fs.String("f", "", "the blueprint to start (default: the retail template)")
		fs.Parse(os.Args[2:])
		err = benchUp(*berth, *runs, *idle, *file)
	case "scale":
		nodes := fs.Int("nodes", 5000, "simulated nodes")
		pods := fs.Int("pods", 50000, "pods, in Deployments of 1,000")
		namespaces := fs.Int("namespaces", 1, "namespaces the Deployments are spread over (teams)")
		fsync := fs.Bool("fsync", true, "keep etcd's fsync on")
		commands := fs.Bool("commands", false, "also time berth status, why --all and a live audit at the end")
		keep := fs.Bool("keep", false, "leave the cluster running at the end, to profile or query it; the run prints how to reach it and stop it")
		fs.Parse(os.Args[2:])
		err = benchScale(*berth, scaleOptions{nodes: *nodes, pods: *pods, namespaces: *namespaces, fsync: *fsync, commands: *commands, keep: *keep})
	case "audit":
		nodes := fs.Int("nodes", 5000, "nodes in the full corpus")
		pods := fs.Int("pods", 150000, "pods in the full corpus")
		compareNodes := fs.Int("compare-nodes", 500, "nodes in the corpus kube-score also reads")
		comparePods := fs.Int("compare-pods", 15000, "pods in the corpus kube-score also reads")
		runs := fs.Int("runs", 3, "timed runs of each tool on each corpus")
		compare := fs.Bool("compare", true, "also time kube-score, and berth, on the compare corpus")
		shapes := fs.String("shapes", "", "the input shapes to time, comma-separated (default every one: "+shapeNames()+")")
		fs.Parse(os.Args[2:])
		err = benchAudit(*berth, *nodes, *pods, *compareNodes, *comparePods, *runs, *compare, *shapes)
	case "autoscale":
		runs := fs.Int("runs", 5, "pods timed, one at a time, the pool back at zero between them")
		scan := fs.Duration("scan-interval", 10*time.Second, "the autoscaler's scanInterval")
		fs.Parse(os.Args[2:])
		err = benchAutoscale(*berth, *runs, *scan)
	case "queue":
		runs := fs.Int("runs", 3, "wake-ups timed, the worker and its pool back at zero between them")
		scan := fs.Duration("scan-interval", 10*time.Second, "the autoscaler's scanInterval")
		provisioning := fs.Duration("provisioning-time", 0, "the gpu pool's provisioning time")
		fs.Parse(os.Args[2:])
		err = benchQueue(*berth, *runs, *scan, *provisioning)
	default:
		err = fmt.Errorf("unknown benchmark %q: use up, scale, audit, autoscale or queue", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// machine describes where the figures came from.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range splitLines(string(data)) {
			if len(line) > 10 && line[:10] == "model name" {
				for i := range line {
					if line[i] == ':' {
						model = line[i+2:]
						break
					}
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s/%s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH)
}
