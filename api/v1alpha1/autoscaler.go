package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// AutoscalerProfile is the profile of the node autoscaler that grows and
// shrinks the autoscale pools. Its fields are cluster-autoscaler's flags
// in camelCase (scanInterval is --scan-interval) with cluster-autoscaler's
// defaults, so the profile a local rehearsal runs is the one `berth
// export` hands to AKS (--cluster-autoscaler-profile), to
// cluster-autoscaler on EKS, and to GKE. A nil field takes the default.
type AutoscalerProfile struct {
	// ScanInterval is how often the autoscaler looks for pods to place
	// and nodes to remove. Default 10s.
	ScanInterval *metav1.Duration `json:"scanInterval,omitempty"`
	// Expander picks the pool to grow when several could hold the
	// pending pods: random, least-waste, most-pods or priority, or a
	// comma-separated chain ("priority,least-waste") where each expander
	// breaks the ties of the one before and random breaks the last.
	// Default random.
	Expander string `json:"expander,omitempty"`
	// ScaleDownEnabled lets the autoscaler remove nodes. Default true.
	ScaleDownEnabled *bool `json:"scaleDownEnabled,omitempty"`
	// ScaleDownUtilizationThreshold is the share of a node's allocatable
	// CPU and memory (and GPUs, on a GPU node) that its pods must request
	// for it to be needed. Default 0.5.
	ScaleDownUtilizationThreshold *float64 `json:"scaleDownUtilizationThreshold,omitempty"`
	// ScaleDownGpuUtilizationThreshold is the same for GPU nodes, which
	// are judged by their GPUs alone. Default 0.5.
	ScaleDownGpuUtilizationThreshold *float64 `json:"scaleDownGpuUtilizationThreshold,omitempty"`
	// ScaleDownUnneededTime is how long a node must be unneeded before
	// it is removed. Default 10m.
	ScaleDownUnneededTime *metav1.Duration `json:"scaleDownUnneededTime,omitempty"`
	// ScaleDownDelayAfterAdd pauses scale-down after a scale-up.
	// Default 10m.
	ScaleDownDelayAfterAdd *metav1.Duration `json:"scaleDownDelayAfterAdd,omitempty"`
	// ScaleDownDelayAfterDelete pauses scale-down after a node is
	// removed. Default: the scan interval.
	ScaleDownDelayAfterDelete *metav1.Duration `json:"scaleDownDelayAfterDelete,omitempty"`
	// ScaleDownDelayAfterFailure pauses scale-down after a removal
	// fails. Default 3m.
	ScaleDownDelayAfterFailure *metav1.Duration `json:"scaleDownDelayAfterFailure,omitempty"`
	// MaxEmptyBulkDelete is how many empty nodes may go at once.
	// Default 10.
	MaxEmptyBulkDelete *int32 `json:"maxEmptyBulkDelete,omitempty"`
	// MaxGracefulTerminationSec bounds the grace period of pods evicted
	// by scale-down. Default 600.
	MaxGracefulTerminationSec *int32 `json:"maxGracefulTerminationSec,omitempty"`
	// MaxNodeProvisionTime is how long a new node may take to become
	// Ready before the autoscaler gives up on it, removes it and backs
	// the pool off. Default 15m.
	MaxNodeProvisionTime *metav1.Duration `json:"maxNodeProvisionTime,omitempty"`
	// NewPodScaleUpDelay ignores pods younger than this. Default 0s.
	NewPodScaleUpDelay *metav1.Duration `json:"newPodScaleUpDelay,omitempty"`
	// SkipNodesWithLocalStorage keeps nodes running pods with emptyDir
	// or hostPath volumes. Default true.
	SkipNodesWithLocalStorage *bool `json:"skipNodesWithLocalStorage,omitempty"`
	// SkipNodesWithSystemPods keeps nodes running kube-system pods that
	// no PodDisruptionBudget covers (DaemonSet and mirror pods aside).
	// Default true.
	SkipNodesWithSystemPods *bool `json:"skipNodesWithSystemPods,omitempty"`
}

// Expanders are cluster-autoscaler's expanders berth implements.
const (
	ExpanderRandom     = "random"
	ExpanderLeastWaste = "least-waste"
	ExpanderMostPods   = "most-pods"
	ExpanderPriority   = "priority"
)

var expanders = sets.New(ExpanderRandom, ExpanderLeastWaste, ExpanderMostPods, ExpanderPriority)

