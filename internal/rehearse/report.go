package rehearse

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"berth.io/berth/internal/rehearse/cost"
)

// Report is what a rehearsal measured, in trace time: waits and run
// times as the trace would have seen them, hours as trace hours.
type Report struct {
	// Blueprint is the blueprint's name; Trace the trace's file.
	Blueprint string `json:"blueprint"`
	// Provisioner is what provisioned the User pools' nodes:
	// ClusterAutoscaler (berth's node autoscaler) or Karpenter.
	Provisioner string  `json:"provisioner,omitempty"`
	Trace       string  `json:"trace"`
	Speed       float64 `json:"speed"`
	Seed        int64   `json:"seed"`
	// Rehearsed is the trace time the rehearsal covered; Wall the wall
	// time it took.
	Rehearsed Duration `json:"rehearsed"`
	Wall      Duration `json:"wall"`
	// SubmitLag is the latest a row was submitted after its time, in wall
	// time: a machine too busy for the speed falls behind the clock.
	SubmitLag Duration `json:"submitLag"`
	// Tolerance is how far this machine's timing can move a wait, or any
	// moment the report counts from (a node's creation or deletion, a
	// pod's start or end), in trace time: timingFloor and SubmitLag
	// together, times the speed. A pool's node-hours can move by twice
	// this for each node it started. A rerun of the same blueprint, trace
	// and seed that makes the same decisions differs from this one by no
	// more than the two Tolerances together.
	Tolerance Duration `json:"tolerance"`
	// Partial marks a rehearsal stopped before its end (Ctrl-C).
	Partial  bool            `json:"partial,omitempty"`
	Jobs     []JobResult     `json:"jobs"`
	Groups   []GroupResult   `json:"groups"`
	Pools    []PoolResult    `json:"pools"`
	Services []ServiceResult `json:"services,omitempty"`
	// Disruptions are the trace's interruptions as carried out.
	Disruptions []DisruptionResult `json:"disruptions,omitempty"`
	Cost        *cost.Report       `json:"cost,omitempty"`
	Series      *Series            `json:"series,omitempty"`
	// Timers are the timers as run; Notes what the reader should know
	// about the figures (an unset provisioning time, unfinished jobs).
	Timers []Timer  `json:"timers"`
	Notes  []string `json:"notes,omitempty"`
}

// timingFloor is how far the machine's timing can move a moment of a
// rehearsal, in wall time, on a machine that keeps up with the speed: a
// pod's start time has whole seconds, so a run ends up to a second off
// (Unscaled), and the control plane's reactions (informers, the
// scheduler, KWOK's stages) take up to about another on two busy cores.
const timingFloor = 2 * time.Second

// Job states.
const (
	Completed  = "completed"
	Failed     = "failed"
	Refused    = "refused"
	Unfinished = "unfinished"
)

