package v1alpha1

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// reservedNodeLabels are set by berth on every node; a pool may not
// override them.
var reservedNodeLabels = sets.New(
	LabelPool, LabelCapacity, LabelMode, LabelCapacityType, LabelAgentPool, LabelAKSMode,
	corev1.LabelTopologyZone, corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable, corev1.LabelHostname, LabelGPUProduct, LabelGPUCount,
)

var kubernetesVersionRE = regexp.MustCompile(`^v?1\.[0-9]+(\.[0-9]+)?$`)

// Validate checks a defaulted blueprint. It returns every error (the
// blueprint must not be used) and every warning (it may be, but probably
// does not mean what it says; Warning is set), each a problem with the
// field path it concerns as its Field and, where there is one, its fix.
func Validate(bp *Blueprint) (errs, warnings problem.List) {
	if bp.APIVersion != GroupVersion {
		errs = append(errs, invalid(field.NewPath("apiVersion"), fmt.Sprintf("must be %s", GroupVersion), fmt.Sprintf("set apiVersion: %s", GroupVersion)))
	}
	if bp.Kind != Kind {
		errs = append(errs, invalid(field.NewPath("kind"), fmt.Sprintf("must be %s", Kind), fmt.Sprintf("set kind: %s", Kind)))
	}
	errs = append(errs, dnsLabel(field.NewPath("metadata", "name"), bp.Metadata.Name)...)

	spec := field.NewPath("spec")
	s := &bp.Spec
	if v := s.KubernetesVersion; v != "" && !kubernetesVersionRE.MatchString(v) {
		errs = append(errs, invalid(spec.Child("kubernetesVersion"), "is not a Kubernetes version", "write the minor version in quotes, like \"1.36\""))
	}
	e, w := validateVersions(spec, s)
	errs, warnings = append(errs, e...), append(warnings, w...)
	zones := sets.New[string]()
	for i, z := range s.Zones {
		p := spec.Child("zones").Index(i)
		if zones.Has(z) {
			errs = append(errs, duplicate(p, z))
		}
		zones.Insert(z)
		errs = append(errs, labelValue(p, z)...)
	}

	pools := map[string]*Pool{}
	e, w = validatePools(spec.Child("pools"), s.Pools, zones, pools)
	errs, warnings = append(errs, e...), append(warnings, w...)
	e, w = validateTeams(spec.Child("teams"), s.Teams, s.Pools, s.Classes)
	errs, warnings = append(errs, e...), append(warnings, w...)
	errs = append(errs, validateClasses(spec.Child("classes"), s.Classes, pools)...)
	errs = append(errs, oneOf(spec.Child("guardrails"), string(s.Guardrails), GuardrailsEnforce, GuardrailsWarn, GuardrailsAudit, GuardrailsOff)...)
	errs = append(errs, validateModels(spec.Child("models"), s.Models)...)
	errs = append(errs, validateStorage(spec.Child("storage"), s)...)
	errs = append(errs, validateAutoscaler(spec.Child("autoscaler"), s)...)
	errs = append(errs, validateDevicePlugin(spec.Child("devicePlugin"), s)...)
	if s.Provisioner != "" {
		errs = append(errs, oneOf(spec.Child("provisioner"), string(s.Provisioner), ProvisionerClusterAutoscaler, ProvisionerKarpenter)...)
	}
	e, w = validateQueueing(spec, s)
	errs, warnings = append(errs, e...), append(warnings, w...)
	teamNamespaces := sets.New[string]()
	for _, t := range s.Teams {
		teamNamespaces.Insert(t.Namespaces...)
	}
	for i, ns := range s.SystemNamespaces {
		p := spec.Child("systemNamespaces").Index(i)
		errs = append(errs, dnsLabel(p, ns)...)
		if teamNamespaces.Has(ns) && ns != "default" && !strings.HasPrefix(ns, "kube-") { // those are refused as team namespaces already
			errs = append(errs, invalid(p, "is also a team namespace; a team's pods would be allowed onto System pools and to pin themselves to nodes", "keep system and team namespaces apart"))
		}
	}
	return errs, warnings
}

