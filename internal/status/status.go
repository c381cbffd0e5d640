// Package status summarises a cluster against its blueprint: per pool the
// nodes Ready and in all, and allocatable against requested CPU, memory
// and GPUs; per team its quotas, used against hard; per HPA its replicas
// and metrics against their targets.
package status

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	resourcehelper "k8s.io/component-helpers/resource"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/spot"
)

// Pool is one pool's state.
type Pool struct {
	Name string
	// Mode is System or User; empty for a pool the blueprint does not name.
	Mode string
	// MinSize and MaxSize come from the blueprint; -1 when unknown.
	MinSize, MaxSize int32
	Ready, Total     int
	Taints           []string
	GPUResource      corev1.ResourceName
	Allocatable      corev1.ResourceList
	Requested        corev1.ResourceList
	// InBlueprint is false for a pool found only on nodes.
	InBlueprint bool
}

// Quota is one ResourceQuota of a team.
type Quota struct {
	Team, Namespace, Name string
	Used, Hard            corev1.ResourceList
	// Scope says which pods a scoped quota counts ("PriorityClass in
	// system-cluster-critical, system-node-critical"); "" for all.
	Scope string
}

// QuotaScope says which pods q counts, from its scopes and scope
// selector; "" when it counts all. A quota of pods 0 of 0 that counts
// only some classes refuses those classes, not the team's work.
func QuotaScope(q *corev1.ResourceQuotaSpec) string {
	var parts []string
	for _, s := range q.Scopes {
		parts = append(parts, string(s))
	}
	if q.ScopeSelector != nil {
		for _, e := range q.ScopeSelector.MatchExpressions {
			switch e.Operator {
			case corev1.ScopeSelectorOpIn:
				parts = append(parts, string(e.ScopeName)+" in "+strings.Join(e.Values, ", "))
			case corev1.ScopeSelectorOpNotIn:
				parts = append(parts, string(e.ScopeName)+" not in "+strings.Join(e.Values, ", "))
			case corev1.ScopeSelectorOpExists:
				parts = append(parts, "any "+string(e.ScopeName))
			case corev1.ScopeSelectorOpDoesNotExist:
				parts = append(parts, "no "+string(e.ScopeName))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// Class is one workload class of the blueprint and its PriorityClass.
type Class struct {
	Name, PriorityClass string
	// Value is the PriorityClass's value in the cluster; Present is false
	// when the cluster lacks it (not applied yet).
	Value      int32
	Present    bool
	Preemption string
	Pools      []string
	Budget     string
	Spread     string
	// Isolation is the class's GPU isolation from the other role, as
	// "Serving, Required"; "-" for a General class.
	Isolation string
}

// Cluster is the summary berth status prints.
type Cluster struct {
	Pools   []Pool
	Quotas  []Quota
	Classes []Class
	// Unpooled counts nodes that belong to no pool.
	Unpooled int
	// Autoscaler is the node autoscaler's status; nil when none runs.
	Autoscaler *Autoscaler
	// Karpenter is Karpenter's NodePools and NodeClaims; nil when the
	// cluster has none.
	Karpenter *Karpenter
	// Queues are Kueue's ClusterQueues, by name; nil where the cluster
	// runs no Kueue.
	Queues []kueue.ClusterQueue
	// Interruptions are the spot interruptions recorded, oldest first.
	Interruptions []spot.Interruption
	// Scaled are the workloads HPAs scale, by namespace and HPA name.
	Scaled []Scaled
	// Now is when the summary was collected.
	Now time.Time
}

// Collect reads nodes, pods and quotas. bp may be nil, in which case pools
// are known only from their nodes' labels.
//
// The reads are independent and run at once: on a cluster of thousands of
// nodes and a hundred thousand pods, the pod list is most of the time and
// the rest goes in its shadow.
func Collect(ctx context.Context, c kubernetes.Interface, l listing.Lister, bp *v1alpha1.Blueprint) (*Cluster, error) {
	out := &Cluster{Now: time.Now()}
	var (
		nodes *corev1.NodeList
		// requested sums the requests of the pods on each node, by node
		// name: the pods themselves are not kept.
		requested map[string]corev1.ResourceList
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if nodes, err = l.Nodes(gctx, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		return nil
	})
	g.Go(func() (err error) {
		if requested, err = requestsByNode(gctx, l); err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		return nil
	})
	g.Go(func() (err error) { out.Autoscaler, err = collectAutoscaler(gctx, c); return err })
	g.Go(func() (err error) { out.Karpenter, err = collectKarpenter(gctx, c); return err })
	g.Go(func() (err error) { out.Queues, err = collectQueues(gctx, c); return err })
	g.Go(func() (err error) { out.Interruptions, err = collectInterruptions(gctx, c); return err })
	g.Go(func() (err error) { out.Scaled, err = collectScaled(gctx, c, l); return err })
	if bp != nil {
		g.Go(func() (err error) { out.Quotas, err = collectQuotas(gctx, c, bp); return err })
		g.Go(func() (err error) { out.Classes, err = collectClasses(gctx, c, bp); return err })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byName := map[string]*Pool{}
	var order []string
	add := func(p Pool) *Pool {
		p.Allocatable, p.Requested = corev1.ResourceList{}, corev1.ResourceList{}
		byName[p.Name] = &p
		order = append(order, p.Name)
		return &p
	}
	if bp != nil {
		for i := range bp.Spec.Pools {
			bpPool := &bp.Spec.Pools[i]
			var taints []string
			for _, t := range bpPool.Taints {
				taints = append(taints, t.String())
			}
			add(Pool{
				Name: bpPool.Name, Mode: string(bpPool.Mode), MinSize: bpPool.MinSize(), MaxSize: bpPool.MaxSize(),
				Taints: taints, GPUResource: corev1.ResourceName(bpPool.GPUResource()), InBlueprint: true,
			})
		}
	}
	nodePool := map[string]*Pool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		name := n.Labels[v1alpha1.LabelPool]
		if name == "" {
			name = n.Labels[v1alpha1.LabelAgentPool]
		}
		if name == "" {
			out.Unpooled++
			continue
		}
		p := byName[name]
		if p == nil {
			p = add(Pool{Name: name, MinSize: -1, MaxSize: -1})
			for _, t := range n.Spec.Taints {
				p.Taints = append(p.Taints, v1alpha1.TaintString(t))
			}
		}
		nodePool[n.Name] = p
		p.Total++
		if ready(n) {
			p.Ready++
		}
		addTo(p.Allocatable, n.Status.Allocatable)
		if p.GPUResource == "" {
			for r := range n.Status.Allocatable {
				if r == v1alpha1.DefaultGPUResource {
					p.GPUResource = r
				}
			}
		}
	}
	for node, req := range requested {
		if p := nodePool[node]; p != nil {
			addTo(p.Requested, req)
		}
	}
	for _, name := range order {
		out.Pools = append(out.Pools, *byName[name])
	}
	return out, nil
}

// podPageSize is how many pods requestsByNode asks for at a time. On
// 20,000 pods (2026-11-26) pages of 5,000 took as long as one unpaged list
// (1.0-1.2 s); kubectl's 500 took 1.3-1.7 s, the cost of 40 requests.
const podPageSize = 5000

// requestsByNode sums the requests of the scheduled pods that are not
// done, by node. The pods are read in pages and each page is dropped once
// counted: on a cluster of 150,000 pods one unpaged list is gigabytes of
// decoded pods held at once by status, and its response held at once by
// the API server.
func requestsByNode(ctx context.Context, l listing.Lister) (map[string]corev1.ResourceList, error) {
	out := map[string]corev1.ResourceList{}
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return l.Pods(ctx, "", opts)
	}))
	p.PageSize = podPageSize
	p.PageBufferSize = 1 // the next page is read while this one is counted
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"}
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("a pod list held a %T", obj)
		}
		sum := out[pod.Spec.NodeName]
		if sum == nil {
			sum = corev1.ResourceList{}
			out[pod.Spec.NodeName] = sum
		}
		addTo(sum, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
		return nil
	})
	return out, err
}

