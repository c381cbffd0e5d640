package dash

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	resourcehelper "k8s.io/component-helpers/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/status"
	"berth.io/berth/internal/why"
)

// View is one reading of the cluster, what every page is rendered from.
// Its numbers are status's and why's own: the same calls `berth status`
// and `berth why --all` make.
type View struct {
	// Now is when it was read.
	Now time.Time
	// Status is what `berth status` prints.
	Status *status.Cluster
	// Waiting is what `berth why --all` lists; Holders, by namespace,
	// the pods that hold a team's quota, for the workloads it refuses.
	Waiting why.Summary
	Holders map[string][]Holder
	// ScaleUps are, by NAMESPACE/NAME of a Pending pod, the pools the
	// autoscaler's latest TriggeredScaleUp event on it grows.
	ScaleUps map[string][]castatus.ScaleUp
	// Capacity is each blueprint pool's capacity type (OnDemand, Spot).
	Capacity map[string]v1alpha1.CapacityType
}

// Holder is a pod that holds quota in its namespace.
type Holder struct {
	Pod, Owner string
	// Requests are the pod's requests of the quota's resources, as
	// "nvidia.com/gpu 2".
	Requests string
}

// read makes a View: status and why read the cluster at once, through c
// and, for pods, nodes and events, l.
func read(ctx context.Context, c kubernetes.Interface, l listing.Lister, bp *v1alpha1.Blueprint, now time.Time) (*View, error) {
	v := &View{Now: now, Capacity: map[string]v1alpha1.CapacityType{}}
	if bp != nil {
		for _, p := range bp.Spec.Pools {
			v.Capacity[p.Name] = p.Capacity
			if p.Capacity == "" {
				v.Capacity[p.Name] = v1alpha1.OnDemand
			}
		}
	}
	var snap *why.Snapshot
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		v.Status, err = status.Collect(gctx, c, l, bp)
		return err
	})
	g.Go(func() (err error) {
		snap, err = why.ReadAll(gctx, c, l, "", bp)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	v.Status.Now = now
	snap.Now = now
	v.Waiting = why.ExplainAll(snap, "")
	v.Holders = holders(snap, v.Waiting)
	v.ScaleUps = scaleUps(snap)
	return v, nil
}

// scaleUps reads the TriggeredScaleUp events why read with the Pending
// pods: the latest of each pod.
func scaleUps(s *why.Snapshot) map[string][]castatus.ScaleUp {
	out := map[string][]castatus.ScaleUp{}
	latest := map[string]time.Time{}
	for i := range s.Events {
		ev := &s.Events[i]
		if ev.Reason != castatus.ReasonTriggeredScaleUp || ev.InvolvedObject.Kind != "Pod" {
			continue
		}
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		ups, ok := castatus.ParseTriggered(ev.Message)
		if t := eventTime(ev); ok && !t.Before(latest[key]) {
			out[key], latest[key] = ups, t
		}
	}
	return out
}

// holders are, for each namespace whose quota refuses a workload, the
// pods that use what it refuses.
func holders(s *why.Snapshot, w why.Summary) map[string][]Holder {
	refused := map[string]map[corev1.ResourceName]bool{}
	for _, v := range w.Workloads {
		if v.Top.Code != why.CauseQuotaExceeded {
			continue
		}
		ns := workloadNamespace(v.Workload)
		if refused[ns] == nil {
			refused[ns] = map[corev1.ResourceName]bool{}
		}
		for _, q := range v.Quota {
			used, hard := resource.MustParse(q.Used), resource.MustParse(q.Hard)
			if used.Cmp(hard) >= 0 {
				refused[ns][quotaResource(q.Resource)] = true
			}
		}
	}
	out := map[string][]Holder{}
	for i := range s.Pods {
		p := &s.Pods[i]
		names := refused[p.Namespace]
		// A Pending pod holds quota as a running one does.
		if len(names) == 0 || p.DeletionTimestamp != nil {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		var parts []string
		for _, name := range sortedNames(req) {
			if q := req[name]; names[name] && !q.IsZero() {
				parts = append(parts, fmt.Sprintf("%s %s", name, q.String()))
			}
		}
		if len(parts) == 0 {
			continue
		}
		owner := ""
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				owner = strings.ToLower(ref.Kind) + "/" + ref.Name
			}
		}
		out[p.Namespace] = append(out[p.Namespace], Holder{Pod: p.Name, Owner: owner, Requests: strings.Join(parts, ", ")})
	}
	for _, hs := range out {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Pod < hs[j].Pod })
	}
	return out
}

// quotaResource is the pod resource a quota's resource counts:
// requests.nvidia.com/gpu counts nvidia.com/gpu.
func quotaResource(name string) corev1.ResourceName {
	return corev1.ResourceName(strings.TrimPrefix(name, "requests."))
}

// workloadNamespace is the namespace of KIND/NAMESPACE/NAME.
func workloadNamespace(w string) string {
	parts := strings.Split(w, "/")
	if len(parts) == 3 {
		return parts[1]
	}
	return ""
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
