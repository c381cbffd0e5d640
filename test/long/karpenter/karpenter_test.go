//go:build long

package karpenter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/karpenter"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/test/harness"
	"k8s.io/utils/ptr"
)

// Karpenter's own controllers on a cluster of their own, started through
// the real command line from the retail template with provisioner:
// Karpenter and a 5-second scaleDownUnneededTime, which the exported
// NodePools carry as consolidateAfter; the spot GPU pool's nodes take 5
// seconds to register.
func TestKarpenter(t *testing.T) {
	home := t.TempDir()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "  teams:\n", "  provisioner: Karpenter\n  autoscaler: {scaleDownUnneededTime: 5s}\n  teams:\n", 1)
	const spotSize = "    autoscale: {min: 0, max: 4}\n"
	if strings.Count(doc, spotSize) != 1 {
		t.Fatal("the retail template changed: cannot find the spot pool's size")
	}
	doc = strings.Replace(doc, spotSize, "    autoscale: {min: 0, max: 4, provisioningTime: 5s}\n", 1)
	bpFile := filepath.Join(home, "retail.yaml")
	if err := os.WriteFile(bpFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	up := harness.MustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "karp")
	t.Cleanup(func() { harness.Berth(t, home, "down", "--name", "karp", "--purge") })
	if !strings.Contains(up, "NODEPOOL") {
		t.Errorf("berth up's ready message does not show Karpenter's NodePools:\n%s", up)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-karp"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	bp, _, err := blueprint.Load(bpFile)
	if err != nil {
		t.Fatal(err)
	}
	k := &karpEnv{t: t, home: home, c: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), bp: bp, bpFile: bpFile, doc: doc}

	k.run("only the System pool has nodes at start", k.systemOnly)
	k.run("the NodePools running are the exported ones", k.nodePoolsAsExported)
	k.run("a training pod gets a spot GPU NodeClaim, runs, and the node is consolidated away", k.trainingFromZero)
	k.run("a disruption budget of nodes 0 blocks consolidation until lifted", k.budgetBlocks)
	k.run("a spot interruption: a replacement NodeClaim, and the Job survives", k.spotInterruption)
	k.run("a pool's new Kubernetes version by berth apply: its NodeClaim drifts and is replaced", k.versionDrift)
	k.run("a pool's new machine by berth apply: its NodeClaims drift and are replaced within every budget", k.machineDrift)
	k.run("berth audit reads the live NodePools and finds a GPU NodePool untainted", k.audit)
	k.run("a NodePool's limits hold: no node past them, and why says so", k.limitsHold)
	k.run("berth down and up: the NodeClaims, their nodes and pods resume", k.resume)
}

type karpEnv struct {
	// t is the subtest running (run sets it), which eventually fails.
	t    *testing.T
	home string
	c    kubernetes.Interface
	dyn  dynamic.Interface
	bp   *v1alpha1.Blueprint
	// bpFile is the blueprint's file, doc its text as last applied.
	bpFile, doc string
}

// run runs a subtest, one after another, with k.t set to it.
func (k *karpEnv) run(name string, f func(*testing.T)) {
	parent := k.t
	parent.Run(name, func(t *testing.T) {
		k.t = t
		defer func() { k.t = parent }()
		f(t)
	})
}

func (k *karpEnv) systemOnly(t *testing.T) {
	nodes, err := k.c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		if n.Labels[v1alpha1.LabelMode] != "system" {
			names = append(names, n.Name)
		}
	}
	if len(names) > 0 {
		t.Errorf("User pool nodes at start: %v; want none (Karpenter keeps no minimum; the cpu pool's min of 4 is only the export's note)", names)
	}
}

// nodePoolsAsExported compares the cluster's NodePools with what
// `berth export --target karpenter` writes: the same names, and every
// field the export sets has the export's value (the API server adds its
// defaults, such as the disruption budget of 10%).
func (k *karpEnv) nodePoolsAsExported(t *testing.T) {
	want, err := karpenter.NodePools(k.bp)
	if err != nil {
		t.Fatal(err)
	}
	live, err := k.dyn.Resource(karpenter.NodePoolResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]unstructured.Unstructured{}
	var liveNames, wantNames []string
	for _, np := range live.Items {
		byName[np.GetName()] = np
		liveNames = append(liveNames, np.GetName())
	}
	for _, np := range want {
		wantNames = append(wantNames, np.GetName())
	}
	sort.Strings(liveNames)
	sort.Strings(wantNames)
	if !reflect.DeepEqual(liveNames, wantNames) {
		t.Fatalf("NodePools %v; want the exported %v", liveNames, wantNames)
	}
	for _, np := range want {
		got := byName[np.GetName()]
		if path, ok := subset(np.Object["spec"], got.Object["spec"], "spec"); !ok {
			t.Errorf("NodePool %s: %s is %v live; the export writes %v", np.GetName(), path, lookup(got.Object, path), lookup(np.Object, path))
		}
		if !reflect.DeepEqual(np.GetLabels(), got.GetLabels()) {
			t.Errorf("NodePool %s: labels %v; the export writes %v", np.GetName(), got.GetLabels(), np.GetLabels())
		}
	}
}

