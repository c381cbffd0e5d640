package audit

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Options shape an audit.
type Options struct {
	// SystemNamespaces run the cluster's add-ons: they may tolerate the
	// system pool's taint, and workload rules skip them. kube-system,
	// kube-public and kube-node-lease always are.
	SystemNamespaces []string
	// GPUTaints are the taints GPU pools should carry, from a blueprint.
	// Empty means the taints the GPU nodes audited carry, else the
	// design's gpu=true:NoSchedule.
	GPUTaints []corev1.Taint
	// DevicePlugin is the GPU device plugin's DaemonSet, from a
	// blueprint. Zero means any DaemonSet that looks like one (by its
	// image or name).
	DevicePlugin Object
	// GPUPools are GPU pools and their taints, from a blueprint, checked
	// with those of the nodes and pool definitions audited. Nil means no
	// blueprint says; empty, that the blueprint has no GPU pool.
	GPUPools map[string][]corev1.Taint
	// Classes are the blueprint's classes, which the scaling rules hold
	// the workloads labelled berth.io/class to. Nil means none: those
	// rules have nothing to check.
	Classes []v1alpha1.Class
	// Teams, Pools and Queueing are the blueprint's, which the quota
	// deadlock rule reads. Nil means no blueprint says: that rule has
	// nothing to check.
	Teams    []v1alpha1.Team
	Pools    []v1alpha1.Pool
	Queueing v1alpha1.Queueing
	// StorageClasses are the blueprint's storage classes, which the
	// claim rules hold claims to. Nil means no blueprint says: those
	// rules have nothing to check.
	StorageClasses []v1alpha1.StorageClass
	// Present are objects that exist beside those audited, which the
	// rules count but do not check and the report does not list: a
	// blueprint's own (BlueprintObjects) when files that will join its
	// cluster are audited. Nil means only the audited objects exist.
	Present *Inventory
	// Source names what was audited, for the report.
	Source string
	// Ignore are rule IDs to leave out everywhere.
	Ignore []string
}

// Check audits inv against the design.
func Check(inv *Inventory, o Options) *Report {
	v := newView(inv, o)
	v.checkPools()
	for _, w := range v.workloads {
		v.checkWorkload(w)
	}
	v.checkDevicePlugins()
	v.checkNamespaces()
	v.checkQuotas()
	v.checkQuotaHeldWaiting()
	v.checkLimitRanges()
	v.checkClaims()
	v.checkPDBs()
	v.checkPriorityClasses()
	v.checkGuardrailMode()
	v.checkHPAs()
	v.checkScaling()
	v.checkModelPins()
	return v.report()
}

// view is the inventory indexed for the rules, and the findings so far.
type view struct {
	inv    *Inventory
	opts   Options
	system map[string]bool

	pools []*pool
	// gpuTaints are what a GPU pool's nodes should carry; tolerating any
	// of knownGPUTaints means a pod can land on a GPU node.
	gpuTaints, knownGPUTaints []corev1.Taint
	spotTaints                []corev1.Taint
	gpuPools, spotPools       map[string]bool
	zones                     int

	workloads []*workload
	byNS      map[string][]*workload
	budgets   map[string][]labels.Selector // PDB selectors by namespace
	// classBudgets are, by namespace, the classes whose Deployments and
	// StatefulSets berth gives a budget of their own (the namespace's
	// berth.io/budgets annotation; internal/budgets).
	classBudgets map[string]map[string]bool
	pcs          map[string]*schedulingv1.PriorityClass
	defaultPC    *schedulingv1.PriorityClass
	// quotas and limitRanges are, by namespace, those audited or
	// present.
	quotas      map[string][]*corev1.ResourceQuota
	limitRanges map[string]bool

	// ignore are the rules left out everywhere, exempt those left out per
	// object; suppressed counts the findings they drop.
	ignore     map[string]bool
	exempt     map[Object]map[string]bool
	suppressed int

	findings []Finding
}

