package export

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/words"
)

// Karpenter is not cluster-autoscaler: the autoscaler profile's nearest
// equivalents are a NodePool's spec.disruption (consolidateAfter for
// scaleDownUnneededTime, consolidateAfter Never for scale-down off) and
// spec.weight (the priority expander's pool priority). The rest has no
// Karpenter setting and is named in the header.

const (
	karpenterWeightMax = 100
	consolidateNever   = "Never"
	whenEmpty          = "WhenEmpty"
	whenUnderutilized  = "WhenEmptyOrUnderutilized"
)

// karpenterDisruption is a pool's NodePool disruption for spec.autoscaler,
// with the pool's notes about it.
func karpenterDisruption(a *v1alpha1.AutoscalerProfile, p *v1alpha1.Pool) (disruption, []string) {
	after := consolidateNever
	var notes []string
	if *a.ScaleDownEnabled {
		d, rounded := ceilTo(a.ScaleDownUnneededTime.Duration, time.Second)
		after = words.Duration(d)
		if rounded {
			notes = append(notes, fmt.Sprintf("Karpenter takes consolidateAfter in whole seconds: scaleDownUnneededTime %s is rounded up to %s.", words.Duration(a.ScaleDownUnneededTime.Duration), after))
		}
	}
	if p.Machine.GPU == nil {
		return disruption{ConsolidationPolicy: whenUnderutilized, ConsolidateAfter: after}, notes
	}
	// GPU nodes are expensive to start and their pods (training) costly to
	// move: Karpenter's underused consolidation would move them to pack or
	// cheapen nodes, so GPU NodePools consolidate only empty nodes.
	notes = append(notes, fmt.Sprintf("consolidationPolicy %s: a GPU node goes only once it is empty, where cluster-autoscaler also moves GPU pods off one with less than scaleDownGpuUtilizationThreshold (%s) of its GPUs requested. Set %s for that, knowing that Karpenter then also moves GPU pods to cheapen nodes.", whenEmpty, formatFloat(*a.ScaleDownGpuUtilizationThreshold), whenUnderutilized))
	return disruption{ConsolidationPolicy: whenEmpty, ConsolidateAfter: after}, notes
}

// karpenterWeights are the NodePool weights of the exported pools when the
// expander chain uses the priority expander: the pool's priority, or its
// rank among the priorities when some priority is above Karpenter's
// maximum weight of 100. Pools of priority 0 get no weight, which
// Karpenter ranks lowest. The string is a note when priorities were
// ranked.
func karpenterWeights(bp *v1alpha1.Blueprint, exported []*v1alpha1.Pool) (map[string]int32, string) {
	if !usesPriority(profile(bp)) {
		return nil, ""
	}
	weights := map[string]int32{}
	var prios []int32
	high := int32(0)
	for _, p := range exported {
		if p.Autoscale != nil && p.Autoscale.Priority > 0 {
			weights[p.Name] = p.Autoscale.Priority
			prios = append(prios, p.Autoscale.Priority)
			high = max(high, p.Autoscale.Priority)
		}
	}
	if high <= karpenterWeightMax {
		return weights, ""
	}
	sort.Slice(prios, func(i, j int) bool { return prios[i] < prios[j] })
	rank := map[int32]int32{}
	for _, pr := range prios {
		if _, ok := rank[pr]; !ok {
			rank[pr] = min(int32(len(rank)+1), karpenterWeightMax)
		}
	}
	var pairs []string
	for _, p := range exported {
		if w, ok := weights[p.Name]; ok {
			weights[p.Name] = rank[w]
			pairs = append(pairs, fmt.Sprintf("%s %d→%d", p.Name, w, rank[w]))
		}
	}
	return weights, fmt.Sprintf("Karpenter's weights run from 1 to %d, so the pool priorities become their rank, in the same order: %s.", karpenterWeightMax, strings.Join(pairs, ", "))
}

// karpenterProfileNotes are the header's notes on spec.autoscaler.
func karpenterProfileNotes(bp *v1alpha1.Blueprint, weighted bool, rankNote string) []string {
	a := profile(bp)
	flags := caFlags(a)
	consolidation := fmt.Sprintf("Each NodePool's consolidateAfter is scaleDownUnneededTime (%s).", words.Duration(a.ScaleDownUnneededTime.Duration))
	if !*a.ScaleDownEnabled {
		consolidation = "scaleDownEnabled is false, so each NodePool's consolidateAfter is Never: Karpenter never consolidates. It still replaces drifted and expired nodes; to stop that too, add a disruption budget of nodes: \"0\"."
	}
	notes := []string{
		"The node autoscaler's profile (spec.autoscaler): Karpenter is not cluster-autoscaler. " + consolidation + fmt.Sprintf(" Its consolidation is not cluster-autoscaler's scale-down: besides removing empty and underused nodes it replaces nodes with cheaper ones, and it has no utilization threshold, so %s are not carried.", unset(flags, caUtilization, caGPUUtilization)),
	}
	expander := fmt.Sprintf("Karpenter has no expander, so expander %s is not carried: it launches the cheapest instance type that fits the pending pods, among the NodePools that allow them.", a.Expander)
	if usesPriority(a) {
		if weighted {
			expander += " The priority expander's pool priorities become spec.weight, the order Karpenter tries NodePools in, highest first; the other NodePools get no weight and come last."
		} else {
			expander += " No exported pool has a priority above 0, so no NodePool gets a weight."
		}
		if rankNote != "" {
			expander += " " + rankNote
		}
	}
	notes = append(notes, expander)
	var rest, skips []string
	for _, f := range flags {
		switch f.name {
		case caScanInterval, caDelayAfterAdd, caDelayAfterDelete, caDelayAfterFailure:
			rest = append(rest, f.field+" "+f.value)
		case caMaxEmptyBulkDelete:
			rest = append(rest, f.field+" "+f.value+" (spec.disruption.budgets limit how many nodes go at once)")
		case caMaxGracefulTermSec:
			rest = append(rest, f.field+" "+f.value+" (spec.template.spec.terminationGracePeriod bounds a node's whole drain instead)")
		case caMaxNodeProvisionTime:
			rest = append(rest, f.field+" "+f.value+" (Karpenter gives up on a node that has not registered in 15 minutes)")
		case caNewPodScaleUpDelay:
			rest = append(rest, f.field+" "+f.value+" (Karpenter batches pending pods for 1 to 10 seconds)")
		case caSkipLocalStorage, caSkipSystemPods:
			if f.value == "true" {
				skips = append(skips, f.field+" "+f.value)
			}
		}
	}
	if len(skips) > 0 {
		rest = append(rest, strings.Join(skips, ", ")+" (Karpenter consolidates such nodes too; annotate the pods karpenter.sh/do-not-disrupt=true to keep their nodes)")
	}
	return append(notes, "Karpenter has no setting for these, so they are not carried: "+andList(rest)+".")
}
