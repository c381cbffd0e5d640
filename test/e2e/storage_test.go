package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/storage"
)

// Storage classes a later apply adds to the running cluster, applied one
// after another while its pods churn: the cluster stays up (this process
// is the cluster: a crash ends the test binary), each new driver runs in
// a process of its own, and the last class's driver makes a claim's
// volume. The provisioner library writes client-go's global scheme each
// time a driver's controller is made, and every watch of the control
// plane decodes through that scheme, so a driver made in this process
// while it watches would take the whole cluster down ("fatal error:
// concurrent map read and map write"). The drivers' processes stay until
// the suite's cluster stops, as a late driver's does on any cluster.
func TestStorageClassesAddedUnderLoad(t *testing.T) {
	ns := namespace(t)
	stop := churn(t, ns)
	defer stop()

	const applies, perApply = 6, 3
	b, _, err := blueprint.Load("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	t.Cleanup(func() {
		ctx := context.Background()
		for _, n := range names {
			client.StorageV1().StorageClasses().Delete(ctx, n, metav1.DeleteOptions{})
			client.StorageV1().CSIDrivers().Delete(ctx, storage.Driver(n), metav1.DeleteOptions{})
		}
	})
	for i := range applies {
		for j := range perApply {
			name := fmt.Sprintf("late-%d-%d", i, j)
			names = append(names, name)
			b.Spec.Storage.Classes = append(b.Spec.Storage.Classes, v1alpha1.StorageClass{
				Name: name, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Zonal: ptr.To(false),
			})
		}
		began := time.Now()
		if err := applyBlueprint(context.Background(), b, apply.Options{}); err != nil {
			t.Fatalf("applying %d more storage classes: %v", perApply, err)
		}
		t.Logf("applied %d storage classes in %s", len(names), time.Since(began).Round(time.Millisecond))
	}
	stop()
	if runtime.GOOS == "linux" {
		// Each in a process of its own, this binary started again: none
		// is made in this one.
		eventually(t, time.Minute, "a process of its own for each driver added", func() (bool, error) {
			running, err := driverProcesses()
			for _, n := range names {
				if _, ok := running[storage.Driver(n)]; !ok {
					return false, err
				}
			}
			return true, err
		})
	}

	last := names[len(names)-1]
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &last,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "claim "+ns+"/data of class "+last+" bound to a volume of driver "+storage.Driver(last), func() (bool, error) {
		c, err := client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
		if err != nil || c.Status.Phase != corev1.ClaimBound {
			return false, err
		}
		pv, err := client.CoreV1().PersistentVolumes().Get(context.Background(), c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != storage.Driver(last) {
			t.Fatalf("volume %s of class %s: %+v; want one of driver %s", pv.Name, last, pv.Spec.PersistentVolumeSource, storage.Driver(last))
		}
		return true, nil
	})
}

// driverProcesses are the storage drivers this process runs in child
// processes, by driver: what `ps` shows of them.
func driverProcesses() (map[string]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// PID (COMMAND) STATE PPID ...; the command may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if last := args[len(args)-1]; strings.HasSuffix(last, storage.DriverSuffix) {
			out[last] = pid
		}
	}
	return out, nil
}

// churn keeps the cluster's watchers decoding pods until the returned
// stop: a Deployment in ns scaled between 5 and 40 pods, and its pods'
// annotations rewritten as fast as two clients go.
func churn(t *testing.T, ns string) (stop func()) {
	t.Helper()
	createDeployment(t, objtest.MakeDeployment(ns, "churn", 5).Obj())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			replicas := 40
			if i%2 == 1 {
				replicas = 5
			}
			patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
			client.AppsV1().Deployments(ns).Patch(ctx, "churn", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=churn"})
				if err != nil {
					continue
				}
				for _, p := range pods.Items {
					patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.berth.io/churn":"%d-%d"}}}`, w, i)
					client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				}
			}
		})
	}
	return sync.OnceFunc(func() { cancel(); wg.Wait() })
}
