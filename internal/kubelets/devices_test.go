package kubelets

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/slim"
)

// gpuBlueprint has one 2-GPU node and names its device plugin.
func gpuBlueprint(t *testing.T, plugin string) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("t.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: lab}
spec:
  zones: [zone-1]
  devicePlugin: {name: `+plugin+`}
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1}
  - {name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 2, product: NVIDIA-L4}}, count: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// record writes bp's record as recorded.Write does, at a resourceVersion
// of the test's choosing: the fake clientset sets none.
func record(t *testing.T, c kubernetes.Interface, bp *v1alpha1.Blueprint, rv string) {
	t.Helper()
	raw, err := json.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: recorded.ConfigMapName(bp.Metadata.Name), Namespace: metav1.NamespaceSystem, ResourceVersion: rv,
			Labels: map[string]string{v1alpha1.LabelBlueprint: bp.Metadata.Name},
		},
		Data: map[string]string{recorded.DataKey: string(raw)},
	}
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// pluginPod is a Running pod of DaemonSet ds on node.
func pluginPod(ds, node string) *corev1.Pod {
	return objtest.MakePod(v1alpha1.DefaultDevicePluginNamespace, ds+"-"+node).Owner("DaemonSet", ds).On(node).Obj()
}

// gpus waits for the node to advertise want GPUs.
func gpus(t *testing.T, c kubernetes.Interface, node string, want int64, why string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := n.Status.Allocatable[v1alpha1.DefaultGPUResource]
		if got.Value() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: node %s advertises %s GPUs, want %d", why, node, got.String(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A node's GPUs follow the pods of the device plugin its blueprint's
// record names now, not the one the cluster started with: when the
// record names another plugin, the old plugin's pod no longer counts,
// and the new one's does.
func TestGPUsFollowTheRecordedDevicePlugin(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset()
	bp := gpuBlueprint(t, "plugin-a")
	record(t, client, bp, "1")
	node := pools.StripGPUs(pools.NextNodes(bp, &bp.Spec.Pools[1], nil, 1)[0])
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := client.CoreV1().Pods(v1alpha1.DefaultDevicePluginNamespace)
	if _, err := pods.Create(ctx, pluginPod("plugin-a", node.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	shared := slim.Informers(client, 0)
	store := recorded.NewStore(client)
	m := controller.NewManager(client, nil)
	if err := NewController(client, shared, store).Register(m); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	m.Each(func(_ string, run func(context.Context) error) {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Error(err)
			}
		})
	})
	shared.Start(ctx.Done())
	store.Start(ctx.Done())
	defer func() {
		cancel()
		wg.Wait()
		shared.Shutdown()
		store.Shutdown()
		m.Shutdown()
	}()

	gpus(t, client, node.Name, 2, "plugin-a running, as recorded")
	bp.Spec.DevicePlugin.Name = "plugin-b"
	record(t, client, bp, "2")
	gpus(t, client, node.Name, 0, "plugin-b recorded, only plugin-a running")
	if _, err := pods.Create(ctx, pluginPod("plugin-b", node.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpus(t, client, node.Name, 2, "plugin-b running")
	if err := pods.Delete(ctx, "plugin-a-"+node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "plugin-b-"+node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gpus(t, client, node.Name, 0, "no plugin running")
}
