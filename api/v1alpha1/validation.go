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
)

// A Detail may end in a line "fix: ..." telling the user what to change;
// renderers print it on its own line.

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
// does not mean what it says), each with the field path it concerns.
func Validate(bp *Blueprint) (errs, warnings field.ErrorList) {
	if bp.APIVersion != GroupVersion {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), bp.APIVersion, fmt.Sprintf("must be %s\nfix: set apiVersion: %s", GroupVersion, GroupVersion)))
	}
	if bp.Kind != Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), bp.Kind, fmt.Sprintf("must be %s\nfix: set kind: %s", Kind, Kind)))
	}
	errs = append(errs, dnsLabel(field.NewPath("metadata", "name"), bp.Metadata.Name)...)

	spec := field.NewPath("spec")
	s := &bp.Spec
	if v := s.KubernetesVersion; v != "" && !kubernetesVersionRE.MatchString(v) {
		errs = append(errs, field.Invalid(spec.Child("kubernetesVersion"), v, "is not a Kubernetes version\nfix: write the minor version in quotes, like \"1.36\""))
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
	errs = append(errs, validateAutoscaler(spec.Child("autoscaler"), s)...)
	errs = append(errs, validateDevicePlugin(spec.Child("devicePlugin"), s)...)
	teamNamespaces := sets.New[string]()
	for _, t := range s.Teams {
		teamNamespaces.Insert(t.Namespaces...)
	}
	for i, ns := range s.SystemNamespaces {
		p := spec.Child("systemNamespaces").Index(i)
		errs = append(errs, dnsLabel(p, ns)...)
		if teamNamespaces.Has(ns) && ns != "default" && !strings.HasPrefix(ns, "kube-") { // those are refused as team namespaces already
			errs = append(errs, field.Invalid(p, ns, "is also a team namespace; a team's pods would be allowed onto System pools and to pin themselves to nodes\nfix: keep system and team namespaces apart"))
		}
	}
	return errs, warnings
}

func validatePools(path *field.Path, pools []Pool, zones sets.Set[string], byName map[string]*Pool) (errs, warnings field.ErrorList) {
	if len(pools) == 0 {
		return field.ErrorList{field.Required(path, "a cluster needs at least one pool\nfix: add a System pool, e.g. {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 2}")}, nil
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
		if p.MaxPods < 1 || p.MaxPods > 10000 {
			errs = append(errs, field.Invalid(pp.Child("maxPods"), p.MaxPods, "must be between 1 and 10000\nfix: leave it out for the default of 110"))
		}
		if p.Mode == ModeSystem {
			system = true
			if p.OS == Windows {
				errs = append(errs, field.Invalid(pp.Child("os"), p.OS, "a System pool must run Linux: cluster add-ons have no Windows images\nfix: set os: Linux, or mode: User for a Windows pool"))
			}
			if p.InitialSize() < 1 || (p.Autoscale != nil && p.Autoscale.Min < 1) {
				f := pp.Child("count")
				if p.Autoscale != nil {
					f = pp.Child("autoscale", "min")
				}
				errs = append(errs, field.Invalid(f, p.InitialSize(), "a System pool must keep at least one node: the cluster's add-ons live there\nfix: set it to 1 or more, or make the pool mode: User"))
			}
		}
		errs = append(errs, validateTaints(pp.Child("taints"), p.Taints)...)
		errs = append(errs, validateLabels(pp.Child("labels"), p.Labels)...)
		for j, z := range p.Zones {
			if !zones.Has(z) {
				errs = append(errs, notFound(pp.Child("zones").Index(j), z, fmt.Sprintf("zone %q is not declared in spec.zones\nfix: add it to spec.zones or use one of %s", z, strings.Join(sets.List(zones), ", "))))
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
			warnings = append(warnings, field.Invalid(pp.Child("taints"), p.Taints, what+" without taints takes any pod, and the guardrails can keep pods off it only when they select it\nfix: "+fix))
		}
		if p.Capacity == Spot && len(p.Taints) == 0 {
			warnings = append(warnings, field.Invalid(pp.Child("taints"), p.Taints, "a Spot pool without taints takes any pod, including ones that cannot survive losing their node\nfix: add a taint such as \"berth.io/capacity=spot:NoSchedule\""))
		}
	}
	if !system {
		errs = append(errs, field.Required(path, "no pool has mode: System, and a cluster needs one for its add-ons\nfix: set mode: System on one pool (Linux, at least one node), tainted CriticalAddonsOnly=true:NoSchedule"))
	}
	return errs, warnings
}

func validateMachine(path *field.Path, m *Machine, r *Reserved, rpath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, positive(path.Child("cpu"), m.CPU, "cpu: 16")...)
	errs = append(errs, positive(path.Child("memory"), m.Memory, "memory: 64Gi")...)
	if g := m.GPU; g != nil {
		gp := path.Child("gpu")
		if g.Count < 1 {
			errs = append(errs, field.Invalid(gp.Child("count"), g.Count, "must be at least 1\nfix: give the GPUs per node, or remove gpu"))
		}
		if g.Product == "" {
			errs = append(errs, field.Required(gp.Child("product"), "the GPU model is needed for the nvidia.com/gpu.product label\nfix: e.g. product: NVIDIA-L4"))
		} else {
			errs = append(errs, labelValue(gp.Child("product"), g.Product)...)
		}
		if g.Resource != "" {
			if es := validation.IsQualifiedName(g.Resource); len(es) > 0 || !strings.Contains(g.Resource, "/") {
				errs = append(errs, field.Invalid(gp.Child("resource"), g.Resource, "must be a domain-prefixed extended resource\nfix: leave it out for nvidia.com/gpu"))
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
				errs = append(errs, field.Invalid(rpath.Child(q.name), q.have.String(), fmt.Sprintf("must be at least 0 and less than the machine's %s (%s)\nfix: reserve a small share, e.g. a tenth", q.name, q.cap.String())))
			}
		}
	}
	return errs
}

