// Package apply makes a cluster match a blueprint. It plans first, as
// data (what to create, update field by field, replace or delete, and
// what to do to each pool), and then executes the plan with server-side
// apply under the field manager "berth", in dependency order. A second
// apply of the same blueprint writes nothing, and an apply that was
// interrupted converges when run again, because every plan starts from
// what the cluster holds now.
package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/simulate"
)

// Action is what apply does to an object.
type Action string

const (
	Create   Action = "create"
	Update   Action = "update"
	Replace  Action = "replace"
	Delete   Action = "delete"
	Conflict Action = "conflict"
)

// ObjectChange is the plan for one object.
type ObjectChange struct {
	Kind      compile.Kind
	Namespace string
	Name      string
	Action    Action
	// Fields are what changes; for a create, every field berth sets.
	Fields []FieldChange
	// Note explains the action: why a replace, whose fields conflict,
	// that an object berth did not create is being adopted.
	Note string

	desired *unstructured.Unstructured
	uid     string // of the live object, for replace and delete
}

// object names the object in problems.
func (c *ObjectChange) object() problem.Object {
	return problem.Object{Kind: c.Kind.Kind, Namespace: c.Namespace, Name: c.Name}
}

// Ref is how the object is named in output: Kind namespace/name.
func (c *ObjectChange) Ref() string {
	if c.Namespace == "" {
		return c.Kind.Kind + " " + c.Name
	}
	return c.Kind.Kind + " " + c.Namespace + "/" + c.Name
}

// Plan is everything apply would do.
type Plan struct {
	Blueprint string
	Objects   []ObjectChange
	// Pools are planned only on a berth local cluster; elsewhere the
	// cloud owns them (PoolsManaged false).
	Pools        []pools.Change
	PoolsManaged bool
	// Budgets are the per-workload disruption budgets of the team
	// namespaces (internal/budgets), planned from the workloads there now
	// and the classes' budgets the blueprint gives each namespace.
	Budgets []budgets.Change
	// Record lists what changes in the blueprint a local cluster records
	// for its controllers (recorded.Write): autoscaler settings and
	// pool bounds, which reach the cluster as no object.
	Record []string
	// blueprint is recorded when the plan is executed.
	blueprint *v1alpha1.Blueprint
	// Kept are berth's objects and pools that left the blueprint, left
	// in place because prune was not asked for (or is unsafe).
	Kept []string
	// Ignored look like berth's (its labels) but berth did not create
	// them, so it never touches them.
	Ignored []string
	// Unsupported says what the cluster cannot hold (its API lacks the
	// kind), and so what is not enforced there.
	Unsupported []string
	// Shared are objects of a shared kind (Owned.Shared) that another
	// blueprint on the cluster holds: left as they are.
	Shared []string
}

// Client is what apply needs of a cluster.
type Client struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Options shape a plan.
type Options struct {
	// Prune plans the deletion of berth's objects and pools that left
	// the blueprint.
	Prune bool
	// ForceConflicts takes fields another manager owns instead of
	// reporting a conflict, as kubectl's --force-conflicts.
	ForceConflicts bool
	// SkipPools leaves pools out of the plan (berth up makes them).
	SkipPools bool
	// Owned are objects that packages above this one make from the
	// blueprint (Karpenter's NodePools): on a berth local cluster, planned,
	// diffed against the live objects, applied and pruned as the
	// blueprint's own are; elsewhere the cloud owns them, as it owns the
	// pools, and they are left out.
	Owned []Owned
}

// Owned is one kind of object made from the blueprint outside compile,
// carrying compile.Labels so that prune finds what left it.
type Owned struct {
	Kind    compile.Kind
	Objects []*unstructured.Unstructured
	// Means is what is lost on a cluster that does not serve Kind.
	Means string
	// Shared says an object of Kind that another blueprint on the
	// cluster holds already is left to it, and the plan says so, rather
	// than refused as a clash: cluster-wide infrastructure, such as a
	// storage class, that blueprints sharing a cluster share.
	Shared bool
}

