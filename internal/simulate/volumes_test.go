package simulate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/internal/objtest"
)

const testDriver = "standard.storage.berth.io"

// boundClaim is claim name in team-a bound to a CSI volume of
// testDriver in zone.
func boundClaim(name, zone string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:       "standard",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "team-a", Name: name},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard"), VolumeName: pv.Name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	return pvc, pv
}

func mounting(p *corev1.Pod, claim string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return p
}

func csiNode(node string, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: testDriver, NodeID: node, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)}}}},
	}
}

// With the cluster's storage, the scheduler's VolumeZone and
// NodeVolumeLimits plugins decide as on the cluster: a pod follows its
// volume's zone, and a node whose CSINode says its driver can attach no
// more takes no pod with another volume of it. A node without a CSINode
// (one the autoscaler would make) has no limit.
func TestVolumePluginsWithStorage(t *testing.T) {
	ckpt, ckptPV := boundClaim("ckpt", "zone-2")
	used, usedPV := boundClaim("used", "zone-1")
	fresh, freshPV := boundClaim("fresh", "zone-1")
	nodes := []*corev1.Node{
		objtest.MakeNode("a-0").Zone("zone-1").Obj(),
		objtest.MakeNode("b-0").Zone("zone-2").Obj(),
		objtest.MakeNode("a-1").Zone("zone-1").Obj(),
	}
	storage := &Storage{
		Volumes:  []*corev1.PersistentVolume{ckptPV, usedPV, freshPV},
		CSINodes: []*storagev1.CSINode{csiNode("a-0", 1), csiNode("b-0", 1)},
	}
	cluster := Cluster{
		Nodes:   nodes,
		Pods:    []*corev1.Pod{mounting(objtest.MakePod("team-a", "busy").On("a-0").Obj(), "used")},
		Claims:  []*corev1.PersistentVolumeClaim{ckpt, used, fresh},
		Storage: storage,
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{{
		name: "volume in zone-2",
		pod:  mounting(objtest.MakePod("team-a", "train").Obj(), "ckpt"),
		want: []string{
			// a-0 is at its limit too; the scheduler's first
			// rejection is the one a verdict quotes.
			"a-0: NodeVolumeLimits: node(s) exceed max volume count",
			"b-0: fits",
			"a-1: VolumeZone: node(s) had no available volume zone",
		},
	}, {
		name: "attach limit",
		pod:  mounting(objtest.MakePod("team-a", "second").Obj(), "fresh"),
		want: []string{
			"a-0: NodeVolumeLimits: node(s) exceed max volume count",
			"b-0: VolumeZone: node(s) had no available volume zone",
			"a-1: fits",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := New(ctx, cluster)
			if err != nil {
				t.Fatal(err)
			}
			for _, sim := range []*Simulator{s, mustClone(t, s)} {
				res, err := sim.Check(ctx, tc.pod)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, verdicts(res)); diff != "" {
					t.Errorf("verdicts (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// Without the cluster's storage the two plugins stay out, rather than
// answer from empty listers.
func TestVolumePluginsWithoutStorage(t *testing.T) {
	ckpt, _ := boundClaim("ckpt", "zone-2")
	s, err := New(context.Background(), Cluster{
		Nodes:  []*corev1.Node{objtest.MakeNode("a-0").Zone("zone-1").Obj()},
		Claims: []*corev1.PersistentVolumeClaim{ckpt},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Check(context.Background(), mounting(objtest.MakePod("team-a", "train").Obj(), "ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a-0: fits"}, verdicts(res)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}

func mustClone(t *testing.T, s *Simulator) *Simulator {
	t.Helper()
	c, err := s.Clone(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
