package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// collectQueues reads Kueue's ClusterQueues, by name; nil where the
// cluster has none (no Kueue, or no right to read them).
func collectQueues(ctx context.Context, c kubernetes.Interface) ([]kueue.ClusterQueue, error) {
	rc := c.Discovery().RESTClient()
	if rc == nil { // a fake clientset serves no API of its own
		return nil, nil
	}
	const path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
	raw, err := rc.Get().AbsPath(path).DoRaw(ctx)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Kueue's ClusterQueues: %w", err)
	}
	var list kueue.ClusterQueueList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("reading Kueue's ClusterQueues: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b kueue.ClusterQueue) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// renderQueues prints each ClusterQueue's workloads, waiting and
// admitted, and per flavor what its workloads use of each resource
// against its nominal quota, and how much of that is borrowed from its
// cohort. GPUs only: they are what a team's queue holds back (CPU and
// memory are the cluster's whole where the team has no quota).
func renderQueues(w io.Writer, queues []kueue.ClusterQueue) error {
	if len(queues) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nQUEUES (Kueue)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTERQUEUE\tCOHORT\tWAITING\tADMITTED\tGPU used/nominal BY FLAVOR")
	for _, cq := range queues {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", cq.Name, orDash(string(cq.Spec.CohortName)),
			cq.Status.PendingWorkloads, cq.Status.AdmittedWorkloads, orDash(strings.Join(gpuByFlavor(&cq), ", ")))
	}
	return tw.Flush()
}

// FlavorGPUs is what a ClusterQueue's workloads use of one flavor's
// GPUs: Used of Nominal, Borrowed of it from the cohort.
type FlavorGPUs struct {
	Flavor                  string
	Resource                corev1.ResourceName
	Used, Nominal, Borrowed resource.Quantity
}

// QueueGPUs is, for each flavor of cq with a GPU quota, in the queue's
// order, what its workloads use.
func QueueGPUs(cq *kueue.ClusterQueue) []FlavorGPUs {
	usage := map[kueue.ResourceFlavorReference]map[corev1.ResourceName]kueue.ResourceUsage{}
	for _, f := range cq.Status.FlavorsUsage {
		usage[f.Name] = map[corev1.ResourceName]kueue.ResourceUsage{}
		for _, r := range f.Resources {
			usage[f.Name][r.Name] = r
		}
	}
	var out []FlavorGPUs
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, r := range f.Resources {
				if !strings.Contains(string(r.Name), "gpu") {
					continue
				}
				u := usage[f.Name][r.Name]
				out = append(out, FlavorGPUs{Flavor: string(f.Name), Resource: r.Name, Used: u.Total, Nominal: r.NominalQuota, Borrowed: u.Borrowed})
			}
		}
	}
	return out
}

// gpuByFlavor is, for each flavor with a GPU quota, "FLAVOR used/nominal"
// and "(N borrowed)" when the queue borrows.
func gpuByFlavor(cq *kueue.ClusterQueue) []string {
	var out []string
	for _, f := range QueueGPUs(cq) {
		s := fmt.Sprintf("%s %s/%s", f.Flavor, qty(f.Used), qty(f.Nominal))
		if !f.Borrowed.IsZero() {
			s += fmt.Sprintf(" (%s borrowed)", qty(f.Borrowed))
		}
		out = append(out, s)
	}
	return out
}

func qty(q resource.Quantity) string { return q.String() }
