package compile

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// Pool reach: which pools a pod's node selector and required node affinity
// leave open, decided the way the scheduler's NodeAffinity filter decides
// it (every nodeSelector entry; any one required term, each of whose
// expressions and fields must hold) over the labels the pools' nodes
// carry. It recognises every spelling of a selection: In, NotIn, Exists,
// DoesNotExist, Gt and Lt on any label berth puts on the nodes,
// kubernetes.io/hostname and matchFields on the node name, zones, and any
// label that only one pool's nodes carry.
//
// It errs towards "open": a label berth does not set, or a node name that
// follows no pool's naming, may match any pool (on a real cluster the
// nodes carry more labels than the blueprint knows). So a pool counts as
// closed only when the selection provably excludes it.

// poolShape is what the selection sees of one pool's nodes.
type poolShape struct {
	name   string
	labels map[string]string // the same on every node of the pool
	zones  []string
	// hosts matches the names of the pool's nodes: berth's local
	// POOL-I and POOL-gG-I, and AKS's aks-POOL-ID-vmssN.
	hosts string
}

// Labels every node has one of its own value for, or that change with a
// replacement; the rest are a property of the pool.
var perNodeLabels = map[string]bool{
	corev1.LabelHostname:     true,
	corev1.LabelTopologyZone: true,
	pools.LabelGeneration:    true,
}

func poolShapes(bp *v1alpha1.Blueprint) []poolShape {
	var out []poolShape
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if len(p.Zones) == 0 {
			continue // not defaulted: no node could be made
		}
		labels := map[string]string{}
		for k, v := range pools.NewNode(bp, p, 0).Labels {
			if !perNodeLabels[k] {
				labels[k] = v
			}
		}
		q := regexp.QuoteMeta(p.Name)
		out = append(out, poolShape{
			name:   p.Name,
			labels: labels,
			zones:  p.Zones,
			hosts:  "^(" + q + "-(g[0-9]+-)?[0-9]+|aks-" + q + "-[0-9]+-vmss[0-9a-z]+)$",
		})
	}
	return out
}

// knownKeys are the label keys whose value on every pool berth knows: a
// key a pool lacks is absent from its nodes.
func knownKeys(shapes []poolShape) []string {
	set := map[string]bool{}
	for _, s := range shapes {
		for k := range s.labels {
			set[k] = true
		}
	}
	return sortedSet(set)
}

// poolLabels and poolZones are CEL lists, one entry per shape: its
// labels, and its zones. openPools reads them as variables, so that each
// pool's literal is written once.
func poolLabels(shapes []poolShape) string {
	var each []string
	for _, s := range shapes {
		each = append(each, celStringMap(s.labels))
	}
	return "[" + strings.Join(each, ", ") + "]"
}

func poolZones(shapes []poolShape) string {
	var each []string
	for _, s := range shapes {
		each = append(each, celList(s.zones))
	}
	return "[" + strings.Join(each, ", ") + "]"
}

