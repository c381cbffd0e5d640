package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/record"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/words"
)

// resumeTrace opens path for appending rows: the names of the rows it
// holds, and whether it has its header. A last line cut short (a run
// killed mid-write) is dropped, so the file reads as a trace again.
func resumeTrace(path string) (*os.File, map[string]bool, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, false, problem.Errorf("check the path of -o", "reading the trace to resume: %w", err)
	}
	if n := bytes.LastIndexByte(data, '\n'); len(data) > 0 && n < len(data)-1 {
		data = data[:n+1]
		if err := os.Truncate(path, int64(n+1)); err != nil {
			return nil, nil, false, err
		}
	}
	names, header, err := trace.RowNames(path, bytes.NewReader(data))
	if err != nil {
		return nil, nil, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, false, problem.Errorf("check the path of -o", "writing the trace: %w", err)
	}
	return f, names, header, nil
}

// watcher writes each Job as it finishes, once.
type watcher struct {
	o      *recordOptions
	opts   record.Options
	out    *trace.Appender
	start  time.Time
	pods   cache.Indexer
	nsList func() []corev1.Namespace

	mu sync.Mutex
	// finished holds each finished Job seen, with its pods as last seen
	// (a Job deleted at once by its TTL takes its pods with it).
	finished map[types.UID]*seenJob
	// written maps TEAM/NAME of each row in the file to the UID that
	// wrote it this run ("" for a row the file had before).
	written map[string]string
	done    map[types.UID]bool
	rows    int
}

type seenJob struct {
	job  *batchv1.Job
	pods map[types.UID]corev1.Pod
}

func (o *recordOptions) runWatch(ctx context.Context, t *target, opts record.Options) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	if o.watchFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.watchFor)
		defer cancel()
	}
	f, names, header, err := resumeTrace(o.output)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := trace.NewAppender(f, !header, time.Time{}, o.comment())
	if err != nil {
		return err
	}
	w := &watcher{o: o, opts: opts, out: out, start: o.clock(), finished: map[types.UID]*seenJob{}, written: map[string]string{}, done: map[types.UID]bool{}}
	for n := range names {
		w.written[n] = ""
	}
	factory := informers.NewSharedInformerFactory(t.client.Kube, 0)
	podFactory := informers.NewSharedInformerFactoryWithOptions(t.client.Kube, 0, informers.WithTweakListOptions(func(l *metav1.ListOptions) {
		l.LabelSelector = batchv1.ControllerUidLabel
	}))
	jobs := factory.Batch().V1().Jobs().Informer()
	nss := factory.Core().V1().Namespaces()
	nsSynced := nss.Informer().HasSynced // registered before the factory starts
	w.pods = podFactory.Core().V1().Pods().Informer().GetIndexer()
	w.nsList = func() []corev1.Namespace {
		list, _ := nss.Lister().List(labels.Everything())
		out := make([]corev1.Namespace, 0, len(list))
		for _, ns := range list {
			out = append(out, *ns)
		}
		return out
	}
	queue := workqueue.NewTypedDelayingQueue[types.UID]()
	defer queue.ShutDown()
	seen := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		if w.see(j) {
			// A moment for the pods' last updates to reach their cache.
			queue.AddAfter(j.UID, time.Second)
		}
	}
	jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }})
	factory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), jobs.HasSynced, nsSynced) {
		return problem.New("check the cluster is reachable and that your credentials may watch Jobs and pods", "the Jobs were not listed before the watch ended")
	}
	fmt.Fprintf(o.ErrOut, "Watching; each Job is written to %s as it finishes (%s already there). Ctrl-C stops.\n", o.output, words.Count(len(names), "row"))
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		uid, shutdown := queue.Get()
		if shutdown {
			break
		}
		err := w.write(uid)
		queue.Done(uid)
		if err != nil {
			return err
		}
	}
	// What is left: Jobs finished in the last moment, then the services.
	w.mu.Lock()
	var left []types.UID
	for uid := range w.finished {
		if !w.done[uid] {
			left = append(left, uid)
		}
	}
	w.mu.Unlock()
	for _, uid := range left {
		if err := w.write(uid); err != nil {
			return err
		}
	}
	if err := w.services(t); err != nil {
		fmt.Fprintf(o.ErrOut, "warning: the GPU services could not be listed (%v): none written\n", err)
	}
	w.summary()
	return nil
}