func newView(inv *Inventory, o Options) *view {
	v := &view{inv: inv, opts: o, system: map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true},
		pcs: map[string]*schedulingv1.PriorityClass{}, byNS: map[string][]*workload{},
		quotas: map[string][]*corev1.ResourceQuota{}, limitRanges: map[string]bool{}}
	for _, ns := range o.SystemNamespaces {
		v.system[ns] = true
	}
	v.ignore = map[string]bool{}
	for _, id := range o.Ignore {
		v.ignore[id] = true
	}
	v.exempt = inv.exemptions()
	// What the audited objects rely on may also be present beside them;
	// an audited object stands for a present one of its name.
	known := []*Inventory{inv}
	if o.Present != nil {
		known = []*Inventory{o.Present, inv}
	}
	v.budgets = budgetSelectors(known...)
	v.classBudgets = classBudgets(known...)
	for _, in := range known {
		for i := range in.PriorityClasses {
			pc := &in.PriorityClasses[i]
			v.pcs[pc.Name] = pc
			if pc.GlobalDefault {
				v.defaultPC = pc
			}
		}
		for i := range in.ResourceQuotas {
			q := &in.ResourceQuotas[i]
			v.quotas[q.Namespace] = append(v.quotas[q.Namespace], q)
		}
		for i := range in.LimitRanges {
			v.limitRanges[in.LimitRanges[i].Namespace] = true
		}
	}
	v.indexPools()
	v.indexWorkloads()
	return v
}

// add records a finding of rule on obj, unless it is ignored.
func (v *view) add(rule string, obj Object, field, message, fix string) {
	if v.ignore[rule] || v.exempt[obj][rule] {
		v.suppressed++
		return
	}
	r, _ := RuleByID(rule)
	v.findings = append(v.findings, Finding{Rule: rule, Severity: r.Severity, Problem: problem.Problem{Object: obj, Field: field, Message: message, Fix: fix}})
}

// report places each finding in its file and sorts them.
func (v *view) report() *Report {
	// Finding a line reads the object's YAML document again: with a
	// finding on each of 150,000 bare pods, that is worth every core. A
	// worker takes a run of findings, which come an object at a time.
	workers := min(runtime.GOMAXPROCS(0), len(v.findings)/256+1)
	per := (len(v.findings) + workers - 1) / workers
	var wg sync.WaitGroup
	for start := 0; start < len(v.findings); start += per {
		wg.Go(func() { v.locate(v.findings[start:min(start+per, len(v.findings))]) })
	}
	wg.Wait()
	sortFindings(v.findings)
	if v.findings == nil {
		v.findings = []Finding{}
	}
	return &Report{Findings: v.findings, Objects: v.inv.counts(), Source: v.opts.Source, Unread: v.inv.Unread, Suppressed: v.suppressed}
}

// locate sets the file and line of each finding.
func (v *view) locate(findings []Finding) {
	var parsed lastDoc
	for i := range findings {
		f := &findings[i]
		src, ok := v.inv.sources[f.Object]
		field := f.Field
		if !ok && f.Object.Kind == "Namespace" {
			// A namespace the files use but do not declare: point at
			// the first object in it.
			for _, w := range v.byNS[f.Object.Name] {
				if src, ok = v.inv.sources[w.obj]; ok {
					field = "metadata.namespace"
					break
				}
			}
		}
		if !ok {
			continue
		}
		f.File = src.file.name
		f.Line = src.lineIn(&parsed, field)
	}
}

// Merge adds findings made elsewhere (drift) to the report, in order.
func (r *Report) Merge(fs []Finding) {
	r.Findings = append(r.Findings, fs...)
	sortFindings(r.Findings)
}

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Kind, b.Object.Kind),
			cmp.Compare(a.Object.Name, b.Object.Name),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// UseBlueprint takes the system namespaces, the GPU pools and their
// taints, the device plugin and the classes from bp.
func (o *Options) UseBlueprint(bp *v1alpha1.Blueprint) {
	o.SystemNamespaces = append(o.SystemNamespaces, bp.Spec.SystemNamespaces...)
	o.Classes = append(o.Classes, bp.Spec.Classes...)
	o.Teams = append(o.Teams, bp.Spec.Teams...)
	o.Pools = append(o.Pools, bp.Spec.Pools...)
	o.Queueing = bp.Spec.Queueing
	if bp.Spec.Storage != nil {
		o.StorageClasses = append(o.StorageClasses, bp.Spec.Storage.Classes...)
	}
	if d := bp.Spec.DevicePlugin; d != nil {
		o.DevicePlugin = Object{Kind: "DaemonSet", Namespace: cmp.Or(d.Namespace, v1alpha1.DefaultDevicePluginNamespace), Name: cmp.Or(d.Name, v1alpha1.DefaultDevicePluginName)}
	}
	if o.GPUPools == nil {
		o.GPUPools = map[string][]corev1.Taint{}
	}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if p.GPUResource() == "" {
			continue
		}
		o.GPUPools[p.Name] = nil
		for _, t := range p.NodeTaints() {
			o.GPUPools[p.Name] = append(o.GPUPools[p.Name], t)
			if isGPUTaint(t) {
				o.GPUTaints = appendTaint(o.GPUTaints, t)
			}
		}
	}
}