func validateSize(pp *field.Path, p *Pool) field.ErrorList {
	var errs field.ErrorList
	if p.Count != nil && p.Autoscale != nil {
		errs = append(errs, field.Forbidden(pp.Child("count"), "count and autoscale cannot both be set: a fixed pool does not scale\nfix: remove count, or remove autoscale"))
	}
	if p.Count != nil && *p.Count < 0 {
		errs = append(errs, field.Invalid(pp.Child("count"), *p.Count, "must not be negative"))
	}
	if a := p.Autoscale; a != nil {
		ap := pp.Child("autoscale")
		if a.Min < 0 {
			errs = append(errs, field.Invalid(ap.Child("min"), a.Min, "must not be negative"))
		}
		if a.Max < 1 {
			errs = append(errs, field.Invalid(ap.Child("max"), a.Max, "must be at least 1\nfix: a pool that never has nodes is better removed"))
		}
		if a.Priority < 0 {
			errs = append(errs, field.Invalid(ap.Child("priority"), a.Priority, "must not be negative\nfix: zero is the lowest priority"))
		}
		if t := a.ProvisioningTime; t != nil && t.Duration < 0 {
			errs = append(errs, field.Invalid(ap.Child("provisioningTime"), t.Duration.String(), "must not be negative\nfix: write a Go duration such as 90s"))
		}
		if a.Min > a.Max {
			errs = append(errs, field.Invalid(ap.Child("min"), a.Min, fmt.Sprintf("min is greater than max (%d)\nfix: set min to at most %d, or raise max", a.Max, a.Max)))
		}
	}
	return errs
}

