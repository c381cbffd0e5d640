package autoscaler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/simulate"
	"berth.io/berth/internal/slim"
)

// Options tune the autoscaler.
type Options struct {
	// Profile names the blueprint whose spec.autoscaler the autoscaler
	// runs: the one `berth up` started. The pools of every blueprint
	// recorded in the cluster are scaled with it. Empty means the first
	// recorded blueprint by name.
	Profile string
	// Tune, when set, adjusts each recorded blueprint: `berth up`'s flags
	// that compress a rehearsal's timings. It works on the autoscaler's
	// own copy, made once per change of the record.
	Tune func(*v1alpha1.Blueprint)
	// Seed seeds the random expander, so that a test can pin its picks.
	// Zero seeds it from the clock.
	Seed uint64
	// Clock is the autoscaler's clock. Nil means the real one.
	Clock clock.WithDelayedExecution
	// Informers is the cluster-wide informer factory the autoscaler
	// shares with berth's other controllers, so that each pod and node
	// is decoded and cached once; its owner starts and shuts it down. Nil
	// makes one of the autoscaler's own.
	Informers informers.SharedInformerFactory
	// Blueprints are the blueprints recorded in the cluster, shared with
	// berth's other controllers; its owner starts it and shuts it down.
	// Nil makes a store of the autoscaler's own.
	Blueprints *recorded.Store
}

// Controller is the node autoscaler. Its state (nodes being provisioned,
// how long each node has been unneeded, the cooldowns) lives in memory,
// as cluster-autoscaler's does: a restart forgets it and starts over.
type Controller struct {
	client      kubernetes.Interface
	opts        Options
	clock       clock.WithDelayedExecution
	rand        *rand.Rand
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	factory    informers.SharedInformerFactory
	ownFactory bool
	store      *recorded.Store
	ownStore   bool
	nodes      cache.SharedIndexInformer
	pods       cache.SharedIndexInformer
	budgets    cache.SharedIndexInformer
	daemonSets cache.SharedIndexInformer
	claims     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	// The storage the scheduler's VolumeZone and NodeVolumeLimits
	// plugins read: volumes, their classes, each node's CSINode and the
	// drivers.
	volumes, classes, csiNodes, drivers cache.SharedIndexInformer

	// mu guards everything below: a scan and the timers that register
	// provisioned nodes.
	mu     sync.Mutex
	groups map[string]*group
	// unneeded is when each node was first found unneeded.
	unneeded map[string]time.Time
	// lastScaleUp, lastScaleDown and lastFailure start the cooldowns.
	lastScaleUp, lastScaleDown, lastFailure time.Time
	// draining is the node being drained, "" when none.
	draining string
	// notified is the last NotTriggerScaleUp each pod got, so that a pod
	// is told again only when the reason changes or a minute passed.
	notified map[types.UID]notice
	// blocked is the last reason each node was kept for.
	blocked map[string]string
	// last is the outcome of the last scan, for the status ConfigMap.
	last scanResult
	// tuned are the recorded blueprints with Options.Tune applied, keyed
	// by the store's blueprint, which stays the same until its record
	// changes.
	tuned map[*v1alpha1.Blueprint]*v1alpha1.Blueprint

	// reh is what the autoscaler keeps on a rehearsal's virtual clock;
	// nil on the wall clock.
	reh *rehearsal
}

type notice struct {
	message string
	at      time.Time
}

// NewController returns an autoscaler that works through client.
func NewController(client kubernetes.Interface, opts Options) *Controller {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(clk.Now().UnixNano())
	}
	c := &Controller{
		client:   client,
		opts:     opts,
		clock:    clk,
		rand:     rand.New(rand.NewPCG(seed, seed>>1|1)),
		groups:   map[string]*group{},
		unneeded: map[string]time.Time{},
		notified: map[types.UID]notice{},
		blocked:  map[string]string{},
		tuned:    map[*v1alpha1.Blueprint]*v1alpha1.Blueprint{},
	}
	c.factory = opts.Informers
	if c.factory == nil {
		c.factory, c.ownFactory = slim.Informers(client, 10*time.Minute), true
	}
	c.store = opts.Blueprints
	if c.store == nil {
		c.store, c.ownStore = recorded.NewStore(client), true
	}
	c.nodes = c.factory.Core().V1().Nodes().Informer()
	c.pods = c.factory.Core().V1().Pods().Informer()
	c.budgets = c.factory.Policy().V1().PodDisruptionBudgets().Informer()
	c.daemonSets = c.factory.Apps().V1().DaemonSets().Informer()
	c.claims = c.factory.Core().V1().PersistentVolumeClaims().Informer()
	c.namespaces = c.factory.Core().V1().Namespaces().Informer()
	c.volumes = c.factory.Core().V1().PersistentVolumes().Informer()
	c.classes = c.factory.Storage().V1().StorageClasses().Informer()
	c.csiNodes = c.factory.Storage().V1().CSINodes().Informer()
	c.drivers = c.factory.Storage().V1().CSIDrivers().Informer()
	c.reh = c.newRehearsal()
	return c
}

