// Package spot takes spot capacity away on a berth local cluster, as the
// clouds do: `berth spot interrupt` marks nodes with an interruption
// notice, and a controller inside `berth up` carries it out. The node is
// tainted so nothing new lands on it; its pods get the DisruptionTarget
// condition a kubelet gives pods on a node shutting down, and fail once
// their grace period (never longer than the notice) has passed; when the
// notice ends the node is deleted. Pods that wait for capacity then are
// the autoscaler's to place.
package spot

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
)

const (
	// DefaultNotice is Azure's and Google Cloud's notice; AWS gives 2m.
	DefaultNotice = 30 * time.Second
)

// Interrupt gives each node an interruption notice of the given length,
// starting now. Only spot nodes can be interrupted.
func Interrupt(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node, notice time.Duration, now time.Time) error {
	for _, n := range nodes {
		if n.Labels[v1alpha1.LabelCapacity] != "spot" {
			return problem.Errorf("interrupt a node of a pool with capacity: Spot", "node %s is %s capacity: only spot capacity is taken away", n.Name, orUnknown(n.Labels[v1alpha1.LabelCapacity]))
		}
	}
	for _, n := range nodes {
		if _, ok := n.Annotations[v1alpha1.AnnotationSpotInterruption]; ok {
			continue // already interrupted: the first notice stands
		}
		taints := append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintSpotInterruption, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: now}})
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"resourceVersion": n.ResourceVersion,
				"annotations": map[string]string{
					v1alpha1.AnnotationSpotInterruption: now.Add(notice).UTC().Format(time.RFC3339),
					v1alpha1.AnnotationSpotNotice:       notice.String(),
				},
			},
			"spec": map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		if _, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerSpot}); err != nil {
			return fmt.Errorf("interrupting node %s: %w", n.Name, err)
		}
	}
	return nil
}

// Pick chooses count of nodes at random (seed 0: from the clock),
// skipping nodes already interrupted; all of them when count is 0 or
// more than there are.
func Pick(nodes []corev1.Node, count int, seed uint64) []corev1.Node {
	var free []corev1.Node
	for _, n := range nodes {
		if _, ok := n.Annotations[v1alpha1.AnnotationSpotInterruption]; !ok {
			free = append(free, n)
		}
	}
	if count <= 0 || count >= len(free) {
		return free
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r := rand.New(rand.NewPCG(seed, seed>>1|1))
	r.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	out := free[:count]
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Deadline is when a node's notice ends; ok is false for a node not
// interrupted.
func Deadline(n *corev1.Node) (time.Time, time.Duration, bool) {
	raw, ok := n.Annotations[v1alpha1.AnnotationSpotInterruption]
	if !ok {
		return time.Time{}, 0, false
	}
	end, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, 0, false
	}
	notice, err := time.ParseDuration(n.Annotations[v1alpha1.AnnotationSpotNotice])
	if err != nil {
		notice = DefaultNotice
	}
	return end, notice, true
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// PoolNotices are the interruption notices the recorded blueprints give
// each pool (pools[].spot.notice), keyed "BLUEPRINT/POOL"; a pool not
// there takes DefaultNotice.
func PoolNotices(ctx context.Context, c kubernetes.Interface) (map[string]time.Duration, error) {
	bps, err := recorded.List(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Duration{}
	for _, bp := range bps {
		for j := range bp.Spec.Pools {
			p := &bp.Spec.Pools[j]
			out[bp.Metadata.Name+"/"+p.Name] = p.SpotNotice()
		}
	}
	return out, nil
}

// NoticeFor is a node's pool's notice among notices.
func NoticeFor(n *corev1.Node, notices map[string]time.Duration) time.Duration {
	if d, ok := notices[n.Labels[v1alpha1.LabelBlueprint]+"/"+n.Labels[v1alpha1.LabelPool]]; ok {
		return d
	}
	return DefaultNotice
}