// subset reports whether every field of want is in got with want's value,
// and the path of the first that is not.
func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for key, v := range w {
			if p, ok := subset(v, g[key], path+"."+key); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], path); !ok {
				return p, false
			}
		}
		return "", true
	default:
		return path, reflect.DeepEqual(want, got)
	}
}

func lookup(obj map[string]any, path string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, strings.Split(path, ".")...)
	return v
}

func (k *karpEnv) trainingFromZero(t *testing.T) {
	ctx := context.Background()
	job, err := k.c.BatchV1().Jobs("team-a").Create(ctx, objtest.TrainingJob("team-a", "train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	var claim unstructured.Unstructured
	k.eventually(time.Minute, "a NodeClaim for the training pod", func() (bool, error) {
		list, err := k.dyn.Resource(karpenter.NodeClaimResource).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		if len(list.Items) > 1 {
			t.Fatalf("%d NodeClaims for one pod; want 1", len(list.Items))
		}
		claim = list.Items[0]
		return true, nil
	})
	// While the node boots, why says Karpenter is launching it.
	k.eventually(5*time.Second, "berth why to say Karpenter is launching a NodeClaim", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=train"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		out, _ := harness.Berth(t, k.home, "why", pods.Items[0].Name, "-n", "team-a", "--context", "berth-karp")
		return strings.Contains(out, "Karpenter is launching a NodeClaim for this pod: it should schedule on nodeclaim/"+claim.GetName()), nil
	})
	pod := k.jobPod("train", corev1.PodSucceeded)
	if pod.Spec.NodeName != claim.GetName() {
		t.Errorf("the pod ran on %s; want the NodeClaim's node %s", pod.Spec.NodeName, claim.GetName())
	}
	launched, err := k.dyn.Resource(karpenter.NodeClaimResource).Get(ctx, claim.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := launched.GetLabels()
	if labels[v1alpha1.LabelKarpenterNodePool] != "spot-gpu" || labels[v1alpha1.LabelCapacityType] != "spot" {
		t.Errorf("the NodeClaim is of NodePool %q, capacity %q; want spot-gpu, spot: the cheapest fit (and the first NodePool by name at equal weight)",
			labels[v1alpha1.LabelKarpenterNodePool], labels[v1alpha1.LabelCapacityType])
	}
	if st, _ := harness.Berth(t, k.home, "status", "--context", "berth-karp"); !strings.Contains(st, "KARPENTER") || !lineStarts(st, claim.GetName(), "spot-gpu", "g6.8xlarge", "spot") {
		t.Errorf("berth status does not list the NodeClaim %s of spot-gpu:\n%s", claim.GetName(), st)
	}
	node, err := k.c.CoreV1().Nodes().Get(ctx, claim.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1alpha1.LabelPool] != "spot-gpu" || node.Spec.ProviderID != karpenter.ProviderIDPrefix+node.Name {
		t.Errorf("node %s: pool %q, provider ID %q; want a berth node of pool spot-gpu", node.Name, node.Labels[v1alpha1.LabelPool], node.Spec.ProviderID)
	}
	if boot := node.CreationTimestamp.Sub(claim.GetCreationTimestamp().Time); boot < 4*time.Second {
		t.Errorf("node %s registered %s after its NodeClaim; want the pool's 5s provisioning time", node.Name, boot)
	}
	if gpus := node.Status.Allocatable["nvidia.com/gpu"]; gpus.Value() != 1 {
		t.Errorf("node %s advertises %s GPUs; want 1, from the device plugin", node.Name, gpus.String())
	}
	done := time.Now()
	k.eventually(2*time.Minute, "the empty node consolidated away", func() (bool, error) {
		_, err := k.c.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err == nil {
			return false, nil
		}
		list, err := k.dyn.Resource(karpenter.NodeClaimResource).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	t.Logf("node %s and its NodeClaim gone %s after the pod completed (consolidateAfter 5s)", node.Name, time.Since(done).Round(time.Second))
}

func (k *karpEnv) eventually(timeout time.Duration, what string, cond func() (bool, error)) {
	k.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		st, _ := harness.Berth(k.t, k.home, "status")
		k.t.Fatalf("waiting for %s: %v\nberth status:\n%s\nKarpenter's log lines:\n%s", what, err, st, k.log())
	}
}

// jobPod waits up to two minutes for team-a's one-pod Job job to have its
// pod in phase, and returns it.
func (k *karpEnv) jobPod(job string, phase corev1.PodPhase) corev1.Pod {
	k.t.Helper()
	var pod corev1.Pod
	k.eventually(2*time.Minute, fmt.Sprintf("Job %s's pod %s", job, phase), func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != phase {
			return false, err
		}
		pod = pods.Items[0]
		return true, nil
	})
	return pod
}

// log is the last lines of Karpenter's log in the cluster's log file.
func (k *karpEnv) log() string {
	raw, err := os.ReadFile(filepath.Join(k.home, "clusters", "karp", "berth.log"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "karpenter") {
			out = append(out, line)
		}
	}
	return strings.Join(out[max(0, len(out)-60):], "\n")
}

// spotInterruption interrupts the node of a running training pod: the
// pod fails with DisruptionTarget, which the training class's
// podFailurePolicy ignores; the node goes and Karpenter launches a
// replacement NodeClaim for the Job's new pod.
func (k *karpEnv) spotInterruption(t *testing.T) {
	ctx := context.Background()
	job := objtest.TrainingJob("team-a", "resume")
	job.Spec.BackoffLimit = ptr.To(int32(0))
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "60s"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	train := k.jobPod("resume", corev1.PodRunning)
	interrupted := train.Spec.NodeName
	out := harness.MustBerth(t, k.home, "spot", "interrupt", interrupted, "--notice", "3s", "--context", "berth-karp")
	if !strings.Contains(out, "Interrupted 1 spot node(s): "+interrupted) {
		t.Errorf("berth spot interrupt says:\n%s", out)
	}
	var replacement string
	k.eventually(3*time.Minute, "a replacement training pod running on a new NodeClaim's node", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=resume"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Name == train.Name || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == interrupted {
				continue
			}
			if _, err := k.dyn.Resource(karpenter.NodeClaimResource).Get(ctx, p.Spec.NodeName, metav1.GetOptions{}); err != nil {
				return false, nil
			}
			replacement = p.Spec.NodeName
			return true, nil
		}
		return false, nil
	})
	k.eventually(time.Minute, "the interrupted node's NodeClaim gone", func() (bool, error) {
		_, err := k.dyn.Resource(karpenter.NodeClaimResource).Get(ctx, interrupted, metav1.GetOptions{})
		return err != nil, nil
	})
	j, err := k.c.BatchV1().Jobs("team-a").Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 0 {
		t.Errorf("the Job counts %d failed pod(s) after an interruption; its podFailurePolicy should ignore it (backoffLimit 0)", j.Status.Failed)
	}
	st, _ := harness.Berth(t, k.home, "status", "--context", "berth-karp")
	n := 0
	for _, line := range strings.Split(st, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == interrupted {
			n++
		}
	}
	if n != 1 {
		t.Errorf("berth status lists the interruption of %s %d times; want once (Karpenter's finalizer keeps the node a while after the interruption deletes it):\n%s", interrupted, n, st)
	}
	t.Logf("node %s interrupted; the Job's new pod runs on %s", interrupted, replacement)
}