// Register runs the autoscaler's scans. They keep a loop of their own,
// not a queue of keys: a scan looks at the whole cluster at once, every
// scanInterval of the profile, on the autoscaler's clock.
func (c *Controller) Register(m *controller.Manager) error {
	m.Add("autoscaler", c.Run)
	return nil
}

// Run scans every scanInterval until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cluster-autoscaler"})

	if c.ownFactory {
		c.factory.Start(ctx.Done())
		defer c.factory.Shutdown()
	}
	if c.ownStore {
		c.store.Start(ctx.Done())
		defer c.store.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced()...) {
		return ctx.Err()
	}
	for {
		var seen uint64
		if c.reh != nil {
			seen = c.reh.changes.Load()
		}
		last := c.clock.Now()
		interval, deadline, err := c.scan(ctx)
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "autoscaler scan")
		}
		if c.reh != nil && err == nil {
			if !c.waitForScan(ctx, last, interval, seen, deadline) {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(interval):
		}
	}
}

// synced are whether each cache a scan reads has synced.
func (c *Controller) synced() []cache.InformerSynced {
	return []cache.InformerSynced{c.nodes.HasSynced, c.pods.HasSynced, c.budgets.HasSynced, c.daemonSets.HasSynced, c.store.HasSynced, c.claims.HasSynced, c.namespaces.HasSynced,
		c.volumes.HasSynced, c.classes.HasSynced, c.csiNodes.HasSynced, c.drivers.HasSynced}
}

// Sees reports whether the autoscaler's caches have synced and hold
// each of nodes as ready says it should be: a scan then counts them as
// the caller saw them. `berth up` scans once it does, so that the status
// it prints at ready is not that of a scan made while its nodes
// registered.
func (c *Controller) Sees(nodes []string, ready func(*corev1.Node) bool) bool {
	for _, synced := range c.synced() {
		if !synced() {
			return false
		}
	}
	for _, name := range nodes {
		obj, ok, err := c.nodes.GetStore().GetByKey(name)
		if err != nil || !ok || !ready(obj.(*corev1.Node)) {
			return false
		}
	}
	return true
}

// Scan runs one scan and returns how long to wait for the next.
func (c *Controller) Scan(ctx context.Context) (time.Duration, error) {
	interval, _, err := c.scan(ctx)
	return interval, err
}

// scan runs one scan and returns how long to wait for the next, and on
// a virtual clock the deadline a skipped scan must not pass (deadline).
func (c *Controller) scan(ctx context.Context) (time.Duration, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.view()
	if err != nil {
		return v1alpha1.DefaultScanInterval, time.Time{}, err
	}
	c.expire(ctx, v)
	c.registerDue(ctx, v)
	res := scanResult{time: v.now}
	up, err := c.scaleUp(ctx, v)
	if err != nil {
		return v.interval(), time.Time{}, err
	}
	res.scaledUp = up
	if !up {
		if err := c.scaleDown(ctx, v, &res); err != nil {
			return v.interval(), time.Time{}, err
		}
	}
	c.last = res
	var deadline time.Time
	if c.reh != nil {
		deadline = c.deadline(v)
	}
	return v.interval(), deadline, c.publish(ctx, v)
}

