package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const scaleBlueprint = `apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata:
  name: scale
spec:
  zones: [zone-1, zone-2, zone-3]
  pools:
  - name: system
    mode: System
    machine: {cpu: 8, memory: 32Gi}
    count: 1
    taints: ["CriticalAddonsOnly=true:NoSchedule"]
  - name: work
    machine: {cpu: 32, memory: 256Gi}
    count: %d
    maxPods: 110
`

// benchScale starts a cluster of nodes simulated nodes, creates pods
// replicas across Deployments of 1,000, and measures until every pod is
// Running, and the berth process's peak memory.
func benchScale(berth string, nodes, pods int, fsync bool) error {
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.home)
	bp := filepath.Join(e.home, "scale.yaml")
	if err := os.WriteFile(bp, []byte(fmt.Sprintf(scaleBlueprint, nodes-1)), 0o600); err != nil {
		return err
	}
	args := []string{"up", "--detach", "--name", "scale", "-f", bp, "--timeout", "30m"}
	if !fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	out, took, err := e.run(args...)
	if err != nil {
		return err
	}
	defer e.run("down", "--name", "scale", "--purge")
	fmt.Printf("%d nodes Ready: berth reports %.1fs, `up --detach` took %.1fs\n", nodes, readySeconds(out), took.Seconds())
	pid, err := e.pidOf("scale")
	if err != nil {
		return err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.home, "clusters", "scale", "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ns := "scale"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		if _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	var running atomic.Int64
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	isRunning := func(obj any) bool {
		p, ok := obj.(*corev1.Pod)
		return ok && p.Status.Phase == corev1.PodRunning
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if isRunning(obj) {
				running.Add(1)
			}
		},
		UpdateFunc: func(old, obj any) {
			if !isRunning(old) && isRunning(obj) {
				running.Add(1)
			}
		},
	})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	start := time.Now()
	const per = 1000
	for i := 0; i*per < pods; i++ {
		n := int32(min(per, pods-i*per))
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, deployment(ns, fmt.Sprintf("app-%d", i), n), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	var peak float64
	for last := time.Now(); running.Load() < int64(pods); time.Sleep(time.Second) {
		_, hwm, err := memory(pid)
		if err != nil {
			return fmt.Errorf("the cluster process is gone (%v); see %s", err, filepath.Join(e.home, "clusters", "scale", "berth.log"))
		}
		peak = hwm
		if time.Since(last) > 30*time.Second {
			fmt.Printf("  %6.0fs: %d/%d pods Running, peak %.0f MiB\n", time.Since(start).Seconds(), running.Load(), pods, peak)
			last = time.Now()
		}
		if time.Since(start) > time.Hour {
			return fmt.Errorf("gave up after an hour with %d of %d pods Running", running.Load(), pods)
		}
	}
	took = time.Since(start)
	_, peak, _ = memory(pid)
	fmt.Printf("\nscale run: %d nodes, %d pods, fsync %v\nmachine: %s\n", nodes, pods, fsync, machine())
	fmt.Printf("all pods Running %.1fs after the first Deployment was created (%.0f pods/s)\n", took.Seconds(), float64(pods)/took.Seconds())
	fmt.Printf("peak resident memory of the cluster process: %.0f MiB\n", peak)
	return nil
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "nginx",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
					}},
				}}},
			},
		},
	}
}
