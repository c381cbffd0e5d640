package export

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"berth.io/berth/api/v1alpha1"
)

// AKS's cluster autoscaler profile (the managed cluster's
// autoScalerProfile, `az aks update --cluster-autoscaler-profile
// KEY=VALUE...`) takes cluster-autoscaler's flags by their own names, in
// AKS's formats: the scan interval in seconds, new-pod-scale-up-delay
// with a unit, the other durations in whole minutes only, one expander
// (least-waste, most-pods, priority or random), and no GPU threshold.

// aksDurationUnit is how AKS takes each duration key: "s" seconds, "m"
// whole minutes, "" an integer with any unit.
var aksDurationUnit = map[string]string{
	caScanInterval:         "s",
	caUnneededTime:         "m",
	caDelayAfterAdd:        "m",
	caDelayAfterDelete:     "m",
	caDelayAfterFailure:    "m",
	caMaxNodeProvisionTime: "m",
	caNewPodScaleUpDelay:   "",
}

// aksProfile is the KEY=VALUE arguments of --cluster-autoscaler-profile
// for spec.autoscaler, and the comments that say what AKS takes
// differently or not at all.
func aksProfile(bp *v1alpha1.Blueprint) (comments, values []string) {
	a := profile(bp)
	flags := caFlags(a)
	comments = []string{"The node autoscaler's profile (spec.autoscaler) as AKS's cluster autoscaler profile, which applies to every autoscaled pool of the cluster."}
	for _, f := range flags {
		switch f.name {
		case caExpander:
			chain := a.ExpanderChain()
			values = append(values, f.name+"="+chain[0])
			if len(chain) > 1 {
				comments = append(comments, fmt.Sprintf("AKS takes one expander, not a chain: expander %s is the chain's first, and AKS breaks its ties at random where the blueprint breaks them with %s.", chain[0], strings.Join(chain[1:], ",")))
			}
		case caScaleDownEnabled:
			if !*a.ScaleDownEnabled {
				comments = append(comments, "AKS cannot turn scale-down off, so scaleDownEnabled false is not carried: set --min-count to --max-count on the pools whose nodes must stay, or annotate the nodes cluster-autoscaler.kubernetes.io/scale-down-disabled=true.")
			}
		case caGPUUtilization:
			note := fmt.Sprintf("AKS has no scale-down-gpu-utilization-threshold, so scaleDownGpuUtilizationThreshold %s is not carried: AKS's autoscaler judges GPU nodes by its own (cluster-autoscaler's default is 0.5).", f.value)
			if *a.ScaleDownGpuUtilizationThreshold != v1alpha1.DefaultScaleDownUtilizationThreshold {
				note += " Rehearse with scaleDownGpuUtilizationThreshold 0.5 to see what AKS will do with GPU nodes."
			}
			comments = append(comments, note)
		case caDelayAfterDelete:
			if *f.dur == a.ScanInterval.Duration {
				comments = append(comments, "scale-down-delay-after-delete is left to AKS, whose default is the scan interval, as the blueprint's is (AKS would take it in whole minutes only).")
				continue
			}
			fallthrough
		default:
			v, note := aksValue(f)
			values = append(values, f.name+"="+v)
			if note != "" {
				comments = append(comments, note)
			}
		}
	}
	return comments, values
}

// aksValue is a flag's value as AKS takes it, and a note when AKS cannot
// take the value exactly.
func aksValue(f caFlag) (string, string) {
	unit, isDuration := aksDurationUnit[f.name]
	if !isDuration {
		return f.value, ""
	}
	d := *f.dur
	switch unit {
	case "m":
		up, rounded := ceilTo(d, time.Minute)
		v := strconv.FormatInt(int64(up/time.Minute), 10) + "m"
		if rounded {
			return v, fmt.Sprintf("AKS takes %s in whole minutes only: %s %s is rounded up to %s. Write %s in spec.autoscaler.%s to rehearse what AKS will do.", f.name, f.field, f.value, v, v, f.field)
		}
		return v, ""
	case "s":
		up, rounded := ceilTo(d, time.Second)
		v := strconv.FormatInt(int64(up/time.Second), 10) + "s"
		if rounded {
			return v, fmt.Sprintf("AKS takes %s in whole seconds: %s %s is rounded up to %s.", f.name, f.field, f.value, v)
		}
		return v, ""
	}
	up, rounded := ceilTo(d, time.Second)
	v := strconv.FormatInt(int64(up/time.Second), 10) + "s"
	if up%time.Minute == 0 && up > 0 {
		v = strconv.FormatInt(int64(up/time.Minute), 10) + "m"
	}
	if rounded {
		return v, fmt.Sprintf("AKS takes %s as a whole number of a unit: %s %s is rounded up to %s.", f.name, f.field, f.value, v)
	}
	return v, ""
}

// aksNodeGroupRE matches the scale set AKS makes for a node pool, which
// cluster-autoscaler on AKS names node groups by: aks-POOL-NUMBER-vmss.
// AKS pool names hold no '-', so the pool name cannot run into the
// number.
func aksNodeGroupRE(p *v1alpha1.Pool) string {
	return exactName("aks-", strings.ReplaceAll(p.Name, "-", ""), "-[0-9]+-vmss")
}

// writeAKSProfile writes the commands that give the cluster the
// blueprint's autoscaler profile: the priority expander's ConfigMap when
// the expander chain uses it, then `az aks update`.
func writeAKSProfile(s *script, bp *v1alpha1.Blueprint) error {
	pools := autoscaled(bp)
	if len(pools) == 0 {
		return nil
	}
	comments, values := aksProfile(bp)
	if usesPriority(profile(bp)) {
		cm, err := priorityConfigMap(bp, aksNodeGroupRE)
		if err != nil {
			return err
		}
		s.heredoc([]string{
			fmt.Sprintf("The priority expander's pool priorities (%s): AKS has no per-pool priority setting; its cluster autoscaler reads them from this ConfigMap, matching the scale sets AKS names aks-POOL-NUMBER-vmss. Pools it does not list are never chosen while a listed one could be, so every autoscaled pool is listed.", poolPriorities(pools)),
		}, `kubectl --context "$KUBE_CONTEXT" apply -f -`, cm)
	}
	s.command(comments, "az aks update", []option{
		rawFlag("--resource-group", `"$RESOURCE_GROUP"`),
		rawFlag("--name", `"$CLUSTER_NAME"`),
		many("--cluster-autoscaler-profile", values...),
	})
	return nil
}

// aksVariables are the variables the AKS script needs beyond the
// resource group and cluster name.
func aksVariables(bp *v1alpha1.Blueprint) []variable {
	if len(autoscaled(bp)) == 0 || !usesPriority(profile(bp)) {
		return nil
	}
	return []variable{{name: "KUBE_CONTEXT", def: "$CLUSTER_NAME", help: "The cluster's kubectl context, for the priority expander's ConfigMap; `az aks get-credentials` names it after the cluster."}}
}
