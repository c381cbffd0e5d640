package why

import (
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
		{"waits for the pod", []corev1.PersistentVolumeClaim{claim("", "")}, true, CauseFits, nil, nil},
		{"storage not readable", []corev1.PersistentVolumeClaim{claim("gp3", "")}, false, CauseFits, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := snapshotOf(cluster())
			s.Now = now
			s.Claims = c.claims
			if c.known {
				s.StorageClasses, s.Volumes, s.StorageKnown = classes, []corev1.PersistentVolume{zoned}, true
			}
			v := Explain(s, pod)
			wantTop(t, v, c.code, c.message, c.fix)
			if c.code != CauseFits && v.Top.Layer != LayerVolumes {
				t.Errorf("verdict layer %s; want volumes", v.Top.Layer)
			}
		})
	}
}
