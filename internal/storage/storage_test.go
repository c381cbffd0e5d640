package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	storageutil "k8s.io/kubernetes/pkg/apis/storage/util"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

func load(t *testing.T, storage string) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("b.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: shop}
spec:
  zones: [zone-1, zone-2]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 8, memory: 32Gi}, count: 1}
`+storage))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// A zonal class binds when its first pod is scheduled, a shared one at
// once; the default class is marked so; each class has a driver that
// attaches nothing.
func TestObjects(t *testing.T) {
	bp := load(t, `  storage:
    classes:
    - {name: fast, default: true, provisioningTime: 5s, minSize: 10Gi, maxSize: 1Ti}
    - {name: files, accessModes: [ReadWriteMany], reclaimPolicy: Retain}
`)
	classes, drivers := Objects(bp)
	if len(classes) != 2 || len(drivers) != 2 {
		t.Fatalf("%d classes, %d drivers; want 2 of each", len(classes), len(drivers))
	}
	fast, files := classes[0].(*storagev1.StorageClass), classes[1].(*storagev1.StorageClass)
	if fast.Provisioner != "fast.storage.berth.io" || *fast.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		fast.Annotations[storageutil.IsDefaultStorageClassAnnotation] != "true" || fast.Parameters[paramMinSize] != "10Gi" || fast.Parameters[paramProvisioningTime] != "5s" {
		t.Errorf("class fast: %+v", fast)
	}
	if *files.VolumeBindingMode != storagev1.VolumeBindingImmediate || *files.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		files.Parameters[paramAccessModes] != "ReadWriteMany" || files.Annotations[storageutil.IsDefaultStorageClassAnnotation] != "" {
		t.Errorf("class files: %+v", files)
	}
	if d := drivers[0].(*storagev1.CSIDriver); d.Name != "fast.storage.berth.io" || *d.Spec.AttachRequired {
		t.Errorf("driver %+v; want fast.storage.berth.io, attaching nothing", d)
	}
	owned, err := Owned(bp)
	if err != nil || len(owned) != 2 || len(owned[1].Objects) != 2 || owned[1].Objects[0].GetKind() != "StorageClass" {
		t.Errorf("Owned: %+v, %v", owned, err)
	}
}

// A volume is the claim's size raised to the class's least, in the zone
// of the node chosen; a claim the class cannot serve is refused with the
// reason and the fix, for good (ProvisioningFinished).
func TestProvision(t *testing.T) {
	bp := load(t, `  storage:
    classes:
    - {name: fast, default: true, minSize: 10Gi, maxSize: 100Gi}
`)
	classes, _ := Objects(bp)
	class := classes[0].(*storagev1.StorageClass)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-2"}}}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	nodes.Add(node)
	// The cluster's cache in its process; the API server in a driver's
	// process of its own.
	for source, find := range map[string]func(context.Context, string) (*corev1.Node, error){
		"cache": nodesIn(nodes),
		"API":   nodesFromAPI(fake.NewClientset(node)),
	} {
		t.Run(source, func(t *testing.T) { provision(t, &Provisioner{driver: Driver("fast"), node: find}, class) })
	}
}

func provision(t *testing.T, p *Provisioner, class *storagev1.StorageClass) {
	claim := func(size string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}
	}
	pv, state, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: class, PVName: "pvc-1", PVC: claim("1Gi", corev1.ReadWriteOnce), SelectedNodeName: "cpu-1"})
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("Provision: %v, %v", state, err)
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	if size.String() != "10Gi" || pv.Labels[corev1.LabelTopologyZone] != "zone-2" || pv.Spec.CSI.Driver != "fast.storage.berth.io" ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "zone-2" {
		t.Errorf("volume %+v; want 10Gi in zone-2 from fast.storage.berth.io", pv)
	}
	for _, c := range []struct {
		claim *corev1.PersistentVolumeClaim
		node  string
		want  string
	}{
		{claim("1Gi", corev1.ReadWriteMany), "cpu-1", "offers ReadWriteOnce, not ReadWriteMany"},
		{claim("1Ti", corev1.ReadWriteOnce), "cpu-1", "at most 100Gi"},
		{claim("1Gi", corev1.ReadWriteOnce), "", "WaitForFirstConsumer"},
		{claim("1Gi", corev1.ReadWriteOnce), "gone", "node gone"},
	} {
		_, state, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: class, PVName: "pvc-2", PVC: c.claim, SelectedNodeName: c.node})
		if err == nil || !strings.Contains(err.Error(), c.want) || state != controller.ProvisioningFinished {
			t.Errorf("claim %v on node %q: %v, %v; want a final error saying %q", c.claim.Spec, c.node, state, err, c.want)
		}
	}
}

// A class's provisioning time runs on the cluster's clock without
// holding a worker: the first call starts it and is ignored (no retry,
// no warning), the clock's timer touches the claim when the time is up,
// and the call that follows makes the volume.
func TestProvisioningTimeOnTheClock(t *testing.T) {
	bp := load(t, `  storage:
    classes:
    - {name: slow, default: true, zonal: false, provisioningTime: 10m}
