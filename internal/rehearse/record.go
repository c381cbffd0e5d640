package rehearse

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/simtime"
)

// recorder watches the cluster and keeps what the report needs: per job
// its pods' lives, per pool its nodes and GPUs over time, per service its
// ready replicas against its budget. Informer handlers call it with the
// time they saw a change; it never lists in a loop.
type recorder struct {
	mu     sync.Mutex
	tl     timeline
	client kubernetes.Interface
	// nodeStore is the node informer's store, for a pod seen running on
	// a node the recorder has not been told of yet.
	nodeStore cache.Store
	// teams maps a namespace to the team it belongs to.
	teams map[string]string
	// quota is each team's GPU quota, for the report's charts.
	quota map[string]float64

	jobs     map[string]*jobRun // namespace/name
	services map[string]*serviceRun
	pods     map[types.UID]*podRun
	nodes    map[string]*nodeRun
	pools    map[string]*poolRun
	// volumes are the volumes provisioned for the rehearsal's claims,
	// by name.
	volumes map[string]*volumeRun
	// pending counts the rehearsal's pods made and not yet running;
	// waiting its Jobs admitted whose pods have not all started (a Job
	// the quota holds back has no pod to be pending); teamGPUs the GPUs
	// each team's pods hold.
	pending  level
	waiting  level
	teamGPUs map[string]*level
	// changed is signalled (without blocking) after each change, so that
	// Run's wait notices the end at once.
	changed chan struct{}
	// total counts the trace's training and batch rows.
	total int
	// patches run the resume patches outside the informers' handlers.
	patches sync.WaitGroup
	// disruptions are the trace's interruptions as carried out; notes
	// what the report should say besides.
	disruptions []report.DisruptionResult
	notes       []string
	// queues are the teams' queues, under queueing: Kueue; nil under
	// ResourceQuota.
	queues *queues
	// late counts the objects first seen at a later moment of the clock
	// than the one the API server stamped them with: each is an event
	// that reached the recorder after the clock had moved on, a sign that
	// the clock called the cluster settled too soon.
	late int
}

// jobRun is one training or batch row's Job as the cluster ran it.
type jobRun struct {
	w         *workload
	submitted time.Time
	// refused is admission's refusal of the Job itself, if any.
	refused string
	// seen counts the pods the Job made, live those not ended, running
	// those Running now and started those that ever ran.
	seen, live, running, started int
	// ranOn is the pools its pods started on, in the order they started,
	// a pool named again only after a start on another.
	ranOn []string
	// allStarted is when the last of its pods first ran: every pod of
	// its parallelism had started (at once for a gang, one after another
	// when its quota or room let only some run).
	allStarted time.Time
	finished   time.Time
	failed     bool
	// backoffFailures is the Job's status.failed: its pods that failed
	// and counted against its backoffLimit.
	backoffFailures int
	// preemptions and interruptions count pods that ended early, by
	// whom: the scheduler for a higher priority, or anything else that
	// took the node or the pod away (spot, drain, eviction).
	preemptions, interruptions int
	// lost is work done and not checkpointed, in trace time, summed
	// over the pods that ended early.
	lost time.Duration
	// saved is work checkpointed by pods that ended early, waiting for
	// a replacement; awaiting are replacements waiting for it.
	saved    []time.Duration
	awaiting []*podRun
	// quotaSince is when the Job's pods were last refused by quota, and
	// quotaRefused how long they have been in all.
	quotaSince   time.Time
	quotaRefused time.Duration
	// replacementWait is how long its replacement pods waited to start,
	// in all, and replacements how many started: a checkpointed training
	// Job's replacements run only in its checkpoint volume's zone.
	replacementWait time.Duration
	replacements    int
	// Under Kueue: suspendedSince is when the Job was last seen
	// suspended in its queue (zero: it is not), suspended how long it
	// was before; requeued counts its pods that ended because Kueue
	// suspended it again (a preemption Kueue made).
	suspendedSince time.Time
	suspended      time.Duration
	requeued       int
}

