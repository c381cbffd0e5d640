package autoscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
)

// scanResult is what one scan found, for the status ConfigMap.
type scanResult struct {
	time       time.Time
	scaledUp   bool
	candidates []*candidate
	cooldown   string
	blockedBy  map[*group][]string
}

func (r *scanResult) blocked(g *group, why string) {
	if r.blockedBy == nil {
		r.blockedBy = map[*group][]string{}
	}
	r.blockedBy[g] = append(r.blockedBy[g], why)
}

// publish writes the cluster-autoscaler-status ConfigMap: cluster-
// autoscaler's status under "status", and berth's record of each pool's
// last scale-up and scale-down under "berth-activity".
func (c *Controller) publish(ctx context.Context, v *view) error {
	now := metaTime(v.now)
	st := &castatus.Status{Time: castatus.FormatTime(v.now), AutoscalerStatus: castatus.Running}
	act := &castatus.Activity{}
	var total castatus.NodeCounts
	candidates := map[*group]int{}
	for _, cd := range c.last.candidates {
		candidates[cd.g]++
	}
	anyUp := false
	for _, g := range v.groups {
		if !g.autoscaled() {
			continue
		}
		counts := castatus.NodeCounts{Unregistered: len(g.upcoming)}
		ready := 0
		for _, n := range g.nodes {
			counts.Registered.Total++
			switch {
			case g.removing[n.Name] || hasTaint(n, v1alpha1.TaintToBeDeleted):
				counts.Registered.BeingDeleted++
			case !isReady(n):
				counts.Registered.Unready.Total++
			case resourceUnready(n, g.gpuResource()):
				counts.Registered.Unready.Total++
				counts.Registered.Unready.ResourceUnready++
			default:
				counts.Registered.Ready++
				ready++
			}
		}
		for _, u := range g.upcoming {
			if v.now.Sub(u.requested) > v.profile.MaxNodeProvisionTime.Duration/2 {
				counts.LongUnregistered++
			}
		}
		add(&total, counts)
		target, lo, hi := g.target(), g.min(), g.max()
		up := castatus.ScaleUpCondition{Status: castatus.NoActivity, LastProbeTime: now}
		switch {
		case v.now.Before(g.backoffUntil):
			up.Status = castatus.Backoff
			up.BackoffInfo = &castatus.BackoffInfo{ErrorCode: "ProvisioningTimedOut", ErrorMessage: g.backoffWhy}
		case len(g.upcoming) > 0:
			up.Status = castatus.InProgress
			anyUp = true
		}
		down := castatus.ScaleDownCondition{Status: castatus.NoCandidates, LastProbeTime: now}
		if n := candidates[g]; n > 0 {
			down.Status, down.Candidates = castatus.CandidatesPresent, n
		}
		st.NodeGroups = append(st.NodeGroups, castatus.NodeGroupStatus{
			Name: g.name(),
			Health: castatus.HealthCondition{Status: castatus.Healthy, NodeCounts: counts,
				CloudProviderTarget: &target, MinSize: &lo, MaxSize: &hi, LastProbeTime: now},
			ScaleUp:   up,
			ScaleDown: down,
		})
		act.Pools = append(act.Pools, castatus.PoolActivity{
			Name: g.name(), Target: target, Min: lo, Max: hi, Ready: ready, Upcoming: len(g.upcoming),
			LastScaleUp: g.lastUp, LastScaleDown: g.lastDown, Blocked: c.last.blockedBy[g],
		})
	}
	st.ClusterWide.Health = castatus.HealthCondition{Status: castatus.Healthy, NodeCounts: total, LastProbeTime: now}
	st.ClusterWide.ScaleUp = castatus.ScaleUpCondition{Status: castatus.NoActivity, LastProbeTime: now}
	if anyUp {
		st.ClusterWide.ScaleUp.Status = castatus.InProgress
	}
	st.ClusterWide.ScaleDown = castatus.ScaleDownCondition{Status: castatus.NoCandidates, LastProbeTime: now}
	if n := len(c.last.candidates); n > 0 {
		st.ClusterWide.ScaleDown = castatus.ScaleDownCondition{Status: castatus.CandidatesPresent, Candidates: n, LastProbeTime: now}
	}
	if c.last.cooldown != "" {
		st.Message = "scale-down waits: " + c.last.cooldown
	}
	data, err := castatus.Data(st, act)
	if err != nil {
		return err
	}
	cms := c.client.CoreV1().ConfigMaps(castatus.ConfigMapNamespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: castatus.ConfigMapName, Namespace: castatus.ConfigMapNamespace,
			Annotations: map[string]string{v1alpha1.AnnotationAutoscalerLastUpdated: st.Time},
		},
		Data: data,
	}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManagerAutoscaler})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: v1alpha1.FieldManagerAutoscaler})
	}
	if err != nil {
		return fmt.Errorf("writing %s/%s: %w", castatus.ConfigMapNamespace, castatus.ConfigMapName, err)
	}
	return nil
}

func add(into *castatus.NodeCounts, n castatus.NodeCounts) {
	into.Registered.Total += n.Registered.Total
	into.Registered.Ready += n.Registered.Ready
	into.Registered.NotStarted += n.Registered.NotStarted
	into.Registered.BeingDeleted += n.Registered.BeingDeleted
	into.Registered.Unready.Total += n.Registered.Unready.Total
	into.Registered.Unready.ResourceUnready += n.Registered.Unready.ResourceUnready
	into.Unregistered += n.Unregistered
	into.LongUnregistered += n.LongUnregistered
}

// event records an event on the status ConfigMap, where
// cluster-autoscaler records its scale-ups and scale-downs.
func (c *Controller) event(ctx context.Context, typ, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: castatus.ConfigMapNamespace, Name: castatus.ConfigMapName}
	if cm, err := c.client.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(ctx, castatus.ConfigMapName, metav1.GetOptions{}); err == nil {
		ref.UID, ref.ResourceVersion = cm.UID, cm.ResourceVersion
	}
	c.recorder.Eventf(ref, typ, reason, format, args...)
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func since(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() }