func validatePools(path *field.Path, pools []Pool, zones sets.Set[string], byName map[string]*Pool) (errs, warnings problem.List) {
	if len(pools) == 0 {
		return problem.List{invalid(path, "a cluster needs at least one pool", "add a System pool, e.g. {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 2}")}, nil
	}
	system := false
	for i := range pools {
		p := &pools[i]
		pp := path.Index(i)
		errs = append(errs, dnsLabel(pp.Child("name"), p.Name)...)
		if _, dup := byName[p.Name]; dup {
			errs = append(errs, duplicate(pp.Child("name"), p.Name))
		}
		byName[p.Name] = p
		errs = append(errs, oneOf(pp.Child("mode"), string(p.Mode), ModeSystem, ModeUser)...)
		errs = append(errs, oneOf(pp.Child("os"), string(p.OS), Linux, Windows)...)
		errs = append(errs, oneOf(pp.Child("capacity"), string(p.Capacity), OnDemand, Spot)...)
		errs = append(errs, validateMachine(pp.Child("machine"), &p.Machine, p.Reserved, pp.Child("reserved"))...)
		errs = append(errs, validateSize(pp, p)...)
		errs = append(errs, validateSpot(pp, p)...)
		e, w := validatePrice(pp, p)
		errs, warnings = append(errs, e...), append(warnings, w...)
		if p.MaxPods < 1 || p.MaxPods > 10000 {
			errs = append(errs, invalid(pp.Child("maxPods"), "must be between 1 and 10000", "leave it out for the default of 110"))
		}
		if p.Mode == ModeSystem {
			system = true
			if p.OS == Windows {
				errs = append(errs, invalid(pp.Child("os"), "a System pool must run Linux: cluster add-ons have no Windows images", "set os: Linux, or mode: User for a Windows pool"))
			}
			if p.InitialSize() < 1 || (p.Autoscale != nil && p.Autoscale.Min < 1) {
				f := pp.Child("count")
				if p.Autoscale != nil {
					f = pp.Child("autoscale", "min")
				}
				errs = append(errs, invalid(f, "a System pool must keep at least one node: the cluster's add-ons live there", "set it to 1 or more, or make the pool mode: User"))
			}
		}
		errs = append(errs, validateTaints(pp.Child("taints"), p.Taints)...)
		errs = append(errs, validateLabels(pp.Child("labels"), p.Labels)...)
		for j, z := range p.Zones {
			if !zones.Has(z) {
				errs = append(errs, invalid(pp.Child("zones").Index(j), fmt.Sprintf("zone %q is not declared in spec.zones", z), fmt.Sprintf("add it to spec.zones or use one of %s", strings.Join(sets.List(zones), ", "))))
			}
		}
		// The guardrails keep pods off System and GPU pools by their
		// taints: an untainted one takes any pod the scheduler sends.
		if len(p.Taints) == 0 && p.Capacity != Spot && (p.Mode == ModeSystem || p.GPUResource() != "") {
			what := "a GPU pool"
			fix := "add a taint such as \"gpu=true:NoSchedule\""
			if p.Mode == ModeSystem {
				what, fix = "a System pool", "add the taint \"CriticalAddonsOnly=true:NoSchedule\""
			}
			warnings = append(warnings, warning(pp.Child("taints"), what+" without taints takes any pod, and the guardrails can keep pods off it only when they select it", fix))
		}
		if p.Capacity == Spot && len(p.Taints) == 0 {
			warnings = append(warnings, warning(pp.Child("taints"), "a Spot pool without taints takes any pod, including ones that cannot survive losing their node", "add a taint such as \"berth.io/capacity=spot:NoSchedule\""))
		}
	}
	if !system {
		errs = append(errs, invalid(path, "no pool has mode: System, and a cluster needs one for its add-ons", "set mode: System on one pool (Linux, at least one node), tainted CriticalAddonsOnly=true:NoSchedule"))
	}
	return errs, warnings
}

func validateMachine(path *field.Path, m *Machine, r *Reserved, rpath *field.Path) problem.List {
	var errs problem.List
	errs = append(errs, positive(path.Child("cpu"), m.CPU, "cpu: 16")...)
	errs = append(errs, positive(path.Child("memory"), m.Memory, "memory: 64Gi")...)
	if g := m.GPU; g != nil {
		gp := path.Child("gpu")
		if g.Count < 1 {
			errs = append(errs, invalid(gp.Child("count"), "must be at least 1", "give the GPUs per node, or remove gpu"))
		}
		if g.Product == "" {
			errs = append(errs, invalid(gp.Child("product"), "the GPU model is needed for the nvidia.com/gpu.product label", "e.g. product: NVIDIA-L4"))
		} else {
			errs = append(errs, labelValue(gp.Child("product"), g.Product)...)
		}
		if g.Resource != "" {
			if es := validation.IsQualifiedName(g.Resource); len(es) > 0 || !strings.Contains(g.Resource, "/") {
				errs = append(errs, invalid(gp.Child("resource"), "must be a domain-prefixed extended resource", "leave it out for nvidia.com/gpu"))
			}
		}
	}
	if m.Type != "" {
		errs = append(errs, labelValue(path.Child("type"), m.Type)...)
	}
	if r != nil {
		for _, q := range []struct {
			name      string
			have, cap *resource.Quantity
		}{{"cpu", r.CPU, &m.CPU}, {"memory", r.Memory, &m.Memory}} {
			if q.have == nil {
				continue
			}
			if q.have.Sign() < 0 || q.have.Cmp(*q.cap) >= 0 {
				errs = append(errs, invalid(rpath.Child(q.name), fmt.Sprintf("must be at least 0 and less than the machine's %s (%s)", q.name, q.cap.String()), "reserve a small share, e.g. a tenth"))
			}
		}
	}
	return errs
}

