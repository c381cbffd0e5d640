package trace

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/scaffold"
)

// Check checks the trace against bp, a loaded blueprint, as `berth new`
// would check each row: the team exists; a class given exists, the team
// may use it and its role fits the kind (Training for training, Serving
// for inference, General for batch); a row without a class has one `berth
// new` would pick; the class reaches a pool for the row's pods (a GPU
// pool for a row with GPUs, a pool without for one without); a pod fits
// one of those pools' machines, the team's quota and its LimitRange's
// maximum; the load's services are the trace's inference rows in
// their teams' namespaces; each interruption takes away a Spot pool and
// each drain empties a pool; and
// each queue's worker is one `berth new batch` writes for its team. It returns every problem, each at the row's
// FILE:LINE, in file order; none when the trace can be rehearsed on bp.
func (t *Trace) Check(bp *v1alpha1.Blueprint) problem.List {
	var problems problem.List
	for _, j := range t.Jobs {
		problems = append(problems, checkJob(bp, j)...)
	}
	problems = append(problems, t.checkLoad(bp)...)
	problems = append(problems, t.checkInterruptions(bp)...)
	problems = append(problems, t.checkWorkers(bp)...)
	slices.SortStableFunc(problems, func(a, b problem.Problem) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return problems
}

func checkJob(bp *v1alpha1.Blueprint, j Job) problem.List {
	var problems problem.List
	fail := func(field, message, fix string) {
		problems = append(problems, problem.Problem{File: j.File, Line: j.Line, Field: field, Message: message, Fix: fix})
	}
	team := findTeam(bp, j.Team)
	if team == nil {
		fail("team", fmt.Sprintf("no team %q in the blueprint; its teams are %s", j.Team, teamNames(bp)), "write one of them, or add the team to the blueprint's spec.teams")
		return problems
	}
	class := pickClass(bp, team, j, fail)
	if class == nil {
		return problems
	}
	gpu := j.GPUs > 0
	reach := scaffold.ClassPools(bp, class, gpu)
	switch {
	case len(reach) == 0 && gpu:
		fail("gpus", fmt.Sprintf("class %s has no GPU pool (its pools: %s), so a pod asking for GPUs would never be placed", class.Name, strings.Join(class.Pools, ", ")), "drop the row's GPUs, or give it a class with a GPU pool")
		return problems
	case len(reach) == 0:
		fail("gpus", fmt.Sprintf("class %s has only GPU pools (%s), and a pod without GPUs is admitted to none of them", class.Name, strings.Join(class.Pools, ", ")), "give the row's pods GPUs (berth new gives them 1), or a class with a pool without GPUs")
		return problems
	}
	cpu, memory := requests(j)
	want := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
	var misfits []string
	fits := false
	for _, p := range reach {
		r := want.DeepCopy()
		if gpu {
			r[corev1.ResourceName(p.GPUResource())] = *resource.NewQuantity(j.GPUs, resource.DecimalSI)
		}
		allocatable := pools.NewNode(bp, p, 0).Status.Allocatable
		short := exceeds(r, allocatable)
		if len(short) == 0 {
			fits = true
			break
		}
		misfits = append(misfits, fmt.Sprintf("pool %s's nodes have %s", p.Name, strings.Join(short, ", ")))
	}
	if !fits {
		fail(podField(j), fmt.Sprintf("a pod (%s) fits no machine of class %s: %s", podString(j, cpu, memory), class.Name, strings.Join(misfits, "; ")), "ask for less per pod (and run more pods), or give one of the class's pools a bigger machine")
	}
	admitted(j, team, cpu, memory, fail)
	return problems
}

// pickClass is the row's class: the one it names, checked as `berth new
// --class` checks it, or the one `berth new` picks. Nil after a problem.
func pickClass(bp *v1alpha1.Blueprint, team *v1alpha1.Team, j Job, fail func(field, message, fix string)) *v1alpha1.Class {
	if j.Class == "" {
		c, err := scaffold.DefaultClass(bp, team, j.Kind, int(j.GPUs))
		if err != nil {
			p, _ := problem.As(err)
			field := "class"
			if p.Field != "" { // no class has pools for the row's GPUs
				field = p.Field
			}
			fail(field, p.Message, p.Fix)
			return nil
		}
		return c
	}
	var c *v1alpha1.Class
	var names []string
	for i := range bp.Spec.Classes {
		names = append(names, bp.Spec.Classes[i].Name)
		if bp.Spec.Classes[i].Name == j.Class {
			c = &bp.Spec.Classes[i]
		}
	}
	role := j.Kind.Role()
	switch {
	case c == nil:
		fail("class", fmt.Sprintf("no class %q in the blueprint; its classes are %s", j.Class, orNone(names)), "write one of them, or leave class empty for the one `berth new` picks")
	case !scaffold.MayUse(team, c.Name):
		fail("class", fmt.Sprintf("team %s may not use class %s (its classes: %s)", team.Name, c.Name, strings.Join(team.Classes, ", ")), fmt.Sprintf("write one of the team's classes, or add %s to team %s's classes in the blueprint", c.Name, team.Name))
	case c.EffectiveRole() != role:
		fail("class", fmt.Sprintf("class %s has role %s; a %s row wants a %s class", c.Name, c.EffectiveRole(), j.Kind, role), fmt.Sprintf("write a %s class, or leave class empty for the one `berth new` picks", role))
	default:
		return c
	}
	return nil
}

// admitted checks a pod against what the team's namespace admits: its
// quota (a pod above it is refused whatever else runs) and its
// LimitRange's maximum per container (berth new's pods have one).
func admitted(j Job, team *v1alpha1.Team, cpu, memory resource.Quantity, fail func(field, message, fix string)) {
	type bound struct {
		field, what string
		asks        resource.Quantity
		limit       *resource.Quantity
		fix         string
	}
	var bounds []bound
	if q := team.Quota; q != nil {
		bounds = append(bounds,
			bound{"gpus", "quota.gpu", *resource.NewQuantity(j.GPUs, resource.DecimalSI), q.GPU, "raise the team's quota.gpu"},
			bound{"cpu", "quota.cpu", cpu, q.CPU, "raise the team's quota.cpu"},
			bound{"memory", "quota.memory", memory, q.Memory, "raise the team's quota.memory"})
	}
	if d := team.Defaults; d != nil {
		bounds = append(bounds,
			bound{"cpu", "defaults.cpuMax", cpu, d.CPUMax, "raise the team's defaults.cpuMax"},
			bound{"memory", "defaults.memoryMax", memory, d.MemoryMax, "raise the team's defaults.memoryMax"})
	}
	for _, b := range bounds {
		if b.limit != nil && b.asks.Cmp(*b.limit) > 0 {
			fail(b.field, fmt.Sprintf("a pod asks for %s, above team %s's %s of %s: it would never be admitted", amount(b.field, b.asks), team.Name, b.what, b.limit.String()), fmt.Sprintf("ask for at most %s per pod (and run more pods), or %s", b.limit.String(), b.fix))
		}
	}
}

// checkLoad checks that each service the load names runs where the
// trace puts it: an inference row's name, in its team's first namespace.
func (t *Trace) checkLoad(bp *v1alpha1.Blueprint) problem.List {
	if t.Load == nil {
		return nil
	}
	services := map[string][]string{} // name -> namespaces it runs in
	for _, j := range t.Jobs {
		if team := findTeam(bp, j.Team); team != nil && j.Kind == Inference {
			services[j.Name] = append(services[j.Name], namespace(team))
		}
	}
	var problems problem.List
	for i, s := range t.Load.Steps {
		for k, w := range s.Workloads {
			in, ok := services[w.Name]
			if !ok || slices.Contains(in, w.Namespace) {
				continue // a name no row has is Parse's to report
			}
			field := fmt.Sprintf("spec.load.steps[%d].workloads[%d].namespace", i, k)
			problems = append(problems, problem.Problem{File: t.file, Line: t.lines.Of(field), Field: field, Message: fmt.Sprintf("service %s runs in %s, not %s", w.Name, strings.Join(in, ", "), w.Namespace), Fix: "write the namespace of the row's team (its first)"})
		}
	}
	return problems
}

// checkInterruptions checks that each interruption names a Spot pool of
// bp (only spot capacity is taken away), and each drain a pool.
func (t *Trace) checkInterruptions(bp *v1alpha1.Blueprint) problem.List {
	var problems problem.List
	for i, in := range t.Interruptions {
		field := fmt.Sprintf("spec.interruptions[%d].pool", i)
		fail := func(message, fix string) {
			problems = append(problems, problem.Problem{File: t.file, Line: t.lines.Of(field), Field: field, Message: message, Fix: fix})
		}
		var spot []string
		var pool *v1alpha1.Pool
		for k := range bp.Spec.Pools {
			p := &bp.Spec.Pools[k]
			if p.Capacity == v1alpha1.Spot {
				spot = append(spot, p.Name)
			}
			if p.Name == in.Pool {
				pool = p
			}
		}
		switch {
		case pool == nil:
			fail(fmt.Sprintf("no pool %q in the blueprint; its Spot pools are %s", in.Pool, orNone(spot)), "name one of them")
		case pool.Capacity != v1alpha1.Spot:
			fail(fmt.Sprintf("pool %s is %s capacity: only spot capacity is taken away", in.Pool, pool.Capacity), "name a Spot pool ("+orNone(spot)+"), or make the pool capacity: Spot")
		}
	}
	for i, d := range t.Drains {
		if findPool(bp, d.Pool) == nil {
			field := fmt.Sprintf("spec.drains[%d].pool", i)
			problems = append(problems, problem.Problem{File: t.file, Line: t.lines.Of(field), Field: field, Message: fmt.Sprintf("no pool %q in the blueprint", d.Pool), Fix: "name one of its pools"})
		}
	}
	return problems
}

func findPool(bp *v1alpha1.Blueprint, name string) *v1alpha1.Pool {
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Name == name {
			return &bp.Spec.Pools[i]
		}
	}
	return nil
}

