package rehearse

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"berth.io/berth/internal/rehearse/cost"
	"berth.io/berth/internal/simtime"
)

// Report is what a rehearsal measured, in trace time: waits and run
// times as the trace would have seen them, hours as trace hours. Every
// moment is read off the cluster's virtual clock, which stands still
// while the cluster works: the figures are the design's, the same at any
// speed and on any machine.
type Report struct {
	// Blueprint is the blueprint's name; Trace the trace's file.
	Blueprint string `json:"blueprint"`
	// Provisioner is what provisioned the User pools' nodes:
	// ClusterAutoscaler (berth's node autoscaler) or Karpenter.
	Provisioner string `json:"provisioner,omitempty"`
	Trace       string `json:"trace"`
	// Speed is the clock's ceiling in seconds of trace per second of
	// wall time; zero when it ran as fast as the cluster settled.
	Speed float64 `json:"speed"`
	Seed  int64   `json:"seed"`
	// Rehearsed is the trace time the rehearsal covered; Wall the wall
	// time the replay took.
	Rehearsed Duration `json:"rehearsed"`
	Wall      Duration `json:"wall"`
	// Tolerance is the clock's step: every moment of a rehearsal is a
	// multiple of it (timers round up to it), so a wait or run time is
	// exact to within it. A rerun with the same blueprint, trace and seed
	// gives the same report, at any speed.
	Tolerance Duration `json:"tolerance"`
	// Clock is what the clock did: its steps, and how long the cluster
	// took to settle before each.
	Clock ClockReport `json:"clock"`
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
	// Notes are what the reader should know about the figures (an unset
	// provisioning time, unfinished jobs).
	Notes []string `json:"notes,omitempty"`
}

// ClockReport is what the rehearsal's clock did, in wall time where it
// says so: what the machine spent, which moves no figure.
type ClockReport struct {
	// Step is the clock's resolution.
	Step Duration `json:"step"`
	// Steps counts the clock's advances, each to the next timer due once
	// the cluster had settled; Timers the timers they fired.
	Steps  int `json:"steps"`
	Timers int `json:"timers"`
	// Settling is the wall time spent waiting for the cluster to settle,
	// in all; MaxSettle the longest wait before one step.
	Settling  Duration `json:"settling"`
	MaxSettle Duration `json:"maxSettle"`
	// Quiet is the longest quiet window the clock waited out to call the
	// cluster settled (it grows when the machine wakes sleepers late).
	Quiet Duration `json:"quiet"`
	// Where the settling went (wall time): waiting for counted work
	// (requests in flight, callbacks, probes) to end, for the process's
	// goroutines to stop running, out the grace after a refused request
	// whose client retries on the wall clock, and in quiet windows.
	Counted Duration `json:"counted"`
	Running Duration `json:"running"`
	Grace   Duration `json:"grace"`
	Windows Duration `json:"windows"`
	// Gated counts the pods the scheduler placed one at a time, each once
	// the rest had settled.
	Gated int `json:"gated"`
	// WaitedOn is where the counted wait went, longest first: "requests
	// sent by kube-controller-manager 1m2s".
	WaitedOn []string `json:"waitedOn,omitempty"`
}

// clockReport is c's and d's account of the rehearsal.
func clockReport(c *simtime.Clock, d *simtime.Driver) ClockReport {
	s := d.Stats()
	return ClockReport{
		Step: Duration(c.Step()), Steps: s.Steps, Timers: s.Fired,
		Settling: Duration(s.Settling), MaxSettle: Duration(s.MaxSettle), Quiet: Duration(s.Quiet),
		Counted: Duration(s.Counted), Running: Duration(s.Running), Grace: Duration(s.Grace), Windows: Duration(s.Windows), Gated: s.Gated,
		WaitedOn: waitedOn(s.WaitedOn),
	}
}

// waitedOn is the counted wait by what was at work, longest first.
func waitedOn(by map[string]time.Duration) []string {
	names := slices.SortedFunc(maps.Keys(by), func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s %s", n, by[n].Round(time.Millisecond)))
	}
	return out
}

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
	// RanOn is the pools its pods started on, in order: [spot-gpu, gpu]
	// for a job interrupted on spot that resumed on demand.
	RanOn []string `json:"ranOn,omitempty"`
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
	traceHours := func(valueSeconds float64) float64 { return valueSeconds / 3600 }
	rep := &Report{
		Blueprint: o.Blueprint.Metadata.Name, Speed: o.Speed,
		Rehearsed: Duration(r.tl.trace(stopped)),
	}
	if o.Clock != nil {
		rep.Tolerance = Duration(o.Clock.Step())
	}
	for _, p := range o.Blueprint.Spec.Pools {
		if p.Autoscale != nil && p.Autoscale.ProvisioningTime == nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("pool %s: autoscale.provisioningTime is unset, so a new node is Ready at once; on a cloud a node takes minutes (a GPU node more): set it for waits a cloud would give", p.Name))
		}
	}

	groups := map[[2]string]*GroupResult{}
	waits := map[[2]string][]time.Duration{}
	var unfinished []string
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		j := r.jobs[key]
		row := j.w.job
		res := JobResult{
			Team: row.Team, Class: j.w.class, Kind: string(row.Kind), Name: row.Name, Pods: row.Pods, GPUs: row.GPUs,
			Submitted: Duration(row.Submit), Refused: j.refused, Preemptions: j.preemptions, Interruptions: j.interruptions, BackoffFailures: j.backoffFailures,
			LostGPUHours: j.lost.Hours() * float64(row.GPUs), RanOn: j.ranOn,
		}
		quota := j.quotaRefused
		if !j.quotaSince.IsZero() {
			quota += stopped.Sub(j.quotaSince)
		}
		res.QuotaRefused = Duration(quota)
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
			w := Duration(j.allStarted.Sub(j.submitted))
			res.Wait = &w
			if !j.finished.IsZero() {
				run := Duration(j.finished.Sub(j.allStarted))
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

	for _, name := range slices.Sorted(maps.Keys(r.pools)) {
		p := r.pools[name]
		nodes, gpus, alloc := p.nodes.at(stopped), p.gpus.at(stopped), p.allocated.at(stopped)
		pr := PoolResult{
			Name: name, Capacity: p.capacity,
			NodeHours: traceHours(nodes.area), PeakNodes: int(nodes.peak),
			GPUHours: traceHours(gpus.area), GPUHoursAllocated: traceHours(alloc.area),
			AtZero: Duration(nodes.zero),
		}
		pr.GPUHoursIdle = math.Max(0, pr.GPUHours-pr.GPUHoursAllocated)
		for _, team := range slices.Sorted(maps.Keys(p.used)) {
			u := p.used[team]
			pr.Teams = append(pr.Teams, TeamUse{Team: team, GPUHours: traceHours(u.gpus.at(stopped).area), CPUHours: traceHours(u.cpu.at(stopped).area)})
		}
		rep.Pools = append(rep.Pools, pr)
	}

	for _, key := range slices.Sorted(maps.Keys(r.services)) {
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
		res.BelowBudget = Duration(below)
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