// cluster-autoscaler's defaults, from its FAQ ("What are the parameters
// to CA?").
var (
	DefaultScanInterval               = 10 * time.Second
	DefaultScaleDownUnneededTime      = 10 * time.Minute
	DefaultScaleDownDelayAfterAdd     = 10 * time.Minute
	DefaultScaleDownDelayAfterFailure = 3 * time.Minute
	DefaultMaxNodeProvisionTime       = 15 * time.Minute
)

const (
	DefaultExpander                      = ExpanderRandom
	DefaultScaleDownUtilizationThreshold = 0.5
	DefaultMaxEmptyBulkDelete            = int32(10)
	DefaultMaxGracefulTerminationSec     = int32(600)
)

// DevicePlugin is the GPU device plugin: the DaemonSet that makes a GPU
// node's accelerators visible to Kubernetes. Without it a GPU node
// advertises no nvidia.com/gpu and GPU pods wait. On the local cluster a
// GPU node advertises its GPUs only while a pod of this DaemonSet is
// Running on it, and `berth up` installs the DaemonSet as the NVIDIA
// device plugin's chart would; `berth apply` never installs it on a real
// cluster, whose cloud or GPU operator does.
type DevicePlugin struct {
	// Namespace is the DaemonSet's namespace, one of the system
	// namespaces. Empty means kube-system.
	Namespace string `json:"namespace,omitempty"`
	// Name is the DaemonSet's name. Empty means
	// nvidia-device-plugin-daemonset, the name NVIDIA's manifests use.
	Name string `json:"name,omitempty"`
	// Image is the plugin's image. Empty means DefaultDevicePluginImage.
	Image string `json:"image,omitempty"`
	// Install says whether `berth up` installs the DaemonSet. Nil means
	// true; false rehearses a cluster where someone else installs it (or
	// nobody does).
	Install *bool `json:"install,omitempty"`
}

// Device plugin defaults.
const (
	DefaultDevicePluginNamespace = "kube-system"
	DefaultDevicePluginName      = "nvidia-device-plugin-daemonset"
	DefaultDevicePluginImage     = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
)

func setAutoscalerDefaults(s *Spec) {
	if s.Autoscaler == nil {
		s.Autoscaler = &AutoscalerProfile{}
	}
	a := s.Autoscaler
	setDuration(&a.ScanInterval, DefaultScanInterval)
	if a.Expander == "" {
		a.Expander = DefaultExpander
	}
	setBool(&a.ScaleDownEnabled, true)
	setFloat(&a.ScaleDownUtilizationThreshold, DefaultScaleDownUtilizationThreshold)
	setFloat(&a.ScaleDownGpuUtilizationThreshold, DefaultScaleDownUtilizationThreshold)
	setDuration(&a.ScaleDownUnneededTime, DefaultScaleDownUnneededTime)
	setDuration(&a.ScaleDownDelayAfterAdd, DefaultScaleDownDelayAfterAdd)
	setDuration(&a.ScaleDownDelayAfterDelete, a.ScanInterval.Duration)
	setDuration(&a.ScaleDownDelayAfterFailure, DefaultScaleDownDelayAfterFailure)
	setInt32(&a.MaxEmptyBulkDelete, DefaultMaxEmptyBulkDelete)
	setInt32(&a.MaxGracefulTerminationSec, DefaultMaxGracefulTerminationSec)
	setDuration(&a.MaxNodeProvisionTime, DefaultMaxNodeProvisionTime)
	setDuration(&a.NewPodScaleUpDelay, 0)
	setBool(&a.SkipNodesWithLocalStorage, true)
	setBool(&a.SkipNodesWithSystemPods, true)

	if s.DevicePlugin == nil {
		s.DevicePlugin = &DevicePlugin{}
	}
	d := s.DevicePlugin
	if d.Namespace == "" {
		d.Namespace = DefaultDevicePluginNamespace
	}
	if d.Name == "" {
		d.Name = DefaultDevicePluginName
	}
	if d.Image == "" {
		d.Image = DefaultDevicePluginImage
	}
	setBool(&d.Install, true)
	for i := range s.Pools {
		if as := s.Pools[i].Autoscale; as != nil {
			setDuration(&as.ProvisioningTime, 0)
		}
	}
}

