package storage

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	berthcontroller "berth.io/berth/internal/controller"
	"berth.io/berth/internal/problem"
)

// The library's constructor, controller.NewProvisionController,
// registers core/v1 in client-go's global scheme (v1.AddToScheme) each
// time it is called: a map write, while every watch in the process
// decodes through that scheme and reads those maps, which Go stops with
// "fatal error: concurrent map read and map write". So a driver's
// controller is made in this process only before anything in it
// watches (Prepare: a cluster's blueprint's drivers, before its API
// server starts), and a driver first seen later runs in a process of its
// own, made there before that process watches anything (Late, Serve).

// Prepared are provision controllers made before anything in the
// process watches the API.
type Prepared map[string]*prepared

type prepared struct {
	pc *controller.ProvisionController
	p  *Provisioner
}

// Prepare makes the provision controllers of drivers, through client,
// to be run by a Controller given them. Call it before anything in the
// process watches: no request is made until the Controller runs them.
func Prepare(ctx context.Context, client kubernetes.Interface, drivers []string) Prepared {
	out := Prepared{}
	for _, d := range drivers {
		p := &Provisioner{driver: d, client: client}
		out[d] = &prepared{pc: newProvisionController(ctx, client, d, p), p: p}
	}
	return out
}

// Late runs a driver first seen once the process watches, in a process
// of its own, until ctx ends; it returns once the driver is started, or
// why it cannot be. internal/cluster's runs this binary again
// (cluster.Child), which calls Serve.
type Late func(ctx context.Context, driver string) error

// Serve runs the provision controller of one of berth's drivers until
// ctx ends, on the wall clock. It is the body of a driver's process of
// its own (Late), and must be called before anything in the process
// watches the API.
func Serve(ctx context.Context, client kubernetes.Interface, driver string) error {
	if !strings.HasSuffix(driver, DriverSuffix) || driver == DriverSuffix {
		return problem.Errorf("name a driver of berth's: CLASS"+DriverSuffix, "%q is not a driver of berth's", driver)
	}
	p := &Provisioner{driver: driver, client: client, clock: clock.RealClock{}, node: nodesFromAPI(client)}
	newProvisionController(ctx, client, driver, p).Run(ctx)
	return nil
}

// nodesFromAPI asks the API server for a node: a driver's process of
// its own holds no cache of the cluster's nodes, and asks only for a
// zonal claim's.
func nodesFromAPI(client kubernetes.Interface) func(context.Context, string) (*corev1.Node, error) {
	return func(ctx context.Context, name string) (*corev1.Node, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return n, err
	}
}

func newProvisionController(ctx context.Context, client kubernetes.Interface, driver string, p *Provisioner) *controller.ProvisionController {
	return controller.NewProvisionController(klog.NewContext(ctx, klog.Background().WithName(driver)), client, driver, p,
		controller.LeaderElection(false))
}

// Controller runs the library's provision controller for each of berth's
// drivers a StorageClass names (classes come and go with the blueprints
// applied, and each driver gets its controller when its first class
// appears: prepared, or late), and publishes the drivers on each node's
// CSINode.
type Controller struct {
	client kubernetes.Interface
	// clock is the manager's: the cluster's, virtual in a rehearsal.
	clock clock.WithDelayedExecution
	// prepared are the drivers' controllers made before the process
	// watched (Prepare).
	prepared Prepared
	// late runs the other drivers. Nil runs none: a rehearsal's classes
	// are all its blueprint's, prepared, and a driver's process of its
	// own would keep the wall clock.
	late    Late
	classes cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer

	mu      sync.Mutex
	running map[string]bool
}

// NewController returns a controller that provisions through client,
// taking StorageClasses and nodes from factory (shared with berth's other
// controllers and started by its owner): the prepared drivers in this
// process, and any other through late.
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory, prepared Prepared, late Late) *Controller {
	return &Controller{
		client:   client,
		prepared: prepared,
		late:     late,
		classes:  factory.Storage().V1().StorageClasses().Informer(),
		nodes:    factory.Core().V1().Nodes().Informer(),
		running:  map[string]bool{},
	}
}

// Register runs the provisioners as one loop of the manager, and
// publishes each node's drivers (csinode.go).
func (c *Controller) Register(m *berthcontroller.Manager) error {
	c.clock = m.Clock()
	m.Add("storage", c.run)
	return m.Controller("storage-csinodes").WatchesChanges(c.nodes, zoneChanged, nodeKey).Watches(c.classes, c.allNodes).Complete(c)
}

func (c *Controller) run(ctx context.Context) error {
	start := func(obj any) {
		sc, ok := obj.(*storagev1.StorageClass)
		if !ok || !strings.HasSuffix(sc.Provisioner, DriverSuffix) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[sc.Provisioner] {
			return
		}
		if pre := c.prepared[sc.Provisioner]; pre != nil {
			c.running[sc.Provisioner] = true
			pre.p.node, pre.p.clock = nodesIn(c.nodes.GetIndexer()), c.clock
			go pre.pc.Run(ctx)
			return
		}
		if c.late == nil {
			// Never made here: this process watches.
			klog.ErrorS(nil, "storage class's driver first seen after the cluster started, on a rehearsal's clock: not run, its claims stay Pending; declare the class in the blueprint the rehearsal starts from",
				"storageClass", sc.Name, "driver", sc.Provisioner)
			return
		}
		if err := c.late(ctx, sc.Provisioner); err != nil {
			// Tried again at the class's next update (or resync).
			klog.ErrorS(err, "running a storage class's driver", "storageClass", sc.Name, "driver", sc.Provisioner)
			return
		}
		c.running[sc.Provisioner] = true
	}
	reg, err := c.classes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    start,
		UpdateFunc: func(_, obj any) { start(obj) },
	})
	if err != nil {
		return fmt.Errorf("watching storage classes: %w", err)
	}
	defer c.classes.RemoveEventHandler(reg)
	<-ctx.Done()
	return nil
}
