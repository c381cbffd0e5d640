package simulate

import (
	"context"
	"maps"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Clone is an independent copy of the simulation as it stands (nodes,
// pods bound, claims in use), so that questions can be asked of it
// concurrently: a Simulator is not safe for concurrent use, its clones
// are safe to use alongside it. The autoscaler packs each pool on a
// clone of its own.
func (s *Simulator) Clone(ctx context.Context) (*Simulator, error) {
	snap := newSnapshot()
	for _, ni := range s.snap.list {
		c := ni.(*framework.NodeInfo).SnapshotConcrete()
		snap.infos[c.Node().Name] = c
		snap.list = append(snap.list, c)
	}
	snap.pvcs = maps.Clone(s.snap.pvcs)
	snap.generation, snap.changes = s.snap.generation, s.snap.changes
	snap.stale = true
	fw, err := newFramework(ctx, snap, s.lookups)
	if err != nil {
		return nil, err
	}
	return &Simulator{fw: fw, snap: snap, lookups: s.lookups, noCarry: s.noCarry}, nil
}