// JobResult is one training or batch row as the cluster ran it.
type JobResult struct {
	Team  string `json:"team"`
	Class string `json:"class"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Pods  int32  `json:"pods"`
	GPUs  int64  `json:"gpus"`
	// Submitted is the row's submit time.
	Submitted Duration `json:"submitted"`
	// Wait is from submission until every pod of its parallelism has
	// started (at once for a gang; the last to start when only some could
	// run at a time); nil when that never happened.
	Wait *Duration `json:"wait,omitempty"`
	// Run is from then to the Job's end.
	Run   *Duration `json:"run,omitempty"`
	State string    `json:"state"`
	// Refused is admission's refusal of the Job, word for word.
	Refused       string `json:"refused,omitempty"`
	Preemptions   int    `json:"preemptions"`
	Interruptions int    `json:"interruptions"`
	// BackoffFailures are its pods that failed and counted against the
	// Job's backoffLimit (its status.failed): an interruption the class's
	// pod failure policy ignores is not one.
	BackoffFailures int `json:"backoffFailures"`
	// LostGPUHours is work done and not checkpointed by pods that ended
	// early, times their GPUs.
	LostGPUHours float64 `json:"lostGPUHours"`
	// QuotaRefused is how long the team's quota kept its pods from being
	// created.
	QuotaRefused Duration `json:"quotaRefused"`
}

// GroupResult sums a team's jobs of one class.
type GroupResult struct {
	Team       string `json:"team"`
	Class      string `json:"class"`
	Jobs       int    `json:"jobs"`
	Completed  int    `json:"completed"`
	Failed     int    `json:"failed"`
	Refused    int    `json:"refused"`
	Unfinished int    `json:"unfinished"`
	// Waits are over the jobs whose pods all ran; NeverRan counts the
	// others (refused, or still waiting at the end).
	NeverRan int      `json:"neverRan"`
	WaitP50  Duration `json:"waitP50"`
	WaitP95  Duration `json:"waitP95"`
	WaitMax  Duration `json:"waitMax"`
	// QuotaRefused is the sum of its jobs' quota-refused times: job-hours
	// of refusal, not a span of time (four jobs refused together for an
	// hour give 4h).
	QuotaRefused Duration `json:"quotaRefused"`
	LostGPUHours float64  `json:"lostGPUHours"`
}

// PoolResult is one pool over the rehearsal.
type PoolResult struct {
	Name     string `json:"name"`
	Capacity string `json:"capacity"`
	// NodeHours are the pool's nodes' hours, each from its creation to
	// its deletion (or the end).
	NodeHours float64 `json:"nodeHours"`
	PeakNodes int     `json:"peakNodes"`
	// GPUHours are its nodes' GPUs' hours; Allocated those held by
	// running pods, Idle the rest: GPUs paid for and not used.
	GPUHours          float64 `json:"gpuHours"`
	GPUHoursAllocated float64 `json:"gpuHoursAllocated"`
	GPUHoursIdle      float64 `json:"gpuHoursIdle"`
	// AtZero is how long the pool had no nodes.
	AtZero Duration `json:"atZero"`
	// Teams are the hours of GPUs and CPUs each team's pods held on it.
	Teams []TeamUse `json:"teams,omitempty"`
}

// TeamUse is what a team's pods held on a pool.
type TeamUse struct {
	Team     string  `json:"team"`
	GPUHours float64 `json:"gpuHours"`
	CPUHours float64 `json:"cpuHours"`
}

// ServiceResult is one inference row's service.
type ServiceResult struct {
	Team    string `json:"team"`
	Class   string `json:"class"`
	Name    string `json:"name"`
	Refused string `json:"refused,omitempty"`
	// MeanReplicas and PeakReplicas count Ready replicas while it ran;
	// PeakRPS is the most traffic the trace sent it.
	MeanReplicas float64 `json:"meanReplicas"`
	PeakReplicas int     `json:"peakReplicas"`
	PeakRPS      float64 `json:"peakRPS"`
	// MinAvailable is its budget's; BelowBudget how long it had fewer
	// Ready replicas, from its submission (start-up included).
	MinAvailable int32    `json:"minAvailable"`
	BelowBudget  Duration `json:"belowBudget"`
}

// report works the recorded lives out into a Report at the wall time
// the rehearsal stopped.
func (r *recorder) report(stopped time.Time, o Options) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	speed := r.clock.Speed
	traceHours := func(valueSeconds float64) float64 { return valueSeconds * speed / 3600 }
	traced := func(wall time.Duration) Duration { return Duration(time.Duration(float64(wall) * speed)) }
	rep := &Report{
		Blueprint: o.Blueprint.Metadata.Name, Speed: speed,
		Rehearsed: Duration(r.clock.Trace(stopped)), Wall: Duration(stopped.Sub(r.clock.Start)),
		SubmitLag: Duration(r.lag),
	}
	rep.Tolerance = traced(timingFloor + r.lag)
	rep.Notes = append(rep.Notes, fmt.Sprintf("timing: this machine's timing can move each wait, and each node's start and end, by up to %s of trace time (%s of wall time for whole-second pod start times and the control plane's reactions, and the latest submission's lag of %s, times the speed); a pool's node-hours by twice that per node it started", time.Duration(rep.Tolerance).Round(time.Second), timingFloor, r.lag.Round(time.Millisecond)))
	if behind := traced(r.lag); behind > Duration(time.Minute) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the machine fell behind the clock: a row was submitted up to %s late (%s of trace time); a lower --speed is more exact", r.lag.Round(time.Millisecond), short(behind)))
	}

	groups := map[[2]string]*GroupResult{}
	waits := map[[2]string][]time.Duration{}
	var unfinished []string
	for _, key := range sortedKeys(r.jobs) {
		j := r.jobs[key]
		row := j.w.job
		res := JobResult{
			Team: row.Team, Class: j.w.class, Kind: string(row.Kind), Name: row.Name, Pods: row.Pods, GPUs: row.GPUs,
			Submitted: Duration(row.Submit), Refused: j.refused, Preemptions: j.preemptions, Interruptions: j.interruptions, BackoffFailures: j.backoffFailures,
			LostGPUHours: j.lost.Hours() * float64(row.GPUs),
		}
		quota := j.quotaRefused
		if !j.quotaSince.IsZero() {
			quota += stopped.Sub(j.quotaSince)
		}
		res.QuotaRefused = traced(quota)
		switch {
		case j.refused != "":
			res.State = Refused
		case j.finished.IsZero():
			res.State = Unfinished
		case j.failed:
			res.State = Failed
		default:
			res.State = Completed
		}
		if !j.allStarted.IsZero() {
			w := traced(j.allStarted.Sub(j.submitted))
			res.Wait = &w
			if !j.finished.IsZero() {
				run := traced(j.finished.Sub(j.allStarted))
				res.Run = &run
			}
		}
		rep.Jobs = append(rep.Jobs, res)

		gk := [2]string{res.Team, res.Class}
		g := groups[gk]
		if g == nil {
			g = &GroupResult{Team: res.Team, Class: res.Class}
			groups[gk] = g
		}
		g.Jobs++
		switch res.State {
		case Completed:
			g.Completed++
		case Failed:
			g.Failed++
		case Refused:
			g.Refused++
		case Unfinished:
			g.Unfinished++
		}
		if res.Wait == nil {
			g.NeverRan++
		} else {
			waits[gk] = append(waits[gk], time.Duration(*res.Wait))
		}
		g.QuotaRefused += res.QuotaRefused
		g.LostGPUHours += res.LostGPUHours
		if res.State == Unfinished {
			unfinished = append(unfinished, res.Team+"/"+res.Name)
		}
	}
	if n := len(unfinished); n > 0 {
		names := strings.Join(unfinished[:min(n, 3)], ", ")
		if n > 3 {
			names += fmt.Sprintf(" and %d more", n-3)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d %s had not finished when the rehearsal stopped (%s): their waits and runs are missing, and the waits above leave them out (\"never ran\" counts those that never started); a later --until lets them finish", n, plural(n, "job", "jobs"), names))
	}
	for _, gk := range sortedGroupKeys(groups) {
		g := groups[gk]
		ws := waits[gk]
		g.WaitP50, g.WaitP95, g.WaitMax = Duration(percentile(ws, 50)), Duration(percentile(ws, 95)), Duration(percentile(ws, 100))
		rep.Groups = append(rep.Groups, *g)
	}

	for _, name := range sortedKeys(r.pools) {
		p := r.pools[name]
		nodes, gpus, alloc := p.nodes.at(stopped), p.gpus.at(stopped), p.allocated.at(stopped)
		pr := PoolResult{
			Name: name, Capacity: p.capacity,
			NodeHours: traceHours(nodes.area), PeakNodes: int(nodes.peak),
			GPUHours: traceHours(gpus.area), GPUHoursAllocated: traceHours(alloc.area),
			AtZero: traced(nodes.zero),
		}
		pr.GPUHoursIdle = math.Max(0, pr.GPUHours-pr.GPUHoursAllocated)
		for _, team := range sortedKeys(p.used) {
			u := p.used[team]
			pr.Teams = append(pr.Teams, TeamUse{Team: team, GPUHours: traceHours(u.gpus.at(stopped).area), CPUHours: traceHours(u.cpu.at(stopped).area)})
		}
		rep.Pools = append(rep.Pools, pr)
	}

	for _, key := range sortedKeys(r.services) {
		s := r.services[key]
		row := s.w.job
		end := stopped
		if !s.removed.IsZero() {
			end = s.removed
		}
		ready := s.ready.at(end)
		res := ServiceResult{Team: row.Team, Class: s.w.class, Name: row.Name, Refused: s.refused, PeakReplicas: int(ready.peak), MinAvailable: s.minAvailable}
		if span := end.Sub(s.submitted).Seconds(); span > 0 {
			res.MeanReplicas = ready.area / span
		}
		below := s.below
		if !s.belowSince.IsZero() {
			below += end.Sub(s.belowSince)
		}
		res.BelowBudget = traced(below)
		res.PeakRPS = peakRPS(o, s.w)
		rep.Services = append(rep.Services, res)
	}
	rep.Disruptions = append([]DisruptionResult(nil), r.disruptions...)
	rep.Notes = append(rep.Notes, r.notes...)
	rep.Series = r.series(stopped, o.Prices)
	if o.Prices != nil {
		c, err := costOf(o.Prices, rep.Pools)
		if err != nil {
			rep.Notes = append(rep.Notes, "cost: "+err.Error())
		} else {
			rep.Cost = c
		}
	}
	return rep
}

// peakRPS is the most traffic the trace's load sends a service.
func peakRPS(o Options, w *workload) float64 {
	if o.Trace.Load == nil {
		return 0
	}
	peak := 0.0
	for _, s := range o.Trace.Load.Steps {
		for _, l := range s.Workloads {
			if l.Namespace == w.namespace && l.Name == w.job.Name && l.RPS != nil {
				peak = math.Max(peak, *l.RPS)
			}
		}
	}
	return peak
}

// percentile is the p-th percentile of ds by the nearest-rank method
// (p 100 the largest); 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

func sortedGroupKeys(m map[[2]string]*GroupResult) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a][0] != keys[b][0] {
			return keys[a][0] < keys[b][0]
		}
		return keys[a][1] < keys[b][1]
	})
	return keys
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Design names the design a report rehearsed: its blueprint, and its
// provisioner where that is Karpenter (berth's node autoscaler is the
// default and goes unsaid).
func (r *Report) Design() string {
	if r.Provisioner == "Karpenter" {
		return r.Blueprint + " (Karpenter)"
	}
	return r.Blueprint
}

// Designs names two compared designs, each with its provisioner where
// the two differ in it alone.
func Designs(a, b *Report) (string, string) {
	if a.Blueprint == b.Blueprint && a.Provisioner != b.Provisioner {
		return a.Blueprint + " (" + provisionerName(a.Provisioner) + ")", b.Blueprint + " (" + provisionerName(b.Provisioner) + ")"
	}
	return a.Design(), b.Design()
}

func provisionerName(p string) string {
	if p == "" || p == "ClusterAutoscaler" {
		return "cluster-autoscaler semantics"
	}
	return p
}