// lineStarts reports whether a line of out starts with fields.
func lineStarts(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= len(fields) && reflect.DeepEqual(f[:len(fields)], fields) {
			return true
		}
	}
	return false
}

// versionDrift applies the blueprint with the spot GPU pool on Kubernetes
// 1.35 while a training pod runs there: Karpenter finds its NodeClaim
// drifted (the cloud provider's IsDrifted, woken by the node class's
// new images), launches a replacement of the new version and drains the
// old node; the Job's pod moves without failing the Job.
func (k *karpEnv) versionDrift(t *testing.T) {
	bpFile, doc := k.bpFile, k.doc
	ctx := context.Background()
	job := objtest.TrainingJob("team-a", "long")
	job.Spec.BackoffLimit = ptr.To(int32(0))
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "10m"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	var old corev1.Node
	k.eventually(2*time.Minute, "the long training pod running", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=long"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		n, err := k.c.CoreV1().Nodes().Get(ctx, pods.Items[0].Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		old = *n
		return true, nil
	})
	if v := old.Status.NodeInfo.KubeletVersion; !strings.HasPrefix(v, "v1.36") {
		t.Fatalf("node %s runs kubelet %s; want the blueprint's 1.36 before the change", old.Name, v)
	}
	const marker = "  - name: spot-gpu\n"
	if !strings.Contains(doc, marker) {
		t.Fatal("the retail template changed: cannot find the spot pool")
	}
	doc = strings.Replace(doc, marker, marker+"    kubernetesVersion: \"1.35\"\n", 1)
	if err := os.WriteFile(bpFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	k.doc = doc
	start := time.Now()
	out := harness.MustBerth(t, k.home, "apply", "-f", bpFile, "--context", "berth-karp")
	// The plan shows the node class's new versions, which drift the pool.
	if !strings.Contains(out, "update EC2NodeClass default") || !strings.Contains(out, "spot-gpu=v1.35.0") {
		t.Errorf("berth apply's plan does not show the node class's spot-gpu version changing to 1.35:\n%s", out)
	}
	var moved string
	k.eventually(4*time.Minute, "the training pod on a replacement node of Kubernetes 1.35", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=long"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == old.Name {
				continue
			}
			n, err := k.c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err == nil && strings.HasPrefix(n.Status.NodeInfo.KubeletVersion, "v1.35") {
				moved = n.Name
				return true, nil
			}
		}
		return false, nil
	})
	k.eventually(time.Minute, "the drifted node gone", func() (bool, error) {
		_, err := k.c.CoreV1().Nodes().Get(ctx, old.Name, metav1.GetOptions{})
		return err != nil, nil
	})
	j, err := k.c.BatchV1().Jobs("team-a").Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 0 {
		t.Errorf("the Job counts %d failed pod(s) after the drift; its podFailurePolicy should ignore the eviction (backoffLimit 0)", j.Status.Failed)
	}
	t.Logf("node %s (v1.36) drifted and was replaced by %s (v1.35) %s after the apply", old.Name, moved, time.Since(start).Round(time.Second))
}

