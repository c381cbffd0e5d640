package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Controller is one of berth's in-process controllers.
type Controller interface {
	// Register wires the controller into m: what it watches and its
	// Reconcile, or a loop of its own.
	Register(m *Manager) error
}

// Manager holds berth's controllers as they register, the event
// broadcaster they record through, and the cluster's clock they keep
// time by.
type Manager struct {
	broadcaster record.EventBroadcaster
	clock       clock.WithTickerAndDelayedExecution
	loops       []loop
}

type loop struct {
	name string
	run  func(context.Context) error
}

// NewManager returns a manager whose controllers record events through
// client and keep time by clk: the wall clock, or a rehearsal's (nil
// means the wall clock).
func NewManager(client kubernetes.Interface, clk clock.WithTickerAndDelayedExecution) *Manager {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{broadcaster: b, clock: clk}
}

// Clock is the cluster's clock: what a controller reads the time from,
// and what its Runner's delays (Result.RequeueAfter, backoff) count.
func (m *Manager) Clock() clock.WithTickerAndDelayedExecution { return m.clock }

// Recorder records events from component, as the component a real
// cluster runs would sign them.
func (m *Manager) Recorder(component string) record.EventRecorder {
	return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// Add registers a loop that runs until ctx ends: a controller that is no
// Reconciler (the autoscaler's scans), or a part of one that keeps time.
func (m *Manager) Add(name string, run func(ctx context.Context) error) {
	m.loops = append(m.loops, loop{name, run})
}

// Each calls f with the name and loop of everything registered, in the
// order it registered. The caller runs each until its context ends.
func (m *Manager) Each(f func(name string, run func(ctx context.Context) error)) {
	for _, l := range m.loops {
		f(l.name, l.run)
	}
}

// Shutdown stops recording events, once the controllers have stopped.
func (m *Manager) Shutdown() { m.broadcaster.Shutdown() }

// Controller starts the wiring of the controller named name: its watches,
// then Complete with its Reconciler.
func (m *Manager) Controller(name string) *Builder {
	return &Builder{m: m, name: name}
}

// Builder wires one Reconciler to the informers whose events queue its
// keys.
type Builder struct {
	m       *Manager
	name    string
	watches []watch
	reads   []cache.InformerSynced
	wall    bool
}

type watch struct {
	informer cache.SharedIndexInformer
	keys     func(obj any) []string
	changed  func(old, cur any) bool
}

// Watches queues the keys keys gives for each object informer adds,
// updates or deletes (a deletion the informer missed gives the object's
// last known state). keys may return none.
func (b *Builder) Watches(informer cache.SharedIndexInformer, keys func(obj any) []string) *Builder {
	return b.WatchesChanges(informer, nil, keys)
}

// WatchesChanges is Watches with updates filtered: an update queues keys
// only when changed(old, cur) holds. Nil lets every update through.
func (b *Builder) WatchesChanges(informer cache.SharedIndexInformer, changed func(old, cur any) bool, keys func(obj any) []string) *Builder {
	b.watches = append(b.watches, watch{informer: informer, keys: keys, changed: changed})
	return b
}

// Reads names informers whose caches Reconcile reads without their
// events queueing anything: the Runner waits for them to sync too.
func (b *Builder) Reads(informers ...cache.SharedIndexInformer) *Builder {
	for _, inf := range informers {
		b.reads = append(b.reads, inf.HasSynced)
	}
	return b
}

// OnWallClock keeps the Runner's delays on the wall clock whatever the
// manager's clock: for the part of a kubelet that a component on the wall
// clock watches (node leases, which the node lifecycle controller
// expires by wall time).
func (b *Builder) OnWallClock() *Builder {
	b.wall = true
	return b
}

// Complete adds the watches' event handlers and registers a Runner of r
// with the manager.
func (b *Builder) Complete(r Reconciler) error {
	clk := b.m.clock
	if b.wall {
		clk = clock.RealClock{}
	}
	run := newRunner(b.name, r, clk)
	for _, w := range b.watches {
		reg, err := w.informer.AddEventHandler(run.handler(w))
		if err != nil {
			return fmt.Errorf("%s: watching: %w", b.name, err)
		}
		run.synced = append(run.synced, reg.HasSynced)
	}
	run.synced = append(run.synced, b.reads...)
	b.m.Add(b.name, run.Run)
	return nil
}

func (r *Runner) handler(w watch) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		for _, key := range w.keys(obj) {
			r.queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			if w.changed == nil || w.changed(old, cur) {
				enqueue(cur)
			}
		},
		DeleteFunc: enqueue,
	}
}
