package export

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/words"
)

// The node autoscaler's profile (spec.autoscaler) is cluster-autoscaler's
// flags; each target carries what it can of it: AKS as
// --cluster-autoscaler-profile, EKS as the arguments of the Cluster
// Autoscaler the user runs, GKE as its autoscaling profile, Karpenter as
// its NodePools' disruption and weight. What a target cannot carry is
// named in its notes.

// caFlag is one of cluster-autoscaler's flags as the profile sets it.
type caFlag struct {
	// field is the profile's field, e.g. scaleDownUnneededTime.
	field string
	// name is the flag without its dashes, e.g. scale-down-unneeded-time.
	name string
	// value is the flag's value as cluster-autoscaler parses it.
	value string
	// dur is the value of a duration flag, for targets that spell
	// durations their own way; nil for the others.
	dur *time.Duration
}

// Cluster-autoscaler's flag names, as the targets look them up.
const (
	caScanInterval         = "scan-interval"
	caExpander             = "expander"
	caScaleDownEnabled     = "scale-down-enabled"
	caUtilization          = "scale-down-utilization-threshold"
	caGPUUtilization       = "scale-down-gpu-utilization-threshold"
	caUnneededTime         = "scale-down-unneeded-time"
	caDelayAfterAdd        = "scale-down-delay-after-add"
	caDelayAfterDelete     = "scale-down-delay-after-delete"
	caDelayAfterFailure    = "scale-down-delay-after-failure"
	caMaxEmptyBulkDelete   = "max-empty-bulk-delete"
	caMaxGracefulTermSec   = "max-graceful-termination-sec"
	caMaxNodeProvisionTime = "max-node-provision-time"
	caNewPodScaleUpDelay   = "new-pod-scale-up-delay"
	caSkipLocalStorage     = "skip-nodes-with-local-storage"
	caSkipSystemPods       = "skip-nodes-with-system-pods"
)

// The priority expander's ConfigMap: its name, data key and namespace
// (cluster-autoscaler's own; kube-system on AKS and in the exported EKS
// arguments).
const (
	priorityExpanderCM      = "cluster-autoscaler-priority-expander"
	priorityExpanderDataKey = "priorities"
	caNamespace             = "kube-system"
)

// caFlags is the profile as cluster-autoscaler's flags, in the order of
// the profile's fields. The profile must be defaulted.
func caFlags(a *v1alpha1.AutoscalerProfile) []caFlag {
	dur := func(field, name string, d time.Duration) caFlag {
		return caFlag{field: field, name: name, value: words.Duration(d), dur: &d}
	}
	return []caFlag{
		dur("scanInterval", caScanInterval, a.ScanInterval.Duration),
		{field: "expander", name: caExpander, value: strings.Join(a.ExpanderChain(), ",")},
		{field: "scaleDownEnabled", name: caScaleDownEnabled, value: strconv.FormatBool(*a.ScaleDownEnabled)},
		{field: "scaleDownUtilizationThreshold", name: caUtilization, value: formatFloat(*a.ScaleDownUtilizationThreshold)},
		{field: "scaleDownGpuUtilizationThreshold", name: caGPUUtilization, value: formatFloat(*a.ScaleDownGpuUtilizationThreshold)},
		dur("scaleDownUnneededTime", caUnneededTime, a.ScaleDownUnneededTime.Duration),
		dur("scaleDownDelayAfterAdd", caDelayAfterAdd, a.ScaleDownDelayAfterAdd.Duration),
		dur("scaleDownDelayAfterDelete", caDelayAfterDelete, a.ScaleDownDelayAfterDelete.Duration),
		dur("scaleDownDelayAfterFailure", caDelayAfterFailure, a.ScaleDownDelayAfterFailure.Duration),
		{field: "maxEmptyBulkDelete", name: caMaxEmptyBulkDelete, value: strconv.Itoa(int(*a.MaxEmptyBulkDelete))},
		{field: "maxGracefulTerminationSec", name: caMaxGracefulTermSec, value: strconv.Itoa(int(*a.MaxGracefulTerminationSec))},
		dur("maxNodeProvisionTime", caMaxNodeProvisionTime, a.MaxNodeProvisionTime.Duration),
		dur("newPodScaleUpDelay", caNewPodScaleUpDelay, a.NewPodScaleUpDelay.Duration),
		{field: "skipNodesWithLocalStorage", name: caSkipLocalStorage, value: strconv.FormatBool(*a.SkipNodesWithLocalStorage)},
		{field: "skipNodesWithSystemPods", name: caSkipSystemPods, value: strconv.FormatBool(*a.SkipNodesWithSystemPods)},
	}
}

