package rehearse

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/cost"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/slim"
)

// Options are a rehearsal's inputs.
type Options struct {
	// Client reaches the cluster the rehearsal runs on, started from
	// Blueprint.
	Client kubernetes.Interface
	// Blueprint is the blueprint the cluster runs: Compress's output.
	Blueprint *v1alpha1.Blueprint
	// Trace is the workload to replay, checked against the blueprint.
	Trace *trace.Trace
	// Speed is how many seconds of the trace pass per second.
	Speed float64
	// Until ends the rehearsal at this trace time even if jobs are still
	// waiting or running; they are reported unfinished. Zero means three
	// times the trace's end.
	Until time.Duration
	// Prices are the pools' prices (cost.Price), in pool order. Nil
	// leaves cost out of the report.
	Prices []cost.PoolPrice
	// Progress receives a line every few seconds. Nil discards them.
	Progress io.Writer
	// Interrupt gives nodes a spot interruption notice of the given
	// length (wall time), starting now: spot.Interrupt, passed in so
	// that the engine need not link the spot controller's package. The
	// trace's interruptions call it. Nil refuses a trace that has any.
	Interrupt func(ctx context.Context, nodes []corev1.Node, notice time.Duration) error
}

// Run replays o.Trace on the cluster and returns what it measured. When
// ctx ends first (Ctrl-C), it returns the report so far, marked partial,
// with ctx's error.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	end := o.Trace.End()
	until := o.Until
	if until == 0 {
		until = 3 * end
	}
	if len(o.Trace.Interruptions) > 0 && o.Interrupt == nil {
		return nil, problem.New("the trace interrupts spot pools and this rehearsal has no way to", "set Options.Interrupt (berth rehearse sets spot.Interrupt)")
	}
	// Every row's objects first: a row berth cannot build stops the
	// rehearsal before anything is submitted.
	var plan []step
	for _, j := range o.Trace.Jobs {
		w, err := workloadFor(o.Blueprint, j, o.Speed)
		if err != nil {
			return nil, rowProblem(j, err)
		}
		plan = append(plan, step{at: j.Submit, w: w})
		if j.Kind == scaffold.Inference && j.Duration > 0 {
			plan = append(plan, step{at: j.Submit + j.Duration, w: w, remove: true})
		}
	}
	for _, q := range o.Trace.Queues {
		if q.Team == "" {
			continue
		}
		w, err := workerFor(o.Blueprint, q)
		if err != nil {
			return nil, fmt.Errorf("queue %s's worker: %w", q.Name, err)
		}
		plan = append(plan, step{w: w, worker: true})
	}
	for _, in := range o.Trace.Interruptions {
		plan = append(plan, step{at: in.At, interrupt: &in})
	}
	for _, d := range o.Trace.Drains {
		plan = append(plan, step{at: d.At, drain: &d})
	}
	sort.SliceStable(plan, func(a, b int) bool { return plan[a].at < plan[b].at })

	factory := slim.Informers(o.Client, 0)
	clock := Clock{Speed: o.Speed}
	// The recorder needs the clock's start before the informers deliver;
	// it is set once they have synced, below.
	rec := newRecorder(o.Client, clock, o.Blueprint)
	rec.nodeStore = factory.Core().V1().Nodes().Informer().GetStore()
	for _, j := range o.Trace.Jobs {
		if j.Kind != scaffold.Inference {
			rec.total++
		}
	}
	watch := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{factory.Core().V1().Nodes().Informer(), handlers(rec.onNode)},
		{factory.Core().V1().Pods().Informer(), handlers(rec.onPod)},
		{factory.Batch().V1().Jobs().Informer(), handlers(rec.onJob)},
		{factory.Apps().V1().Deployments().Informer(), handlers(rec.onDeployment)},
		{factory.Policy().V1().PodDisruptionBudgets().Informer(), handlers(rec.onBudget)},
		{factory.Core().V1().Events().Informer(), handlers(rec.onEvent)},
	}
	rec.mu.Lock()
	for _, w := range watch {
		if _, err := w.informer.AddEventHandler(w.handler); err != nil {
			rec.mu.Unlock()
			return nil, err
		}
	}
	// The clock starts now: nodes already up count from the trace's
	// start.
	clock.Start = time.Now()
	rec.reset(clock)
	rec.mu.Unlock()
	// The informers stop when Run returns: Shutdown waits for them, so
	// their stop comes first (deferred calls run last first).
	watching, stopWatching := context.WithCancel(ctx)
	defer factory.Shutdown()
	defer stopWatching()
	factory.Start(watching.Done())
	// stoppedEarly is the report of a rehearsal stopped (Ctrl-C) before
	// its replay got going: what little it saw, marked partial.
	stoppedEarly := func() (*Report, error) {
		rec.patches.Wait()
		rep := rec.report(time.Now(), o)
		rep.Partial = true
		return rep, ctx.Err()
	}
	for typ, ok := range factory.WaitForCacheSync(watching.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return stoppedEarly()
			}
			return nil, fmt.Errorf("watching the cluster's %v: %w", typ, ctx.Err())
		}
	}
	if o.Trace.Load != nil {
		if _, err := metricsapi.UpdateLoad(ctx, o.Client, func(l *metricsapi.Load) error {
			// The trace's queues drain as their workers run, an item
			// every ItemTime of trace time (the playback's speed).
			l.Play(o.Trace.Load, clock.Start, o.Speed)
			for _, q := range o.Trace.Queues {
				l.SetItemTime(q.Name, q.ItemTime)
			}
			return nil
		}); err != nil {
			if ctx.Err() != nil {
				return stoppedEarly()
			}
			return nil, fmt.Errorf("playing the trace's load: %w", err)
		}
	}

	// Drains run beside the submissions; one still under way when the
	// rehearsal stops is stopped with it.
	var drains sync.WaitGroup
	draining, stopDraining := context.WithCancel(ctx)
	defer stopDraining()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		for _, s := range plan {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(clock.Wall(s.at))):
			}
			if s.interrupt != nil {
				rec.disrupted(interrupt(ctx, o, *s.interrupt))
				continue
			}
			if s.drain != nil {
				// A drain takes a while: the submissions go on.
				drains.Add(1)
				go func() {
					defer drains.Done()
					rec.drain(draining, o, *s.drain)
				}()
				continue
			}
			if s.worker {
				if err := s.w.create(ctx, o.Client); err != nil {
					rec.note("queue worker " + s.w.namespace + "/" + s.w.job.Name + " was refused: " + err.Error())
				}
				continue
			}
			if s.remove {
				_ = s.w.remove(ctx, o.Client)
				rec.removed(s.w, time.Now())
				continue
			}
			err := s.w.create(ctx, o.Client)
			now := time.Now()
			rec.submitted(s.w, now, err)
			rec.late(now.Sub(clock.Wall(s.at)))
		}
	}()

	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var runErr error
	allSubmitted := false
