package why

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/problem"
)

// limitRangerAnnotation is where the LimitRanger admission plugin lists
// the requests and limits it set: "LimitRanger plugin set: cpu, memory
// request for container app; cpu, memory limit for container app".
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

var limitRangerPart = regexp.MustCompile(`^(.+) (request|limit) for (container|init container) (.+)$`)

// defaults are the requests and limits a LimitRange set on the pod, read
// from the LimitRanger annotation, with their values from the pod spec
// and the LimitRange that holds them.
func (c *check) defaults() []Default {
	note, ok := c.pod.Annotations[limitRangerAnnotation]
	if !ok {
		return nil
	}
	var out []Default
	for _, part := range strings.Split(strings.TrimPrefix(note, "LimitRanger plugin set: "), "; ") {
		m := limitRangerPart.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			continue
		}
		kind, init, name := m[2], m[3] == "init container", m[4]
		ctr := container(c.pod, name, init)
		for _, r := range strings.Split(m[1], ", ") {
			res := corev1.ResourceName(strings.TrimSpace(r))
			d := Default{LimitRange: c.limitRangeSetting(res, kind), Container: name, Kind: kind, Resource: string(res)}
			if init {
				d.Container = "init container " + name
			}
			if ctr != nil {
				l := ctr.Resources.Requests
				if kind == "limit" {
					l = ctr.Resources.Limits
				}
				if q, ok := l[res]; ok {
					d.Value = quantity(res, q)
				}
			}
			out = append(out, d)
		}
	}
	return out
}

func container(p *corev1.Pod, name string, init bool) *corev1.Container {
	cs := p.Spec.Containers
	if init {
		cs = p.Spec.InitContainers
	}
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// limitRangeSetting names the namespace's LimitRanges that default the
// resource's request (or limit) for containers.
func (c *check) limitRangeSetting(res corev1.ResourceName, kind string) string {
	var names []string
	for i := range c.snap.LimitRanges {
		lr := &c.snap.LimitRanges[i]
		if lr.Namespace != c.pod.Namespace {
			continue
		}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			l := item.DefaultRequest
			if kind == "limit" {
				l = item.Default
			}
			if _, ok := l[res]; ok && !contains(names, lr.Name) {
				names = append(names, lr.Name)
			}
		}
	}
	if len(names) == 0 {
		return "(a LimitRange since removed)"
	}
	return strings.Join(names, ", ")
}

// defaultedRequests are the resources whose request a LimitRange set on
// some container.
func defaultedRequests(ds []Default) map[corev1.ResourceName][]Default {
	out := map[corev1.ResourceName][]Default{}
	for _, d := range ds {
		if d.Kind == "request" {
			out[corev1.ResourceName(d.Resource)] = append(out[corev1.ResourceName(d.Resource)], d)
		}
	}
	return out
}

func (d Default) String() string {
	return fmt.Sprintf("%s %s %s on %s", d.Resource, d.Kind, d.Value, d.Container)
}

// limitRangeCause is the LimitRange layer's finding: what it set.
func limitRangeCause(ds []Default) *Cause {
	if len(ds) == 0 {
		return nil
	}
	by := map[string][]string{}
	var order []string
	for _, d := range ds {
		if _, ok := by[d.LimitRange]; !ok {
			order = append(order, d.LimitRange)
		}
		by[d.LimitRange] = append(by[d.LimitRange], d.String())
	}
	var parts []string
	for _, lr := range order {
		parts = append(parts, fmt.Sprintf("LimitRange %s set %s", lr, strings.Join(by[lr], ", ")))
	}
	return &Cause{Layer: LayerLimitRange, Code: CauseLimitRange, Problem: problem.Problem{Message: strings.Join(parts, "; ") + " (the pod did not say)"}}
}
