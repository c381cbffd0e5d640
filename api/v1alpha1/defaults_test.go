package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

func quantity(s string) *resource.Quantity { return ptr(resource.MustParse(s)) }

func TestSetDefaultsFillsDocumentedDefaults(t *testing.T) {
	bp := &Blueprint{Spec: Spec{
		Pools: []Pool{
			{Name: "system", Mode: ModeSystem, Count: ptr(int32(1))},
			{Name: "gpu", Machine: Machine{GPU: &GPU{Count: 1, Product: "NVIDIA-L4"}}},
		},
		Teams:   []Team{{Name: "team-a"}},
		Classes: []Class{{Name: "batch", Pools: []string{"gpu"}}},
	}}
	SetDefaults(bp)
	want := &Blueprint{Spec: Spec{
		Zones: []string{"zone-1"},
		Pools: []Pool{
			{Name: "system", Mode: ModeSystem, OS: Linux, Capacity: OnDemand, Count: ptr(int32(1)), MaxPods: 110, Zones: []string{"zone-1"}},
			{Name: "gpu", Mode: ModeUser, OS: Linux, Capacity: OnDemand, MaxPods: 110, Zones: []string{"zone-1"},
				Machine: Machine{GPU: &GPU{Count: 1, Product: "NVIDIA-L4", Resource: "nvidia.com/gpu"}}},
		},
		Teams: []Team{{Name: "team-a", Namespaces: []string{"team-a"}, Defaults: &ContainerDefaults{
			CPURequest: quantity("500m"), MemoryRequest: quantity("512Mi"), CPULimit: quantity("1"), MemoryLimit: quantity("1Gi"),
		}}},
		Classes:          []Class{{Name: "batch", Pools: []string{"gpu"}, Preemption: PreemptLowerPriority, Spread: SpreadNone}},
		SystemNamespaces: []string{"kube-system"},
		Guardrails:       GuardrailsEnforce,
		// cluster-autoscaler's defaults, from its FAQ.
		Autoscaler: &AutoscalerProfile{
			ScanInterval:                     duration("10s"),
			Expander:                         "random",
			ScaleDownEnabled:                 ptr(true),
			ScaleDownUtilizationThreshold:    ptr(0.5),
			ScaleDownGpuUtilizationThreshold: ptr(0.5),
			ScaleDownUnneededTime:            duration("10m"),
			ScaleDownDelayAfterAdd:           duration("10m"),
			ScaleDownDelayAfterDelete:        duration("10s"),
			ScaleDownDelayAfterFailure:       duration("3m"),
			MaxEmptyBulkDelete:               ptr(int32(10)),
			MaxGracefulTerminationSec:        ptr(int32(600)),
			MaxNodeProvisionTime:             duration("15m"),
			NewPodScaleUpDelay:               duration("0s"),
			SkipNodesWithLocalStorage:        ptr(true),
			SkipNodesWithSystemPods:          ptr(true),
		},
		DevicePlugin: &DevicePlugin{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset", Image: DefaultDevicePluginImage, Install: ptr(true)},
		// One zonal ReadWriteOnce class, the default.
		Storage: &Storage{Classes: []StorageClass{{
			Name: DefaultStorageClass, Default: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Zonal: ptr(true), MinSize: quantity("1Gi"), ReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		}}},
	}}
	if diff := cmp.Diff(want, bp); diff != "" {
		t.Errorf("SetDefaults (-want +got):\n%s", diff)
	}
}

// Fields the user sets are never overwritten, and fields whose zero value
// means something other than a default (no quota, no priority, every
// class) stay zero.
func TestSetDefaultsKeepsWhatIsSet(t *testing.T) {
	set := func() *Blueprint {
		return &Blueprint{Spec: Spec{
			Zones: []string{"a", "b"},
			Pools: []Pool{{
				Name: "win", Mode: ModeUser, OS: Windows, Capacity: Spot, MaxPods: 30, Zones: []string{"b"},
				Machine:   Machine{GPU: &GPU{Count: 2, Product: "MI300", Resource: "amd.com/gpu"}},
				Autoscale: &Autoscale{Min: 0, Max: 3, Priority: 5, ProvisioningTime: duration("2m")},
			}},
			Teams: []Team{{
				Name: "team-a", Namespaces: []string{"a-dev", "a-prod"},
				Defaults: &ContainerDefaults{CPURequest: quantity("100m")},
			}},
			Classes: []Class{{
				Name: "web", Pools: []string{"win"}, Preemption: PreemptNever, Spread: SpreadZone,
				Disruption: &Disruption{MinAvailable: ptr(intstr.FromString("50%"))},
			}},
			SystemNamespaces: []string{"kube-system", "monitoring"},
			Guardrails:       GuardrailsWarn,
			Autoscaler: &AutoscalerProfile{
				ScanInterval: duration("1s"), Expander: "priority,least-waste", ScaleDownEnabled: ptr(false),
				ScaleDownUtilizationThreshold: ptr(0.7), ScaleDownGpuUtilizationThreshold: ptr(0.2),
				ScaleDownUnneededTime: duration("30s"), ScaleDownDelayAfterAdd: duration("0s"),
				ScaleDownDelayAfterDelete: duration("2s"), ScaleDownDelayAfterFailure: duration("5s"),
				MaxEmptyBulkDelete: ptr(int32(3)), MaxGracefulTerminationSec: ptr(int32(30)),
				MaxNodeProvisionTime: duration("1m"), NewPodScaleUpDelay: duration("1s"),
				SkipNodesWithLocalStorage: ptr(false), SkipNodesWithSystemPods: ptr(false),
			},
			DevicePlugin: &DevicePlugin{Namespace: "monitoring", Name: "gpu-plugin", Image: "example/plugin:1", Install: ptr(false)},
			Storage: &Storage{Classes: []StorageClass{{
				Name: "files", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, Zonal: ptr(true),
				MinSize: quantity("100Gi"), MaxSize: quantity("1Ti"), MaxVolumesPerNode: 3, ReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			}}},
		}}
	}
	bp := set()
	SetDefaults(bp)
	want := set()
	// Only the container defaults the team left out are filled.
	want.Spec.Teams[0].Defaults.MemoryRequest = quantity("512Mi")
	want.Spec.Teams[0].Defaults.CPULimit = quantity("1")
	want.Spec.Teams[0].Defaults.MemoryLimit = quantity("1Gi")
	if diff := cmp.Diff(want, bp); diff != "" {
		t.Errorf("SetDefaults (-want +got):\n%s", diff)
	}
	if c := bp.Spec.Classes[0]; c.Priority != "" || c.PriorityClassName() != "" {
		t.Errorf("class priority defaulted to %q", c.Priority)
	}
	if tm := bp.Spec.Teams[0]; tm.Quota != nil || tm.Classes != nil {
		t.Errorf("team quota or classes defaulted: %+v", tm)
	}
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	for name, bp := range map[string]*Blueprint{
		"empty": {},
		"zones from spec": {Spec: Spec{
			Zones: []string{"z1", "z2", "z3"},
			Pools: []Pool{{Name: "a"}, {Name: "b", Zones: []string{"z2"}}},
		}},
		"teams and classes": {Spec: Spec{
			Pools:   []Pool{{Name: "gpu", Machine: Machine{GPU: &GPU{Count: 1}}}},
			Teams:   []Team{{Name: "a"}, {Name: "b", Defaults: &ContainerDefaults{MemoryLimit: quantity("2Gi")}}},
			Classes: []Class{{Name: "c"}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			SetDefaults(bp)
			once := deepCopy(t, bp)
			SetDefaults(bp)
			if diff := cmp.Diff(once, bp); diff != "" {
				t.Errorf("second SetDefaults changed the blueprint (-once +twice):\n%s", diff)
			}
		})
	}
}

// deepCopy copies a blueprint through SetDefaults' own outputs: every
// slice, map and pointer it may touch is fresh.
func deepCopy(t *testing.T, bp *Blueprint) *Blueprint {
	t.Helper()
	c := *bp
	c.Spec.Zones = append([]string(nil), bp.Spec.Zones...)
	c.Spec.Pools = append([]Pool(nil), bp.Spec.Pools...)
	for i := range c.Spec.Pools {
		p := &c.Spec.Pools[i]
		p.Zones = append([]string(nil), p.Zones...)
		if p.Machine.GPU != nil {
			p.Machine.GPU = ptr(*p.Machine.GPU)
		}
	}
	c.Spec.Teams = append([]Team(nil), bp.Spec.Teams...)
	for i := range c.Spec.Teams {
		tm := &c.Spec.Teams[i]
		tm.Namespaces = append([]string(nil), tm.Namespaces...)
		if d := tm.Defaults; d != nil {
			tm.Defaults = &ContainerDefaults{
				CPURequest: ptr(d.CPURequest.DeepCopy()), MemoryRequest: ptr(d.MemoryRequest.DeepCopy()),
				CPULimit: ptr(d.CPULimit.DeepCopy()), MemoryLimit: ptr(d.MemoryLimit.DeepCopy()),
			}
		}
	}
	c.Spec.Classes = append([]Class(nil), bp.Spec.Classes...)
	return &c
}

// Defaulted values are the blueprint's own: changing one must not change
// another pool, another team, or the package's defaults.
func TestSetDefaultsSharesNothing(t *testing.T) {
	bp := &Blueprint{Spec: Spec{
		Zones: []string{"z1", "z2"},
		Pools: []Pool{{Name: "a"}, {Name: "b"}},
		Teams: []Team{{Name: "a"}, {Name: "b"}},
	}}
	SetDefaults(bp)
	bp.Spec.Pools[0].Zones[0] = "changed"
	if bp.Spec.Zones[0] != "z1" || bp.Spec.Pools[1].Zones[0] != "z1" {
		t.Errorf("a pool's defaulted zones share memory: spec %q, other pool %q", bp.Spec.Zones, bp.Spec.Pools[1].Zones)
	}
	bp.Spec.Teams[0].Defaults.CPURequest.Add(resource.MustParse("1"))
	if got := bp.Spec.Teams[1].Defaults.CPURequest.String(); got != "500m" {
		t.Errorf("another team's cpuRequest = %s, want 500m", got)
	}
	if got := DefaultCPURequest.String(); got != "500m" {
		t.Errorf("DefaultCPURequest = %s, want 500m", got)
	}
}

func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		name              string
		pool              Pool
		initial, maxNodes int32
	}{
		{"neither count nor autoscale", Pool{}, 1, 1},
		{"count", Pool{Count: ptr(int32(3))}, 3, 3},
		{"count of zero", Pool{Count: ptr(int32(0))}, 0, 0},
		{"autoscale", Pool{Autoscale: &Autoscale{Min: 2, Max: 5}}, 2, 5},
		{"autoscale from zero", Pool{Autoscale: &Autoscale{Min: 0, Max: 4}}, 0, 4},
		// Validation refuses both; count wins the start, autoscale the bound.
		{"count and autoscale", Pool{Count: ptr(int32(3)), Autoscale: &Autoscale{Min: 1, Max: 5}}, 3, 5},
	} {
		if got := tc.pool.InitialSize(); got != tc.initial {
			t.Errorf("%s: InitialSize = %d, want %d", tc.name, got, tc.initial)
		}
		if got := tc.pool.MaxSize(); got != tc.maxNodes {
			t.Errorf("%s: MaxSize = %d, want %d", tc.name, got, tc.maxNodes)
		}
	}
}

func TestGPUResource(t *testing.T) {
	for _, tc := range []struct {
		gpu  *GPU
		want string
	}{
		{nil, ""},
		{&GPU{Count: 1}, "nvidia.com/gpu"},
		{&GPU{Count: 1, Resource: "amd.com/gpu"}, "amd.com/gpu"},
	} {
		p := Pool{Machine: Machine{GPU: tc.gpu}}
		if got := p.GPUResource(); got != tc.want {
			t.Errorf("GPUResource of %+v = %q, want %q", tc.gpu, got, tc.want)
		}
	}
}

func TestPriorityClassName(t *testing.T) {
	if got := (&Class{Name: "inference", Priority: PriorityHigh}).PriorityClassName(); got != "inference-high" {
		t.Errorf("PriorityClassName = %q, want inference-high", got)
	}
	if got := (&Class{Name: "batch"}).PriorityClassName(); got != "" {
		t.Errorf("PriorityClassName without a priority = %q, want empty", got)
	}
}

func duration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}