// podRun is one pod of the rehearsal.
type podRun struct {
	job       *jobRun
	namespace string
	name      string
	team      string
	pool      string
	gpus, cpu float64
	started   time.Time
	// seenAt is when the pod was first seen; replacement marks a pod its
	// Job made past its parallelism, in place of one that ended early.
	seenAt      time.Time
	replacement bool
	// from is the work the pod resumed from (trace time).
	from  time.Duration
	ended bool
}

// volumeRun is one volume: its class and size, from when it was seen
// until it was deleted (zero: it outlived the rehearsal).
type volumeRun struct {
	class    string
	gib      float64
	from, to time.Time
}

type nodeRun struct {
	pool string
	gpus float64
}

// poolRun is a pool's nodes and GPUs over time.
type poolRun struct {
	name     string
	capacity string
	nodes    level
	gpus     level
	// allocated is the GPUs held by running pods; used the teams' share
	// of GPUs and CPU.
	allocated level
	used      map[string]*teamUse
}

type teamUse struct{ gpus, cpu level }

// serviceRun is one inference row's service as the cluster ran it.
type serviceRun struct {
	w         *workload
	submitted time.Time
	removed   time.Time
	refused   string
	ready     level
	// minAvailable is its budget's desired healthy pods; below how long
	// it had fewer Ready replicas, from its submission (start-up
	// included: a service is below its budget until it first reaches it).
	minAvailable int32
	readyNow     int32
	below        time.Duration
	belowSince   time.Time
}

func newRecorder(client kubernetes.Interface, tl timeline, bp *v1alpha1.Blueprint) *recorder {
	r := &recorder{
		tl: tl, client: client, teams: map[string]string{},
		jobs: map[string]*jobRun{}, services: map[string]*serviceRun{}, pods: map[types.UID]*podRun{},
		nodes: map[string]*nodeRun{}, pools: map[string]*poolRun{}, volumes: map[string]*volumeRun{}, changed: make(chan struct{}, 1),
		quota: map[string]float64{},
	}
	for _, t := range bp.Spec.Teams {
		r.teams[t.Name] = t.Name
		if t.Quota != nil && t.Quota.GPU != nil {
			r.quota[t.Name] = float64(t.Quota.GPU.Value())
		}
		for _, ns := range t.Namespaces {
			r.teams[ns] = t.Name
		}
	}
	for _, p := range bp.Spec.Pools {
		pr := r.pool(p.Name)
		pr.capacity = string(p.Capacity)
	}
	for _, p := range r.pools {
		p.nodes, p.gpus, p.allocated = level{keep: true}, level{}, level{}
		p.nodes.set(tl.start, 0)
		p.gpus.set(tl.start, 0)
		p.allocated.set(tl.start, 0)
	}
	r.pending = level{keep: true}
	r.pending.set(tl.start, 0)
	r.waiting = level{keep: true}
	r.waiting.set(tl.start, 0)
	r.teamGPUs = map[string]*level{}
	if bp.Spec.UsesKueue() {
		r.queues = newQueues(bp, tl.start)
	}
	return r
}

// teamLevel is the GPUs a team's pods hold.
func (r *recorder) teamLevel(team string) *level {
	l := r.teamGPUs[team]
	if l == nil {
		l = &level{keep: true}
		l.set(r.tl.start, 0)
		r.teamGPUs[team] = l
	}
	return l
}

func (r *recorder) pool(name string) *poolRun {
	p := r.pools[name]
	if p == nil {
		p = &poolRun{name: name, used: map[string]*teamUse{}, nodes: level{keep: true}}
		r.pools[name] = p
	}
	return p
}

func (r *recorder) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// handlers adapts a recorder method to an informer's events.
func handlers[T any](on func(obj T, deleted bool)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				on(o, false)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(T); ok {
				on(o, false)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(T); ok {
				on(o, true)
			}
		},
	}
}

