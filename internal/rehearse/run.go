package rehearse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/slim"
)

// Options are a rehearsal's inputs.
type Options struct {
	// Client reaches the cluster the rehearsal runs on, started from
	// Blueprint.
	Client kubernetes.Interface
	// Blueprint is the blueprint the cluster runs.
	Blueprint *v1alpha1.Blueprint
	// Trace is the workload to replay, checked against the blueprint.
	Trace *trace.Trace
	// Clock is the cluster's virtual clock (cluster.Options.Clock),
	// standing still until Run steps it with a simtime.Driver. Every
	// moment the rehearsal measures is read off it, and each row is
	// submitted when it reaches the row's time. Required.
	Clock *simtime.Clock
	// Speed caps the clock at Speed seconds of trace per second of wall
	// time (to watch a rehearsal live); zero runs it as fast as the
	// cluster settles.
	Speed float64
	// Until ends the rehearsal at this trace time even if jobs are still
	// waiting or running; they are reported unfinished. Zero means three
	// times the trace's end.
	Until time.Duration
	// Prices are the pools' prices (prices.Price), in pool order. Nil
	// leaves cost out of the report.
	Prices []prices.PoolPrice
	// Progress receives a line every few seconds. Nil discards them.
	Progress io.Writer
	// Interrupt gives nodes a spot interruption notice of the given
	// length, starting at now: spot.Interrupt, passed in so that the
	// engine need not link the spot controller's package. The trace's
	// interruptions call it. Nil refuses a trace that has any.
	Interrupt func(ctx context.Context, nodes []corev1.Node, notice time.Duration, now time.Time) error
}