`)
	classes, _ := Objects(bp)
	class := classes[0].(*storagev1.StorageClass)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ckpt", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	client := fake.NewClientset(pvc)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	p := &Provisioner{driver: Driver("slow"), node: nodesIn(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), client: client, clock: clk}
	provision := func() (*corev1.PersistentVolume, error) {
		pv, state, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: class, PVName: "pvc-1", PVC: pvc})
		if state != controller.ProvisioningFinished {
			t.Fatalf("state %v; want ProvisioningFinished", state)
		}
		return pv, err
	}
	if _, err := provision(); !errors.As(err, new(*controller.IgnoredError)) || !strings.Contains(err.Error(), "takes 10m0s") {
		t.Fatalf("first call: %v; want an IgnoredError saying the class takes 10m0s", err)
	}
	clk.Step(5 * time.Minute)
	if _, err := provision(); !errors.As(err, new(*controller.IgnoredError)) {
		t.Fatalf("5 minutes in: %v; want still ignored", err)
	}
	clk.Step(5 * time.Minute)
	got, err := client.CoreV1().PersistentVolumeClaims("team-a").Get(context.Background(), "ckpt", metav1.GetOptions{})
	if err != nil || got.Annotations[AnnotationProvisioned] != "2026-11-28T12:10:00Z" {
		t.Fatalf("claim after 10 minutes: %v, %v; want it touched with %s", got.Annotations, err, AnnotationProvisioned)
	}
	if pv, err := provision(); err != nil || pv == nil {
		t.Fatalf("after 10 minutes: %v, %v; want the volume", pv, err)
	}
}

// Each node registers every class's driver once, its count the class's
// limit, and nothing for classes not berth's.
func TestDrivers(t *testing.T) {
	bp := load(t, `  storage:
    classes:
    - {name: fast, default: true, maxVolumesPerNode: 25}
    - {name: files, accessModes: [ReadWriteMany]}
`)
	classes, _ := Objects(bp)
	var scs []*storagev1.StorageClass
	for _, c := range classes {
		scs = append(scs, c.(*storagev1.StorageClass))
	}
	scs = append(scs, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "ebs.csi.aws.com"})
	got := drivers(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1"}}, scs)
	if len(got) != 2 || got[0].Name != "fast.storage.berth.io" || *got[0].Allocatable.Count != 25 ||
		got[1].Name != "files.storage.berth.io" || got[1].Allocatable != nil || got[0].NodeID != "cpu-1" {
		t.Errorf("drivers %+v; want fast's with a count of 25 and files' without one", got)
	}
}

// A driver's process of its own runs one of berth's drivers only, and
// says which name it was given.
func TestServeRefusesOtherDrivers(t *testing.T) {
	for _, d := range []string{"ebs.csi.aws.com", DriverSuffix} {
		err := Serve(context.Background(), fake.NewClientset(), d)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q is not a driver of berth's", d)) || !strings.Contains(err.Error(), "CLASS"+DriverSuffix) {
			t.Errorf("Serve(%q) = %v; want it refused by name, with the driver names berth runs", d, err)
		}
	}
}