// submitting registers a row's Job or service before it is created: the
// Job controller may make its pods, and the pod informer deliver them,
// before the create returns, and a pod is counted for its Job only if
// the Job is known when the pod is first seen.
func (r *recorder) submitting(w *workload, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := w.namespace + "/" + w.job.Name
	if w.job.Kind == scaffold.Inference {
		s := &serviceRun{w: w, submitted: now, minAvailable: w.minAvailable, ready: level{keep: true}}
		s.ready.set(now, 0)
		r.services[key] = s
	} else {
		r.jobs[key] = &jobRun{w: w, submitted: now}
	}
}

// submitted notes how a row's submission (registered by submitting)
// ended: refused, with the API server's error, or created.
func (r *recorder) submitted(w *workload, now time.Time, refused error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := w.namespace + "/" + w.job.Name
	msg := ""
	if refused != nil {
		msg = refused.Error()
	}
	if w.job.Kind == scaffold.Inference {
		s := r.services[key]
		s.refused = msg
		if refused == nil {
			s.update(now)
		}
	} else {
		r.jobs[key].refused = msg
		if refused == nil {
			r.waiting.add(now, 1)
		}
	}
	r.signal()
}

// removed notes an inference row's service deleted at the end of its
// duration.
func (r *recorder) removed(w *workload, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.services[w.namespace+"/"+w.job.Name]; s != nil {
		s.removed = now
		s.closeBelow(now)
		s.ready.set(now, 0)
	}
}

func (r *recorder) onNode(n *corev1.Node, deleted bool) {
	pool := n.Labels[v1alpha1.LabelPool]
	if pool == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.tl.now()
	_, known := r.nodes[n.Name]
	switch {
	case deleted && known:
		nr := r.nodes[n.Name]
		delete(r.nodes, n.Name)
		p := r.pool(nr.pool)
		p.nodes.add(now, -1)
		p.gpus.add(now, -nr.gpus)
	case !deleted && !known:
		r.noteLate("node", n.Name, n.CreationTimestamp.Time, now)
		r.addNode(n, now)
	}
	r.signal()
}

func (r *recorder) onPod(p *corev1.Pod, deleted bool) {
	if _, ok := p.Labels[v1alpha1.LabelRehearsal]; !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.tl.now()
	pr := r.pods[p.UID]
	if pr == nil {
		if deleted {
			return
		}
		pr = &podRun{namespace: p.Namespace, name: p.Name, team: r.teams[p.Namespace], gpus: podGPUs(p), cpu: podCPU(p), seenAt: now}
		r.noteLate("pod", p.Namespace+"/"+p.Name, p.CreationTimestamp.Time, now)
		r.pods[p.UID] = pr
		r.pending.add(now, 1)
		if name := p.Labels[batchv1.JobNameLabel]; name != "" {
			if j := r.jobs[p.Namespace+"/"+name]; j != nil {
				pr.job = j
				j.seen++
				j.live++
				if j.live >= int(j.w.job.Pods) {
					j.closeQuota(now)
				}
				if j.seen > int(j.w.job.Pods) {
					pr.replacement = true
					r.resume(j, pr)
				}
			}
		}
	}
	if pr.ended {
		return
	}
	if pr.started.IsZero() && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !deleted {
		r.start(pr, p, now)
	}
	if deleted || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		r.end(pr, p, now)
	}
	r.signal()
}