func validateTaints(path *field.Path, taints []Taint) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		// A blueprint read from a file has had its taints parsed
		// (ParseTaint); one built in code is checked here.
		if p := t.check(); p != nil {
			errs = append(errs, field.Invalid(path.Index(i), t.String(), p.Message+"\nfix: "+p.Fix))
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

func validateLabels(path *field.Path, labels map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sets.List(sets.KeySet(labels)) {
		kp := path.Key(k)
		if es := validation.IsQualifiedName(k); len(es) > 0 {
			errs = append(errs, field.Invalid(kp, k, "label key "+strings.Join(es, "; ")))
		}
		if reservedNodeLabels.Has(k) {
			errs = append(errs, field.Forbidden(kp, fmt.Sprintf("label %s is set by berth from the pool itself\nfix: remove it; set the pool's name, zones, machine or capacity instead", k)))
		}
		errs = append(errs, labelValue(kp, labels[k])...)
	}
	return errs
}

func validateTeams(path *field.Path, teams []Team, pools []Pool, classes []Class) (errs, warnings field.ErrorList) {
	names, namespaces := sets.New[string](), sets.New[string]()
	classNames := sets.New[string]()
	for _, c := range classes {
		classNames.Insert(c.Name)
	}
	// The most GPUs of each resource the pools can ever hold at once.
	gpuCapacity := map[string]int64{}
	for i := range pools {
		if r := pools[i].GPUResource(); r != "" {
			gpuCapacity[r] += int64(pools[i].MaxSize()) * int64(pools[i].Machine.GPU.Count)
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
				errs = append(errs, field.Forbidden(np, fmt.Sprintf("namespace %q belongs to Kubernetes itself\nfix: give the team its own namespace", ns)))
			}
			namespaces.Insert(ns)
		}
		for j, c := range t.Classes {
			if !classNames.Has(c) {
				errs = append(errs, notFound(tp.Child("classes").Index(j), c, fmt.Sprintf("no class is named %q\nfix: use one of %s", c, strings.Join(sets.List(classNames), ", "))))
			}
		}
		if q := t.Quota; q != nil {
			qp := tp.Child("quota")
			for _, r := range []struct {
				name string
				q    *resource.Quantity
			}{{"gpu", q.GPU}, {"cpu", q.CPU}, {"memory", q.Memory}, {"pods", q.Pods}} {
				if r.q != nil && r.q.Sign() < 0 {
					errs = append(errs, field.Invalid(qp.Child(r.name), r.q.String(), "must not be negative"))
				}
			}
			if q.GPU != nil && q.GPU.Sign() > 0 {
				gpus := gpuCapacity[DefaultGPUResource]
				switch {
				case len(gpuCapacity) == 0:
					errs = append(errs, field.Invalid(qp.Child("gpu"), q.GPU.String(), "no pool provides GPUs, so this quota can never be used\nfix: add a pool with machine.gpu, or remove the GPU quota"))
				case q.GPU.Value()*1000 != q.GPU.MilliValue():
					errs = append(errs, field.Invalid(qp.Child("gpu"), q.GPU.String(), "GPUs are whole devices\nfix: use a whole number"))
				case q.GPU.Value() > gpus:
					warnings = append(warnings, field.Invalid(qp.Child("gpu"), q.GPU.String(), fmt.Sprintf("the pools can never hold more than %d GPUs, so this quota cannot be reached\nfix: lower it to %d, or raise the GPU pools' max", gpus, gpus)))
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
					errs = append(errs, field.Invalid(dp.Child(pair.name+"Request"), pair.req.String(), "must not be negative"))
				}
				if pair.req != nil && pair.limit != nil && pair.req.Cmp(*pair.limit) > 0 {
					errs = append(errs, field.Invalid(dp.Child(pair.name+"Request"), pair.req.String(), fmt.Sprintf("default request is above the default limit (%s)\nfix: lower the request or raise %sLimit", pair.limit.String(), pair.name)))
				}
				if pair.limit != nil && pair.max != nil && pair.limit.Cmp(*pair.max) > 0 {
					errs = append(errs, field.Invalid(dp.Child(pair.name+"Limit"), pair.limit.String(), fmt.Sprintf("default limit is above the most a container may ask for (%sMax %s); the API server would refuse this LimitRange\nfix: lower %sLimit or raise %sMax", pair.name, pair.max.String(), pair.name, pair.name)))
				}
			}
		}
	}
	return errs, warnings
}

