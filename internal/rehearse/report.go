package rehearse

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/words"
)

// clockReport is c's and d's account of the rehearsal.
func clockReport(c *simtime.Clock, d *simtime.Driver) report.ClockReport {
	s := d.Stats()
	return report.ClockReport{
		Step: report.Duration(c.Step()), Steps: s.Steps, Timers: s.Fired,
		Settling: report.Duration(s.Settling), MaxSettle: report.Duration(s.MaxSettle), Quiet: report.Duration(s.Quiet),
		Counted: report.Duration(s.Counted), Running: report.Duration(s.Running), Grace: report.Duration(s.Grace), Windows: report.Duration(s.Windows), Gated: s.Gated,
		WaitedOn: waitedOn(s.WaitedOn), Causes: causes(s.Causes), Requests: requests(c.Activity().Requests().Counts()),
	}
}

// causes are the clock's moments by cause, the longest settling first
// (then by name, so that the order repeats).
func causes(by map[string]simtime.Cause) []report.ClockCause {
	out := make([]report.ClockCause, 0, len(by))
	for name, c := range by {
		out = append(out, report.ClockCause{Component: name, Moments: c.Moments, Alone: c.Alone, Timers: c.Timers, Settling: report.Duration(c.Settling.Round(time.Millisecond))})
	}
	slices.SortFunc(out, func(a, b report.ClockCause) int {
		return cmp.Or(cmp.Compare(b.Settling, a.Settling), cmp.Compare(a.Component, b.Component))
	})
	return out
}

// requests are the API server's requests as the report gives them.
func requests(counts []simtime.RequestCount) []report.RequestCount {
	out := make([]report.RequestCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, report.RequestCount{Verb: c.Verb, Resource: c.Resource, Count: c.Count, Refused: c.Refused, Served: report.Duration(c.Served.Round(time.Microsecond))})
	}
	return out
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