// checkWorkers checks that `berth new batch` can write each queue's
// worker (QueueWorker).
func (t *Trace) checkWorkers(bp *v1alpha1.Blueprint) problem.List {
	var problems problem.List
	for i, q := range t.Queues {
		if q.Team == "" {
			continue
		}
		if _, err := QueueWorker(bp, q); err != nil {
			p, ok := problem.As(err)
			if !ok {
				p = &problem.Problem{Message: err.Error()}
			}
			field := fmt.Sprintf("spec.queues[%d]", i)
			problems = append(problems, problem.Problem{File: t.file, Line: t.lines.Of(field), Field: field, Message: fmt.Sprintf("queue %s's worker: %s", q.Name, p.Message), Fix: p.Fix})
		}
	}
	return problems
}

// QueueWorker is the worker of q, as `berth new batch WORKER --team TEAM
// [--class CLASS]` writes it: on a class that drains a queue of its own
// (scaling.queue), that queue, which must be q; on any other, with
// --queue naming q. Its HPA scales it on q's depth.
func QueueWorker(bp *v1alpha1.Blueprint, q Queue) (*scaffold.Scaffold, error) {
	o := scaffold.Options{Kind: Batch, Name: q.Worker(), Team: q.Team, Class: q.Class}
	s, err := scaffold.New(bp, o)
	if err != nil {
		return nil, err
	}
	if c := s.Class.Scaling; c != nil && c.Queue != nil {
		if own := c.Queue.QueueName + c.Queue.Topic; own != q.Name {
			return nil, problem.Errorf("name the class's queue, or give the worker a class without one", "class %s drains its own queue %s, not %s", s.Class.Name, own, q.Name)
		}
		return s, nil
	}
	o.Queue = "amqp://rehearsal/" + q.Name
	return scaffold.New(bp, o)
}