// limitsHold asks the on-demand gpu pool (max 2: its NodePool's limit is
// 2 GPUs) for three 1-GPU pods: Karpenter launches two NodeClaims and no
// third, and why names the limit for the pod left pending.
func (k *karpEnv) limitsHold(t *testing.T) {
	ctx := context.Background()
	job := objtest.TrainingJob("team-a", "wide")
	job.Spec.Parallelism, job.Spec.Completions = ptr.To(int32(3)), ptr.To(int32(3))
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "10m"}
	job.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "gpu"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	var pending corev1.Pod
	k.eventually(2*time.Minute, "two of the three pods running on gpu nodes, one pending", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=wide"})
		if err != nil || len(pods.Items) != 3 {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			switch p.Status.Phase {
			case corev1.PodRunning:
				running++
			case corev1.PodPending:
				pending = p
			}
		}
		return running == 2, nil
	})
	k.eventually(30*time.Second, "berth why to name the NodePool's limits", func() (bool, error) {
		out, _ := harness.Berth(t, k.home, "why", pending.Name, "-n", "team-a", "--context", "berth-karp")
		return strings.Contains(out, "no Karpenter NodePool can take this pod") && strings.Contains(out, "exceed limits"), nil
	})
	// Karpenter batches pending pods for at most batchMaxDuration (10 s)
	// and tries again each batch: over one more batch and a margin, the
	// NodeClaims of the pool stay two, checked throughout.
	harness.Holds(t, 15*time.Second, "NodePool gpu keeps two NodeClaims and two nodes, its limit of 2 GPUs", func() (bool, error) {
		claims, err := k.dyn.Resource(karpenter.NodeClaimResource).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelKarpenterNodePool + "=gpu"})
		if err != nil {
			return false, err
		}
		nodes, err := k.c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelKarpenterNodePool + "=gpu"})
		if err != nil {
			return false, err
		}
		if len(claims.Items) != 2 || len(nodes.Items) != 2 {
			t.Logf("NodePool gpu: %d NodeClaims and %d nodes", len(claims.Items), len(nodes.Items))
			return false, nil
		}
		return true, nil
	})
}
