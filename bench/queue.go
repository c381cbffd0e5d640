package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/internal/autoscaler/castatus"
)

// benchQueue times the retail example's scale-to-zero on a queue: a
// batch-inference worker from `berth new` (an HPA with minReplicas 0 on
// the queue's depth), its GPU pool at zero. Each run sets the depth to 20
// and times until the first and both workers Run on new GPU nodes, then
// empties the queue and waits for no pod and no node. The HPA syncs every
// 15 s (kube-controller-manager's default); scan and provisioning are the
// autoscaler's. The class's 10-minute scale-down window is shortened to
// 5 s so that runs follow each other: it delays the way down, not the
// time measured.
func benchQueue(berth string, runs int, scan, provisioning time.Duration) error {
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.home)
	const name, ns, worker, queue = "queue", "team-b", "embed", "batch-inference"
	if _, _, err := e.run("up", "--detach", "--name", name,
		"--autoscaler", fmt.Sprintf("scanInterval=%s,scaleDownUnneededTime=2s,scaleDownDelayAfterAdd=0s", scan),
		"--provisioning-time", "gpu="+provisioning.String()); err != nil {
		return err
	}
	defer e.run("down", "--name", name, "--purge")
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.home, "clusters", name, "kubeconfig"))
	if err != nil {
		return err
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	dir, err := os.MkdirTemp(e.home, "scaffold")
	if err != nil {
		return err
	}
	if _, _, err := e.run("new", "batch", worker, "--team", ns, "--class", queue, "--gpus", "1", "-o", dir); err != nil {
		return err
	}
	if err := createAll(ctx, dynamic.NewForConfigOrDie(cfg), filepath.Join(dir, worker+"-batch.yaml")); err != nil {
		return err
	}
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, worker, types.MergePatchType,
		[]byte(`{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":5}}}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	// Idle is no worker and no gpu node, none on its way either: a node
	// asked for before the worker went registers after the provisioning
	// time, and would serve the next run's first worker early.
	idle := func() error {
		return poll(5*time.Minute, "the worker at zero and pool gpu at zero nodes, none upcoming", func() bool {
			d, err := c.AppsV1().Deployments(ns).Get(ctx, worker, metav1.GetOptions{})
			return err == nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0 && gpuNodes(ctx, c) == 0 && poolTarget(ctx, c, "gpu") == 0
		})
	}
	if err := idle(); err != nil {
		return err
	}
	var first, both []float64
	for i := range runs {
		if _, _, err := e.run("load", "queue", queue, "--depth", "20"); err != nil {
			return err
		}
		start := time.Now()
		var f time.Duration
		err := poll(5*time.Minute, "2 Running workers", func() bool {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + worker})
			if err != nil {
				return false
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if running > 0 && f == 0 {
				f = time.Since(start)
			}
			return running == 2
		})
		if err != nil {
			return err
		}
		b := time.Since(start)
		first, both = append(first, f.Seconds()), append(both, b.Seconds())
		fmt.Printf("  run %d: first worker Running %.1fs, both %.1fs\n", i+1, f.Seconds(), b.Seconds())
		if _, _, err := e.run("load", "queue", queue, "--depth", "0"); err != nil {
			return err
		}
		if err := idle(); err != nil {
			return err
		}
	}
	fmt.Printf("\nberth queue, retail blueprint, class batch-inference (HPA 0..2 on rabbitmq_queue_messages_ready, 10 per pod),\n"+
		"depth 0 -> 20; HPA sync 15s, scanInterval %s, gpu provisioning time %s, %d runs\nmachine: %s\n\n", scan, provisioning, runs, machine())
	fmt.Printf("%-44s %8s %8s %8s\n", "from `berth load queue --depth 20`", "min", "median", "max")
	for _, row := range []struct {
		name string
		xs   []float64
	}{{"first worker Running (its GPU node new)", first}, {"both workers Running (pool at its max, 2)", both}} {
		s := summarize(row.xs)
		fmt.Printf("%-44s %7.1fs %7.1fs %7.1fs\n", row.name, s.min, s.median, s.max)
	}
	return nil
}

// createAll creates every object of a manifest file.
func createAll(ctx context.Context, dyn dynamic.Interface, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	resources := map[string]schema.GroupVersionResource{
		"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
		"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		gvr, ok := resources[u.GetKind()]
		if !ok {
			return fmt.Errorf("%s: a %s, which this benchmark does not create", file, u.GetKind())
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// poll checks cond every 100 ms until it holds or timeout passes.
func poll(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// poolTarget is the autoscaler's target size for the pool (nodes Ready
// and on their way), -1 when its status cannot be read.
func poolTarget(ctx context.Context, c kubernetes.Interface, pool string) int {
	cm, err := c.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(ctx, castatus.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	_, act, err := castatus.Read(cm)
	if err != nil || act == nil {
		return -1
	}
	for _, p := range act.Pools {
		if p.Name == pool {
			return p.Target
		}
	}
	return -1
}