func validateSize(pp *field.Path, p *Pool) problem.List {
	var errs problem.List
	if p.Count != nil && p.Autoscale != nil {
		errs = append(errs, invalid(pp.Child("count"), "count and autoscale cannot both be set: a fixed pool does not scale", "remove count, or remove autoscale"))
	}
	if p.Count != nil && *p.Count < 0 {
		errs = append(errs, invalid(pp.Child("count"), "must not be negative", ""))
	}
	if a := p.Autoscale; a != nil {
		ap := pp.Child("autoscale")
		if a.Min < 0 {
			errs = append(errs, invalid(ap.Child("min"), "must not be negative", ""))
		}
		if a.Max < 1 {
			errs = append(errs, invalid(ap.Child("max"), "must be at least 1", "a pool that never has nodes is better removed"))
		}
		if a.Priority < 0 {
			errs = append(errs, invalid(ap.Child("priority"), "must not be negative", "zero is the lowest priority"))
		}
		if t := a.ProvisioningTime; t != nil && t.Duration < 0 {
			errs = append(errs, invalid(ap.Child("provisioningTime"), "must not be negative", "write a Go duration such as 90s"))
		}
		if a.Min > a.Max {
			errs = append(errs, invalid(ap.Child("min"), fmt.Sprintf("min is greater than max (%d)", a.Max), fmt.Sprintf("set min to at most %d, or raise max", a.Max)))
		}
	}
	return errs
}

func validateTaints(path *field.Path, taints []Taint) problem.List {
	var errs problem.List
	seen := sets.New[string]()
	for i, t := range taints {
		// A blueprint read from a file has had its taints parsed
		// (ParseTaint); one built in code is checked here.
		if p := t.check(); p != nil {
			p.Field = path.Index(i).String()
			errs = append(errs, *p)
			continue
		}
		k := t.Key + ":" + string(t.Effect)
		if seen.Has(k) {
			errs = append(errs, duplicate(path.Index(i), t.String()))
		}
		seen.Insert(k)
	}
	return errs
}

func validateLabels(path *field.Path, labels map[string]string) problem.List {
	var errs problem.List
	for _, k := range sets.List(sets.KeySet(labels)) {
		kp := path.Key(k)
		if es := validation.IsQualifiedName(k); len(es) > 0 {
			errs = append(errs, invalid(kp, "label key "+strings.Join(es, "; "), ""))
		}
		if reservedNodeLabels.Has(k) {
			errs = append(errs, invalid(kp, fmt.Sprintf("label %s is set by berth from the pool itself", k), "remove it; set the pool's name, zones, machine or capacity instead"))
		}
		errs = append(errs, labelValue(kp, labels[k])...)
	}
	return errs
}

