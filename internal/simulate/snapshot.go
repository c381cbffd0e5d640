package simulate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// snapshot is the scheduler's view of the cluster that the plugins read
// through the framework's SharedLister: a NodeInfo per node, holding the
// pods bound to it. Unlike the scheduler's own cache.Snapshot it can
// grow: the simulation binds pods and adds template nodes, and forgets
// them again on revert.
type snapshot struct {
	infos map[string]*framework.NodeInfo
	// list is infos in the order nodes were added: the order Check
	// reports them and the order first-fit tries them.
	list []fwk.NodeInfo
	// withAffinity and withAntiAffinity are the nodes holding a pod with
	// (anti-)affinity terms, rebuilt from list when stale.
	withAffinity, withAntiAffinity []fwk.NodeInfo
	stale                          bool
	// pvcs counts, per "namespace/name", the bound pods using a claim.
	pvcs map[string]int
	// generation changes with every bind, node and revert, and never
	// takes a value twice, so that a verdict computed at one generation
	// holds while it is unchanged. changes counts the changes;
	// beforeLast is the generation before the last node came.
	generation, changes, beforeLast int64
	// undo, while forked, reverts each change since Fork, last first.
	undo   []func()
	forked bool
}

var (
	_ fwk.SharedLister      = (*snapshot)(nil)
	_ fwk.NodeInfoLister    = (*snapshot)(nil)
	_ fwk.StorageInfoLister = (*snapshot)(nil)
)

func newSnapshot() *snapshot {
	return &snapshot{infos: map[string]*framework.NodeInfo{}, pvcs: map[string]int{}}
}

// addNode adds an empty node. Its name must be new.
func (s *snapshot) addNode(n *corev1.Node) error {
	if _, ok := s.infos[n.Name]; ok {
		return fmt.Errorf("node %s is already in the simulation", n.Name)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	s.infos[n.Name] = ni
	s.list = append(s.list, ni)
	// An empty node holds no pod with affinity: the lists stay fresh.
	s.beforeLast = s.generation
	s.changes++
	s.generation = s.changes
	if s.forked {
		s.undo = append(s.undo, func() {
			delete(s.infos, n.Name)
			s.list = s.list[:len(s.list)-1]
		})
	}
	return nil
}

// removeLast takes away the node added last, which must hold no pod.
// The snapshot is then as it was before that node came, generation
// included, so verdicts from before still hold.
func (s *snapshot) removeLast() {
	ni := s.list[len(s.list)-1]
	delete(s.infos, ni.Node().Name)
	s.list = s.list[:len(s.list)-1]
	if s.forked {
		s.undo = s.undo[:len(s.undo)-1]
	}
	s.generation = s.beforeLast
}

// bind puts a pod on a node, as the scheduler's cache assumes a pod it
// has just placed. The pod must have a UID: NodeInfo keys pods by it.
func (s *snapshot) bind(pod *corev1.Pod, node string) error {
	ni, ok := s.infos[node]
	if !ok {
		return fmt.Errorf("node %s is not in the simulation", node)
	}
	if pod.UID == "" {
		return fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	if pod.Spec.NodeName != node {
		p := *pod
		p.Spec.NodeName = node
		pod = &p
	}
	ni.AddPod(pod)
	if !s.stale {
		// The node joins a list when this pod is its first of the kind.
		if a := ni.GetPodsWithAffinity(); len(a) == 1 && a[0].GetPod() == pod {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if a := ni.GetPodsWithRequiredAntiAffinity(); len(a) == 1 && a[0].GetPod() == pod {
			s.withAntiAffinity = append(s.withAntiAffinity, ni)
		}
	}
	claims := claimKeys(pod)
	for _, k := range claims {
		s.pvcs[k]++
	}
	s.changes++
	s.generation = s.changes
	if s.forked {
		s.undo = append(s.undo, func() {
			// The pod was added just above, so removing it cannot fail.
			_ = ni.RemovePod(klog.Background(), pod)
			for _, k := range claims {
				s.pvcs[k]--
			}
		})
	}
	return nil
}

// fork starts recording changes so that revert can undo them. Forks do
// not nest.
func (s *snapshot) fork() {
	s.forked = true
	s.undo = s.undo[:0]
}

// revert undoes every change since fork.
func (s *snapshot) revert() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = s.undo[:0]
	s.forked = false
	s.changed()
}

func (s *snapshot) changed() {
	s.changes++
	s.generation = s.changes
	s.stale = true
}

func (s *snapshot) refresh() {
	if !s.stale {
		return
	}
	s.withAffinity = s.withAffinity[:0]
	s.withAntiAffinity = s.withAntiAffinity[:0]
	for _, ni := range s.list {
		if len(ni.GetPodsWithAffinity()) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.GetPodsWithRequiredAntiAffinity()) > 0 {
			s.withAntiAffinity = append(s.withAntiAffinity, ni)
		}
	}
	s.stale = false
}

func (s *snapshot) NodeInfos() fwk.NodeInfoLister       { return s }
func (s *snapshot) StorageInfos() fwk.StorageInfoLister { return s }

// PodGroupStates has no groups: berth simulates no gang scheduling.
func (s *snapshot) PodGroupStates() fwk.PodGroupStateLister { return noPodGroups{} }

func (s *snapshot) List() ([]fwk.NodeInfo, error) { return s.list, nil }

func (s *snapshot) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	s.refresh()
	return s.withAffinity, nil
}

func (s *snapshot) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	s.refresh()
	return s.withAntiAffinity, nil
}

func (s *snapshot) Get(name string) (fwk.NodeInfo, error) {
	if ni, ok := s.infos[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found", name)
}

func (s *snapshot) IsPVCUsedByPods(key string) bool { return s.pvcs[key] > 0 }

type noPodGroups struct{}

func (noPodGroups) Get(namespace, name string) (fwk.PodGroupState, error) {
	return nil, fmt.Errorf("pod group %s/%s not found", namespace, name)
}

func claimKeys(pod *corev1.Pod) []string {
	var keys []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		}
	}
	return keys
}