// onVolume counts a volume from when it is first seen until it is
// deleted: the storage a class's price is paid for.
func (r *recorder) onVolume(pv *corev1.PersistentVolume, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.tl.now()
	v := r.volumes[pv.Name]
	if v == nil {
		if deleted {
			return
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		v = &volumeRun{class: pv.Spec.StorageClassName, gib: float64(size.Value()) / (1 << 30), from: now}
		r.volumes[pv.Name] = v
	}
	if deleted && v.to.IsZero() {
		v.to = now
	}
}

// noteLate counts an object first seen at now that the API server
// stamped created at an earlier moment. r.mu is held.
func (r *recorder) noteLate(kind, name string, created, now time.Time) {
	if created.IsZero() || !created.Before(now.Truncate(time.Second)) {
		return
	}
	r.late++
	klog.V(2).InfoS("the rehearsal's recorder saw an object after the clock had moved on", "kind", kind, "name", name, "created", created, "seen", now)
	simtime.Tracef("late: %s %s created at %s, seen at %s", kind, name, created.Format(time.TimeOnly), now.Format(time.TimeOnly))
}

// addNode counts a node of a pool from now. r.mu is held.
func (r *recorder) addNode(n *corev1.Node, now time.Time) *nodeRun {
	gpus := 0.0
	if q, ok := n.Status.Capacity[corev1.ResourceName(v1alpha1.DefaultGPUResource)]; ok {
		gpus = float64(q.Value())
	}
	if c, err := resourceCount(n.Labels[v1alpha1.LabelGPUCount]); err == nil {
		gpus = c
	}
	pool := n.Labels[v1alpha1.LabelPool]
	nr := &nodeRun{pool: pool, gpus: gpus}
	r.nodes[n.Name] = nr
	p := r.pool(pool)
	if p.capacity == "" {
		p.capacity = n.Labels[v1alpha1.LabelCapacity]
	}
	p.nodes.add(now, 1)
	p.gpus.add(now, gpus)
	return nr
}

// nodeOf is the node a pod runs on as the recorder counts it. The pod
// and node informers deliver on goroutines of their own, so a pod may
// be seen running before its node has been: the node is then read from
// the node informer's store, else from the API server, and counted
// from now. Nil for a node that is not a pool's or cannot be read.
func (r *recorder) nodeOf(name string, now time.Time) *nodeRun {
	if nr := r.nodes[name]; nr != nil || name == "" {
		return nr
	}
	var n *corev1.Node
	if r.nodeStore != nil {
		if obj, ok, err := r.nodeStore.GetByKey(name); err == nil && ok {
			n, _ = obj.(*corev1.Node)
		}
	}
	if n == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := r.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			klog.V(2).InfoS("reading a pod's node", "node", name, "err", err)
			return nil
		}
		n = got
	}
	if n.Labels[v1alpha1.LabelPool] == "" {
		return nil
	}
	return r.addNode(n, now)
}

// start counts a pod that runs from now: its GPUs and CPU on its pool,
// and its Job's pods running.
func (r *recorder) start(pr *podRun, p *corev1.Pod, now time.Time) {
	pr.started = now
	r.pending.add(now, -1)
	if n := r.nodeOf(p.Spec.NodeName, now); n != nil {
		pr.pool = n.pool
	} else {
		pr.pool = p.Spec.NodeSelector[v1alpha1.LabelPool]
	}
	pool := r.pool(pr.pool)
	pool.allocated.add(now, pr.gpus)
	use := pool.used[pr.team]
	if use == nil {
		use = &teamUse{gpus: level{keep: true}}
		use.gpus.set(r.tl.start, 0)
		use.cpu.set(r.tl.start, 0)
		pool.used[pr.team] = use
	}
	use.gpus.add(now, pr.gpus)
	use.cpu.add(now, pr.cpu)
	if pr.gpus > 0 {
		r.teamLevel(pr.team).add(now, pr.gpus)
		if r.queues != nil && pr.job != nil {
			r.queues.use(now, pr.team, pr.pool, pr.gpus)
		}
	}
	if j := pr.job; j != nil {
		if len(j.ranOn) == 0 || j.ranOn[len(j.ranOn)-1] != pr.pool {
			j.ranOn = append(j.ranOn, pr.pool)
		}
		j.running++
		j.started++
		if pr.replacement {
			j.replacementWait += now.Sub(pr.seenAt)
			j.replacements++
		}
		if j.started >= int(j.w.job.Pods) && j.allStarted.IsZero() {
			j.allStarted = now
			if j.finished.IsZero() {
				r.waiting.add(now, -1)
			}
		}
	}
}