// profile is the blueprint's autoscaler profile with cluster-autoscaler's
// defaults filled in; Export's blueprints are defaulted already, so this
// only matters for one built by hand.
func profile(bp *v1alpha1.Blueprint) *v1alpha1.AutoscalerProfile {
	if a := bp.Spec.Autoscaler; a != nil && a.ScanInterval != nil {
		return a
	}
	tmp := &v1alpha1.Blueprint{}
	if a := bp.Spec.Autoscaler; a != nil {
		c := *a
		tmp.Spec.Autoscaler = &c
	}
	v1alpha1.SetDefaults(tmp)
	return tmp.Spec.Autoscaler
}

// unset names the flags a target cannot carry, as "field value" pairs for
// a note.
func unset(flags []caFlag, names ...string) string {
	var parts []string
	for _, n := range names {
		for _, f := range flags {
			if f.name == n {
				parts = append(parts, f.field+" "+f.value)
			}
		}
	}
	return andList(parts)
}

// andList joins "a, b and c".
func andList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// ceilTo rounds d up to a whole multiple of unit, and says whether it had
// to.
func ceilTo(d, unit time.Duration) (time.Duration, bool) {
	r := (d + unit - 1) / unit * unit
	return r, r != d
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// usesPriority reports whether the profile's expander chain holds the
// priority expander: only then do the pools' priorities matter.
func usesPriority(a *v1alpha1.AutoscalerProfile) bool {
	for _, e := range a.ExpanderChain() {
		if e == v1alpha1.ExpanderPriority {
			return true
		}
	}
	return false
}

// autoscaled are the pools cluster-autoscaler scales, in blueprint order.
func autoscaled(bp *v1alpha1.Blueprint) []*v1alpha1.Pool {
	var out []*v1alpha1.Pool
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Autoscale != nil {
			out = append(out, &bp.Spec.Pools[i])
		}
	}
	return out
}

// poolPriorities lists the autoscaled pools as "name priority" for a note.
func poolPriorities(pools []*v1alpha1.Pool) string {
	var parts []string
	for _, p := range pools {
		parts = append(parts, fmt.Sprintf("%s %d", p.Name, p.Autoscale.Priority))
	}
	return strings.Join(parts, ", ")
}

// The priority expander's ConfigMap, as cluster-autoscaler documents it
// (expander/priority/readme.md): data.priorities is a YAML map from a
// priority (higher wins) to regular expressions over node group names.
// A node group that no expression matches is never chosen while another
// one matches, so every autoscaled pool is listed, priority 0 included.
type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   configMapMeta     `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type configMapMeta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

// priorityConfigMap is the ConfigMap as YAML, each autoscaled pool's node
// group matched by groupRE(pool).
func priorityConfigMap(bp *v1alpha1.Blueprint, groupRE func(*v1alpha1.Pool) string) (string, error) {
	prios := map[int32][]string{}
	for _, p := range autoscaled(bp) {
		prios[p.Autoscale.Priority] = append(prios[p.Autoscale.Priority], groupRE(p))
	}
	keys := make([]int, 0, len(prios))
	for k := range prios {
		keys = append(keys, int(k))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(keys)))
	// Highest first, as the expander reads them; yaml.v3 would sort a
	// map's keys the other way.
	var inner yaml.Node
	inner.Kind = yaml.MappingNode
	for _, k := range keys {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, re := range prios[int32(k)] {
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: re, Style: yaml.SingleQuotedStyle})
		}
		inner.Content = append(inner.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(k)}, seq)
	}
	var b strings.Builder
	if err := writeNode(&b, &inner); err != nil {
		return "", err
	}
	cm := configMap{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Metadata:   configMapMeta{Name: priorityExpanderCM, Namespace: caNamespace, Labels: compile.Labels(bp)},
		Data:       map[string]string{priorityExpanderDataKey: b.String()},
	}
	n, err := toNode(cm)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := writeNode(&out, n); err != nil {
		return "", err
	}
	return out.String(), nil
}

// exactName is a regular expression matching a node group named prefix +
// name + suffix; suffix is itself a regular expression.
func exactName(prefix, name, suffix string) string {
	return "^" + regexp.QuoteMeta(prefix+name) + suffix + "$"
}