func validateClasses(path *field.Path, classes []Class, pools map[string]*Pool) field.ErrorList {
	var errs field.ErrorList
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
			errs = append(errs, field.Required(cp.Child("pools"), fmt.Sprintf("a class must name the pools it runs on\nfix: list some of %s, in preference order", strings.Join(sets.List(poolNames), ", "))))
		}
		for j, p := range c.Pools {
			if _, ok := pools[p]; !ok {
				errs = append(errs, notFound(cp.Child("pools").Index(j), p, fmt.Sprintf("no pool is named %q\nfix: use one of %s", p, strings.Join(sets.List(poolNames), ", "))))
			}
		}
		if c.GlobalDefault {
			if c.Priority == "" {
				errs = append(errs, field.Invalid(cp.Child("globalDefault"), true, "a class without a priority has no PriorityClass to make the default\nfix: give it a priority, or drop globalDefault"))
			}
			if defaultClass != "" {
				errs = append(errs, field.Invalid(cp.Child("globalDefault"), true, fmt.Sprintf("class %q is already the default; Kubernetes allows one default PriorityClass\nfix: keep globalDefault on one class", defaultClass)))
			}
			defaultClass = c.Name
		}
		if d := c.Disruption; d != nil {
			dp := cp.Child("disruption")
			if (d.MinAvailable == nil) == (d.MaxUnavailable == nil) {
				errs = append(errs, field.Invalid(dp, "", "set exactly one of minAvailable and maxUnavailable, as a PodDisruptionBudget requires\nfix: e.g. disruption: {minAvailable: 1}"))
			}
			errs = append(errs, budget(dp.Child("minAvailable"), d.MinAvailable)...)
			errs = append(errs, budget(dp.Child("maxUnavailable"), d.MaxUnavailable)...)
		}
		errs = append(errs, validateScaling(cp, c)...)
	}
	return errs
}

func dnsLabel(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "a name is required\nfix: use lower-case letters, digits and '-', like \"gpu-pool\"")}
	}
	if es := validation.IsDNS1123Label(v); len(es) > 0 {
		return field.ErrorList{field.Invalid(path, v, "is not a DNS-1123 label: "+strings.Join(es, "; ")+"\nfix: use lower-case letters, digits and '-', like \""+suggestLabel(v)+"\"")}
	}
	return nil
}

func duplicate(path *field.Path, v string) *field.Error {
	e := field.Duplicate(path, v)
	e.Detail = fmt.Sprintf("%q appears more than once\nfix: rename or remove one of them", v)
	return e
}

func notFound(path *field.Path, v, detail string) *field.Error {
	e := field.NotFound(path, v)
	e.Detail = detail
	return e
}

func labelValue(path *field.Path, v string) field.ErrorList {
	if es := validation.IsValidLabelValue(v); len(es) > 0 || v == "" {
		if v == "" {
			es = []string{"must not be empty"}
		}
		return field.ErrorList{field.Invalid(path, v, "is not a valid label value: "+strings.Join(es, "; "))}
	}
	return nil
}

func oneOf[T ~string](path *field.Path, v string, allowed ...T) field.ErrorList {
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
	return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("%q is not one of %s\nfix: %s", v, strings.Join(names, ", "), fix))}
}

func positive(path *field.Path, q resource.Quantity, example string) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must be greater than zero\nfix: give the machine's size, e.g. "+example)}
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
func budget(path *field.Path, v *intstr.IntOrString) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(path, v.IntVal, "must not be negative\nfix: give a number of pods, like 1, or a percentage, like \"50%\"")}
		}
		return nil
	}
	p, ok := strings.CutSuffix(v.StrVal, "%")
	if n, err := strconv.Atoi(p); !ok || err != nil || n < 0 || n > 100 {
		return field.ErrorList{field.Invalid(path, v.StrVal, "is neither a number of pods nor a percentage from 0% to 100%\nfix: write a number like 1, or a percentage like \"50%\"")}
	}
	return nil
}