// end closes a pod's life. A pod of a Job that ended early (not
// Succeeded) hands its checkpointed work to its replacement and counts
// the rest as lost.
func (r *recorder) end(pr *podRun, p *corev1.Pod, now time.Time) {
	pr.ended = true
	if pr.started.IsZero() {
		r.pending.add(now, -1)
	}
	if !pr.started.IsZero() {
		pool := r.pool(pr.pool)
		pool.allocated.add(now, -pr.gpus)
		if use := pool.used[pr.team]; use != nil {
			use.gpus.add(now, -pr.gpus)
			use.cpu.add(now, -pr.cpu)
		}
		if pr.gpus > 0 {
			r.teamLevel(pr.team).add(now, -pr.gpus)
			if r.queues != nil && pr.job != nil {
				r.queues.use(now, pr.team, pr.pool, -pr.gpus)
			}
		}
	}
	j := pr.job
	if j != nil {
		j.live--
	}
	if j == nil || p.Status.Phase == corev1.PodSucceeded {
		if j != nil && !pr.started.IsZero() {
			j.running--
		}
		return
	}
	if !pr.started.IsZero() {
		j.running--
	}
	if reason := disruption(p); reason == corev1.PodReasonPreemptionByScheduler {
		j.preemptions++
	} else if !j.suspendedSince.IsZero() {
		// Its Job was suspended: Kueue took its quota back.
		j.requeued++
	} else {
		j.interruptions++
	}
	work := pr.from
	if !pr.started.IsZero() {
		work += now.Sub(pr.started)
	}
	work = min(work, j.w.job.Duration)
	saved := time.Duration(0)
	if c := j.w.job.Checkpoint; c > 0 {
		saved = work / c * c
	}
	j.lost += work - saved
	if len(j.awaiting) > 0 {
		next := j.awaiting[0]
		j.awaiting = j.awaiting[1:]
		r.patchFrom(next, saved)
		return
	}
	j.saved = append(j.saved, saved)
}

// resume gives a Job's replacement pod the work its predecessor saved,
// or has it wait for that work if the predecessor's end has not been
// seen yet.
func (r *recorder) resume(j *jobRun, pr *podRun) {
	if len(j.saved) == 0 {
		j.awaiting = append(j.awaiting, pr)
		return
	}
	saved := j.saved[0]
	j.saved = j.saved[1:]
	r.patchFrom(pr, saved)
}

// patchFrom has a replacement pod run only the work left after saved:
// its berth.io/duration becomes the rest, counted (as KWOK counts it)
// from its own start time. Zero saved leaves the whole duration.
func (r *recorder) patchFrom(pr *podRun, saved time.Duration) {
	pr.from = saved
	if saved == 0 {
		return
	}
	rest := runTime(pr.job.w.job.Duration - saved)
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationDuration: rest}}})
	r.patches.Add(1)
	go func() {
		defer r.patches.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := r.client.CoreV1().Pods(pr.namespace).Patch(ctx, pr.name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager}); err != nil {
			klog.V(2).InfoS("resuming a replacement pod from its checkpoint", "pod", pr.namespace+"/"+pr.name, "err", err)
		}
	}()
}

func (r *recorder) onJob(j *batchv1.Job, deleted bool) {
	if _, ok := j.Labels[v1alpha1.LabelRehearsal]; !ok || deleted {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.jobs[j.Namespace+"/"+j.Name]
	if run == nil || !run.finished.IsZero() {
		return
	}
	run.backoffFailures = int(j.Status.Failed)
	if r.queues != nil {
		now := r.tl.now()
		switch suspended := j.Spec.Suspend != nil && *j.Spec.Suspend; {
		case suspended && run.suspendedSince.IsZero():
			run.suspendedSince = now
		case !suspended:
			run.closeSuspended(now)
		}
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobFailed:
			now := r.tl.now()
			if run.allStarted.IsZero() {
				r.waiting.add(now, -1) // ended before all its pods ran
			}
			run.finished = now
			run.failed = c.Type == batchv1.JobFailed
			run.closeQuota(now)
			run.closeSuspended(now)
			r.signal()
		}
	}
}