// openPools is a CEL list of booleans, one per shape in order: whether
// the selection of the pod spec at spec leaves that pool open. It reads
// variables.poolLabels and variables.poolZones.
func openPools(shapes []poolShape) string {
	known := celList(knownKeys(shapes))
	var anyHost []string
	for _, s := range shapes {
		anyHost = append(anyHost, s.hosts)
	}
	// A node name that follows no pool's naming may be any pool's node.
	foreign := "!%s.matches(" + strconv.Quote(strings.Join(anyHost, "|")) + ")"
	var each []string
	for i, s := range shapes {
		labels := fmt.Sprintf("variables.poolLabels[%d]", i)
		zones := fmt.Sprintf("variables.poolZones[%d]", i)
		host := func(v string) string {
			return "(" + v + ".matches(" + strconv.Quote(s.hosts) + ") || " + fmt.Sprintf(foreign, v) + ")"
		}
		values := "(has(e.values) ? e.values : [])"
		// One requirement on a label, as the scheduler's label selector
		// reads it.
		expr := "(e.key in " + known + " ? (" +
			"e.operator == 'In' ? (e.key in " + labels + " && " + labels + "[e.key] in " + values + ") : " +
			"e.operator == 'NotIn' ? !(e.key in " + labels + " && " + labels + "[e.key] in " + values + ") : " +
			"e.operator == 'Exists' ? e.key in " + labels + " : " +
			"e.operator == 'DoesNotExist' ? !(e.key in " + labels + ") : " +
			numeric(s.labels) + ")" +
			" : e.key == '" + corev1.LabelTopologyZone + "' ? (" +
			"e.operator == 'In' ? " + values + ".exists(v, v in " + zones + ") : " +
			"e.operator == 'NotIn' ? " + zones + ".exists(z, !(z in " + values + ")) : " +
			"e.operator != 'DoesNotExist')" +
			" : e.key == '" + corev1.LabelHostname + "' ? (" +
			"e.operator == 'In' ? " + values + ".exists(v, " + host("v") + ") : " +
			"e.operator != 'DoesNotExist')" +
			" : true)"
		// matchFields knows one field, the node's name.
		field := "(f.key != 'metadata.name' || f.operator != 'In' || (has(f.values) && f.values.exists(v, " + host("v") + ")))"
		term := "((!has(term.matchExpressions) || term.matchExpressions.all(e, " + expr + ")) && (!has(term.matchFields) || term.matchFields.all(f, " + field + ")))"
		selector := "variables.nodeSelector.all(k, k in " + known + " ? (k in " + labels + " && " + labels + "[k] == variables.nodeSelector[k])" +
			" : k == '" + corev1.LabelTopologyZone + "' ? variables.nodeSelector[k] in " + zones +
			" : k == '" + corev1.LabelHostname + "' ? " + host("variables.nodeSelector[k]") +
			" : true)"
		affinity := "(size(variables.requiredTerms) == 0 || variables.requiredTerms.exists(term, " + term + "))"
		each = append(each, "("+selector+" && "+affinity+")")
	}
	return "[" + strings.Join(each, ", ") + "]"
}

// numeric is the CEL for Gt and Lt on a known key e: the pool's value
// must be an integer beyond the requirement's one value. It is written
// per pool with the pool's integer labels as literals.
func numeric(labels map[string]string) string {
	var ints []string
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, err := strconv.ParseInt(labels[k], 10, 64)
		if err != nil {
			continue
		}
		ints = append(ints, fmt.Sprintf("%q: %d", k, n))
	}
	if len(ints) == 0 {
		return "false"
	}
	m := "{" + strings.Join(ints, ", ") + "}"
	v := "(has(e.values) && size(e.values) == 1 && e.values[0].matches('^-?[0-9]+$') ? int(e.values[0]) : 0)"
	return "(e.key in " + m + " && has(e.values) && size(e.values) == 1 && e.values[0].matches('^-?[0-9]+$') && " +
		"(e.operator == 'Gt' ? " + m + "[e.key] > " + v + " : e.operator == 'Lt' && " + m + "[e.key] < " + v + "))"
}

// poolIndexes are the indexes in shapes of the pools keep picks.
func poolIndexes(shapes []poolShape, keep func(name string) bool) []int {
	var out []int
	for i, s := range shapes {
		if keep(s.name) {
			out = append(out, i)
		}
	}
	return out
}

// confinedTo is a CEL expression: the selection leaves some of the pools
// at in open, and none other.
func confinedTo(shapes []poolShape, in []int) string {
	if len(in) == 0 {
		return "false"
	}
	member := map[int]bool{}
	var some, none []string
	for _, i := range in {
		member[i] = true
		some = append(some, fmt.Sprintf("variables.openPools[%d]", i))
	}
	for i := range shapes {
		if !member[i] {
			none = append(none, fmt.Sprintf("!variables.openPools[%d]", i))
		}
	}
	out := "(" + strings.Join(some, " || ") + ")"
	if len(none) > 0 {
		out += " && " + strings.Join(none, " && ")
	}
	return "(" + out + ")"
}
