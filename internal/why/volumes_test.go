package why

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/objtest"
)

// A pod that mounts a claim waits on the Volumes layer while the claim
// blocks it, whatever the pools (simulated without the volume plugins)
// say; a claim of a WaitForFirstConsumer class blocks nothing.
func TestVolumes(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	classes := []storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "standard.storage.berth.io", VolumeBindingMode: &wffc},
		{ObjectMeta: metav1.ObjectMeta{Name: "files"}, Provisioner: "files.storage.berth.io", VolumeBindingMode: &immediate,
			Parameters: map[string]string{"provisioningTime": "10m"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc},
	}
	claim := func(class, volume string) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ckpt", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
		if class != "" {
			c.Spec.StorageClassName = &class
		}
		return c
	}
	zoned := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-9"}},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-9"}}}}}}}}}
	pod := objtest.MakePod("team-a", "train").CPU("1").Volume(corev1.Volume{Name: "ckpt",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}}).Obj()
	for _, c := range []struct {
		name    string
		claims  []corev1.PersistentVolumeClaim
		known   bool
		code    string
		message []string
		fix     []string
	}{
		{"no claim", nil, true, CauseClaimMissing, []string{"claim ckpt, which does not exist in namespace team-a"}, []string{"create PersistentVolumeClaim ckpt"}},
		{"unknown class", []corev1.PersistentVolumeClaim{claim("gp3", "")}, true, CauseClaimClass, []string{"storage class gp3, which does not exist"}, []string{"standard, files", "spec.storage.classes"}},
		{"volume in another zone", []corev1.PersistentVolumeClaim{claim("standard", "pv-1")}, true, CauseVolumeZone, []string{"volume pv-1, which lives in zone zone-9, and no node is there"}, []string{"nodes in zone zone-9"}},
		{"provisioning", []corev1.PersistentVolumeClaim{claim("files", "")}, true, CauseClaimUnbound, []string{"claim ckpt (storage class files", "about 9m0s left"}, []string{"wait for the provisioner"}},
		{"no volume to bind", []corev1.PersistentVolumeClaim{claim("local", "")}, true, CauseClaimNoVolume, []string{"class local makes no volumes"}, []string{"create a PersistentVolume of class local"}},
		{"waits for the pod", []corev1.PersistentVolumeClaim{claim("standard", "")}, true, CauseFits, nil, nil},
		{"storage not readable", []corev1.PersistentVolumeClaim{claim("gp3", "")}, false, CauseFits, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := snapshotOf(cluster())
			s.Now = now
			s.Claims = c.claims
			if c.known {
				s.StorageClasses, s.Volumes, s.AllClaims, s.StorageKnown = classes, []corev1.PersistentVolume{zoned}, c.claims, true
			}
			v := Explain(s, pod)
			wantTop(t, v, c.code, c.message, c.fix)
			if c.code != CauseFits && v.Top.Layer != LayerVolumes {
				t.Errorf("verdict layer %s; want volumes", v.Top.Layer)
			}
		})
	}
}

// A claim being deleted, or bound to a volume that is gone, blocks the
// pod on the Volumes layer.
func TestVolumesClaimDeletedOrVolumeGone(t *testing.T) {
	pod := objtest.MakePod("team-a", "train").CPU("1").Volume(corev1.Volume{Name: "ckpt",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}}).Obj()
	deleting := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ckpt", DeletionTimestamp: &metav1.Time{Time: now}}}
	gone := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ckpt"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-9"}}
	for _, c := range []struct {
		name    string
		claim   corev1.PersistentVolumeClaim
		code    string
		message string
	}{
		{"deleting", deleting, CauseClaimDeleted, "claim ckpt, which is being deleted"},
		{"volume gone", gone, CauseVolumeGone, "bound to volume pv-9, which does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := snapshotOf(cluster())
			s.Claims, s.AllClaims, s.StorageKnown = []corev1.PersistentVolumeClaim{c.claim}, []corev1.PersistentVolumeClaim{c.claim}, true
			wantTop(t, Explain(s, pod), c.code, []string{c.message}, nil)
		})
	}
}

// Every node at its attach limit for the claim's driver: the verdict is
// the scheduler's NodeVolumeLimits, with the fix. While the pool can
// still grow, a new node (with an attach limit of its own) is the way,
// and the verdict quotes the limit as what keeps the pod off the nodes.
func TestVolumesAttachLimit(t *testing.T) {
	const driver = "standard.storage.berth.io"
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: driver, VolumeBindingMode: &wffc}
	claim := func(name string) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class.Name, VolumeName: "pv-" + name}}
	}
	volume := func(name string) corev1.PersistentVolume {
		return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
			Spec: corev1.PersistentVolumeSpec{StorageClassName: class.Name, PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}}}}
	}
	mount := func(p *objtest.PodWrapper, claim string) *objtest.PodWrapper {
		return p.Volume(corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	one := int32(1)
	limited := func(node string) storagev1.CSINode {
		return storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: driver, NodeID: node, Allocatable: &storagev1.VolumeNodeResources{Count: &one}}}}}
	}
	for _, c := range []struct {
		name  string
		nodes []string
		code  string
	}{
		{"pool can grow", []string{"cpu-0"}, CausePoolCanGrow},
		{"pool at its count", []string{"cpu-0", "cpu-1"}, CauseAttachLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ns []*objtest.NodeWrapper
			var pods []corev1.Pod
			s := &Snapshot{Now: now}
			for _, n := range c.nodes {
				ns = append(ns, poolNode(n, "cpu"))
				pods = append(pods, *mount(objtest.MakePod("team-a", "holder-"+n).CPU("1").On(n), "held-"+n).Obj())
				s.CSINodes = append(s.CSINodes, limited(n))
				s.Volumes = append(s.Volumes, volume("held-"+n))
				s.Claims = append(s.Claims, claim("held-"+n))
			}
			s.Nodes, s.Pods = nodes(ns...), pods
			s.Blueprint = testBlueprint(t, "")
			s.StorageClasses = []storagev1.StorageClass{class}
			s.Volumes = append(s.Volumes, volume("ckpt"))
			s.Claims = append(s.Claims, claim("ckpt"))
			s.AllClaims, s.StorageKnown = s.Claims, true

			v := Explain(s, mount(objtest.MakePod("team-a", "train").CPU("1"), "ckpt").Obj())
			wantTop(t, v, c.code, []string{"NodeVolumeLimits", "exceed max volume count"}, nil)
			if c.code == CauseAttachLimit && !strings.Contains(v.Top.Fix, "maxVolumesPerNode") {
				t.Errorf("fix lacks maxVolumesPerNode: %s", v.Top.Fix)
			}
		})
	}
}