// requests are a pod's CPU and memory: the row's, or what `berth new`
// asks for its kind.
func requests(j Job) (cpu, memory resource.Quantity) {
	cpu, memory = scaffold.Requests(j.Kind)
	if !j.CPU.IsZero() {
		cpu = j.CPU
	}
	if !j.Memory.IsZero() {
		memory = j.Memory
	}
	return cpu, memory
}

// exceeds names each resource of want above what have holds, with what
// it holds.
func exceeds(want, have corev1.ResourceList) []string {
	var short []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q := want[name]; q.Cmp(have[name]) > 0 {
			h := have[name]
			short = append(short, amount(string(name), h))
		}
	}
	for name, q := range want {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			continue
		}
		if h := have[name]; q.Cmp(h) > 0 {
			short = append(short, amount("gpus", h))
		}
	}
	return short
}

// podField is the column most likely at fault when a pod fits nowhere:
// GPUs when the row asks for any, else its CPU.
func podField(j Job) string {
	if j.GPUs > 0 {
		return "gpus"
	}
	return "cpu"
}

func podString(j Job, cpu, memory resource.Quantity) string {
	s := amount("cpu", cpu) + ", " + amount("memory", memory)
	if j.GPUs > 0 {
		s += ", " + amount("gpus", *resource.NewQuantity(j.GPUs, resource.DecimalSI))
	}
	return s
}

// amount writes a quantity of the column's resource: "cpu 4", "memory
// 16Gi", "1 GPU", "2 GPUs".
func amount(column string, q resource.Quantity) string {
	switch {
	case column != "gpus":
		return column + " " + q.String()
	case q.Value() == 1:
		return "1 GPU"
	}
	return q.String() + " GPUs"
}

func findTeam(bp *v1alpha1.Blueprint, name string) *v1alpha1.Team {
	for i := range bp.Spec.Teams {
		if bp.Spec.Teams[i].Name == name {
			return &bp.Spec.Teams[i]
		}
	}
	return nil
}

// namespace is where `berth new` puts a team's workloads: its first
// namespace.
func namespace(t *v1alpha1.Team) string {
	if len(t.Namespaces) > 0 {
		return t.Namespaces[0]
	}
	return t.Name
}

func teamNames(bp *v1alpha1.Blueprint) string {
	var names []string
	for _, t := range bp.Spec.Teams {
		names = append(names, t.Name)
	}
	return orNone(names)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