// Empty reports whether applying the plan would change nothing.
func (p *Plan) Empty() bool {
	return len(p.Objects) == 0 && len(p.Pools) == 0 && len(p.Record) == 0 && len(p.Budgets) == 0
}

// Problems are what would stop apply: conflicts and pool blockers, each
// with the object or pool it concerns.
func (p *Plan) Problems() problem.List {
	var out problem.List
	for i := range p.Objects {
		if c := &p.Objects[i]; c.Action == Conflict {
			out = append(out, problem.Problem{Object: c.object(), Message: c.Note, Fix: conflictFix})
		}
	}
	for i := range p.Pools {
		for _, b := range p.Pools[i].Blockers {
			b.Object = p.Pools[i].Object()
			out = append(out, b)
		}
	}
	return out
}

// Compute plans the changes that make the cluster match the blueprint.
func Compute(ctx context.Context, cl Client, bp *v1alpha1.Blueprint, o Options) (*Plan, error) {
	plan := &Plan{Blueprint: bp.Metadata.Name}
	// Whether this is a berth local cluster, asked once, and only when
	// something needs it (berth up, which skips pools, plans no Owned).
	var local *bool
	isLocal := func() (bool, error) {
		if local == nil {
			l, err := pools.IsLocal(ctx, cl.Kube)
			if err != nil {
				return false, err
			}
			local = &l
		}
		return *local, nil
	}
	if len(o.Owned) > 0 {
		l, err := isLocal()
		if err != nil {
			return nil, err
		}
		if !l {
			o.Owned = nil
		}
	}
	kinds := slices.Clone(compile.Kinds)
	means := maps.Clone(unsupportedMeans)
	for _, ow := range o.Owned {
		kinds = append(kinds, ow.Kind)
		means[ow.Kind.Kind] = ow.Means
	}
	served, err := servedKinds(cl.Kube, kinds)
	if err != nil {
		return nil, err
	}
	if bp.Spec.UsesKueue() && !served["ClusterQueue"] {
		return nil, kueueMissing(isLocal)
	}
	want := map[string]bool{}
	creating := map[string]bool{} // namespaces the plan creates
	missing := map[string]int{}
	// Objects are planned in the stages they are applied in (namespaces
	// first, so that what lives in one being created is known to be new),
	// concurrently within a stage: each dry run is a round trip, and an
	// admission policy's dry run compiles all its CEL.
	byStage := make([][]*unstructured.Unstructured, 3)
	kindOf := map[*unstructured.Unstructured]compile.Kind{}
	shared := map[string]bool{}
	for _, ow := range o.Owned {
		shared[ow.Kind.Kind] = ow.Shared
	}
	add := func(kind compile.Kind, u *unstructured.Unstructured) {
		if !served[kind.Kind] {
			missing[kind.Kind]++
			return
		}
		want[key(kind, u.GetNamespace(), u.GetName())] = true
		kindOf[u] = kind
		byStage[stageOf(kind)] = append(byStage[stageOf(kind)], u)
	}
	var namespaces []*corev1.Namespace
	for _, obj := range compile.Objects(bp) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			namespaces = append(namespaces, ns)
		}
		kind, _ := compile.KindOf(obj)
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		add(kind, u)
	}
	for _, ow := range o.Owned {
		for _, u := range ow.Objects {
			add(ow.Kind, u)
		}
	}
	for _, stage := range byStage {
		changes := make([]*ObjectChange, len(stage))
		heldBy := make([]string, len(stage))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for i, u := range stage {
			g.Go(func() error {
				ch, err := planObject(gctx, cl.Dynamic, kindOf[u], u, bp.Metadata.Name, o, creating[u.GetNamespace()])
				var other *heldElsewhere
				if errors.As(err, &other) && shared[kindOf[u].Kind] {
					heldBy[i] = fmt.Sprintf("%s %s: blueprint %s's, which this cluster shares", kindOf[u].Kind, u.GetName(), other.blueprint)
					return nil
				}
				changes[i] = ch
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		for _, h := range heldBy {
			if h != "" {
				plan.Shared = append(plan.Shared, h)
			}
		}
		for _, ch := range changes {
			if ch == nil {
				continue
			}
			if ch.Kind.Kind == "Namespace" && ch.Action == Create {
				creating[ch.Name] = true
			}
			plan.Objects = append(plan.Objects, *ch)
		}
	}
	for _, kind := range kinds {
		if n := missing[kind.Kind]; n > 0 {
			plan.Unsupported = append(plan.Unsupported, fmt.Sprintf("%d %s(s): this cluster does not serve %s, so %s", n, kind.Kind, kind.Resource.GroupVersion().String()+" "+kind.Kind, means[kind.Kind]))
		}
	}
	if err := planPrune(ctx, cl, bp.Metadata.Name, kinds, want, o.Prune, served, plan); err != nil {
		return nil, err
	}
	// The budgets of the namespaces as the blueprint writes them (a class
	// may gain or lose its budget); a namespace being created holds no
	// workload yet.
	for _, ns := range namespaces {
		if creating[ns.Name] {
			continue
		}
		changes, err := budgets.PlanFor(ctx, budgets.FromAPI(cl.Kube), ns)
		if err != nil {
			return nil, err
		}
		plan.Budgets = append(plan.Budgets, changes...)
	}
	if o.SkipPools {
		return plan, nil
	}
	l, err := isLocal()
	if err != nil {
		return nil, err
	}
	if l {
		plan.PoolsManaged = true
		plan.blueprint = bp
		if plan.Record, err = recordChanges(ctx, cl.Kube, bp); err != nil {
			return nil, err
		}
		changes, kept, err := pools.Plan(ctx, cl.Kube, bp, o.Prune, simulate.FitAfter)
		if err != nil {
			return nil, err
		}
		plan.Pools = changes
		plan.Kept = append(plan.Kept, kept...)
	}
	return plan, nil
}

// planObject plans one desired object: create it, update it (the fields
// a server-side dry run says would change), replace it (when a field
// that cannot change in place does), or nothing (without a dry run when
// the fields berth owns already hold the desired values).
func planObject(ctx context.Context, dyn dynamic.Interface, kind compile.Kind, u *unstructured.Unstructured, blueprint string, o Options, nsCreated bool) (*ObjectChange, error) {
	ch := &ObjectChange{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), desired: u}
	if nsCreated {
		ch.Action, ch.Fields = Create, fields(u)
		return ch, nil
	}
	res := resource(dyn, kind, u.GetNamespace())
	live, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ch.Action, ch.Fields = Create, fields(u)
		return ch, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", ch.Ref(), err)
	}
	ch.uid = string(live.GetUID())
	if live.GetDeletionTimestamp() != nil {
		return nil, &problem.Problem{Object: ch.object(), Message: "is being deleted, so it cannot be applied yet", Fix: "wait until it is gone (a namespace empties itself first), then apply again"}
	}
	if other := live.GetLabels()[v1alpha1.LabelBlueprint]; other != "" && other != blueprint && isBerths(live) {
		return nil, &heldElsewhere{blueprint: other, Problem: problem.Problem{Object: ch.object(), Message: fmt.Sprintf("belongs to blueprint %q, not %q", other, blueprint), Fix: "give one of the blueprints other team, namespace or class names; two blueprints cannot share an object"}}
	}
	if unchanged(live, u) {
		return nil, nil
	}
	after, err := res.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: o.ForceConflicts, DryRun: []string{metav1.DryRunAll}})
	switch {
	case isConflict(err):
		ch.Action, ch.Note = Conflict, conflictNote(err)
		ch.Fields = diffDesired(live, u)
		return ch, nil
	case isImmutable(err):
		ch.Action, ch.Note = Replace, "replace: "+immutableNote(err)
		ch.Fields = diffDesired(live, u)
		return ch, nil
	case err != nil:
		return nil, fmt.Errorf("planning %s (server-side dry run): %w", ch.Ref(), err)
	}
	ch.Fields = diff(live, after)
	if len(ch.Fields) == 0 {
		return nil, nil
	}
	ch.Action = Update
	if !isBerths(live) {
		ch.Note = "adopt: berth did not create it; from now on berth manages the fields it sets"
	}
	return ch, nil
}