func validateTeams(path *field.Path, teams []Team, pools []Pool, classes []Class) (errs, warnings problem.List) {
	names, namespaces := sets.New[string](), sets.New[string]()
	classNames := sets.New[string]()
	for _, c := range classes {
		classNames.Insert(c.Name)
	}
	// The most GPUs of each resource the pools can ever hold at once.
	gpuCapacity := map[string]int64{}
	for i := range pools {
		if r := pools[i].GPUResource(); r != "" {
			gpuCapacity[r] += pools[i].MaxGPUs()
		}
	}
	for i := range teams {
		t := &teams[i]
		tp := path.Index(i)
		errs = append(errs, dnsLabel(tp.Child("name"), t.Name)...)
		if names.Has(t.Name) {
			errs = append(errs, duplicate(tp.Child("name"), t.Name))
		}
		names.Insert(t.Name)
		for j, ns := range t.Namespaces {
			np := tp.Child("namespaces").Index(j)
			errs = append(errs, dnsLabel(np, ns)...)
			if namespaces.Has(ns) {
				errs = append(errs, duplicate(np, ns))
			}
			if ns == "default" || strings.HasPrefix(ns, "kube-") {
				errs = append(errs, invalid(np, fmt.Sprintf("namespace %q belongs to Kubernetes itself", ns), "give the team its own namespace"))
			}
			namespaces.Insert(ns)
		}
		for j, c := range t.Classes {
			if !classNames.Has(c) {
				errs = append(errs, invalid(tp.Child("classes").Index(j), fmt.Sprintf("no class is named %q", c), fmt.Sprintf("use one of %s", strings.Join(sets.List(classNames), ", "))))
			}
		}
		if q := t.Quota; q != nil {
			qp := tp.Child("quota")
			for _, r := range []struct {
				name string
				q    *resource.Quantity
			}{{"gpu", q.GPU}, {"cpu", q.CPU}, {"memory", q.Memory}, {"pods", q.Pods}} {
				if r.q != nil && r.q.Sign() < 0 {
					errs = append(errs, invalid(qp.Child(r.name), "must not be negative", ""))
				}
			}
			if q.GPU != nil && q.GPU.Sign() > 0 {
				gpus := gpuCapacity[DefaultGPUResource]
				switch {
				case len(gpuCapacity) == 0:
					errs = append(errs, invalid(qp.Child("gpu"), "no pool provides GPUs, so this quota can never be used", "add a pool with machine.gpu, or remove the GPU quota"))
				case q.GPU.Value()*1000 != q.GPU.MilliValue():
					errs = append(errs, invalid(qp.Child("gpu"), "GPUs are whole devices", "use a whole number"))
				case q.GPU.Value() > gpus:
					warnings = append(warnings, warning(qp.Child("gpu"), fmt.Sprintf("the pools can never hold more than %d GPUs, so this quota cannot be reached", gpus), fmt.Sprintf("lower it to %d, or raise the GPU pools' max", gpus)))
				}
			}
		}
		if d := t.Defaults; d != nil {
			dp := tp.Child("defaults")
			for _, pair := range []struct {
				name            string
				req, limit, max *resource.Quantity
			}{{"cpu", d.CPURequest, d.CPULimit, d.CPUMax}, {"memory", d.MemoryRequest, d.MemoryLimit, d.MemoryMax}} {
				if pair.req != nil && pair.req.Sign() < 0 {
					errs = append(errs, invalid(dp.Child(pair.name+"Request"), "must not be negative", ""))
				}
				if pair.req != nil && pair.limit != nil && pair.req.Cmp(*pair.limit) > 0 {
					errs = append(errs, invalid(dp.Child(pair.name+"Request"), fmt.Sprintf("default request is above the default limit (%s)", pair.limit.String()), fmt.Sprintf("lower the request or raise %sLimit", pair.name)))
				}
				if pair.limit != nil && pair.max != nil && pair.limit.Cmp(*pair.max) > 0 {
					errs = append(errs, invalid(dp.Child(pair.name+"Limit"), fmt.Sprintf("default limit is above the most a container may ask for (%sMax %s); the API server would refuse this LimitRange", pair.name, pair.max.String()), fmt.Sprintf("lower %sLimit or raise %sMax", pair.name, pair.name)))
				}
			}
		}
	}
	return errs, warnings
}