// onEvent notes a Job's pods refused by quota: the Job controller's
// FailedCreate event, as `kubectl describe job` shows it; and under
// Kueue, a Job Kueue stopped to preempt it.
func (r *recorder) onEvent(e *corev1.Event, deleted bool) {
	if r.queues != nil && !deleted && e.Reason == kueueStopped {
		r.mu.Lock()
		defer r.mu.Unlock()
		if j := r.jobs[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name]; j != nil {
			r.queues.preempted(e, r.teams[e.InvolvedObject.Namespace])
		}
		return
	}
	if deleted || e.InvolvedObject.Kind != "Job" || e.Reason != "FailedCreate" || !strings.Contains(e.Message, "exceeded quota") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name]
	if j == nil || !j.finished.IsZero() || j.live >= int(j.w.job.Pods) || !j.quotaSince.IsZero() {
		return
	}
	j.quotaSince = r.tl.now()
}

// closeSuspended ends the Job's time suspended in its queue, if it is.
func (j *jobRun) closeSuspended(now time.Time) {
	if !j.suspendedSince.IsZero() {
		j.suspended += now.Sub(j.suspendedSince)
		j.suspendedSince = time.Time{}
	}
}

func (j *jobRun) closeQuota(now time.Time) {
	if !j.quotaSince.IsZero() {
		j.quotaRefused += now.Sub(j.quotaSince)
		j.quotaSince = time.Time{}
	}
}

func (r *recorder) onDeployment(d *appsv1.Deployment, deleted bool) {
	if _, ok := d.Labels[v1alpha1.LabelRehearsal]; !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.services[d.Namespace+"/"+d.Name]
	if s == nil || !s.removed.IsZero() {
		return
	}
	now := r.tl.now()
	s.readyNow = d.Status.ReadyReplicas
	if deleted {
		s.readyNow = 0
	}
	s.ready.set(now, float64(s.readyNow))
	s.update(now)
	r.signal()
}

// onBudget follows an inference service's budget: the one berth makes
// for a class with a disruption budget (labelled with the workload it
// protects), or the one `berth new` writes for a class without.
func (r *recorder) onBudget(b *policyv1.PodDisruptionBudget, deleted bool) {
	name := ""
	if v, ok := strings.CutPrefix(b.Labels[v1alpha1.LabelBudgetFor], "deployment."); ok {
		name = v
	} else if _, ok := b.Labels[v1alpha1.LabelRehearsal]; ok {
		name = b.Labels[v1alpha1.LabelAppName]
	}
	if name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.services[b.Namespace+"/"+name]
	if s == nil || !s.removed.IsZero() || deleted {
		return
	}
	now := r.tl.now()
	if b.Status.DesiredHealthy > 0 {
		s.minAvailable = b.Status.DesiredHealthy
	}
	s.update(now)
}

// update starts or ends a spell below the budget as the service's Ready
// replicas and its budget stand now.
func (s *serviceRun) update(now time.Time) {
	if s.readyNow < s.minAvailable {
		if s.belowSince.IsZero() {
			s.belowSince = now
		}
		return
	}
	s.closeBelow(now)
}

func (s *serviceRun) closeBelow(now time.Time) {
	if !s.belowSince.IsZero() {
		s.below += now.Sub(s.belowSince)
		s.belowSince = time.Time{}
	}
}

// disruption is the reason of a pod's DisruptionTarget condition, if it
// has one.
func disruption(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

func podGPUs(p *corev1.Pod) float64 {
	var n int64
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if strings.HasSuffix(string(name), "/gpu") {
				n += q.Value()
			}
		}
	}
	return float64(n)
}

func podCPU(p *corev1.Pod) float64 {
	var m int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			m += q.MilliValue()
		}
	}
	return float64(m) / 1000
}
