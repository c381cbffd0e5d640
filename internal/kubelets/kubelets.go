// Package kubelets plays the simulated kubelets of a berth local
// cluster where KWOK does not: their device manager and allocatable
// (Controller) and their node leases (LeaseController), run inside
// `berth up`; and it stops and starts them (`berth node stop|start`): a
// stopped kubelet renews no lease and posts no status, so the real node
// lifecycle controller marks its node Unknown and taints it, and the
// taint manager evicts its pods after their tolerationSeconds, as with a
// dead kubelet.
package kubelets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Selection picks nodes: by name, by pool, by zone; a node must match
// every field given. At least one field must be given.
type Selection struct {
	Names []string
	Pool  string
	Zone  string
}

func (s Selection) empty() bool { return len(s.Names) == 0 && s.Pool == "" && s.Zone == "" }

// Select lists the simulated nodes a selection picks, by name. A name
// that is no node of the cluster, or a selection that picks nothing, is
// an error naming what exists.
func Select(ctx context.Context, c kubernetes.Interface, s Selection) ([]corev1.Node, error) {
	if s.empty() {
		return nil, problem.New("name nodes, or pass --pool POOL or --zone ZONE", "no node named")
	}
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	byName := map[string]bool{}
	poolSet, zones := map[string]bool{}, map[string]bool{}
	var out []corev1.Node
	for _, n := range list.Items {
		byName[n.Name] = true
		poolSet[n.Labels[v1alpha1.LabelPool]] = true
		zones[n.Labels[corev1.LabelTopologyZone]] = true
		if n.Annotations[v1alpha1.AnnotationKWOKNode] != "fake" {
			continue
		}
		if len(s.Names) > 0 && !slices.Contains(s.Names, n.Name) ||
			s.Pool != "" && n.Labels[v1alpha1.LabelPool] != s.Pool ||
			s.Zone != "" && n.Labels[corev1.LabelTopologyZone] != s.Zone {
			continue
		}
		out = append(out, n)
	}
	for _, name := range s.Names {
		if !byName[name] {
			return nil, problem.Errorf("`kubectl get nodes` lists them", "node %q is not a node of this cluster's pools", name)
		}
	}
	switch {
	case s.Pool != "" && !poolSet[s.Pool]:
		return nil, problem.Errorf(fmt.Sprintf("use one of %s", keys(poolSet)), "no node belongs to pool %q", s.Pool)
	case s.Zone != "" && !zones[s.Zone]:
		return nil, problem.Errorf(fmt.Sprintf("use one of %s", keys(zones)), "no node is in zone %q", s.Zone)
	case len(out) == 0:
		return nil, problem.Errorf("give fewer conditions", "no node matches every condition given (names %v, pool %q, zone %q)", s.Names, s.Pool, s.Zone)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stop stops the kubelets of nodes; Start starts them. Each is one patch
// of the node's v1alpha1.AnnotationKubeletStopped, idempotent.
func Stop(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node, now time.Time) error {
	return annotate(ctx, c, nodes, now.UTC().Format(time.RFC3339))
}

func Start(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node) error {
	return annotate(ctx, c, nodes, "")
}

func annotate(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node, value string) error {
	var v any
	if value != "" {
		v = value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.AnnotationKubeletStopped: v}}})
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, stopped := n.Annotations[v1alpha1.AnnotationKubeletStopped]; stopped == (value != "") {
			continue
		}
		if _, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager}); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

// Ready reports a node's Ready condition: "True", "False" or "Unknown".
func Ready(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
