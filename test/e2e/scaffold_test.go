package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"berth.io/berth/api/v1alpha1"
)

var background = metav1.DeletePropagationBackground

// scaffoldResources are the resources of the kinds berth new writes.
var scaffoldResources = map[string]schema.GroupVersionResource{
	"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
	"Service":                 {Version: "v1", Resource: "services"},
	"PodDisruptionBudget":     {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	"Job":                     {Group: "batch", Version: "v1", Resource: "jobs"},
	"PersistentVolumeClaim":   {Version: "v1", Resource: "persistentvolumeclaims"},
}

// createScaffold runs berth new with args, then creates every object of
// the file it wrote, as a user would apply it; they are deleted when the
// test ends.
func createScaffold(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	return createScaffoldOn(t, dynamic.NewForConfigOrDie(cfg), "testdata/e2e.yaml", args...)
}

// createScaffoldOn is createScaffold with the blueprint file, on the
// cluster dyn reaches.
func createScaffoldOn(t *testing.T, dyn dynamic.Interface, bpFile string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	mustBerth(t, t.TempDir(), append([]string{"new", "-f", bpFile, "-o", dir}, args...)...)
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != 1 {
		t.Fatalf("berth new %v wrote %v; want one file", args, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		gvr, ok := scaffoldResources[u.GetKind()]
		if !ok {
			t.Fatalf("berth new wrote a %s, which this test does not know", u.GetKind())
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s/%s from berth new's output: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		t.Cleanup(func() {
			dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		})
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("berth new wrote no objects:\n%s", data)
	}
	return objs
}

// scheduledPods waits until the selected pods number want and each has
// a node, and returns them.
func scheduledPods(t *testing.T, ns, selector string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, fmt.Sprintf("%d scheduled pods %s in %s", want, selector, ns), func() (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == want && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == "" }), nil
	})
	return pods
}

func poolsOf(t *testing.T, pods []corev1.Pod) []string {
	t.Helper()
	var out []string
	for pool := range countBy(t, pods, v1alpha1.LabelPool) {
		out = append(out, pool)
	}
	slices.Sort(out)
	return out
}

