package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"berth.io/berth/api/v1alpha1"
)

// Karpenter is what Karpenter's objects say: its NodePools, with their
// limits, what they have launched and their disruption settings, and its
// NodeClaims.
type Karpenter struct {
	NodePools  []karpv1.NodePool
	NodeClaims []karpv1.NodeClaim
}

// collectKarpenter reads Karpenter's NodePools and NodeClaims; nil where
// the cluster has none (no Karpenter CRDs, or no right to read them).
func collectKarpenter(ctx context.Context, c kubernetes.Interface) (*Karpenter, error) {
	rc := c.Discovery().RESTClient()
	if rc == nil { // a fake clientset serves no API of its own
		return nil, nil
	}
	out := &Karpenter{}
	for _, r := range []struct {
		path string
		into any
	}{
		{"/apis/karpenter.sh/v1/nodepools", &karpv1.NodePoolList{}},
		{"/apis/karpenter.sh/v1/nodeclaims", &karpv1.NodeClaimList{}},
	} {
		raw, err := rc.Get().AbsPath(r.path).DoRaw(ctx)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Karpenter's %s: %w", r.path, err)
		}
		if err := json.Unmarshal(raw, r.into); err != nil {
			return nil, fmt.Errorf("reading Karpenter's %s: %w", r.path, err)
		}
		switch l := r.into.(type) {
		case *karpv1.NodePoolList:
			out.NodePools = l.Items
		case *karpv1.NodeClaimList:
			out.NodeClaims = l.Items
		}
	}
	if len(out.NodePools) == 0 && len(out.NodeClaims) == 0 {
		return nil, nil
	}
	sort.Slice(out.NodePools, func(i, j int) bool { return out.NodePools[i].Name < out.NodePools[j].Name })
	sort.Slice(out.NodeClaims, func(i, j int) bool { return out.NodeClaims[i].Name < out.NodeClaims[j].Name })
	return out, nil
}

// renderKarpenter prints each NodePool's usage against its limits, its
// consolidation and disruption budgets, then each NodeClaim.
func renderKarpenter(w io.Writer, k *Karpenter, now time.Time) error {
	if k == nil {
		return nil
	}
	fmt.Fprintln(w, "\nKARPENTER")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tNODES\tCPU used/limit\tMEMORY used/limit\tGPU used/limit\tCONSOLIDATION\tBUDGETS")
	for _, np := range k.NodePools {
		used, limits := np.Status.Resources, corev1.ResourceList(np.Spec.Limits)
		gpu := "-"
		for name := range limits {
			if strings.Contains(string(name), "gpu") {
				gpu = fmt.Sprintf("%s/%s", count(used, name), count(limits, name))
			}
		}
		d := np.Spec.Disruption
		after := "Never" // a nil duration is Karpenter's Never
		if d.ConsolidateAfter.Duration != nil {
			after = d.ConsolidateAfter.Duration.String()
		}
		var budgets []string
		for _, b := range d.Budgets {
			s := "nodes " + b.Nodes
			if len(b.Reasons) > 0 {
				var rs []string
				for _, r := range b.Reasons {
					rs = append(rs, string(r))
				}
				s += " (" + strings.Join(rs, ",") + ")"
			}
			if b.Schedule != nil {
				s += " at " + *b.Schedule
			}
			budgets = append(budgets, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s/%s\t%s\t%s after %s\t%s\n", np.Name, count(used, corev1.ResourceName("nodes")),
			cores(used), limitOr(limits, corev1.ResourceCPU, cores), mem(used), limitOr(limits, corev1.ResourceMemory, mem), gpu,
			d.ConsolidationPolicy, after, orDash(strings.Join(budgets, "; ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(k.NodeClaims) == 0 {
		fmt.Fprintln(w, "No NodeClaims: Karpenter has launched no node.")
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODECLAIM\tNODEPOOL\tTYPE\tCAPACITY\tZONE\tNODE\tINITIALIZED\tAGE")
	for _, nc := range k.NodeClaims {
		ready := "Unknown"
		for _, c := range nc.Status.Conditions {
			if c.Type == karpv1.ConditionTypeInitialized {
				ready = string(c.Status)
				if c.Status != metav1.ConditionTrue && c.Reason != "" {
					ready += " (" + c.Reason + ")"
				}
			}
		}
		if nc.DeletionTimestamp != nil {
			ready = "Deleting"
		}
		l := nc.Labels
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", nc.Name, orDash(l[v1alpha1.LabelKarpenterNodePool]), orDash(l[corev1.LabelInstanceTypeStable]),
			orDash(l[v1alpha1.LabelCapacityType]), orDash(l[corev1.LabelTopologyZone]), orDash(nc.Status.NodeName), ready,
			now.Sub(nc.CreationTimestamp.Time).Round(time.Second))
	}
	return tw.Flush()
}

// limitOr is the limit on name formatted by f, or "-" where there is none.
func limitOr(l corev1.ResourceList, name corev1.ResourceName, f func(corev1.ResourceList) string) string {
	if _, ok := l[name]; !ok {
		return "-"
	}
	return f(l)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
