package export

import (
	"fmt"
	"strings"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// machine is the instance type a pool gets on a cloud.
type machine struct {
	Type string
	// Known is the catalog's row for Type; nil for a type the blueprint
	// names that the catalog does not list.
	Known *instanceType
	// Substituted is set when the cloud sells no machine with the
	// blueprint's GPU model and Type has another (see substitutes).
	Substituted bool
	// Notes explain how Type differs from the blueprint's machine; the
	// targets print them next to the pool.
	Notes []string
}

var cloudNouns = map[cloud]string{
	azure: "Azure VM size",
	aws:   "EC2 instance type",
	gcp:   "Compute Engine machine type",
}

// an puts the indefinite article before a cloud noun.
func an(noun string) string {
	if strings.ContainsRune("AEIOU", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// resolveMachine picks pool i's instance type on c: the one named in
// machine.instanceTypes, else the catalog's smallest fit.
func resolveMachine(i int, p *v1alpha1.Pool, c cloud) (machine, *problem.Problem) {
	field := fmt.Sprintf("spec.pools[%d].machine.instanceTypes.%s", i, c)
	noun := cloudNouns[c]
	gpus := int32(0)
	if p.Machine.GPU != nil {
		gpus = p.Machine.GPU.Count
	}
	if name := explicitType(p, c); name != "" {
		m := machine{Type: name}
		if t, ok := lookupType(c, name, gpus); ok {
			m.Known = &t
			m.Notes = shapeNotes(t, p, true)
		} else {
			m.Notes = []string{fmt.Sprintf("berth's catalog does not list %s %s, so it cannot check that it has the blueprint's %s.", noun, name, shape(p))}
		}
		return m, nil
	}

	var want gpuModel
	if g := p.Machine.GPU; g != nil {
		want = parseGPUProduct(g.Product)
		if want.Family == "" {
			prob := poolProblem(p.Name, field,
				fmt.Sprintf("berth does not recognise GPU product %q, so its catalog cannot choose %s", g.Product, an(noun)),
				fmt.Sprintf("set %s to %s with %s", field, an(noun), shape(p)))
			return machine{}, &prob
		}
	}
	t, ok := smallestFit(c, p, gpus, want)
	sub, hasSub := substitutes[c][want.Family]
	if !ok && gpus > 0 && hasSub {
		if t, ok = smallestFit(c, p, gpus, sub.model); ok {
			m := machine{Type: t.Name, Known: &t, Substituted: true}
			m.Notes = append([]string{fmt.Sprintf("%s, so this pool gets %s, the smallest with at least the machine's CPU and memory and %dx %s instead; its nodes carry no %s label. To choose another %s, set %s.", sub.why, t.Name, t.GPUs, t.GPU, v1alpha1.LabelGPUProduct, noun, field)}, shapeNotes(t, p, false)...)
			return m, nil
		}
	}
	if !ok {
		prob := poolProblem(p.Name, field,
			fmt.Sprintf("no %s in berth's catalog has %s", noun, shape(p)),
			fmt.Sprintf("set %s to %s with at least that shape, or give the machine a shape the catalog lists (see docs/reference/instance-types.md)", field, an(noun)))
		return machine{}, &prob
	}
	return machine{Type: t.Name, Known: &t, Notes: shapeNotes(t, p, false)}, nil
}

func explicitType(p *v1alpha1.Pool, c cloud) string {
	it := p.Machine.InstanceTypes
	if it == nil {
		return ""
	}
	switch c {
	case azure:
		return it.AKS
	case aws:
		return it.EKS
	case gcp:
		return it.GKE
	}
	return ""
}

// smallestFit is the catalog's smallest type on c with exactly gpus GPUs
// of model want that has at least the pool's CPU and memory: fewest vCPUs
// first, then least memory, then catalog order.
func smallestFit(c cloud, p *v1alpha1.Pool, gpus int32, want gpuModel) (instanceType, bool) {
	var best instanceType
	found := false
	for _, t := range catalog[c] {
		if t.GPUs != gpus || (gpus > 0 && !want.matches(t.GPU)) {
			continue
		}
		if !fits(t, p) {
			continue
		}
		if !found || t.CPU < best.CPU || (t.CPU == best.CPU && t.Memory < best.Memory) {
			best, found = t, true
		}
	}
	return best, found
}

func fits(t instanceType, p *v1alpha1.Pool) bool {
	return t.CPU*1000 >= p.Machine.CPU.MilliValue() && t.Memory<<30 >= p.Machine.Memory.Value()
}

// shapeNotes say how t differs from the pool's machine; nothing when it
// is the same shape.
func shapeNotes(t instanceType, p *v1alpha1.Pool, explicit bool) []string {
	cpuSame := t.CPU*1000 == p.Machine.CPU.MilliValue()
	memSame := t.Memory<<30 == p.Machine.Memory.Value()
	var notes []string
	if !cpuSame || !memSame {
		switch {
		case fits(t, p):
			notes = append(notes, fmt.Sprintf("%s has %d vCPU and %d GiB, more than the blueprint's machine (%s CPU, %s): nodes here are bigger than in the local rehearsal.", t.Name, t.CPU, t.Memory, cpuString(p), p.Machine.Memory.String()))
		default:
			notes = append(notes, fmt.Sprintf("%s has %d vCPU and %d GiB, less than the blueprint's machine (%s CPU, %s): pods sized for the blueprint may not fit.", t.Name, t.CPU, t.Memory, cpuString(p), p.Machine.Memory.String()))
		}
	}
	if explicit {
		var want int32
		if p.Machine.GPU != nil {
			want = p.Machine.GPU.Count
		}
		if t.GPUs != want {
			notes = append(notes, fmt.Sprintf("%s has %d GPUs; the blueprint's machine has %d.", t.Name, t.GPUs, want))
		} else if want > 0 && !parseGPUProduct(p.Machine.GPU.Product).matches(t.GPU) {
			notes = append(notes, fmt.Sprintf("%s has %s GPUs; the blueprint's machine has %s.", t.Name, t.GPU, p.Machine.GPU.Product))
		}
	}
	return notes
}

// cpuString writes whole cores as a plain number ("1000", not "1k").
func cpuString(p *v1alpha1.Pool) string {
	if m := p.Machine.CPU.MilliValue(); m%1000 == 0 {
		return fmt.Sprint(m / 1000)
	}
	return p.Machine.CPU.String()
}

// shape describes a pool's machine: "24 CPU, 96Gi memory and 1x NVIDIA-L4".
func shape(p *v1alpha1.Pool) string {
	parts := []string{cpuString(p) + " CPU", p.Machine.Memory.String() + " memory"}
	if g := p.Machine.GPU; g != nil {
		parts = append(parts, fmt.Sprintf("%dx %s", g.Count, g.Product))
	}
	return andList(parts)
}
