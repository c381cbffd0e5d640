package export

import (
	"fmt"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// GKE runs its own cluster autoscaler and takes no cluster-autoscaler
// flags: a cluster has an autoscaling profile (`gcloud container clusters
// update --autoscaling-profile`), balanced (the default) or
// optimize-utilization, which removes underused nodes sooner and more of
// them; a node pool has a location policy.

const (
	gkeBalanced            = "balanced"
	gkeOptimizeUtilization = "optimize-utilization"
	// gkeLocationPolicy spreads an autoscaled pool's nodes evenly over its
	// zones, as berth's local cluster does.
	gkeLocationPolicy = "BALANCED"
)

// gkeProfile is GKE's autoscaling profile nearest to spec.autoscaler, and
// the comments that say how it was chosen and what GKE does not take.
func gkeProfile(bp *v1alpha1.Blueprint) (string, []string) {
	a := profile(bp)
	flags := caFlags(a)
	var eager []string
	for _, f := range flags {
		switch {
		case (f.name == caUnneededTime && *f.dur < v1alpha1.DefaultScaleDownUnneededTime) ||
			(f.name == caDelayAfterAdd && *f.dur < v1alpha1.DefaultScaleDownDelayAfterAdd):
			eager = append(eager, f.field+" "+f.value)
		case f.name == caUtilization && *a.ScaleDownUtilizationThreshold > v1alpha1.DefaultScaleDownUtilizationThreshold,
			f.name == caGPUUtilization && *a.ScaleDownGpuUtilizationThreshold > v1alpha1.DefaultScaleDownUtilizationThreshold:
			eager = append(eager, f.field+" "+f.value)
		}
	}
	name := gkeBalanced
	why := "The blueprint's profile scales down no sooner than cluster-autoscaler's defaults, so the cluster gets balanced."
	if len(eager) > 0 {
		name = gkeOptimizeUtilization
		why = fmt.Sprintf("The blueprint's profile scales down sooner than cluster-autoscaler's defaults (%s), so the cluster gets optimize-utilization; GKE decides how much sooner.", strings.Join(eager, ", "))
	}
	comments := []string{
		"The node autoscaler's profile (spec.autoscaler): GKE runs its own cluster autoscaler and takes only an autoscaling profile, balanced (GKE's default) or optimize-utilization, which removes underused nodes sooner and more of them. " + why,
		fmt.Sprintf("GKE sets the rest itself, so these are not carried: %s. Rehearse with cluster-autoscaler's defaults (leave spec.autoscaler out) for the nearest to GKE's balanced profile.",
			unset(flags, caScanInterval, caExpander, caUtilization, caGPUUtilization, caUnneededTime, caDelayAfterAdd, caDelayAfterDelete, caDelayAfterFailure, caMaxEmptyBulkDelete, caMaxGracefulTermSec, caMaxNodeProvisionTime, caNewPodScaleUpDelay, caSkipLocalStorage, caSkipSystemPods)),
	}
	if usesPriority(a) {
		comments = append(comments, fmt.Sprintf("GKE's autoscaler has no priority expander, so the pools' priorities (%s) are not carried. The nearest is a custom ComputeClass whose spec.priorities list node pools in order, which pods select with the node selector cloud.google.com/compute-class; berth does not write it.", poolPriorities(autoscaled(bp))))
	}
	if !*a.ScaleDownEnabled {
		comments = append(comments, "GKE cannot turn scale-down off for a cluster, so scaleDownEnabled false is not carried: set --total-min-nodes to --total-max-nodes on the pools whose nodes must stay, or annotate the nodes cluster-autoscaler.kubernetes.io/scale-down-disabled=true.")
	}
	return name, comments
}

// writeGKEProfile writes `gcloud container clusters update
// --autoscaling-profile` when a pool autoscales.
func writeGKEProfile(s *script, bp *v1alpha1.Blueprint) {
	if len(autoscaled(bp)) == 0 {
		return
	}
	name, comments := gkeProfile(bp)
	s.command(comments, `gcloud container clusters update "$CLUSTER_NAME"`, []option{
		rawFlag("--location", `"$LOCATION"`),
		one("--autoscaling-profile", name),
	})
}
