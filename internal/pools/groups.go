package pools

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// NextNodes are the n nodes a pool adds next, given its live nodes: of
// the pool's newest generation, at the lowest free indexes, so that a
// pool that shrank from the middle fills its gaps first. Zones follow
// the index, round-robin, as for every pool node.
func NextNodes(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, live []*corev1.Node, n int) []*corev1.Node {
	return nextNodes(bp, p, generation(live), live, n)
}

func nextNodes(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, gen int, live []*corev1.Node, n int) []*corev1.Node {
	used := map[int]bool{}
	for _, node := range live {
		if nodeGeneration(node) == gen {
			used[nodeIndex(node)] = true
		}
	}
	var out []*corev1.Node
	for i := 0; len(out) < n; i++ {
		if !used[i] {
			out = append(out, newNode(bp, p, gen, i))
		}
	}
	return out
}

// NodesOf returns the nodes of pool among nodes, by name.
func NodesOf(pool string, nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if n.Labels[v1alpha1.LabelPool] == pool {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