// planPrune finds berth's objects of this blueprint that it no longer
// wants, and objects that only look like berth's.
func planPrune(ctx context.Context, cl Client, blueprint string, kinds []compile.Kind, want map[string]bool, prune bool, served map[string]bool, plan *Plan) error {
	// Deletions go in reverse dependency order: what lives in a
	// namespace before the namespace.
	for i := len(kinds) - 1; i >= 0; i-- {
		kind := kinds[i]
		if !served[kind.Kind] {
			continue
		}
		list, err := cl.Dynamic.Resource(kind.Resource).List(ctx, metav1.ListOptions{LabelSelector: compile.Selector(blueprint)})
		if err != nil {
			return fmt.Errorf("listing %ss: %w", kind.Kind, err)
		}
		sort.Slice(list.Items, func(a, b int) bool {
			return list.Items[a].GetNamespace()+"/"+list.Items[a].GetName() < list.Items[b].GetNamespace()+"/"+list.Items[b].GetName()
		})
		for j := range list.Items {
			obj := &list.Items[j]
			if want[key(kind, obj.GetNamespace(), obj.GetName())] || obj.GetDeletionTimestamp() != nil {
				continue
			}
			ch := ObjectChange{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Action: Delete, uid: string(obj.GetUID())}
			if !isBerths(obj) {
				plan.Ignored = append(plan.Ignored, ch.Ref()+" carries berth's labels, but berth did not create it")
				continue
			}
			if !prune {
				plan.Kept = append(plan.Kept, ch.Ref())
				continue
			}
			if kind.Kind == "Namespace" {
				pods, err := cl.Kube.CoreV1().Pods(obj.GetName()).List(ctx, metav1.ListOptions{Limit: 1})
				if err != nil {
					return fmt.Errorf("listing pods in namespace %s: %w", obj.GetName(), err)
				}
				if len(pods.Items) > 0 {
					plan.Kept = append(plan.Kept, ch.Ref()+" (it still runs pods; deleting it would delete them: delete it yourself once it is empty)")
					continue
				}
			}
			plan.Objects = append(plan.Objects, ch)
		}
	}
	return nil
}

