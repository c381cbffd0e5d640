package compile

import (
	"fmt"
	"regexp"
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
	corev1.LabelHostname:         true,
	corev1.LabelTopologyZone:     true,
	v1alpha1.LabelPoolGeneration: true,
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

// poolData are the CEL variables that describe the pools, one entry per
// shape in order: their labels, zones, node-name patterns, and integer
// labels (for Gt and Lt; a pool with none has the never-matching key "").
// openPools reads them, so each pool's literal is written once and the
// selection logic once for all pools: the API server compiles every
// expression again on each server-side-apply dry run of the policy.
func poolData(shapes []poolShape) map[string]string {
	var labels, zones, hosts, ints []string
	for _, s := range shapes {
		labels = append(labels, celStringMap(s.labels))
		zones = append(zones, celList(s.zones))
		hosts = append(hosts, strconv.Quote(s.hosts))
		ints = append(ints, integers(s.labels))
	}
	list := func(items []string) string { return "[" + strings.Join(items, ", ") + "]" }
	return map[string]string{"poolLabels": list(labels), "poolZones": list(zones), "poolHosts": list(hosts), "poolInts": list(ints)}
}

// integers is a CEL map of the labels whose values are integers.
func integers(labels map[string]string) string {
	ints := map[string]int64{}
	for k, v := range labels {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			ints[k] = n
		}
	}
	if len(ints) == 0 {
		return `{"": 0}`
	}
	return celMapOf(ints, func(n int64) string { return strconv.FormatInt(n, 10) })
}

// openPools is a CEL list of booleans, one per shape in order: whether
// the selection of the pod spec leaves that pool open. It reads the
// variables poolData defines.
func openPools(shapes []poolShape) string {
	if len(shapes) == 0 {
		return "[]"
	}
	known := celList(knownKeys(shapes))
	var anyHost, idx []string
	for i, s := range shapes {
		anyHost = append(anyHost, s.hosts)
		idx = append(idx, strconv.Itoa(i))
	}
	labels, zones, ints := "variables.poolLabels[i]", "variables.poolZones[i]", "variables.poolInts[i]"
	// A node name that follows no pool's naming may be any pool's node.
	host := func(v string) string {
		return "(" + v + ".matches(variables.poolHosts[i]) || !" + v + ".matches(" + strconv.Quote(strings.Join(anyHost, "|")) + "))"
	}
	values := "(has(e.values) ? e.values : [])"
	number := "(size(" + values + ") == 1 && e.values[0].matches('^-?[0-9]+$') ? int(e.values[0]) : 0)"
	// One requirement on a label, as the scheduler's label selector
	// reads it.
	expr := "(e.key in " + known + " ? (" +
		"e.operator == 'In' ? (e.key in " + labels + " && " + labels + "[e.key] in " + values + ") : " +
		"e.operator == 'NotIn' ? !(e.key in " + labels + " && " + labels + "[e.key] in " + values + ") : " +
		"e.operator == 'Exists' ? e.key in " + labels + " : " +
		"e.operator == 'DoesNotExist' ? !(e.key in " + labels + ") : " +
		"(e.key in " + ints + " && size(" + values + ") == 1 && e.values[0].matches('^-?[0-9]+$') && " +
		"(e.operator == 'Gt' ? " + ints + "[e.key] > " + number + " : e.operator == 'Lt' && " + ints + "[e.key] < " + number + ")))" +
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
	return "[" + strings.Join(idx, ", ") + "].map(i, " + selector + " && " + affinity + ")"
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
