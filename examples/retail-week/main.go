// Command retail-week writes examples/retail-week.csv and
// examples/retail-week.yaml: a week of the retail company's work on the
// retail blueprint, for `berth rehearse`. It is synthetic and seeded, so
// running it again writes the same files:
//
//	go run ./examples/retail-week
//
// 5,000 jobs over seven days, more by day than by night, sized so that
// each team's GPU quota is busy most of the week but not swamped: CPU
// batch work (ETL, reports) of both teams, training of one or two
// one-GPU pods that checkpoint every 30 minutes, and GPU batch inference
// of team-b; two inference services of team-a run the whole week (the
// recommendation service on GPUs, search on CPUs). The YAML form adds the
// recommendation service's traffic, hour by hour, for its HPA.
package main

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	jobs = 5000
	days = 7
	week = days * 24 * time.Hour
)

type row struct {
	submit               time.Duration
	team, kind, name     string
	pods, gpus           int
	cpu, memory          string
	duration, checkpoint time.Duration
	class                string
}

func main() {
	dir := "examples"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	rows := []row{
		{team: "team-a", kind: "inference", name: "recommender", pods: 2, gpus: 1, cpu: "4", memory: "16Gi", class: "inference"},
		{team: "team-a", kind: "inference", name: "search", pods: 2, cpu: "2", memory: "4Gi", class: "inference"},
	}
	// Arrivals follow the day: three times as many an hour from 08:00
	// to 20:00 as at night.
	var weights []float64
	for h := range days * 24 {
		w := 1.0
		if hour := h % 24; hour >= 8 && hour < 20 {
			w = 3
		}
		weights = append(weights, w)
	}
	counts := map[string]int{}
	for i := range jobs {
		at := arrival(rng, weights)
		r := row{submit: at}
		switch p := rng.Float64(); {
		case p < 0.93: // CPU batch: ETL, reports
			r.kind, r.class = "batch", "batch"
			r.team = pick(rng, "team-a", "team-a", "team-b")
			r.pods = 1 + rng.IntN(4)
			r.cpu = fmt.Sprint(1 + rng.IntN(4))
			r.memory = fmt.Sprintf("%dGi", 4*(1+rng.IntN(4)))
			r.duration = minutes(5 + rng.IntN(40))
		case p < 0.98: // training, checkpointing every 30 minutes
			r.kind, r.class = "training", "training"
			r.team = pick(rng, "team-a", "team-b")
			r.pods = 1 + rng.IntN(2) // the retail GPU nodes have one GPU each
			r.gpus = 1
			r.cpu, r.memory = "8", "32Gi"
			r.duration = minutes(40 + rng.IntN(80))
			r.checkpoint = 30 * time.Minute
		default: // GPU batch inference
			r.kind, r.class = "batch", "batch-inference"
			r.team = "team-b"
			r.pods = 1
			r.gpus = 1
			r.cpu, r.memory = "4", "16Gi"
			r.duration = minutes(10 + rng.IntN(30))
		}
		counts[r.team+r.kind]++
		r.name = fmt.Sprintf("%s-%04d", strings.ReplaceAll(r.class, "-inference", "-inf"), i)
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b row) int { return int(a.submit - b.submit) })
	if err := writeCSV(filepath.Join(dir, "retail-week.csv"), rows); err != nil {
		log.Fatal(err)
	}
	if err := writeYAML(filepath.Join(dir, "retail-week.yaml"), rows); err != nil {
		log.Fatal(err)
	}
	fmt.Println(counts)
}

// arrival draws a submission time: an hour by the weights, then a
// minute within it.
func arrival(rng *rand.Rand, weights []float64) time.Duration {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := rng.Float64() * total
	for h, w := range weights {
		if x < w {
			return time.Duration(h)*time.Hour + minutes(rng.IntN(60))
		}
		x -= w
	}
	return week - time.Minute
}

func pick(rng *rand.Rand, s ...string) string { return s[rng.IntN(len(s))] }

func minutes(n int) time.Duration { return time.Duration(n) * time.Minute }

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	s = strings.TrimSuffix(s, "h0m")
	if strings.HasSuffix(d.String(), "h0m0s") {
		s += "h"
	}
	if s == "" {
		s = "0s"
	}
	return s
}

func writeCSV(path string, rows []row) error {
	var b strings.Builder
	b.WriteString("# A synthetic week of the retail company's work on the retail blueprint:\n")
	b.WriteString("# written by `go run ./examples/retail-week` (seeded; the same every time).\n")
	b.WriteString("submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model\n")
	for _, r := range rows {
		gpus := ""
		if r.gpus > 0 {
			gpus = fmt.Sprint(r.gpus)
		}
		submit := dur(r.submit)
		if submit == "" {
			submit = "0s"
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,\n", submit, r.team, r.kind, r.name, r.pods, gpus, r.cpu, r.memory, dur(r.duration), dur(r.checkpoint), r.class)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func writeYAML(path string, rows []row) error {
	var b strings.Builder
	b.WriteString("# The week of retail-week.csv, with the recommendation service's traffic:\n")
	b.WriteString("# written by `go run ./examples/retail-week` (seeded; the same every time).\n")
	b.WriteString("apiVersion: berth.io/v1alpha1\nkind: Trace\nspec:\n  jobs:\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "  - {submit: %s, team: %s, kind: %s, name: %s, pods: %d", orZero(dur(r.submit)), r.team, r.kind, r.name, r.pods)
		if r.gpus > 0 {
			fmt.Fprintf(&b, ", gpus: %d", r.gpus)
		}
		fmt.Fprintf(&b, ", cpu: %q, memory: %s", r.cpu, r.memory)
		if r.duration > 0 {
			fmt.Fprintf(&b, ", duration: %s", dur(r.duration))
		}
		if r.checkpoint > 0 {
			fmt.Fprintf(&b, ", checkpoint: %s", dur(r.checkpoint))
		}
		fmt.Fprintf(&b, ", class: %s}\n", r.class)
	}
	// The recommendation service's traffic: 20 rps at night, up to 100 by
	// day, highest in the evening; the class targets 20 rps a replica.
	b.WriteString("  load:\n    steps:\n")
	for h := range days * 24 {
		hour := float64(h % 24)
		rps := 20 + 80*math.Max(0, math.Sin(math.Pi*(hour-7)/14))
		fmt.Fprintf(&b, "    - {at: %dh, workloads: [{namespace: team-a, name: recommender, rps: %.0f}]}\n", h, rps)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func orZero(s string) string {
	if s == "" {
		return "0s"
	}
	return s
}