// view reads the informers' caches into one consistent picture.
func (c *Controller) view() (*view, error) {
	v := &view{now: c.clock.Now()}
	bps, err := c.blueprints()
	if err != nil {
		return nil, err
	}
	v.profile = &v1alpha1.AutoscalerProfile{}
	for _, bp := range bps {
		if c.opts.Profile == "" || bp.Metadata.Name == c.opts.Profile {
			v.profile = bp.Spec.Autoscaler
			break
		}
	}
	if v.profile.ScanInterval == nil {
		bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Autoscaler: v.profile}}
		v1alpha1.SetDefaults(bp)
	}
	// A store lists in a map's order, and the simulation's choices
	// between equals (which node a moved pod lands on, so which node can
	// go) follow the order it is given: sorted, a scan decides the same
	// on the same cluster, and a rehearsal on one seed repeats.
	v.nodes = sorted[*corev1.Node](c.nodes.GetStore())
	v.pods = sorted[*corev1.Pod](c.pods.GetStore())
	v.budgets = sorted[*policyv1.PodDisruptionBudget](c.budgets.GetStore())
	v.daemonSets = sorted[*appsv1.DaemonSet](c.daemonSets.GetStore())
	v.claims = sorted[*corev1.PersistentVolumeClaim](c.claims.GetStore())
	v.namespaces = sorted[*corev1.Namespace](c.namespaces.GetStore())
	v.storage = &simulate.Storage{
		Volumes:  sorted[*corev1.PersistentVolume](c.volumes.GetStore()),
		Classes:  sorted[*storagev1.StorageClass](c.classes.GetStore()),
		CSINodes: sorted[*storagev1.CSINode](c.csiNodes.GetStore()),
		Drivers:  sorted[*storagev1.CSIDriver](c.drivers.GetStore()),
	}
	live := map[string]bool{}
	for _, bp := range bps {
		for i := range bp.Spec.Pools {
			p := &bp.Spec.Pools[i]
			key := bp.Metadata.Name + "/" + p.Name
			live[key] = true
			g := c.groups[key]
			if g == nil {
				g = &group{}
				c.groups[key] = g
			}
			g.bp, g.pool = bp, p
			g.nodes = nil
			for _, n := range v.nodes {
				if n.Labels[v1alpha1.LabelPool] == p.Name && n.Labels[v1alpha1.LabelBlueprint] == bp.Metadata.Name {
					g.nodes = append(g.nodes, n)
				}
			}
			g.arrived()
			v.groups = append(v.groups, g)
		}
	}
	for key, g := range c.groups {
		if !live[key] {
			g.cancel()
			delete(c.groups, key)
		}
	}
	return v, nil
}

// blueprints are the blueprints recorded in the cluster, by name, as
// Options.Tune adjusts them.
func (c *Controller) blueprints() ([]*v1alpha1.Blueprint, error) {
	bps, err := c.store.Blueprints()
	if err != nil || c.opts.Tune == nil {
		return bps, err
	}
	tuned := make(map[*v1alpha1.Blueprint]*v1alpha1.Blueprint, len(bps))
	for i, bp := range bps {
		t := c.tuned[bp]
		if t == nil {
			if t, err = tunedCopy(bp, c.opts.Tune); err != nil {
				return nil, err
			}
		}
		tuned[bp], bps[i] = t, t
	}
	c.tuned = tuned
	return bps, nil
}

// tunedCopy is bp, copied, as tune adjusts it: the store's blueprints
// are shared with berth's other controllers.
func tunedCopy(bp *v1alpha1.Blueprint, tune func(*v1alpha1.Blueprint)) (*v1alpha1.Blueprint, error) {
	raw, err := json.Marshal(bp)
	if err != nil {
		return nil, err
	}
	var out v1alpha1.Blueprint
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	tune(&out)
	return &out, nil
}

// expire gives up on nodes that did not register within
// maxNodeProvisionTime: the pool shrinks back and is backed off, as
// cluster-autoscaler does with a scale-up that timed out.
func (c *Controller) expire(ctx context.Context, v *view) {
	limit := v.profile.MaxNodeProvisionTime.Duration
	for _, g := range v.groups {
		var late []*upcoming
		for _, u := range g.upcoming {
			if v.now.Sub(u.requested) >= limit {
				late = append(late, u)
			}
		}
		if len(late) == 0 {
			continue
		}
		for _, u := range late {
			g.drop(u)
		}
		g.backoffUntil = v.now.Add(backoffDuration)
		g.backoffWhy = fmt.Sprintf("%d node(s) did not become Ready within maxNodeProvisionTime (%s)", len(late), limit)
		c.event(ctx, corev1.EventTypeWarning, "ScaleUpTimedOut", "Nodes added to group %s failed to register within %s", g.pool.Name, limit)
	}
}

// backoffDuration is cluster-autoscaler's initial node group backoff.
const backoffDuration = 5 * time.Minute

// sorted lists a store's objects, by namespace and name.
func sorted[T metav1.Object](s cache.Store) []T {
	objs := s.List()
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(T))
	}
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out
}
