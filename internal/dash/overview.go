package dash

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/status"
)

// Overview is the Overview page, and its JSON: pools, teams' quota use,
// Kueue's queues and classes, each number written as `berth status`
// writes it.
type Overview struct {
	Pools   []PoolRow  `json:"pools"`
	Quotas  []QuotaRow `json:"quotas"`
	Queues  []QueueRow `json:"queues,omitempty"`
	Classes []ClassRow `json:"classes"`
	// Unpooled counts nodes that belong to no pool.
	Unpooled int `json:"unpooled,omitempty"`
}

// PoolRow is one pool.
type PoolRow struct {
	Name     string `json:"name"`
	Mode     string `json:"mode,omitempty"`
	Capacity string `json:"capacity,omitempty"`
	Ready    int    `json:"ready"`
	Total    int    `json:"total"`
	// Target is the autoscaler's target size; -1 when it publishes none.
	Target int `json:"target"`
	// Size is the blueprint's range, "0-2" or "3"; "?" when unknown.
	Size   string   `json:"size"`
	CPU    Usage    `json:"cpu"`
	Memory Usage    `json:"memory"`
	GPU    *Usage   `json:"gpu,omitempty"`
	Taints []string `json:"taints,omitempty"`
	// InBlueprint is false for a pool found only on nodes.
	InBlueprint bool `json:"inBlueprint"`
}

// Usage is requested against a total (allocatable, or a quota's hard).
type Usage struct {
	Used  string `json:"used"`
	Total string `json:"total"`
	// Fraction is Used over Total, 0 to 1 (above 1 when over).
	Fraction float64 `json:"fraction"`
}

// QuotaRow is one ResourceQuota of a team, GPUs first.
type QuotaRow struct {
	Team      string          `json:"team"`
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Scope     string          `json:"scope,omitempty"`
	Resources []QuotaResource `json:"resources"`
}

// QuotaResource is one resource of a quota.
type QuotaResource struct {
	Name string `json:"name"`
	Usage
}

// QueueRow is one of Kueue's ClusterQueues: its workloads waiting and
// admitted, and per GPU flavor what they use of its nominal quota, with
// what is borrowed from the cohort.
type QueueRow struct {
	Name     string     `json:"name"`
	Cohort   string     `json:"cohort,omitempty"`
	Waiting  int32      `json:"waiting"`
	Admitted int32      `json:"admitted"`
	GPUs     []QueueGPU `json:"gpus"`
}

// QueueGPU is one flavor's GPUs of a queue.
type QueueGPU struct {
	Flavor   string `json:"flavor"`
	Borrowed string `json:"borrowed"`
	Usage
}

// ClassRow is one workload class.
type ClassRow struct {
	Name       string `json:"name"`
	Priority   string `json:"priority"`
	Preemption string `json:"preemption"`
	Pools      string `json:"pools"`
	Budget     string `json:"budget"`
	Spread     string `json:"spread"`
}

func overview(v *View) Overview {
	st := v.Status
	out := Overview{Pools: []PoolRow{}, Quotas: []QuotaRow{}, Classes: []ClassRow{}, Unpooled: st.Unpooled}
	targets := map[string]int{}
	if st.Autoscaler != nil {
		for _, p := range st.Autoscaler.Pools {
			targets[p.Name] = p.Target
		}
	}
	for _, p := range st.Pools {
		row := PoolRow{
			Name: p.Name, Mode: p.Mode, Capacity: string(v.Capacity[p.Name]), Ready: p.Ready, Total: p.Total, Target: -1,
			Size: status.Size(p), Taints: p.Taints, InBlueprint: p.InBlueprint,
			CPU:    usage(status.Cores(p.Requested), status.Cores(p.Allocatable), p.Requested, p.Allocatable, corev1.ResourceCPU),
			Memory: usage(status.Memory(p.Requested), status.Memory(p.Allocatable), p.Requested, p.Allocatable, corev1.ResourceMemory),
		}
		if t, ok := targets[p.Name]; ok {
			row.Target = t
		}
		if p.GPUResource != "" {
			u := usage(status.Count(p.Requested, p.GPUResource), status.Count(p.Allocatable, p.GPUResource), p.Requested, p.Allocatable, p.GPUResource)
			row.GPU = &u
		}
		out.Pools = append(out.Pools, row)
	}
	for _, q := range st.Quotas {
		row := QuotaRow{Team: q.Team, Namespace: q.Namespace, Name: q.Name, Scope: q.Scope}
		for _, name := range gpusFirst(q.Hard) {
			used, hard := q.Used[name], q.Hard[name]
			row.Resources = append(row.Resources, QuotaResource{Name: string(name), Usage: usage(used.String(), hard.String(), q.Used, q.Hard, name)})
		}
		out.Quotas = append(out.Quotas, row)
	}
	for i := range st.Queues {
		cq := &st.Queues[i]
		row := QueueRow{Name: cq.Name, Cohort: string(cq.Spec.CohortName), Waiting: cq.Status.PendingWorkloads, Admitted: cq.Status.AdmittedWorkloads, GPUs: []QueueGPU{}}
		for _, f := range status.QueueGPUs(cq) {
			used, nominal := corev1.ResourceList{f.Resource: f.Used}, corev1.ResourceList{f.Resource: f.Nominal}
			row.GPUs = append(row.GPUs, QueueGPU{Flavor: f.Flavor, Borrowed: f.Borrowed.String(),
				Usage: usage(f.Used.String(), f.Nominal.String(), used, nominal, f.Resource)})
		}
		out.Queues = append(out.Queues, row)
	}
	for _, c := range st.Classes {
		row := ClassRow{Name: c.Name, Preemption: c.Preemption, Pools: strings.Join(c.Pools, ", "), Budget: c.Budget, Spread: c.Spread, Priority: "-"}
		switch {
		case c.PriorityClass != "" && c.Present:
			row.Priority = c.PriorityClass + " (" + itoa(int(c.Value)) + ")"
		case c.PriorityClass != "":
			row.Priority = c.PriorityClass + " (missing: run berth apply)"
		}
		if row.Budget == "" {
			row.Budget = "-"
		}
		out.Classes = append(out.Classes, row)
	}
	return out
}

func usage(used, total string, usedL, totalL corev1.ResourceList, name corev1.ResourceName) Usage {
	u := Usage{Used: used, Total: total}
	a, b := usedL[name], totalL[name]
	if b.MilliValue() > 0 {
		u.Fraction = float64(a.MilliValue()) / float64(b.MilliValue())
	}
	return u
}

// gpusFirst orders a quota's resources with GPUs first, then by name.
func gpusFirst(l corev1.ResourceList) []corev1.ResourceName {
	names := sortedNames(l)
	sort.SliceStable(names, func(i, j int) bool {
		return strings.Contains(string(names[i]), "gpu") && !strings.Contains(string(names[j]), "gpu")
	})
	return names
}
