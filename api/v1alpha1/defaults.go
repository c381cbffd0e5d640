package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// Defaults applied by SetDefaults.
const (
	DefaultZone        = "zone-1"
	DefaultMaxPods     = int32(110)
	DefaultGPUResource = ResourceNVIDIAGPU
)

// Container defaults a team's LimitRange gets when the blueprint names none.
var (
	DefaultCPURequest    = resource.MustParse("500m")
	DefaultMemoryRequest = resource.MustParse("512Mi")
	DefaultCPULimit      = resource.MustParse("1")
	DefaultMemoryLimit   = resource.MustParse("1Gi")
)

// SetDefaults fills every field whose zero value has a documented default.
// It is the only place defaults are decided, and it is idempotent.
func SetDefaults(bp *Blueprint) {
	s := &bp.Spec
	if len(s.Zones) == 0 {
		s.Zones = []string{DefaultZone}
	}
	if len(s.SystemNamespaces) == 0 {
		s.SystemNamespaces = []string{"kube-system"}
	}
	if s.Guardrails == "" {
		s.Guardrails = GuardrailsEnforce
	}
	setModelDefaults(s.Models)
	setStorageDefaults(s)
	setAutoscalerDefaults(s)
	for i := range s.Pools {
		p := &s.Pools[i]
		if p.Mode == "" {
			p.Mode = ModeUser
		}
		if p.OS == "" {
			p.OS = Linux
		}
		if p.Capacity == "" {
			p.Capacity = OnDemand
		}
		if p.MaxPods == 0 {
			p.MaxPods = DefaultMaxPods
		}
		if p.KubernetesVersion == "" {
			p.KubernetesVersion = s.KubernetesVersion
		}
		if len(p.Zones) == 0 {
			p.Zones = append([]string(nil), s.Zones...)
		}
		if g := p.Machine.GPU; g != nil && g.Resource == "" {
			g.Resource = DefaultGPUResource
		}
	}
	for i := range s.Teams {
		t := &s.Teams[i]
		if len(t.Namespaces) == 0 {
			t.Namespaces = []string{t.Name}
		}
		if t.Defaults == nil {
			t.Defaults = &ContainerDefaults{}
		}
		d := t.Defaults
		setQuantity(&d.CPURequest, DefaultCPURequest)
		setQuantity(&d.MemoryRequest, DefaultMemoryRequest)
		setQuantity(&d.CPULimit, DefaultCPULimit)
		setQuantity(&d.MemoryLimit, DefaultMemoryLimit)
		if cpu, mem, ok := largestMachine(s.Pools); ok {
			setQuantity(&d.CPUMax, cpu)
			setQuantity(&d.MemoryMax, mem)
		}
	}
	for i := range s.Classes {
		c := &s.Classes[i]
		if c.Preemption == "" {
			c.Preemption = PreemptLowerPriority
		}
		if c.Spread == "" {
			c.Spread = SpreadNone
		}
		setScalingDefaults(c, s.Pools)
	}
}

// largestMachine is the most CPU and the most memory any pool's machine
// has (not necessarily the same machine).
func largestMachine(pools []Pool) (cpu, mem resource.Quantity, ok bool) {
	for i := range pools {
		m := &pools[i].Machine
		if m.CPU.Cmp(cpu) > 0 {
			cpu = m.CPU.DeepCopy()
		}
		if m.Memory.Cmp(mem) > 0 {
			mem = m.Memory.DeepCopy()
		}
	}
	return cpu, mem, cpu.Sign() > 0 && mem.Sign() > 0
}

func setQuantity(q **resource.Quantity, def resource.Quantity) {
	if *q == nil {
		v := def.DeepCopy()
		*q = &v
	}
}

// InitialSize is how many nodes the pool starts with: Count, else
// Autoscale.Min, else one.
func (p *Pool) InitialSize() int32 {
	switch {
	case p.Count != nil:
		return *p.Count
	case p.Autoscale != nil:
		return p.Autoscale.Min
	default:
		return 1
	}
}

// MinSize is the fewest nodes the pool can have: Autoscale.Min, or a
// fixed pool's size.
func (p *Pool) MinSize() int32 {
	if p.Autoscale != nil {
		return p.Autoscale.Min
	}
	return p.InitialSize()
}

// MaxSize is the most nodes the pool can ever have: Autoscale.Max, or a
// fixed pool's size.
func (p *Pool) MaxSize() int32 {
	if p.Autoscale != nil {
		return p.Autoscale.Max
	}
	return p.InitialSize()
}

// MaxGPUs is the most GPUs the pool holds at once: its MaxSize nodes'
// GPUs, 0 for a pool without them.
func (p *Pool) MaxGPUs() int64 {
	if p.Machine.GPU == nil {
		return 0
	}
	return int64(p.MaxSize()) * int64(p.Machine.GPU.Count)
}

// GPUResource is the extended resource the pool's GPUs are advertised as,
// or "" when the pool has none.
func (p *Pool) GPUResource() string {
	if p.Machine.GPU == nil {
		return ""
	}
	if p.Machine.GPU.Resource == "" {
		return DefaultGPUResource
	}
	return p.Machine.GPU.Resource
}

// EffectiveRole is the class's role, its default worked out: Serving for
// priority high, Training for preemption Never, General otherwise.
func (c *Class) EffectiveRole() ClassRole {
	switch {
	case c.Role != "":
		return c.Role
	case c.Priority == PriorityHigh:
		return RoleServing
	case c.Preemption == PreemptNever:
		return RoleTraining
	}
	return RoleGeneral
}

// EffectiveIsolation is the class's isolation, Required when unset.
func (c *Class) EffectiveIsolation() Isolation {
	if c.Isolation == "" {
		return IsolationRequired
	}
	return c.Isolation
}

// PriorityClassName is the PriorityClass the class compiles to, or "" when
// it has no priority.
func (c *Class) PriorityClassName() string {
	if c.Priority == "" {
		return ""
	}
	return c.Name + "-" + string(c.Priority)
}