// report works the recorded lives out into a Report at the wall time
// the rehearsal stopped.
func (r *recorder) report(stopped time.Time, o Options) *report.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	traceHours := func(valueSeconds float64) float64 { return valueSeconds / 3600 }
	rep := &report.Report{
		Blueprint: o.Blueprint.Metadata.Name, Speed: o.Speed,
		Rehearsed: report.Duration(r.tl.trace(stopped)),
	}
	if o.Clock != nil {
		rep.Tolerance = report.Duration(o.Clock.Step())
	}
	for _, p := range o.Blueprint.Spec.Pools {
		if p.Autoscale != nil && p.Autoscale.ProvisioningTime == nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("pool %s: autoscale.provisioningTime is unset, so a new node is Ready at once; on a cloud a node takes minutes (a GPU node more): set it for waits a cloud would give", p.Name))
		}
	}

	groups := map[[2]string]*report.GroupResult{}
	waits := map[[2]string][]time.Duration{}
	var unfinished []string
	for _, key := range slices.Sorted(maps.Keys(r.jobs)) {
		j := r.jobs[key]
		row := j.w.job
		res := report.JobResult{
			Team: row.Team, Class: j.w.class, Kind: string(row.Kind), Name: row.Name, Pods: row.Pods, GPUs: row.GPUs,
			Submitted: report.Duration(row.Submit), Refused: j.refused, Preemptions: j.preemptions, Interruptions: j.interruptions, Requeued: j.requeued, BackoffFailures: j.backoffFailures,
			LostGPUHours: j.lost.Hours() * float64(row.GPUs), RanOn: j.ranOn,
		}
		quota := j.quotaRefused
		if !j.quotaSince.IsZero() {
			quota += stopped.Sub(j.quotaSince)
		}
		res.QuotaRefused = report.Duration(quota)
		switch {
		case j.refused != "":
			res.State = report.Refused
		case j.finished.IsZero():
			res.State = report.Unfinished
		case j.failed:
			res.State = report.Failed
		default:
			res.State = report.Completed
		}
		if j.w.claimed {
			res.Claimed, res.Replacements = true, j.replacements
			if j.replacements > 0 {
				w := report.Duration(j.replacementWait)
				res.ReplacementWait = &w
			}
		}
		if !j.allStarted.IsZero() {
			w := report.Duration(j.allStarted.Sub(j.submitted))
			res.Wait = &w
			if !j.finished.IsZero() {
				run := report.Duration(j.finished.Sub(j.allStarted))
				res.Run = &run
			}
		}
		if w, ok := o.Trace.RecordedWait(row); ok {
			rw := report.Duration(w)
			res.RecordedWait = &rw
		}
		rep.Jobs = append(rep.Jobs, res)

		gk := [2]string{res.Team, res.Class}
		g := groups[gk]
		if g == nil {
			g = &report.GroupResult{Team: res.Team, Class: res.Class}
			groups[gk] = g
		}
		g.Jobs++
		switch res.State {
		case report.Completed:
			g.Completed++
		case report.Failed:
			g.Failed++
		case report.Refused:
			g.Refused++
		case report.Unfinished:
			g.Unfinished++
		}
		if res.Wait == nil {
			g.NeverRan++
		} else {
			waits[gk] = append(waits[gk], time.Duration(*res.Wait))
		}
		g.QuotaRefused += res.QuotaRefused
		g.LostGPUHours += res.LostGPUHours
		if res.State == report.Unfinished {
			unfinished = append(unfinished, res.Team+"/"+res.Name)
		}
	}
	if n := len(unfinished); n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s had not finished when the rehearsal stopped (%s): their waits and runs are missing, and the waits above leave them out (\"never ran\" counts those that never started); a later --until lets them finish", words.Count(n, "job"), words.List(unfinished, 3)))
	}
	for _, gk := range sortedGroupKeys(groups) {
		g := groups[gk]
		ws := waits[gk]
		g.WaitP50, g.WaitP95, g.WaitMax = report.Duration(percentile(ws, 50)), report.Duration(percentile(ws, 95)), report.Duration(percentile(ws, 100))
		rep.Groups = append(rep.Groups, *g)
	}
	rep.RecordedWaits = recordedWaits(rep.Jobs)

	for _, name := range slices.Sorted(maps.Keys(r.pools)) {
		p := r.pools[name]
		nodes, gpus, alloc := p.nodes.at(stopped), p.gpus.at(stopped), p.allocated.at(stopped)
		pr := report.PoolResult{
			Name: name, Capacity: p.capacity,
			NodeHours: traceHours(nodes.area), PeakNodes: int(nodes.peak),
			GPUHours: traceHours(gpus.area), GPUHoursAllocated: traceHours(alloc.area),
			AtZero: report.Duration(nodes.zero),
		}
		pr.GPUHoursIdle = math.Max(0, pr.GPUHours-pr.GPUHoursAllocated)
		for _, team := range slices.Sorted(maps.Keys(p.used)) {
			u := p.used[team]
			pr.Teams = append(pr.Teams, report.TeamUse{Team: team, GPUHours: traceHours(u.gpus.at(stopped).area), CPUHours: traceHours(u.cpu.at(stopped).area)})
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
		res := report.ServiceResult{Team: row.Team, Class: s.w.class, Name: row.Name, Refused: s.refused, PeakReplicas: int(ready.peak), MinAvailable: s.minAvailable}
		if span := end.Sub(s.submitted).Seconds(); span > 0 {
			res.MeanReplicas = ready.area / span
		}
		below := s.below
		if !s.belowSince.IsZero() {
			below += end.Sub(s.belowSince)
		}
		res.BelowBudget = report.Duration(below)
		res.PeakRPS = peakRPS(o, s.w)
		rep.Services = append(rep.Services, res)
	}
	rep.Storage = r.storage(stopped, o.Blueprint)
	if r.queues != nil {
		rep.Queues = r.queues.results(stopped, r.jobs)
	}
	rep.Disruptions = append([]report.DisruptionResult(nil), r.disruptions...)
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

// recordedWaits sets each team's waits beside those its trace recorded,
// over its jobs with a recorded wait that ran, teams in order of name;
// nil when no job has a recorded wait.
func recordedWaits(jobs []report.JobResult) []report.RecordedWaitResult {
	byTeam := map[string]*report.RecordedWaitResult{}
	replayed, recorded := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, j := range jobs {
		if j.RecordedWait == nil {
			continue
		}
		res := byTeam[j.Team]
		if res == nil {
			res = &report.RecordedWaitResult{Team: j.Team}
			byTeam[j.Team] = res
		}
		if j.Wait == nil {
			res.NeverRan++
			continue
		}
		res.Jobs++
		replayed[j.Team] = append(replayed[j.Team], time.Duration(*j.Wait))
		recorded[j.Team] = append(recorded[j.Team], time.Duration(*j.RecordedWait))
	}
	var out []report.RecordedWaitResult
	for _, team := range slices.Sorted(maps.Keys(byTeam)) {
		res := byTeam[team]
		res.ReplayedP50, res.ReplayedP95 = report.Duration(percentile(replayed[team], 50)), report.Duration(percentile(replayed[team], 95))
		res.RecordedP50, res.RecordedP95 = report.Duration(percentile(recorded[team], 50)), report.Duration(percentile(recorded[team], 95))
		out = append(out, *res)
	}
	return out
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

func sortedGroupKeys(m map[[2]string]*report.GroupResult) [][2]string {
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

// hoursPerMonth is the month the clouds bill storage by.
const hoursPerMonth = 730

// storage is each class's volumes: how many, the most GiB held at once,
// the GiB-hours, and their cost at the class's price. r.mu is held.
func (r *recorder) storage(stopped time.Time, bp *v1alpha1.Blueprint) []report.StorageResult {
	type change struct {
		at  time.Time
		gib float64
	}
	byClass := map[string]*report.StorageResult{}
	changes := map[string][]change{}
	for _, name := range slices.Sorted(maps.Keys(r.volumes)) {
		v := r.volumes[name]
		res := byClass[v.class]
		if res == nil {
			res = &report.StorageResult{Class: v.class}
			byClass[v.class] = res
		}
		to := v.to
		if to.IsZero() || to.After(stopped) {
			to = stopped
		}
		res.Volumes++
		res.GiBHours += v.gib * to.Sub(v.from).Hours()
		changes[v.class] = append(changes[v.class], change{v.from, v.gib}, change{to, -v.gib})
	}
	var out []report.StorageResult
	for _, class := range slices.Sorted(maps.Keys(byClass)) {
		res := byClass[class]
		cs := changes[class]
		// Ends before starts at the same moment: a volume replaced at
		// once is not two at once.
		slices.SortStableFunc(cs, func(a, b change) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.gib, b.gib)
		})
		held := 0.0
		for _, c := range cs {
			held += c.gib
			res.PeakGiB = max(res.PeakGiB, held)
		}
		if bp.Spec.Storage == nil {
			out = append(out, *res)
			continue
		}
		for _, c := range bp.Spec.Storage.Classes {
			if c.Name == class && c.PricePerGiBMonth != nil {
				price := float64(c.PricePerGiBMonth.Micros()) / 1e6
				cost := res.GiBHours * price / hoursPerMonth
				res.PricePerGiBMonth, res.Cost = &price, &cost
			}
		}
		out = append(out, *res)
	}
	return out
}