// unsupportedMeans says what is lost when a cluster lacks a kind.
var unsupportedMeans = map[string]string{
	"ValidatingAdmissionPolicy":        "the guardrails are not enforced (ValidatingAdmissionPolicy is GA from Kubernetes 1.30)",
	"ValidatingAdmissionPolicyBinding": "the guardrails are not enforced (ValidatingAdmissionPolicy is GA from Kubernetes 1.30)",
	"MutatingAdmissionPolicy":          "workloads labelled berth.io/class get no tolerations, node affinity, priority class or zone spread from their class (MutatingAdmissionPolicy is GA from Kubernetes 1.36; berth does not use the 1.34–1.35 beta); the validations still hold",
	"MutatingAdmissionPolicyBinding":   "the class mutations are not installed either",
	// A cluster without ClusterQueues is refused (kueueMissing); these
	// are a Kueue older than the one berth writes for.
	"ResourceFlavor":        olderKueue,
	"WorkloadPriorityClass": olderKueue,
	"LocalQueue":            olderKueue,
}

const olderKueue = "this Kueue is older than the " + v1alpha1.KueueVersion + " berth writes for: upgrade it"

// kueueMissing is the problem of a blueprint that queues with Kueue on a
// cluster without it: its teams' quotas would hold nowhere (the
// ResourceQuota keeps only the pod count under Kueue), so nothing is
// applied.
func kueueMissing(isLocal func() (bool, error)) error {
	if local, err := isLocal(); err != nil {
		return err
	} else if local {
		p := KueueNotLocal()
		return &p
	}
	return &problem.Problem{Field: "spec.queueing",
		Message: "is Kueue, but this cluster does not serve Kueue's API (kueue.x-k8s.io/v1beta2), so the teams' quotas would hold nowhere",
		Fix:     "install Kueue " + v1alpha1.KueueVersion + " on the cluster first (its CRDs, controllers and webhooks), or set queueing: ResourceQuota"}
}

