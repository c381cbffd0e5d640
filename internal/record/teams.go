package record

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// recorder converts one cluster's objects under one set of options.
type recorder struct {
	o Options
	// teamOf is the blueprint's team of each of its namespaces.
	teamOf   map[string]string
	nsLabels map[string]map[string]string
	// classes are the blueprint's, by name.
	classes map[string]*v1alpha1.Class
	// gpus are the resources counted as whole GPUs.
	gpus    map[corev1.ResourceName]bool
	podsOf  map[types.UID][]*corev1.Pod
	queued  map[types.UID]queued
	held    map[string]bool // NAMESPACE/NAME of each Job held
	noTeam  map[string]int  // workloads of each namespace of no team
	summary Summary
}

func newRecorder(c Cluster, o Options) *recorder {
	r := &recorder{o: o, teamOf: map[string]string{}, nsLabels: map[string]map[string]string{}, classes: map[string]*v1alpha1.Class{},
		gpus: map[corev1.ResourceName]bool{v1alpha1.ResourceNVIDIAGPU: true}, podsOf: map[types.UID][]*corev1.Pod{},
		held: map[string]bool{}, noTeam: map[string]int{}}
	if bp := o.Blueprint; bp != nil {
		for _, t := range bp.Spec.Teams {
			for _, ns := range t.Namespaces {
				r.teamOf[ns] = t.Name
			}
			if len(t.Namespaces) == 0 {
				r.teamOf[t.Name] = t.Name
			}
		}
		for i := range bp.Spec.Classes {
			r.classes[bp.Spec.Classes[i].Name] = &bp.Spec.Classes[i]
		}
		for i := range bp.Spec.Pools {
			if res := bp.Spec.Pools[i].GPUResource(); res != "" {
				r.gpus[corev1.ResourceName(res)] = true
			}
		}
	}
	for _, ns := range c.Namespaces {
		r.nsLabels[ns.Name] = ns.Labels
	}
	for i := range c.Pods {
		p := &c.Pods[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" {
			r.podsOf[ref.UID] = append(r.podsOf[ref.UID], p)
		}
	}
	for _, j := range c.Jobs {
		r.held[j.Namespace+"/"+j.Name] = true
	}
	r.queued = admissions(c.Workloads)
	return r
}

// team is the team a workload of namespace ns with labels runs for, or
// "" when it has none (counted, for unmapped).
func (r *recorder) team(ns string, labels map[string]string) string {
	var team string
	switch {
	case r.o.TeamLabel != "":
		team = labels[r.o.TeamLabel]
		if team == "" {
			team = r.nsLabels[ns][r.o.TeamLabel]
		}
	case r.o.Blueprint != nil:
		team = r.teamOf[ns]
	default:
		team = r.nsLabels[ns][v1alpha1.LabelTeam]
	}
	if team == "" || len(validation.IsDNS1123Label(team)) > 0 {
		r.noTeam[ns]++
		return ""
	}
	return team
}

// unmapped is a problem per namespace whose workloads map to no team.
func (r *recorder) unmapped() problem.List {
	var ps problem.List
	for _, ns := range slices.Sorted(maps.Keys(r.noTeam)) {
		n := r.noTeam[ns]
		what, fix := "maps to no team of the blueprint", "add it to a team's namespaces in the blueprint (spec.teams[].namespaces) and record again, or pass --team-from label=KEY where a label names the teams"
		switch {
		case r.o.TeamLabel != "":
			what = fmt.Sprintf("has no team: neither its workloads nor the namespace have a label %s that is a DNS-1123 label", r.o.TeamLabel)
			fix = fmt.Sprintf("label the namespace %s=TEAM (kubectl label namespace %s %s=TEAM) and record again", r.o.TeamLabel, ns, r.o.TeamLabel)
		case r.o.Blueprint == nil:
			what = "has no team: no blueprint was found, and the namespace has no label " + v1alpha1.LabelTeam
			fix = "pass -f BLUEPRINT, or --team-from label=KEY where a label names the teams"
		}
		ps = append(ps, warn("Namespace", "", ns, fmt.Sprintf("%s; %s in it %s left out", what, words.Count(n, "workload"), words.Pick(n, "is", "are")), fix))
	}
	return ps
}

// class is the blueprint class a workload's labels (its own, else its
// pod template's) name, or "" (reported when it names one the blueprint
// lacks).
func (r *recorder) class(kind string, m metav1.ObjectMeta, template map[string]string) string {
	c := m.Labels[v1alpha1.LabelClass]
	if c == "" {
		c = template[v1alpha1.LabelClass]
	}
	if c == "" || r.o.Blueprint == nil || r.classes[c] != nil {
		return c
	}
	r.summary.Problems = append(r.summary.Problems, warn(kind, m.Namespace, m.Name,
		fmt.Sprintf("its %s label names class %s, which the blueprint does not have: recorded with no class", v1alpha1.LabelClass, c),
		fmt.Sprintf("add class %s to the blueprint to replay it there, or leave the row to the class berth new picks", c)))
	return ""
}

// dnsLabel makes s a DNS-1123 label: lower case, '-' for what is not a
// letter or digit, and, when longer than 63, cut with a hash of the whole
// so that two long names stay apart.
func dnsLabel(s string) string {
	if len(validation.IsDNS1123Label(s)) == 0 {
		return s
	}
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > validation.DNS1123LabelMaxLength || out == "" {
		out = strings.Trim(out[:min(len(out), 52)], "-") + "-" + hash(s, 10)
		out = strings.TrimPrefix(out, "-")
	}
	return out
}