// see notes j when it has finished in the window (during the watch, or
// after --since), and says whether it is new.
func (w *watcher) see(j *batchv1.Job) bool {
	end, done := record.Finished(j)
	if !done || (end.Before(w.start) && (w.opts.Since.IsZero() || j.CreationTimestamp.Time.Before(w.opts.Since))) {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.finished[j.UID]
	if !ok {
		s = &seenJob{pods: map[types.UID]corev1.Pod{}}
		w.finished[j.UID] = s
	}
	s.job = j.DeepCopy()
	w.notePods(s)
	return !ok
}

// notePods adds the Job's pods in the cache to what was seen of them.
func (w *watcher) notePods(s *seenJob) {
	objs, _ := w.pods.ByIndex(cache.NamespaceIndex, s.job.Namespace)
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == s.job.UID {
			s.pods[p.UID] = *p.DeepCopy()
		}
	}
}

// write appends the row of the Job uid, once.
func (w *watcher) write(uid types.UID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.finished[uid]
	if s == nil || w.done[uid] {
		return nil
	}
	w.done[uid] = true
	w.notePods(s)
	c := record.Cluster{Jobs: []batchv1.Job{*s.job}, Namespaces: w.nsList()}
	for _, p := range s.pods {
		c.Pods = append(c.Pods, p)
	}
	opts := w.opts
	opts.Since = time.Time{}
	return w.append(record.Convert(c, opts).Rows)
}

// append writes rows not in the file yet; a name another workload took
// this run is made distinct.
func (w *watcher) append(rows []record.Row) error {
	for _, r := range rows {
		key := r.Team + "/" + r.Name
		if by, ok := w.written[key]; ok {
			if by == "" || by == r.UID {
				continue // the file has it: a resumed run
			}
			r.Name = record.Distinct(r.Name, r.UID)
			key = r.Team + "/" + r.Name
			if _, ok := w.written[key]; ok {
				continue
			}
		}
		if err := w.out.Append(r.Job, r.At); err != nil {
			return problem.Errorf("check the disk and the path of -o; run again to resume", "writing the trace: %w", err)
		}
		w.written[key] = r.UID
		w.rows++
		fmt.Fprintf(w.o.ErrOut, "+ %s/%s %s, %s of %s\n", r.Team, r.Name, r.Kind, words.Count(int(r.Pods), "pod"), words.Duration(r.Duration))
	}
	return nil
}

// services writes the GPU services the cluster holds at the end of the
// watch, from their creation (or the watch's start) to the trace's end.
func (w *watcher) services(t *target) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deps, err := t.client.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	sets, err := t.client.Kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	opts := w.opts
	if opts.Since.IsZero() {
		opts.Since = w.start
	}
	rec := record.Convert(record.Cluster{Deployments: deps.Items, StatefulSets: sets.Items, Namespaces: w.nsList()}, opts)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.append(rec.Rows)
}

// summary says what the watch wrote, and the problems of the Jobs it saw.
func (w *watcher) summary() {
	var c record.Cluster
	for _, s := range w.finished {
		c.Jobs = append(c.Jobs, *s.job)
		for _, p := range s.pods {
			c.Pods = append(c.Pods, p)
		}
	}
	c.Namespaces = w.nsList()
	opts := w.opts
	opts.Since = time.Time{}
	rec := record.Convert(c, opts)
	for i, p := range rec.Summary.Problems {
		if i == 20 {
			fmt.Fprintf(w.o.ErrOut, "... and %d more.\n", len(rec.Summary.Problems)-i)
			break
		}
		fmt.Fprintln(w.o.ErrOut, p)
	}
	fmt.Fprintf(w.o.ErrOut, "Wrote %s to %s; run the same command again to resume it.\n", words.Count(w.rows, "row"), w.o.output)
}