func validateClasses(path *field.Path, classes []Class, pools map[string]*Pool) problem.List {
	var errs problem.List
	names := sets.New[string]()
	poolNames := sets.KeySet(pools)
	defaultClass := ""
	for i := range classes {
		c := &classes[i]
		cp := path.Index(i)
		errs = append(errs, dnsLabel(cp.Child("name"), c.Name)...)
		if names.Has(c.Name) {
			errs = append(errs, duplicate(cp.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if c.Priority != "" {
			errs = append(errs, oneOf(cp.Child("priority"), string(c.Priority), PriorityHigh, PriorityMedium, PriorityLow)...)
		}
		errs = append(errs, oneOf(cp.Child("preemption"), string(c.Preemption), PreemptLowerPriority, PreemptNever)...)
		errs = append(errs, oneOf(cp.Child("spread"), string(c.Spread), SpreadNone, SpreadZone)...)
		if c.Role != "" {
			errs = append(errs, oneOf(cp.Child("role"), string(c.Role), RoleServing, RoleTraining, RoleGeneral)...)
		}
		if c.Isolation != "" {
			errs = append(errs, oneOf(cp.Child("isolation"), string(c.Isolation), IsolationRequired, IsolationPreferred, IsolationNone)...)
		}
		if len(c.Pools) == 0 {
			errs = append(errs, invalid(cp.Child("pools"), "a class must name the pools it runs on", fmt.Sprintf("list some of %s, in preference order", strings.Join(sets.List(poolNames), ", "))))
		}
		for j, p := range c.Pools {
			if _, ok := pools[p]; !ok {
				errs = append(errs, invalid(cp.Child("pools").Index(j), fmt.Sprintf("no pool is named %q", p), fmt.Sprintf("use one of %s", strings.Join(sets.List(poolNames), ", "))))
			}
		}
		if c.GlobalDefault {
			if c.Priority == "" {
				errs = append(errs, invalid(cp.Child("globalDefault"), "a class without a priority has no PriorityClass to make the default", "give it a priority, or drop globalDefault"))
			}
			if defaultClass != "" {
				errs = append(errs, invalid(cp.Child("globalDefault"), fmt.Sprintf("class %q is already the default; Kubernetes allows one default PriorityClass", defaultClass), "keep globalDefault on one class"))
			}
			defaultClass = c.Name
		}
		if d := c.Disruption; d != nil {
			dp := cp.Child("disruption")
			if (d.MinAvailable == nil) == (d.MaxUnavailable == nil) {
				errs = append(errs, invalid(dp, "set exactly one of minAvailable and maxUnavailable, as a PodDisruptionBudget requires", "e.g. disruption: {minAvailable: 1}"))
			}
			errs = append(errs, budget(dp.Child("minAvailable"), d.MinAvailable)...)
			errs = append(errs, budget(dp.Child("maxUnavailable"), d.MaxUnavailable)...)
		}
		errs = append(errs, validateScaling(cp, c)...)
	}
	return errs
}

func dnsLabel(path *field.Path, v string) problem.List {
	if v == "" {
		return problem.List{invalid(path, "a name is required", "use lower-case letters, digits and '-', like \"gpu-pool\"")}
	}
	if es := validation.IsDNS1123Label(v); len(es) > 0 {
		return problem.List{invalid(path, "is not a DNS-1123 label: "+strings.Join(es, "; "), "use lower-case letters, digits and '-', like \""+suggestLabel(v)+"\"")}
	}
	return nil
}

func duplicate(path *field.Path, v string) problem.Problem {
	return invalid(path, fmt.Sprintf("%q appears more than once", v), "rename or remove one of them")
}

// invalid is a problem with the field at path: what is wrong with it,
// and the fix (empty when there is nothing better to say than the
// message).
func invalid(path *field.Path, message, fix string) problem.Problem {
	return problem.Problem{Field: path.String(), Message: message, Fix: fix}
}

// warning is invalid for a field that may be used as it is, but
// probably does not mean what it says.
func warning(path *field.Path, message, fix string) problem.Problem {
	p := invalid(path, message, fix)
	p.Warning = true
	return p
}

func labelValue(path *field.Path, v string) problem.List {
	if es := validation.IsValidLabelValue(v); len(es) > 0 || v == "" {
		if v == "" {
			es = []string{"must not be empty"}
		}
		return problem.List{invalid(path, "is not a valid label value: "+strings.Join(es, "; "), "")}
	}
	return nil
}

func oneOf[T ~string](path *field.Path, v string, allowed ...T) problem.List {
	var names []string
	for _, a := range allowed {
		if string(a) == v {
			return nil
		}
		names = append(names, string(a))
	}
	fix := "use one of them"
	if a, ok := suggest(v, allowed...); ok {
		fix = fmt.Sprintf("did you mean %q?", a)
	}
	return problem.List{invalid(path, fmt.Sprintf("%q is not one of %s", v, strings.Join(names, ", ")), fix)}
}

func positive(path *field.Path, q resource.Quantity, example string) problem.List {
	if q.Sign() <= 0 {
		return problem.List{invalid(path, "must be greater than zero", "give the machine's size, e.g. "+example)}
	}
	return nil
}

func suggestLabel(v string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(v) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "my-name"
	}
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

// budget checks a PodDisruptionBudget bound: a count of at least 0, or a
// percentage from 0% to 100%.
func budget(path *field.Path, v *intstr.IntOrString) problem.List {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return problem.List{invalid(path, "must not be negative", "give a number of pods, like 1, or a percentage, like \"50%\"")}
		}
		return nil
	}
	p, ok := strings.CutSuffix(v.StrVal, "%")
	if n, err := strconv.Atoi(p); !ok || err != nil || n < 0 || n > 100 {
		return problem.List{invalid(path, "is neither a number of pods nor a percentage from 0% to 100%", "write a number like 1, or a percentage like \"50%\"")}
	}
	return nil
}
