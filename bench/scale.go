package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// scaleOptions are one scale run's parameters.
type scaleOptions struct {
	nodes, pods int
	// namespaces spreads the Deployments over that many namespaces, as
	// teams would; 1 puts them all in one.
	namespaces int
	fsync      bool
	// commands also times berth status, why --all and a live audit once
	// every pod is Running.
	commands bool
	// keep leaves the cluster and its state directory in place at the
	// end, for profiling or querying at that size without building it
	// again.
	keep bool
}

// benchScale starts a cluster of o.nodes simulated nodes, creates o.pods
// replicas in Deployments of 1,000, and measures until every pod is
// Running: the creation rate, the sustained rate to Running (from 10% to
// 90% of the pods, so neither the first burst nor the last stragglers
// count), and the berth process's peak memory.
func benchScale(berth string, o scaleOptions) error {
	e, err := newEnv(berth)
	if err != nil {
		return err
	}
	kept := false
	defer func() {
		if !kept {
			os.RemoveAll(e.home)
		}
	}()
	bp := filepath.Join(e.home, "scale.yaml")
	if err := os.WriteFile(bp, []byte(fmt.Sprintf(scaleBlueprint, o.nodes-1)), 0o600); err != nil {
		return err
	}
	args := []string{"up", "--detach", "--name", "scale", "-f", bp, "--timeout", "30m"}
	if !o.fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	out, took, err := e.run(args...)
	if err != nil {
		return err
	}
	defer func() {
		if !kept {
			e.run("down", "--name", "scale", "--purge")
		}
	}()
	ready := readySeconds(out)
	fmt.Printf("%d nodes Ready: berth reports %.1fs, `up --detach` took %.1fs\n", o.nodes, ready, took.Seconds())
	pid, err := e.pidOf("scale")
	if err != nil {
		return err
	}
	_, nodePeak, _ := memory(pid)

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.home, "clusters", "scale", "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	namespaces := make([]string, max(o.namespaces, 1))
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("scale-%d", i)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, ns := range namespaces {
		for {
			if _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// progress follows every pod of the run through one informer.
	var (
		mu               sync.Mutex
		created, running int
		start            time.Time
		allCreated       time.Duration
		runningAt        = map[int]time.Duration{}
	)
	marks := []int{o.pods / 10, o.pods * 9 / 10, o.pods}
	isRunning := func(obj any) bool {
		p, ok := obj.(*corev1.Pod)
		return ok && p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Namespace, "scale-")
	}
	countRunning := func() {
		running++
		for _, m := range marks {
			if running == m {
				runningAt[m] = time.Since(start)
			}
		}
	}
	factory := informers.NewSharedInformerFactory(c, 0)
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			if p, ok := obj.(*corev1.Pod); ok && strings.HasPrefix(p.Namespace, "scale-") {
				if created++; created == o.pods {
					allCreated = time.Since(start)
				}
			}
			if isRunning(obj) {
				countRunning()
			}
		},
		UpdateFunc: func(old, obj any) {
			mu.Lock()
			defer mu.Unlock()
			if !isRunning(old) && isRunning(obj) {
				countRunning()
			}
		},
	})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	mu.Lock()
	start = time.Now()
	mu.Unlock()
	const per = 1000
	for i := 0; i*per < o.pods; i++ {
		n := int32(min(per, o.pods-i*per))
		ns := namespaces[i%len(namespaces)]
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, deployment(ns, fmt.Sprintf("app-%d", i), n), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	progress := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return created, running
	}
	var peak float64
	for last := time.Now(); ; time.Sleep(time.Second) {
		made, run := progress()
		if run >= o.pods {
			break
		}
		_, hwm, err := memory(pid)
		if err != nil {
			return fmt.Errorf("the cluster process is gone (%v); see %s", err, filepath.Join(e.home, "clusters", "scale", "berth.log"))
		}
		peak = hwm
		if time.Since(last) > 30*time.Second {
			fmt.Printf("  %6.0fs: %d/%d pods created, %d Running, peak %.0f MiB\n", time.Since(start).Seconds(), made, o.pods, run, peak)
			last = time.Now()
		}
		if time.Since(start) > 2*time.Hour {
			return fmt.Errorf("gave up after two hours with %d of %d pods Running", run, o.pods)
		}
	}
	_, peak, _ = memory(pid)
	mu.Lock()
	total, first, ninety := runningAt[o.pods], runningAt[marks[0]], runningAt[marks[1]]
	mu.Unlock()
	sustained := float64(marks[1]-marks[0]) / (ninety - first).Seconds()

	fmt.Printf("\nscale run: %d nodes, %d pods in %d namespace(s), fsync %v\nmachine: %s, %s\n", o.nodes, o.pods, len(namespaces), o.fsync, machine(), time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("nodes Ready (berth's clock)           %8.1f s   (peak memory then %.0f MiB)\n", ready, nodePeak)
	fmt.Printf("all pods created                      %8.1f s   (%.0f pods/s)\n", allCreated.Seconds(), float64(o.pods)/allCreated.Seconds())
	fmt.Printf("all pods Running                      %8.1f s   (%.0f pods/s overall)\n", total.Seconds(), float64(o.pods)/total.Seconds())
	fmt.Printf("sustained, 10%% to 90%% of pods Running %8.0f pods/s\n", sustained)
	fmt.Printf("peak resident memory, cluster process %8.0f MiB\n", peak)

	if o.commands {
		if err := timeCommands(ctx, e, c, namespaces[0], o.pods/10); err != nil {
			return err
		}
	}
	fmt.Printf("\n| %d | %d | %d | %.1f s | %.0f | %.0f | %.1f s | %.0f MiB |\n", o.nodes, o.pods, len(namespaces), ready, sustained, float64(o.pods)/total.Seconds(), total.Seconds(), peak)
	if o.keep {
		kept = true
		with := fmt.Sprintf("BERTH_HOME=%s KUBECONFIG=%s %s", e.home, e.kubeconfig(), e.berth)
		fmt.Printf("\nthe cluster is still running: %s status\nstop it with: %s down --name scale --purge && rm -r %s\n", with, with, e.home)
	}
	return nil
}

// timeCommands times berth status, why --all and a live audit on the
// settled cluster, then why --all again once pending more pods, which fit
// no node, are Pending: the scheduler behind on a large Job, say.
func timeCommands(ctx context.Context, e *env, c kubernetes.Interface, ns string, pending int) error {
	run := func(args ...string) error {
		out, took, err := e.run(args...)
		// audit exits non-zero when it has findings.
		if err != nil && !(args[0] == "audit" && strings.Contains(out, "berth/")) {
			return err
		}
		fmt.Printf("berth %-33s %8.2f s\n", strings.Join(args, " "), took.Seconds())
		return nil
	}
	for _, cmd := range [][]string{{"status"}, {"why", "--all"}, {"audit"}} {
		if err := run(cmd...); err != nil {
			return err
		}
	}
	big := deployment(ns, "too-big", int32(pending))
	big.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("64")
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, big, metav1.CreateOptions{}); err != nil {
		return err
	}
	for {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=too-big"})
		if err != nil {
			return err
		}
		if len(pods.Items) >= pending {
			break
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("with %d pods that fit no node Pending:\n", pending)
	return run("why", "--all")
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
