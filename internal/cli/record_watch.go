package cli

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	"berth.io/berth/internal/rehearse"
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

	// queue holds the Jobs finished and the services deleted, each
	// written a moment later.
	queue workqueue.TypedDelayingInterface[types.UID]
	// services are the Deployments and StatefulSets seen, by UID;
	// servicePods the pods not of Jobs, and gonePods those of them
	// deleted, by namespace: when a deleted service's pods went.
	services    map[types.UID]*seenService
	servicePods cache.Indexer
	gonePods    map[string][]gonePod
	// interruptions are the spot interruptions seen, in order of time;
	// interrupted their keys (TIME/POOL).
	interruptions []interruptionAt
	interrupted   map[string]bool
	// yaml writes the YAML form (-o FILE.yaml), whole at each change;
	// nil for the CSV form, which rows are appended to.
	yaml *yamlTrace
	// cpuServices counts the services seen without GPUs (a queue's
	// workers), left out.
	cpuServices int
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
	// A rehearsal's cluster says where its trace starts on its clock: the
	// recording starts there, and ends when the rehearsal does.
	start, rehearsal, err := rehearse.ReadMarker(ctx, t.client.Kube)
	if err != nil {
		return problem.Errorf("check the cluster is reachable", "reading the cluster: %w", err)
	}
	var traceStart time.Time
	if rehearsal {
		traceStart = start
		fmt.Fprintf(o.ErrOut, "The cluster is a rehearsal's, its trace started at %s on its clock: the recording starts there and ends with the rehearsal.\n", start.UTC().Format(time.RFC3339))
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go untilGone(ctx, t, cancel)
	} else {
		start = o.clock()
	}
	// The watch writes the spot interruptions it sees: a pod one ended
	// counts only what its checkpoint saved, as the replay ends it again.
	opts.Disruptions = true
	w := &watcher{o: o, opts: opts, start: start, finished: map[types.UID]*seenJob{}, written: map[string]string{}, done: map[types.UID]bool{},
		services: map[types.UID]*seenService{}, gonePods: map[string][]gonePod{}, interrupted: map[string]bool{}}
	var names map[string]bool
	if isYAML(o.output) {
		w.yaml, names, err = resumeYAML(o.output, traceStart, o.comment())
		if err != nil {
			return err
		}
		for _, i := range w.yaml.interruptions {
			w.interrupted[i.at.UTC().Format(time.RFC3339)+"/"+i.pool] = true
			w.interruptions = append(w.interruptions, i)
		}
	} else {
		f, have, header, err := resumeTrace(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		if w.out, err = trace.NewAppender(f, !header, traceStart, o.comment()); err != nil {
			return err
		}
		names = have
	}
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
	servicePodFactory := informers.NewSharedInformerFactoryWithOptions(t.client.Kube, 0, informers.WithTweakListOptions(func(l *metav1.ListOptions) {
		l.LabelSelector = "!" + batchv1.ControllerUidLabel
	}))
	servicePods := servicePodFactory.Core().V1().Pods().Informer()
	w.servicePods = servicePods.GetIndexer()
	servicePods.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: w.onServicePodGone})
	for _, inf := range []cache.SharedIndexInformer{factory.Apps().V1().Deployments().Informer(), factory.Apps().V1().StatefulSets().Informer()} {
		inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.onService(obj, false) },
			UpdateFunc: func(_, obj any) { w.onService(obj, false) },
			DeleteFunc: func(obj any) { w.onService(obj, true) },
		})
	}
	factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.onNode, UpdateFunc: func(_, obj any) { w.onNode(obj) }})
	queue := workqueue.NewTypedDelayingQueue[types.UID]()
	defer queue.ShutDown()
	w.queue = queue
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
	servicePodFactory.Start(ctx.Done())
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
	if err := w.writeServices(); err != nil {
		return err
	}
	w.summary()
	return nil
}

// isYAML says whether path names a trace in the YAML form.
func isYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
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
	if svc := w.services[uid]; svc != nil {
		return w.writeService(uid, svc)
	}
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
		var err error
		if w.yaml != nil {
			w.yaml.rows = append(w.yaml.rows, r)
			err = w.yaml.write(w)
		} else {
			err = w.out.Append(r.Job, r.At)
		}
		if err != nil {
			return problem.Errorf("check the disk and the path of -o; run again to resume", "writing the trace: %w", err)
		}
		w.written[key] = r.UID
		w.rows++
		if r.Kind == trace.Inference {
			until := "to the trace's end"
			if r.Duration > 0 {
				until = "for " + words.Duration(r.Duration)
			}
			fmt.Fprintf(w.o.ErrOut, "+ %s/%s inference, %s %s\n", r.Team, r.Name, words.Count(int(r.Pods), "replica"), until)
			continue
		}
		fmt.Fprintf(w.o.ErrOut, "+ %s/%s %s, %s of %s\n", r.Team, r.Name, r.Kind, words.Count(int(r.Pods), "pod"), words.Duration(r.Duration))
	}
	return nil
}

// writeService writes a deleted GPU service's row, once.
func (w *watcher) writeService(uid types.UID, s *seenService) error {
	if w.done[uid] {
		return nil
	}
	w.done[uid] = true
	row, ok := w.serviceRow(s)
	if !ok {
		w.cpuServices++
		return nil
	}
	return w.append([]record.Row{row})
}

// writeServices writes the GPU services seen and not yet written, at the
// end of the watch: those still there run to the trace's end.
func (w *watcher) writeServices() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	uids := slices.Sorted(maps.Keys(w.services))
	for _, uid := range uids {
		if err := w.writeService(uid, w.services[uid]); err != nil {
			return err
		}
	}
	return nil
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
	if w.cpuServices > 0 {
		fmt.Fprintf(w.o.ErrOut, "Left out: %s without GPUs (queue workers, CPU services): a trace's rows are Jobs and GPU services.\n", words.Count(w.cpuServices, "Deployment or StatefulSet"))
	}
	if n := len(w.interruptions); n > 0 && w.yaml != nil {
		fmt.Fprintf(w.o.ErrOut, "Wrote %s seen while watching, as spec.interruptions.\n", words.Count(n, "spot interruption"))
	}
	if n := len(w.interruptions); n > 0 && w.yaml == nil {
		fmt.Fprintln(w.o.ErrOut, problem.Problem{Warning: true, Message: fmt.Sprintf("%s seen while watching %s not written: the CSV form holds jobs only", words.Count(n, "spot interruption"), words.Pick(n, "was", "were")),
			Fix: "record into a YAML trace (-o FILE.yaml), which holds them as spec.interruptions"})
	}
	fmt.Fprintf(w.o.ErrOut, "Wrote %s to %s; run the same command again to resume it.\n", words.Count(w.rows, "row"), w.o.output)
}
