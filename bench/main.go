// Command bench measures berth's local cluster from the outside, through
// the real berth binary, and prints the figures docs/contributing/benchmarks.md quotes.
//
//	go build -o bin/berth ./cmd/berth
//	go run ./bench up    [-runs 5]                      # start-up, cold and resumed; idle memory
//	go run ./bench scale [-nodes 5000 -pods 50000]      # nodes Ready, pods/s, time until every pod Runs; peak memory
//	go run ./bench audit [-nodes 5000 -pods 150000]     # audit time and peak memory per input shape; kube-score on the same files
//	                     [-shapes yaml-stream-bare-flow]
//	go run ./bench autoscale [-runs 5]                  # pending GPU pod -> new node Ready -> pod Running
//	go run ./bench queue [-runs 3]                      # queue depth -> HPA from zero -> GPU nodes -> workers Running
//	go run ./bench rehearse [-until 24h] [-queueing Kueue] [-against 60]  # the retail week on its clock: steps, settling, wall time, peak memory
//	                        [-vs examples/retail-gpu4.yaml] [-busy]
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
		fmt.Fprintln(os.Stderr, "usage: bench up|scale|audit|autoscale|queue|rehearse [flags]")
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
	case "rehearse":
		var o rehearseOptions
		fs.StringVar(&o.file, "f", "", "the blueprint (default: the retail template)")
		fs.StringVar(&o.trace, "trace", "examples/retail-week.csv", "the trace")
		fs.StringVar(&o.until, "until", "", "stop at this trace time (default: berth rehearse's)")
		fs.StringVar(&o.vs, "vs", "", "a second design, as berth rehearse --vs")
		fs.StringVar(&o.queueing, "queueing", "", "ResourceQuota or Kueue, as berth rehearse --queueing (default: the blueprint's)")
		fs.StringVar(&o.vsQueueing, "vs-queueing", "", "compare with the same blueprint queued this way, as berth rehearse --vs-queueing")
		fs.StringVar(&o.cloud, "cloud", "aws", "the cloud whose prices the cost uses")
		fs.Float64Var(&o.speed, "speed", 0, "the speed ceiling (0: as fast as the cluster settles)")
		fs.Float64Var(&o.against, "against", 0, "replay again at this ceiling and check the two reports are equal")
		fs.BoolVar(&o.busy, "busy", false, "keep every core busy with a loop while the first replay runs")
		fs.StringVar(&o.save, "save", "", "write the report (JSON) to this file, and the -against replay's to FILE.against")
		fs.Parse(os.Args[2:])
		err = benchRehearse(*berth, o)
	default:
		err = fmt.Errorf("unknown benchmark %q: use up, scale, audit, autoscale, queue or rehearse", os.Args[1])
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