// KueueNotLocal is the problem of a blueprint that queues with Kueue on
// a local cluster started without it: `berth up` runs Kueue only for a
// blueprint that asks for it.
func KueueNotLocal() problem.Problem {
	return problem.Problem{Field: "spec.queueing",
		Message: "is Kueue, but this local cluster was started with queueing: ResourceQuota, so Kueue's controllers do not run on it",
		Fix:     "start the cluster from this blueprint (berth down, then berth up -f FILE), which runs Kueue " + v1alpha1.KueueVersion + "; or set queueing: ResourceQuota"}
}

// servedKinds asks the cluster which of berth's kinds it serves.
func servedKinds(c kubernetes.Interface, kinds []compile.Kind) (map[string]bool, error) {
	served := map[string]bool{}
	byGV := map[string][]compile.Kind{}
	for _, k := range kinds {
		gv := k.Resource.GroupVersion().String()
		byGV[gv] = append(byGV[gv], k)
	}
	for gv, kinds := range byGV {
		list, err := c.Discovery().ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("asking the cluster which APIs it serves (%s): %w", gv, err)
		}
		for _, k := range kinds {
			for _, r := range list.APIResources {
				if r.Name == k.Resource.Resource {
					served[k.Kind] = true
				}
			}
		}
	}
	return served, nil
}

// isBerths reports whether berth applied obj: its labels can be copied,
// but only berth's own server-side applies are recorded under its field
// manager.
func isBerths(obj *unstructured.Unstructured) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == v1alpha1.FieldManager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// diffDesired compares live with the fields berth sets, for changes the
// server would not dry-run.
func diffDesired(live, desired *unstructured.Unstructured) []FieldChange {
	have := flatten(clean(live))
	var out []FieldChange
	for _, f := range fields(desired) {
		if have[f.Path] != f.To {
			out = append(out, FieldChange{Path: f.Path, From: have[f.Path], To: f.To})
		}
	}
	return out
}

func isConflict(err error) bool {
	return apierrors.IsConflict(err) && strings.Contains(err.Error(), "conflict")
}

// conflictNote says whose fields conflict, for ObjectChange.Note.
func conflictNote(err error) string {
	var causes []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			causes = append(causes, strings.TrimPrefix(c.Field, ".")+" is managed by "+strings.TrimPrefix(c.Message, "conflict with "))
		}
	}
	if len(causes) == 0 {
		causes = []string{err.Error()}
	}
	return strings.Join(causes, "; ") + "; berth will not overwrite another manager's fields"
}

// conflictFix is what to do about a conflict.
const conflictFix = "change the value back, or hand the field to berth with `berth apply --force-conflicts`"

// isImmutable reports whether a dry-run update was refused only because it
// changes fields that cannot change.
func isImmutable(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if !strings.Contains(c.Message, "immutable") && !strings.Contains(c.Message, "may not be changed") {
			return false
		}
	}
	return len(causes) > 0
}

func immutableNote(err error) string {
	var status apierrors.APIStatus
	errors.As(err, &status)
	var fs []string
	for _, c := range status.Status().Details.Causes {
		fs = append(fs, c.Field)
	}
	return strings.Join(fs, ", ") + " cannot change in place, so the object is deleted and created again"
}

func resource(dyn dynamic.Interface, kind compile.Kind, ns string) dynamic.ResourceInterface {
	if kind.Namespaced {
		return dyn.Resource(kind.Resource).Namespace(ns)
	}
	return dyn.Resource(kind.Resource)
}

func key(kind compile.Kind, ns, name string) string { return kind.Kind + "/" + ns + "/" + name }

// toUnstructured converts a compiled object to the form server-side apply
// takes, without the empty status and creation time a typed object
// carries.
func toUnstructured(obj compile.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// heldElsewhere is the clash of an object another blueprint holds.
type heldElsewhere struct {
	blueprint string
	problem.Problem
}

func (h *heldElsewhere) Unwrap() error { return &h.Problem }
