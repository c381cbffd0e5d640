package status

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Render prints the summary as tables.
func Render(w io.Writer, c *Cluster) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tMODE\tREADY\tSIZE\tCPU req/alloc\tMEMORY req/alloc\tGPU req/alloc\tTAINTS")
	for _, p := range c.Pools {
		mode := p.Mode
		if !p.InBlueprint {
			mode = "(not in blueprint)"
		}
		gpu := "-"
		if p.GPUResource != "" {
			gpu = fmt.Sprintf("%s/%s", count(p.Requested, p.GPUResource), count(p.Allocatable, p.GPUResource))
		}
		taints := strings.Join(p.Taints, ",")
		if taints == "" {
			taints = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s/%s\t%s/%s\t%s\t%s\n", p.Name, mode, p.Ready, p.Total, size(p),
			cores(p.Requested), cores(p.Allocatable), mem(p.Requested), mem(p.Allocatable), gpu, taints)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Unpooled > 0 {
		fmt.Fprintf(w, "%d node(s) belong to no pool (no berth.io/pool or agentpool label)\n", c.Unpooled)
	}
	if err := renderAutoscaler(w, c.Autoscaler, c.Now); err != nil {
		return err
	}
	if err := renderKarpenter(w, c.Karpenter, c.Now); err != nil {
		return err
	}
	if err := renderInterruptions(w, c.Interruptions, c.Now); err != nil {
		return err
	}
	if err := renderQuotas(w, c.Quotas); err != nil {
		return err
	}
	if err := renderQueues(w, c.Queues); err != nil {
		return err
	}
	if err := renderClasses(w, c.Classes); err != nil {
		return err
	}
	return renderScaled(w, c.Scaled, c.Now)
}

func renderClasses(w io.Writer, classes []Class) error {
	if len(classes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tPRIORITYCLASS\tPREEMPTION\tPOOLS\tBUDGET\tSPREAD\tGPU ISOLATION")
	for _, c := range classes {
		pc := "-"
		switch {
		case c.PriorityClass != "" && c.Present:
			pc = fmt.Sprintf("%s (%d)", c.PriorityClass, c.Value)
		case c.PriorityClass != "":
			pc = c.PriorityClass + " (missing: run berth apply)"
		}
		budget := c.Budget
		if budget == "" {
			budget = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, pc, c.Preemption, strings.Join(c.Pools, ","), budget, c.Spread, c.Isolation)
	}
	return tw.Flush()
}

func renderQuotas(w io.Writer, quotas []Quota) error {
	if len(quotas) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tNAMESPACE\tQUOTA\tUSED/HARD")
	for _, q := range quotas {
		var parts []string
		for _, name := range sortedNames(q.Hard) {
			used := q.Used[name]
			hard := q.Hard[name]
			parts = append(parts, fmt.Sprintf("%s %s/%s", name, used.String(), hard.String()))
		}
		name := q.Name
		if q.Scope != "" {
			name += " (pods of " + q.Scope + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", q.Team, q.Namespace, name, strings.Join(parts, ", "))
	}
	return tw.Flush()
}

func size(p Pool) string {
	switch {
	case p.MinSize < 0:
		return "?"
	case p.MinSize == p.MaxSize:
		return fmt.Sprint(p.MinSize)
	default:
		return fmt.Sprintf("%d-%d", p.MinSize, p.MaxSize)
	}
}

func cores(l corev1.ResourceList) string {
	q := l[corev1.ResourceCPU]
	return trimFloat(float64(q.MilliValue()) / 1000)
}

func mem(l corev1.ResourceList) string {
	q := l[corev1.ResourceMemory]
	return trimFloat(float64(q.Value())/(1<<30)) + "Gi"
}

func count(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		q = resource.Quantity{}
	}
	return fmt.Sprint(q.Value())
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