// Run replays o.Trace on the cluster and returns what it measured. When
// ctx ends first (Ctrl-C), it returns the report so far, marked partial,
// with ctx's error.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Clock == nil {
		return nil, errors.New("rehearse.Run: Options.Clock is required: a rehearsal runs on the cluster's virtual clock")
	}
	end := o.Trace.End()
	until := o.Until
	if until == 0 {
		until = 3 * end
	}
	if len(o.Trace.Interruptions) > 0 && o.Interrupt == nil {
		return nil, problem.New("set Options.Interrupt (berth rehearse sets spot.Interrupt)", "the trace interrupts spot pools and this rehearsal has no way to")
	}
	plan, err := planOf(o)
	if err != nil {
		return nil, err
	}

	factory := slim.Informers(o.Client, 0)
	// The clock stands still until the driver moves it: the replay
	// starts where it stands.
	tl := timeline{clock: o.Clock, start: o.Clock.Now()}
	rec := newRecorder(o.Client, tl, o.Blueprint)
	rec.nodeStore = factory.Core().V1().Nodes().Informer().GetStore()
	for _, j := range o.Trace.Jobs {
		if j.Kind != scaffold.Inference {
			rec.total++
		}
	}
	for _, w := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{factory.Core().V1().Nodes().Informer(), handlers(rec.onNode)},
		{factory.Core().V1().Pods().Informer(), handlers(rec.onPod)},
		{factory.Batch().V1().Jobs().Informer(), handlers(rec.onJob)},
		{factory.Apps().V1().Deployments().Informer(), handlers(rec.onDeployment)},
		{factory.Policy().V1().PodDisruptionBudgets().Informer(), handlers(rec.onBudget)},
		{factory.Core().V1().Events().Informer(), handlers(rec.onEvent)},
		{factory.Core().V1().PersistentVolumes().Informer(), handlers(rec.onVolume)},
	} {
		if _, err := w.informer.AddEventHandler(w.handler); err != nil {
			return nil, err
		}
	}
	// The informers stop when Run returns: Shutdown waits for them, so
	// their stop comes first (deferred calls run last first).
	watching, stopWatching := context.WithCancel(ctx)
	defer factory.Shutdown()
	defer stopWatching()
	factory.Start(watching.Done())
	wallStart := time.Now()
	// stoppedEarly is the report of a rehearsal stopped (Ctrl-C) before
	// its replay got going: what little it saw, marked partial.
	stoppedEarly := func() (*report.Report, error) {
		rec.patches.Wait()
		rep := rec.report(tl.now(), o)
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
	// A recorder beside the rehearsal (berth record --watch) reads where
	// the trace starts on the clock.
	if err := writeMarker(ctx, o.Client, tl.start); err != nil {
		if ctx.Err() != nil {
			return stoppedEarly()
		}
		return nil, fmt.Errorf("marking the rehearsal's start: %w", err)
	}
	if o.Trace.Load != nil {
		if _, err := metricsapi.UpdateLoad(ctx, o.Client, func(l *metricsapi.Load) error {
			// The trace's queues drain as their workers run, an item
			// every ItemTime of trace time.
			l.Play(o.Trace.Load, tl.start, 1)
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

	// The clock moves from here on: a step each time the cluster has
	// settled.
	driver := simtime.NewDriver(o.Clock)
	driver.Speed = o.Speed
	driving, stopDriving := context.WithCancel(ctx)
	driven := make(chan struct{})
	go func() {
		defer close(driven)
		driver.Run(driving)
	}()
	defer func() { stopDriving(); <-driven }()

	// Drains run beside the submissions; one still under way when the
	// rehearsal stops is stopped with it.
	var drains sync.WaitGroup
	draining, stopDraining := context.WithCancel(ctx)
	defer stopDraining()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		for _, s := range plan {
			if !waitUntil(ctx, o.Clock, tl.at(s.at)) {
				return
			}
			rec.step(ctx, o, s, draining, &drains)
		}
	}()

	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	ends := o.Clock.NewTimer(tl.at(end).Sub(o.Clock.Now()))
	defer ends.Stop()
	stops := o.Clock.NewTimer(tl.at(until).Sub(o.Clock.Now()))
	defer stops.Stop()
	var runErr error
	allSubmitted := false
wait:
	for {
		at := tl.trace(tl.now())
		if allSubmitted && at >= end && rec.settled() {
			break
		}
		if at >= until {
			fmt.Fprintf(o.Progress, "  stopped at %s of trace time (--until): jobs still waiting or running are reported unfinished\n", until.Round(time.Second))
			break
		}
		select {
		case <-ctx.Done():
			runErr = ctx.Err()
			break wait
		case <-submitted:
			allSubmitted, submitted = true, nil
		case <-rec.changed:
		case <-ends.C():
		case <-stops.C():
		case <-tick.C:
			fmt.Fprintf(o.Progress, "  %s\n", rec.progress(tl.now(), end, driver))
		}
	}
	stopped := tl.now()
	stopDraining()
	drains.Wait()
	rec.patches.Wait()
	rep := rec.report(stopped, o)
	rep.Partial = runErr != nil
	rep.Wall = report.Duration(time.Since(wallStart))
	rep.Clock = clockReport(o.Clock, driver)
	rec.mu.Lock()
	rep.Clock.Late = rec.late + int(o.Clock.Activity().Late())
	rec.mu.Unlock()
	return rep, runErr
}

// waitUntil waits for the clock to reach at, in the phase of a moment
// where the trace's rows are submitted (simtime.PhaseSubmit: after the
// pods that end at that moment have ended), and reports false if ctx
// ended first.
func waitUntil(ctx context.Context, clk *simtime.Clock, at time.Time) bool {
	t := clk.Phase(simtime.PhaseSubmit).NewTimer(at.Sub(clk.Now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// planOf builds every row's objects first, so that a row berth cannot
// build stops the rehearsal before anything is submitted, and orders the
// replay's moments: submissions, removals of inference services, queue
// workers, interruptions and drains.
func planOf(o Options) ([]step, error) {
	var plan []step
	for _, j := range o.Trace.Jobs {
		w, err := workloadFor(o.Blueprint, j)
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
	return plan, nil
}

// step carries out one moment of the replay, at its time on the clock.
func (r *recorder) step(ctx context.Context, o Options, s step, draining context.Context, drains *sync.WaitGroup) {
	switch {
	case s.interrupt != nil:
		r.disrupted(interrupt(ctx, o, *s.interrupt))
	case s.drain != nil:
		// A drain takes a while: the submissions go on.
		drains.Add(1)
		go func() {
			defer drains.Done()
			r.drain(draining, o, *s.drain)
		}()
	case s.worker:
		if err := s.w.create(ctx, o.Client); err != nil {
			r.note("queue worker " + s.w.namespace + "/" + s.w.job.Name + " was refused: " + err.Error())
		}
	case s.remove:
		_ = s.w.remove(ctx, o.Client)
		r.removed(s.w, r.tl.now())
	default:
		now := r.tl.now()
		r.submitting(s.w, now)
		err := s.w.create(ctx, o.Client)
		r.submitted(s.w, now, err)
	}
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
func (r *recorder) progress(now time.Time, end time.Duration, d *simtime.Driver) string {
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
	for _, name := range slices.Sorted(maps.Keys(r.pools)) {
		nodes = append(nodes, fmt.Sprintf("%s %g", name, r.pools[name].nodes.v))
	}
	at := r.tl.trace(now)
	left := "the trace is over, waiting for jobs to finish"
	if at < end {
		left = fmt.Sprintf("%s of trace to go", report.Round(end-at))
	}
	steps := fmt.Sprintf("%d clock steps", d.Stats().Steps)
	if w := d.Waiting(); w != "" {
		steps += "; waiting for " + w + " to settle"
	}
	return fmt.Sprintf("%s of %s of trace, %s: jobs %d of %d done, %d running, %d waiting; nodes %s (%s)",
		report.Round(at), report.Round(end), left, done, r.total, running, waiting, strings.Join(nodes, ", "), steps)
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