wait:
	for {
		now := time.Now()
		at := clock.Trace(now)
		if allSubmitted && at >= end && rec.settled() {
			break
		}
		if at >= until {
			fmt.Fprintf(o.Progress, "  stopped at %s of trace time (--until): jobs still waiting or running are reported unfinished\n", round(until))
			break
		}
		select {
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		case <-submitted:
			allSubmitted, submitted = true, nil
		case <-rec.changed:
		case <-tick.C:
			fmt.Fprintf(o.Progress, "  %s\n", rec.progress(now, end))
		case <-time.After(time.Until(clock.Wall(end))):
		}
	}
	stopped := time.Now()
	stopDraining()
	drains.Wait()
	rec.patches.Wait()
	rep := rec.report(stopped, o)
	rep.Partial = runErr != nil
	return rep, runErr
}

// late notes how far behind its schedule a submission was made: a
// machine too busy for the speed falls behind the clock.
func (r *recorder) late(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lag = max(r.lag, d)
}

// note adds a note to the report.
func (r *recorder) note(n string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
}

// step is a moment of the replay: a row submitted, an inference row's
// service removed, a queue's worker made, or a pool interrupted or
// drained.
type step struct {
	at        time.Duration
	w         *workload
	remove    bool
	interrupt *trace.Interruption
	drain     *trace.Drain
	// worker marks a queue's worker, made at the start and not measured
	// as a row: the pools show what it did.
	worker bool
}

// settled reports whether every Job has finished (or was refused).
func (r *recorder) settled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.jobs {
		if j.refused == "" && j.finished.IsZero() {
			return false
		}
	}
	return true
}

// progress is one line on how far the replay is.
func (r *recorder) progress(now time.Time, end time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var waiting, running, done int
	for _, j := range r.jobs {
		switch {
		case !j.finished.IsZero() || j.refused != "":
			done++
		case !j.allStarted.IsZero():
			running++
		default:
			waiting++
		}
	}
	var nodes []string
	for _, name := range sortedKeys(r.pools) {
		nodes = append(nodes, fmt.Sprintf("%s %g", name, r.pools[name].nodes.v))
	}
	at := r.clock.Trace(now)
	left := "the trace is over, waiting for jobs to finish"
	if at < end {
		left = fmt.Sprintf("about %s left", r.clock.Scale(end-at).Round(time.Second))
	}
	return fmt.Sprintf("%s of %s of trace, %s: jobs %d of %d done, %d running, %d waiting; nodes %s",
		round(at), round(end), left, done, r.total, running, waiting, strings.Join(nodes, ", "))
}

// rowProblem places a row's error at its trace line.
func rowProblem(j trace.Job, err error) error {
	p, ok := problem.As(err)
	if !ok {
		p = &problem.Problem{Message: err.Error(), Err: err}
	}
	q := *p
	q.File, q.Line = j.File, j.Line
	if q.Object == (problem.Object{}) {
		q.Message = fmt.Sprintf("%s %s of team %s: %s", j.Kind, j.Name, j.Team, q.Message)
	}
	return &q
}

func round(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