func collectClasses(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) ([]Class, error) {
	var out []Class
	for i := range bp.Spec.Classes {
		bc := &bp.Spec.Classes[i]
		cl := Class{Name: bc.Name, PriorityClass: bc.PriorityClassName(), Preemption: string(bc.Preemption), Pools: bc.Pools, Spread: string(bc.Spread), Isolation: "-"}
		if r := bc.EffectiveRole(); r != v1alpha1.RoleGeneral {
			cl.Isolation = string(r) + ", " + string(bc.EffectiveIsolation())
		}
		if d := bc.Disruption; d != nil {
			if d.MinAvailable != nil {
				cl.Budget = "minAvailable " + d.MinAvailable.String() + " each"
			} else if d.MaxUnavailable != nil {
				cl.Budget = "maxUnavailable " + d.MaxUnavailable.String() + " each"
			}
		}
		if cl.PriorityClass != "" {
			pc, err := c.SchedulingV1().PriorityClasses().Get(ctx, cl.PriorityClass, metav1.GetOptions{})
			switch {
			case err == nil:
				cl.Value, cl.Present = pc.Value, true
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading PriorityClass %s: %w", cl.PriorityClass, err)
			}
		}
		out = append(out, cl)
	}
	return out, nil
}

func collectQuotas(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) ([]Quota, error) {
	var out []Quota
	for _, t := range bp.Spec.Teams {
		for _, ns := range t.Namespaces {
			list, err := c.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing quotas in %s: %w", ns, err)
			}
			for _, q := range list.Items {
				out = append(out, Quota{Team: t.Name, Namespace: ns, Name: q.Name, Used: q.Status.Used, Hard: q.Status.Hard, Scope: QuotaScope(&q.Spec)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func addTo(sum, l corev1.ResourceList) {
	for name, q := range l {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}