// ExpanderChain is the profile's expander as a list, in order.
func (a *AutoscalerProfile) ExpanderChain() []string {
	var out []string
	for _, e := range strings.Split(a.Expander, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func validateAutoscaler(path *field.Path, s *Spec) (errs problem.List) {
	a := s.Autoscaler
	if a == nil {
		return nil
	}
	seen := sets.New[string]()
	chain := a.ExpanderChain()
	if len(chain) == 0 && a.Expander != "" {
		errs = append(errs, invalid(path.Child("expander"), "names no expander", "write one of random, least-waste, most-pods, priority, or a comma-separated chain of them"))
	}
	for _, e := range chain {
		switch {
		case !expanders.Has(e):
			errs = append(errs, oneOf(path.Child("expander"), e, ExpanderRandom, ExpanderLeastWaste, ExpanderMostPods, ExpanderPriority)...)
		case seen.Has(e):
			errs = append(errs, invalid(path.Child("expander"), fmt.Sprintf("names %s twice", e), "name each expander once"))
		}
		seen.Insert(e)
	}
	if seen.Has(ExpanderPriority) {
		prioritized := false
		for i := range s.Pools {
			if as := s.Pools[i].Autoscale; as != nil && as.Priority != 0 {
				prioritized = true
			}
		}
		if !prioritized {
			errs = append(errs, invalid(path.Child("expander"), "the priority expander needs pool priorities, and no pool has one", "set autoscale.priority on the pools (higher wins), or choose another expander"))
		}
	}
	for _, d := range []struct {
		name string
		v    *metav1.Duration
		min  time.Duration
	}{
		{"scanInterval", a.ScanInterval, 10 * time.Millisecond},
		{"scaleDownUnneededTime", a.ScaleDownUnneededTime, 0},
		{"scaleDownDelayAfterAdd", a.ScaleDownDelayAfterAdd, 0},
		{"scaleDownDelayAfterDelete", a.ScaleDownDelayAfterDelete, 0},
		{"scaleDownDelayAfterFailure", a.ScaleDownDelayAfterFailure, 0},
		{"maxNodeProvisionTime", a.MaxNodeProvisionTime, time.Second},
		{"newPodScaleUpDelay", a.NewPodScaleUpDelay, 0},
	} {
		if d.v != nil && d.v.Duration < d.min {
			errs = append(errs, invalid(path.Child(d.name), fmt.Sprintf("must be at least %s", orZero(d.min)), "write a Go duration such as 10s or 5m"))
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"scaleDownUtilizationThreshold", a.ScaleDownUtilizationThreshold},
		{"scaleDownGpuUtilizationThreshold", a.ScaleDownGpuUtilizationThreshold},
	} {
		if f.v != nil && (*f.v < 0 || *f.v > 1) {
			errs = append(errs, invalid(path.Child(f.name), "must be between 0 and 1: a share of the node's allocatable", "write 0.5 for half"))
		}
	}
	if v := a.MaxEmptyBulkDelete; v != nil && *v < 1 {
		errs = append(errs, invalid(path.Child("maxEmptyBulkDelete"), "must be at least 1", "to stop scale-down, set scaleDownEnabled: false"))
	}
	if v := a.MaxGracefulTerminationSec; v != nil && *v < 0 {
		errs = append(errs, invalid(path.Child("maxGracefulTerminationSec"), "must not be negative", ""))
	}
	return errs
}

func validateDevicePlugin(path *field.Path, s *Spec) (errs problem.List) {
	d := s.DevicePlugin
	if d == nil {
		return nil
	}
	if d.Namespace != "" && !sets.New(s.SystemNamespaces...).Has(d.Namespace) {
		errs = append(errs, invalid(path.Child("namespace"), fmt.Sprintf("is not one of the system namespaces (%s): only they may run on GPU pools' taints as add-ons", strings.Join(s.SystemNamespaces, ", ")), "use kube-system, or add the namespace to spec.systemNamespaces"))
	}
	if d.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(d.Name) {
			errs = append(errs, invalid(path.Child("name"), msg, ""))
		}
	}
	return errs
}

func orZero(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}

func setDuration(p **metav1.Duration, def time.Duration) {
	if *p == nil {
		*p = &metav1.Duration{Duration: def}
	}
}

func setBool(p **bool, def bool) {
	if *p == nil {
		*p = &def
	}
}

func setFloat(p **float64, def float64) {
	if *p == nil {
		*p = &def
	}
}

func setInt32(p **int32, def int32) {
	if *p == nil {
		*p = &def
	}
}
