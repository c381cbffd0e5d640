package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/api/v1alpha1"
)

// benchAutoscale starts the retail cluster (its GPU pools at zero) with
// the default 10s scan interval and no provisioning time, and times, runs
// times, one GPU training pod from creation to a new node Ready to the
// pod Running; between runs it deletes the pod and waits for the pool to
// scale back to zero.
func benchAutoscale(berth string, runs int, scan time.Duration) error {
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.home)
	name := "autoscale"
	if _, _, err := e.run("up", "--detach", "--name", name,
		"--autoscaler", fmt.Sprintf("scanInterval=%s,scaleDownUnneededTime=2s,scaleDownDelayAfterAdd=0s", scan),
		"--provisioning-time", "0s"); err != nil {
		return err
	}
	defer e.run("down", "--name", name, "--purge")
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.home, "clusters", name, "kubeconfig"))
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var ready, running, down []float64
	pools := map[string]int{}
	for i := range runs {
		r, err := autoscaleRun(ctx, c, fmt.Sprintf("train-%d", i))
		if err != nil {
			return err
		}
		ready = append(ready, r.ready.Seconds())
		running = append(running, r.running.Seconds())
		down = append(down, r.down.Seconds())
		pools[r.pool]++
		fmt.Printf("  run %d: pool %s, node Ready %.2fs, pod Running %.2fs, back to zero %.1fs later\n", i+1, r.pool, r.ready.Seconds(), r.running.Seconds(), r.down.Seconds())
	}
	fmt.Printf("\nberth autoscale, retail blueprint, scanInterval %s, provisioning time 0s, %d runs (pools grown: %v)\nmachine: %s\n\n", scan, runs, pools, machine())
	fmt.Printf("%-40s %8s %8s %8s\n", "from the pod's creation", "min", "median", "max")
	for _, row := range []struct {
		name string
		xs   []float64
	}{
		{"new node Ready", ready},
		{"pod Running", running},
		{"pool back at zero, after the pod went", down},
	} {
		s := summarize(row.xs)
		fmt.Printf("%-40s %7.2fs %7.2fs %7.2fs\n", row.name, s.min, s.median, s.max)
	}
	return nil
}

type autoscaleTimes struct {
	pool                 string
	ready, running, down time.Duration
}

// autoscaleRun creates one pending GPU pod and polls until a GPU node is
// Ready and the pod Runs on it, then deletes the pod and waits for the
// node to go.
func autoscaleRun(ctx context.Context, c kubernetes.Interface, name string) (autoscaleTimes, error) {
	var r autoscaleTimes
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec: corev1.PodSpec{
			PriorityClassName: "training-low",
			RestartPolicy:     corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "train", Image: "pytorch", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{v1alpha1.ResourceNVIDIAGPU: resource.MustParse("1")}}}},
		},
	}
	start := time.Now()
	if _, err := c.CoreV1().Pods("team-a").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	var node string
	for r.running == 0 {
		if time.Since(start) > 2*time.Minute {
			return r, fmt.Errorf("pod %s not Running after 2m (node %q Ready after %s)", name, node, r.ready)
		}
		if r.ready == 0 {
			if n := readyGPUNode(ctx, c); n != "" {
				r.ready, node = time.Since(start), n
			}
		}
		p, err := c.CoreV1().Pods("team-a").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return r, err
		}
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
			r.running = time.Since(start)
			if r.ready == 0 {
				r.ready = r.running
			}
			node = p.Spec.NodeName
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.pool = node[:strings.LastIndex(node, "-")]
	if err := c.CoreV1().Pods("team-a").Delete(ctx, name, *metav1.NewDeleteOptions(0)); err != nil {
		return r, err
	}
	gone := time.Now()
	for gpuNodes(ctx, c) > 0 {
		if time.Since(gone) > 3*time.Minute {
			return r, fmt.Errorf("GPU pools not back at zero 3m after pod %s went", name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.down = time.Since(gone)
	return r, nil
}

// readyGPUNode names a Ready node with a GPU label, "" when there is none.
func readyGPUNode(ctx context.Context, c kubernetes.Interface) string {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelGPUCount})
	if err != nil {
		return ""
	}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return n.Name
			}
		}
	}
	return ""
}

func gpuNodes(ctx context.Context, c kubernetes.Interface) int {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelGPUCount})
	if err != nil {
		return 1
	}
	return len(nodes.Items)
}
