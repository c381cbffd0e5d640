package autoscaler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/recorded"
)

// Tune works on the autoscaler's own copy of each recorded blueprint,
// made once per change of the record: the store's blueprint, shared
// with berth's other controllers, keeps what was recorded.
func TestTuneOncePerRecordedChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	bp := &v1alpha1.Blueprint{Metadata: v1alpha1.Metadata{Name: "shop"}}
	v1alpha1.SetDefaults(bp)
	cms := client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	if _, err := cms.Create(ctx, recordAt(t, bp, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store := recorded.NewStore(client)
	store.Start(ctx.Done())
	defer func() {
		cancel()
		store.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), store.HasSynced) {
		t.Fatal("the store did not sync")
	}
	tunes := 0
	c := NewController(client, Options{Blueprints: store, Tune: func(bp *v1alpha1.Blueprint) {
		tunes++
		bp.Spec.Autoscaler.ScanInterval = &metav1.Duration{Duration: time.Second}
	}})

	first, err := c.blueprints()
	if err != nil || len(first) != 1 {
		t.Fatalf("blueprints() = %v, %v", first, err)
	}
	again, _ := c.blueprints()
	if tunes != 1 || again[0] != first[0] {
		t.Errorf("two scans of one record tuned %d time(s), want 1, and the same copy", tunes)
	}
	if got := first[0].Spec.Autoscaler.ScanInterval.Duration; got != time.Second {
		t.Errorf("tuned scanInterval %s, want 1s", got)
	}
	shared, _ := store.Blueprint("shop")
	if got := shared.Spec.Autoscaler.ScanInterval.Duration; got != v1alpha1.DefaultScanInterval {
		t.Errorf("the store's blueprint was tuned too: scanInterval %s, want %s", got, v1alpha1.DefaultScanInterval)
	}

	bp.Spec.Autoscaler.ScaleDownUnneededTime = &metav1.Duration{Duration: time.Minute}
	if _, err := cms.Update(ctx, recordAt(t, bp, "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		next, err := c.blueprints()
		if err != nil {
			t.Fatal(err)
		}
		if next[0].Spec.Autoscaler.ScaleDownUnneededTime.Duration == time.Minute {
			if tunes != 2 || next[0].Spec.Autoscaler.ScanInterval.Duration != time.Second {
				t.Errorf("after the record changed: tuned %d time(s), scanInterval %s; want 2 and 1s", tunes, next[0].Spec.Autoscaler.ScanInterval.Duration)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the autoscaler never read the changed record")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recordAt is the ConfigMap recorded.Write makes of bp, at a
// resourceVersion of the test's choosing: the fake clientset sets none.
func recordAt(t *testing.T, bp *v1alpha1.Blueprint, resourceVersion string) *corev1.ConfigMap {
	t.Helper()
	raw, err := json.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: recorded.ConfigMapName(bp.Metadata.Name), Namespace: metav1.NamespaceSystem, ResourceVersion: resourceVersion,
			Labels: map[string]string{v1alpha1.LabelBlueprint: bp.Metadata.Name},
		},
		Data: map[string]string{recorded.DataKey: string(raw)},
	}
}
