package simulate

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// TryRemove asks cluster-autoscaler's scale-down question: with node
// gone, would the scheduler find a place for each of pods (the pods on
// it that must move) among the other nodes? When every pod fits, the
// node stays out of the simulation and the pods stay where they went,
// so that the next node tried sees them there, as cluster-autoscaler
// removes nodes one after the other in one pass. When one does not, the
// simulation is left as it was and stuck holds the pods that found no
// place.
func (s *Simulator) TryRemove(ctx context.Context, node string, pods []*corev1.Pod) (moved []Placement, stuck []*corev1.Pod, err error) {
	if _, ok := s.snap.infos[node]; !ok {
		return nil, nil, fmt.Errorf("node %s is not in the simulation", node)
	}
	s.snap.fork()
	s.snap.removeNode(node)
	// The pods are placed as the scheduler would place their
	// replacements: unbound (a pod bound to the node would fail the
	// NodeName filter everywhere else).
	unbound := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		c := *p
		c.Spec.NodeName = ""
		unbound[i] = &c
	}
	moved, stuck, err = s.Place(ctx, unbound)
	if err != nil || len(stuck) > 0 {
		s.snap.revert()
		return nil, stuck, err
	}
	s.snap.commit()
	return moved, nil, nil
}

// removeNode takes a node and its pods out of the snapshot.
func (s *snapshot) removeNode(name string) {
	ni := s.infos[name]
	at := slices.Index(s.list, fwk.NodeInfo(ni))
	delete(s.infos, name)
	s.list = slices.Delete(s.list, at, at+1)
	var claims []string
	for _, p := range ni.GetPods() {
		claims = append(claims, claimKeys(p.GetPod())...)
	}
	for _, k := range claims {
		s.pvcs[k]--
	}
	s.changed()
	if s.forked {
		s.undo = append(s.undo, func() {
			s.infos[name] = ni
			s.list = slices.Insert(s.list, at, fwk.NodeInfo(ni))
			for _, k := range claims {
				s.pvcs[k]++
			}
		})
	}
}

// commit ends a fork, keeping its changes.
func (s *snapshot) commit() {
	s.undo = s.undo[:0]
	s.forked = false
	s.changed()
}