// berth new's scaffolds are admitted in a team namespace as written, and
// their pods land on the pools their class names, with its priority.
func TestScaffolds(t *testing.T) {
	ctx := context.Background()
	const ns = "team-a"
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)

	t.Run("inference", func(t *testing.T) {
		name := "reco-" + suffix
		createScaffold(t, "inference", name, "--team", "team-a", "--gpus", "1", "--model", "reco:4")
		pods := runningPods(t, ns, "app.kubernetes.io/name="+name, 2)
		if got := poolsOf(t, pods); !slices.Equal(got, []string{"gpu"}) {
			t.Errorf("GPU inference pods run on pools %v; want the class's GPU pool [gpu]", got)
		}
		for _, p := range pods {
			if p.Spec.PriorityClassName != "inference-high" {
				t.Errorf("pod %s has priority class %q; want inference-high", p.Name, p.Spec.PriorityClassName)
			}
			if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != "berth-model" {
				t.Errorf("pod %s has no berth-model puller: the berth.io/model wiring did not apply", p.Name)
			}
		}
		// The class's budget, made by berth for this Deployment; the
		// scaffold wrote none of its own.
		eventually(t, time.Minute, "the class's budget for "+name, func() (bool, error) {
			_, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "deployment-"+name+"-budget", metav1.GetOptions{})
			return err == nil, nil
		})
		if _, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the HPA: %v", err)
		}
	})

	t.Run("training", func(t *testing.T) {
		name := "finetune-" + suffix
		// The claim names the blueprint's default class, whose driver
		// makes its volume once the scheduler has chosen the node.
		createScaffold(t, "training", name, "--team", "team-a", "--gpus", "1")
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			pvc, _ := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name+"-checkpoints", metav1.GetOptions{})
			if pvc != nil {
				t.Logf("claim: %s", pvc.Status.Phase)
			}
			list, _ := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
			for _, p := range list.Items {
				t.Logf("pod %s: %s %+v", p.Name, p.Status.Phase, p.Status.Conditions)
			}
			ev, _ := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			for _, e := range ev.Items {
				t.Logf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		})
		// Scheduled is enough: a simulated Job pod may finish at once.
		pods := scheduledPods(t, ns, "app.kubernetes.io/name="+name, 1)
		if got := poolsOf(t, pods); !slices.Equal(got, []string{"spot-gpu"}) {
			t.Errorf("training pods run on pools %v; want the class's first GPU pool [spot-gpu]", got)
		}
		if pc := pods[0].Spec.PriorityClassName; pc != "training-low" {
			t.Errorf("training pod has priority class %q; want training-low", pc)
		}
		var pv *corev1.PersistentVolume
		eventually(t, time.Minute, "the checkpoint claim bound", func() (bool, error) {
			pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name+"-checkpoints", metav1.GetOptions{})
			if err != nil || pvc.Status.Phase != corev1.ClaimBound {
				return false, err
			}
			pv, err = client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			return err == nil, err
		})
		node, err := client.CoreV1().Nodes().Get(ctx, pods[0].Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zone := node.Labels[corev1.LabelTopologyZone]
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "standard.storage.berth.io" || pv.Spec.StorageClassName != "standard" {
			t.Errorf("the claim's volume %s: %+v; want the standard class's, from driver standard.storage.berth.io", pv.Name, pv.Spec)
		}
		if got := pv.Labels[corev1.LabelTopologyZone]; got != zone || pv.Spec.NodeAffinity == nil {
			t.Errorf("the zonal volume is in zone %q (node affinity %v); want the zone of node %s, %q", got, pv.Spec.NodeAffinity, node.Name, zone)
		}
		// The node's kubelet registered the class's driver, as the
		// scheduler's NodeVolumeLimits plugin reads it.
		eventually(t, time.Minute, "node "+node.Name+"'s CSINode to list the standard class's driver", func() (bool, error) {
			n, err := client.StorageV1().CSINodes().Get(ctx, node.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && slices.ContainsFunc(n.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == "standard.storage.berth.io" }), err
		})
		eventually(t, 2*time.Minute, "the training Job to complete", func() (bool, error) {
			job, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && job.Status.Succeeded > 0, err
		})
		job, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Spec.PodFailurePolicy == nil || len(job.Spec.PodFailurePolicy.Rules) == 0 {
			t.Errorf("the training Job got no podFailurePolicy from its class's spot pool")
		}
	})

	t.Run("batch", func(t *testing.T) {
		name := "embed-" + suffix
		createScaffold(t, "batch", name, "--team", "team-a", "--queue", "amqp://queue.example/embed")
		// One replica to start with; its HPA on the queue's depth may take
		// it to zero (TestAutoscaler follows a queue worker there and back).
		hpa, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the batch scaffold with --queue wrote no HPA: %v", err)
		}
		if got, want := describeMetric(hpa.Spec.Metrics), "External rabbitmq_queue_messages_ready{queue=embed} AverageValue 5"; got != want {
			t.Errorf("the batch HPA scales on %q; want %q", got, want)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 0 {
			t.Errorf("the batch HPA's minReplicas is %v; want 0", hpa.Spec.MinReplicas)
		}
		pods := runningPods(t, ns, "app.kubernetes.io/name="+name, 1)
		if got := poolsOf(t, pods); !slices.Equal(got, []string{"cpu"}) {
			t.Errorf("batch pods run on pools %v; want the class's [cpu]", got)
		}
	})
}

// The advice berth new ends with audits clean, through the real command
// line: each kind, for each of the retail template's teams, written where
// there is no blueprint (new follows the built-in template, and the
// advice first writes it to ./berth.yaml, where audit finds it) and then
// where there is one. Audit counts the blueprint's own namespaces,
// quotas, LimitRanges, budgets and PriorityClasses as present.
func TestNewAdviceAuditsClean(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	first := true
	for _, team := range []string{"team-a", "team-b"} {
		for _, kind := range []string{"inference", "training", "batch"} {
			name := kind + "-" + team
			out, code := berthIn(t, dir, home, "new", kind, name, "--team", team, "-o", "deploy")
			if code != 0 {
				t.Fatalf("berth new %s exited %d:\n%s", name, code, out)
			}
			_, advice, ok := strings.Cut(out, "\nnext: ")
			if !ok || !strings.Contains(out, "\nclass ") {
				t.Fatalf("berth new %s does not say which class it chose and what to run next:\n%s", name, out)
			}
			if writes := strings.HasPrefix(advice, "berth init "); writes != first {
				t.Errorf("berth new %s advises %q; want berth init first only while there is no ./berth.yaml", name, advice)
			}
			first = false
			for _, step := range strings.Split(strings.TrimSpace(advice), " && ") {
				args := strings.Fields(step)
				if args[0] == "kubectl" {
					continue
				}
				if out, code := berthIn(t, dir, home, args[1:]...); code != 0 {
					t.Errorf("berth new %s's advice: %s exited %d:\n%s", name, step, code, out)
				}
			}
		}
	}
}
