package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/spot"
	"k8s.io/utils/ptr"
)

// The node autoscaler on a cluster of its own, started through the real
// command line from the retail template with no --nodes (the GPU pools
// start at zero) and its timings compressed by `berth up`'s flags: a
// 1-second scan, 3 seconds of unneeded time, a 4-second provisioning time
// for the spot GPU pool. One namespace, ops, is added to the system
// namespaces so that the scale-down blockers can be pinned to a pool.
func TestAutoscaler(t *testing.T) {
	home := t.TempDir()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "  teams:\n", "  systemNamespaces: [kube-system, ops]\n  teams:\n", 1)
	bpFile := filepath.Join(home, "retail.yaml")
	if err := os.WriteFile(bpFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "scale",
		"--autoscaler", "scanInterval=1s,scaleDownUnneededTime=3s,scaleDownDelayAfterAdd=0s,scaleDownDelayAfterDelete=0s,scaleDownDelayAfterFailure=1s",
		"--provisioning-time", "spot-gpu=4s", "--autoscaler-seed", "7")
	t.Cleanup(func() { berth(t, home, "down", "--name", "scale", "--purge") })
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-scale"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	a := &scaleEnv{t: t, home: home, c: kubernetes.NewForConfigOrDie(cfg), cfg: cfg}
	if n := a.poolSize("spot-gpu"); n != 0 {
		t.Fatalf("spot-gpu starts with %d nodes; want 0 (its autoscale.min)", n)
	}
	a.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}})
	a.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}})
	// The autoscaler has scanned with the blueprint's pools.
	a.eventually(time.Minute, "the autoscaler's status listing pool spot-gpu", func() (bool, error) {
		cm, err := a.c.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(context.Background(), castatus.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, act, err := castatus.Read(cm)
		return err == nil && scaleStatus{act: act}.pool("spot-gpu") != nil, nil
	})

	t.Run("a training Job grows the spot GPU pool from zero and back", a.trainingFromZero)
	t.Run("a CPU Deployment grows its pool to max and no further", a.cpuToMax)
	t.Run("pods no pool fits add no node", a.noPoolFits)
	t.Run("scale-down is refused for each blocker", a.blockers)
	t.Run("a spot interruption: training resumes on new capacity without burning its retries", a.spotInterruption)
	t.Run("a queue scales batch inference and its GPU pool from zero and back", func(t *testing.T) {
		a.queueToZero(t, bpFile)
	})
	t.Run("apply changes the profile: the priority expander picks the higher pool", func(t *testing.T) {
		a.priorityByApply(t, bpFile, doc)
	})
	t.Run("a spot pool asked for random interruptions loses a node", func(t *testing.T) {
		a.randomInterruptions(t, bpFile, doc)
	})
}

// randomInterruptions applies the blueprint with spot-gpu interrupted at
// random every second on average, with a 2-second notice, and holds a
// node in the pool: it is interrupted with the pool's notice.
func (a *scaleEnv) randomInterruptions(t *testing.T, bpFile, doc string) {
	const marker = "    taints: [\"gpu=true:NoSchedule\", \"berth.io/capacity=spot:NoSchedule\"]\n"
	if !strings.Contains(doc, marker) {
		t.Fatal("the retail template changed: cannot find the spot pool")
	}
	doc = strings.Replace(doc, marker, marker+"    spot: {notice: 2s, meanTimeBetweenInterruptions: 1s, seed: 3}\n", 1)
	if err := os.WriteFile(bpFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, a.home, "apply", "-f", bpFile, "--context", "berth-scale")
	hold := objtest.MakeDeployment("ops", "hold", 1).NodeSelector(v1alpha1.LabelPool, "spot-gpu").Tolerate("gpu").Tolerate(v1alpha1.LabelCapacity).Obj()
	a.create(hold)
	ctx := context.Background()
	a.eventually(2*time.Minute, "a spot-gpu node interrupted at random with the pool's 2s notice", func() (bool, error) {
		cm, err := a.c.CoreV1().ConfigMaps("kube-system").Get(ctx, spot.RecordConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		list, err := spot.Read(cm)
		if err != nil {
			return false, err
		}
		for _, in := range list {
			if in.Pool == "spot-gpu" && in.Notice == "2s" {
				return true, nil
			}
		}
		return false, nil
	})
	a.deleteDeployment("ops", "hold")
}

type scaleEnv struct {
	t    *testing.T
	home string
	c    kubernetes.Interface
	cfg  *rest.Config
}

func (a *scaleEnv) trainingFromZero(t *testing.T) {
	ctx := context.Background()
	job, err := a.c.BatchV1().Jobs("team-a").Create(ctx, objtest.TrainingJob("team-a", "train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := a.podOf("team-a", "job-name=train")
	up := a.event("team-a", pod.Name, castatus.ReasonTriggeredScaleUp)
	// Event times have whole seconds: one 1s scan plus rounding.
	if d := up.FirstTimestamp.Sub(pod.CreationTimestamp.Time); d > 3*time.Second {
		t.Errorf("the scale-up came %s after the pod; want within one scan interval (1s)", d)
	}
	ups, ok := castatus.ParseTriggered(up.Message)
	if !ok || len(ups) != 1 || ups[0].From != 0 || ups[0].To != 1 {
		t.Fatalf("TriggeredScaleUp says %q; want one pool from 0 to 1", up.Message)
	}
	pool := ups[0].Pool
	if pool != "spot-gpu" && pool != "gpu" {
		t.Fatalf("pool %s grew for a training pod; want spot-gpu or gpu (the training class's pools)", pool)
	}
	if pool == "spot-gpu" {
		// While the node boots, why says it is on its way.
		if out, _ := berth(t, a.home, "why", pod.Name, "-n", "team-a"); !strings.Contains(out, "pool spot-gpu is adding a node for this pod") {
			t.Errorf("berth why while the new node boots says:\n%s\nwant: pool spot-gpu is adding a node for this pod", out)
		}
	}
	// The seeded random expander picks the same pool every run; the
	// wait for the node is the pool's provisioning time.
	a.eventually(time.Minute, "the training pod to complete on the new node", func() (bool, error) {
		p, err := a.c.CoreV1().Pods("team-a").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded && strings.HasPrefix(p.Spec.NodeName, pool+"-"), nil
	})
	node := a.node(pool)
	if pool == "spot-gpu" {
		if wait := node.CreationTimestamp.Sub(up.FirstTimestamp.Time); wait < 3*time.Second {
			t.Errorf("node %s registered %s after the scale-up; want the pool's 4s provisioning time", node.Name, wait)
		}
	}
	t.Logf("pool %s: scale-up event %s after the pod was created, node registered %s later",
		pool, up.FirstTimestamp.Sub(pod.CreationTimestamp.Time), node.CreationTimestamp.Sub(up.FirstTimestamp.Time))
	a.eventually(time.Minute, "pool "+pool+" back at 0 after the Job", func() (bool, error) { return a.poolSize(pool) == 0, nil })
	a.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	st := a.status()
	act := st.pool(pool)
	if act == nil || act.LastScaleUp == nil || act.LastScaleDown == nil || act.LastScaleDown.To != 0 {
		t.Errorf("status of pool %s after the round trip: %+v; want its last scale-up and a scale-down to 0", pool, act)
	}
}

func (a *scaleEnv) cpuToMax(t *testing.T) {
	ctx := context.Background()
	// 7 CPUs each: two per 16-CPU node, so 8 nodes (the pool's max) hold
	// 16 of the 20 replicas.
	d := objtest.MakeDeployment("load", "wide", 20).Obj()
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")}
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "cpu"}
	a.create(d)
	a.eventually(2*time.Minute, "pool cpu at its max of 8", func() (bool, error) { return a.poolSize("cpu") == 8, nil })
	atMax := a.watchNodes(v1alpha1.LabelPool + "=cpu")
	var pending []corev1.Pod
	a.eventually(time.Minute, "16 replicas running and 4 pending", func() (bool, error) {
		pods, err := a.c.CoreV1().Pods("load").List(ctx, metav1.ListOptions{LabelSelector: "app=wide"})
		if err != nil {
			return false, err
		}
		pending = pending[:0]
		running := 0
		for _, p := range pods.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Spec.NodeName == "":
				pending = append(pending, p)
			}
		}
		return running == 16 && len(pending) == 4, nil
	})
	ev := a.event("load", pending[0].Name, castatus.ReasonNotTriggerScaleUp)
	if !strings.Contains(ev.Message, "pool cpu: "+castatus.MaxSizeReached) {
		t.Errorf("NotTriggerScaleUp says %q; want pool cpu at its max", ev.Message)
	}
	out, _ := berth(t, a.home, "why", pending[0].Name, "-n", "load")
	if !strings.Contains(out, "maximum of 8") {
		t.Errorf("berth why on a pod left over at the pool's max says:\n%s\nwant it to say pool cpu is at its maximum of 8", out)
	}
	// A few more scans: the pool stays at 8, at no moment growing past it.
	atMax.steady(t, 3*time.Second, "pool cpu at its max")
	if n := a.poolSize("cpu"); n != 8 {
		t.Errorf("pool cpu has %d nodes after more scans; want 8, its max", n)
	}
	if err := a.c.AppsV1().Deployments("load").Delete(ctx, "wide", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.eventually(2*time.Minute, "pool cpu back at its min of 4", func() (bool, error) { return a.poolSize("cpu") == 4, nil })
	a.watchNodes(v1alpha1.LabelPool+"=cpu").steady(t, 3*time.Second, "pool cpu at its min")
	if n := a.poolSize("cpu"); n != 4 {
		t.Errorf("pool cpu shrank to %d nodes; want it to stop at its min, 4", n)
	}
}

func (a *scaleEnv) noPoolFits(t *testing.T) {
	nodes := a.watchNodes("")
	before := a.nodeCount()
	d := objtest.MakeDeployment("load", "nowhere", 2).Obj()
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "no-such-pool"}
	a.create(d)
	pod := a.podOf("load", "app=nowhere")
	ev := a.event("load", pod.Name, castatus.ReasonNotTriggerScaleUp)
	nt, ok := castatus.ParseNotTriggered(ev.Message)
	named := map[string]bool{}
	for _, p := range nt {
		named[p.Pool] = true
	}
	if !ok || !named["cpu"] || !named["gpu"] || !named["spot-gpu"] {
		t.Errorf("NotTriggerScaleUp says %q; want every autoscaled pool named with its reason", ev.Message)
	}
	nodes.steady(t, 3*time.Second, "pods no pool fits")
	if n := a.nodeCount(); n != before {
		t.Errorf("the cluster went from %d to %d nodes for pods no pool fits", before, n)
	}
	a.c.AppsV1().Deployments("load").Delete(context.Background(), "nowhere", metav1.DeleteOptions{})
}

// blockers pins pods, each with one property that keeps a node, to one
// node of the gpu pool (they ask for no GPU, so the node is unneeded by
// its GPU utilization) and removes them one by one: the node reports
// each blocker in turn (annotation, then pods by name, then budget, then
// no place to move), and goes once the last one is gone.
func (a *scaleEnv) blockers(t *testing.T) {
	ctx := context.Background()
	pinned := func(ns, name string) *appsv1.Deployment {
		d := objtest.MakeDeployment(ns, name, 1).NodeSelector(v1alpha1.LabelPool, "gpu").Tolerate("gpu").Obj()
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		return d
	}
	unsafe := pinned("ops", "a-unsafe")
	unsafe.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationSafeToEvict: "false"}
	local := pinned("ops", "c-local")
	local.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	system := pinned("kube-system", "d-system")
	budgeted := pinned("ops", "e-budget")
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "b-bare"}, Spec: *pinned("ops", "b-bare").Spec.Template.Spec.DeepCopy()}
	for _, obj := range []any{unsafe, bare, local, system, budgeted, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "e-budget"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: budgeted.Spec.Selector},
	}} {
		a.create(obj)
	}
	a.eventually(time.Minute, "one gpu node for the pinned pods", func() (bool, error) { return a.poolSize("gpu") == 1, nil })
	node := a.node("gpu")
	for _, step := range []struct {
		code   string
		remove func()
	}{
		{"NotSafeToEvictAnnotation", func() { a.deleteDeployment("ops", "a-unsafe") }},
		{"NotReplicated", func() { a.c.CoreV1().Pods("ops").Delete(ctx, "b-bare", metav1.DeleteOptions{}) }},
		{"LocalStorageRequested", func() { a.deleteDeployment("ops", "c-local") }},
		{"UnmovableKubeSystemPod", func() { a.deleteDeployment("kube-system", "d-system") }},
		{"NotEnoughPdb", func() { a.c.PolicyV1().PodDisruptionBudgets("ops").Delete(ctx, "e-budget", metav1.DeleteOptions{}) }},
		{"NoPlaceToMovePods", func() { a.annotate(node.Name, v1alpha1.AnnotationScaleDownDisabled, "true") }},
		{"ScaleDownDisabledAnnotation", func() {
			a.deleteDeployment("ops", "e-budget")
			a.annotate(node.Name, v1alpha1.AnnotationScaleDownDisabled, "")
		}},
	} {
		a.eventually(time.Minute, "node "+node.Name+" kept for "+step.code, func() (bool, error) {
			return a.hasNodeEvent(node.Name, castatus.ReasonNoScaleDown, "("+step.code+")"), nil
		})
		if n := a.poolSize("gpu"); n != 1 {
			t.Fatalf("pool gpu has %d nodes while %s holds its node; want 1", n, step.code)
		}
		step.remove()
	}
	a.eventually(time.Minute, "the gpu node removed once nothing holds it", func() (bool, error) { return a.poolSize("gpu") == 0, nil })

	// cpu sits at its min: its empty nodes are kept, and say why.
	cpu := a.node("cpu")
	a.eventually(time.Minute, "node "+cpu.Name+" kept at the pool's min", func() (bool, error) {
		return a.hasNodeEvent(cpu.Name, castatus.ReasonNoScaleDown, "(NodeGroupMinSizeReached)"), nil
	})
}

// priorityByApply applies the blueprint with the priority expander and
// the on-demand gpu pool ranked above spot-gpu: the running autoscaler
// reads the profile the cluster was applied with, and a training Job,
// which either pool would hold, grows gpu.
func (a *scaleEnv) priorityByApply(t *testing.T, bpFile, doc string) {
	doc = strings.Replace(doc, "  pools:\n", "  autoscaler: {expander: priority}\n  pools:\n", 1)
	doc = strings.Replace(doc, "autoscale: {min: 0, max: 2}", "autoscale: {min: 0, max: 2, priority: 10}", 1)
	if !strings.Contains(doc, "priority: 10") || !strings.Contains(doc, "expander: priority") {
		t.Fatal("the retail template changed: cannot set the priority expander")
	}
	if err := os.WriteFile(bpFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// The earlier subtests' GPU nodes must be gone, or the pod would run
	// on one of them and grow nothing.
	a.eventually(time.Minute, "both GPU pools back at zero", func() (bool, error) {
		return a.poolSize("gpu") == 0 && a.poolSize("spot-gpu") == 0, nil
	})
	mustBerth(t, a.home, "apply", "-f", bpFile, "--context", "berth-scale")
	ctx := context.Background()
	if _, err := a.c.BatchV1().Jobs("team-a").Create(ctx, objtest.TrainingJob("team-a", "train-priority"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := a.podOf("team-a", "job-name=train-priority")
	up := a.event("team-a", pod.Name, castatus.ReasonTriggeredScaleUp)
	if ups, _ := castatus.ParseTriggered(up.Message); len(ups) != 1 || ups[0].Pool != "gpu" {
		t.Errorf("with the priority expander and gpu ranked first, TriggeredScaleUp says %q; want pool gpu", up.Message)
	}
	// Not random's luck: the decision names the expander that made it.
	a.eventually(10*time.Second, "pool gpu's last scale-up recorded as the priority expander's choice", func() (bool, error) {
		act := a.status().pool("gpu")
		return act != nil && act.LastScaleUp != nil && strings.Contains(act.LastScaleUp.Reason, "expander priority chose pool gpu"), nil
	})
}

// spotInterruption interrupts the spot node a training Job runs on (a
// run of 60 s, backoffLimit 0, its podFailurePolicy from the class) and the node of one replica of a
// budgeted Deployment with one replica per spot node: the training
// pod fails with DisruptionTarget, which the Job's podFailurePolicy
// ignores, and its replacement runs on a new spot node the autoscaler
// adds; the Deployment never has fewer than its minAvailable of 2
// replicas ready.
func (a *scaleEnv) spotInterruption(t *testing.T) {
	ctx := context.Background()
	// No podFailurePolicy: the training class, on a spot pool, gives the
	// Job its DisruptionTarget rule at admission.
	job := objtest.TrainingJob("team-a", "resume")
	job.Spec.BackoffLimit = ptr.To(int32(0))
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "60s"}
	job.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "spot-gpu"}
	stored, err := a.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := stored.Spec.PodFailurePolicy; p == nil || len(p.Rules) == 0 || p.Rules[0].Action != batchv1.PodFailurePolicyActionIgnore ||
		len(p.Rules[0].OnPodConditions) == 0 || p.Rules[0].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Fatalf("the training class gave the Job no DisruptionTarget Ignore rule: %+v", p)
	}
	serve := objtest.MakeDeployment("ops", "serve", 3).NodeSelector(v1alpha1.LabelPool, "spot-gpu").Tolerate("gpu").Tolerate(v1alpha1.LabelCapacity).Obj()
	// One replica per node: required anti-affinity (a hostname spread
	// would put all three on the first node, the only domain there is).
	serve.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: serve.Spec.Selector}},
	}}
	a.create(serve)
	a.create(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "serve"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: serve.Spec.Selector},
	})
	var train corev1.Pod
	a.eventually(2*time.Minute, "the training pod and 3 serving replicas running on spot nodes", func() (bool, error) {
		pods, err := a.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=resume"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		train = pods.Items[0]
		return a.readyServing() == 3, nil
	})
	// One node to interrupt: the training pod's; if a serving replica
	// shares it, the interruption takes both.
	interrupted := train.Spec.NodeName
	before, err := a.c.CoreV1().Nodes().Get(ctx, interrupted, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := mustBerth(t, a.home, "spot", "interrupt", interrupted, "--notice", "3s", "--context", "berth-scale")
	if !strings.Contains(out, "Interrupted 1 spot node(s): "+interrupted) {
		t.Errorf("berth spot interrupt says:\n%s", out)
	}
	// A watch would be exact; polling every 100 ms sees a drop that
	// lasts longer than that, which a broken budget would.
	low := 3
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
				low = min(low, a.readyServing())
			}
		}
	}()
	a.eventually(time.Minute, "the training pod failed with DisruptionTarget", func() (bool, error) {
		p, err := a.c.CoreV1().Pods("team-a").Get(ctx, train.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("the interrupted pod is gone before it was seen failed")
		}
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonTerminationByKubelet {
				return p.Status.Phase == corev1.PodFailed, nil
			}
		}
		return false, nil
	})
	a.eventually(2*time.Minute, "a replacement training pod running on a new spot node", func() (bool, error) {
		pods, err := a.c.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{LabelSelector: "job-name=resume"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Name == train.Name || p.Status.Phase != corev1.PodRunning {
				continue
			}
			n, err := a.c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return n.UID != before.UID, nil
		}
		return false, nil
	})
	a.eventually(time.Minute, "3 serving replicas ready again", func() (bool, error) { return a.readyServing() == 3, nil })
	close(done)
	j, err := a.c.BatchV1().Jobs("team-a").Get(ctx, "resume", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 0 {
		t.Errorf("the Job counts %d failed pod(s) after an interruption; its podFailurePolicy should ignore it (backoffLimit 0)", j.Status.Failed)
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			t.Errorf("the Job failed after an interruption: %s", c.Message)
		}
	}
	if low < 2 {
		t.Errorf("the budgeted Deployment dropped to %d ready replicas during the interruption; want never below minAvailable 2", low)
	}
	if st, _ := berth(t, a.home, "status", "--context", "berth-scale"); !strings.Contains(st, "SPOT INTERRUPTIONS") || !strings.Contains(st, interrupted) {
		t.Errorf("berth status does not list the interruption of %s:\n%s", interrupted, st)
	}
	a.c.BatchV1().Jobs("team-a").Delete(ctx, "resume", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	a.deleteDeployment("ops", "serve")
}

// readyServing counts the ready replicas of the serve Deployment.
func (a *scaleEnv) readyServing() int {
	pods, err := a.c.CoreV1().Pods("ops").List(context.Background(), metav1.ListOptions{LabelSelector: "app=serve"})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// --- helpers on the autoscaler's cluster ---

// autoscalerLog is what the cluster's log says of the autoscaler, for a
// failure's message.
func (a *scaleEnv) autoscalerLog() string {
	raw, err := os.ReadFile(filepath.Join(a.home, "clusters", "scale", "berth.log"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "autoscaler") && !strings.Contains(line, "horizontalpodautoscalers") {
			out = append(out, line)
		}
	}
	return strings.Join(out[max(0, len(out)-40):], "\n")
}

func (a *scaleEnv) eventually(timeout time.Duration, what string, cond func() (bool, error)) {
	a.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		st, _ := berth(a.t, a.home, "status")
		a.t.Fatalf("waiting for %s: %v\nberth status:\n%s\nthe autoscaler's log lines:\n%s", what, err, st, a.autoscalerLog())
	}
}

func (a *scaleEnv) create(obj any) {
	a.t.Helper()
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = a.c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		if err == nil {
			a.eventually(time.Minute, "namespace "+o.Name+" ready", func() (bool, error) {
				_, err := a.c.CoreV1().ServiceAccounts(o.Name).Get(ctx, "default", metav1.GetOptions{})
				return err == nil, nil
			})
		}
	case *appsv1.Deployment:
		_, err = a.c.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = a.c.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *policyv1.PodDisruptionBudget:
		_, err = a.c.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		a.t.Fatalf("create: %T", obj)
	}
	if err != nil {
		a.t.Fatalf("creating %T: %v", obj, err)
	}
}

func (a *scaleEnv) deleteDeployment(ns, name string) {
	a.c.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
}

func (a *scaleEnv) annotate(node, key, value string) {
	a.t.Helper()
	v := fmt.Sprintf("%q", value)
	if value == "" {
		v = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
	if _, err := a.c.CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		a.t.Fatal(err)
	}
}

func (a *scaleEnv) nodes(pool string) []corev1.Node {
	a.t.Helper()
	list, err := a.c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + pool})
	if err != nil {
		a.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

func (a *scaleEnv) poolSize(pool string) int { return len(a.nodes(pool)) }

func (a *scaleEnv) node(pool string) corev1.Node {
	a.t.Helper()
	ns := a.nodes(pool)
	if len(ns) == 0 {
		a.t.Fatalf("pool %s has no node", pool)
	}
	return ns[0]
}

// nodeWatch follows a set of nodes from a list on and keeps the first
// change to the set: a node added or deleted, or one marked for deletion
// (the autoscaler's ToBeDeleted taint, or a deletion timestamp) that was
// not at the list.
type nodeWatch struct {
	// changed holds the first change, in words; the watch stops there.
	changed chan string
	stop    func()
}

// watchNodes lists the nodes that match selector ("" for every node) and
// follows them from that list on, until steady or the test ends.
func (a *scaleEnv) watchNodes(selector string) *nodeWatch {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l, err := a.c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		a.t.Fatal(err)
	}
	marked := map[string]bool{}
	for i := range l.Items {
		marked[l.Items[i].Name] = markedForDeletion(&l.Items[i])
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return a.c.CoreV1().Nodes().Watch(ctx, o)
	}}
	// A RetryWatcher resumes from the last event it delivered when the
	// API server closes the stream, so no change is lost.
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, l.ResourceVersion, lw)
	if err != nil {
		a.t.Fatal(err)
	}
	w := &nodeWatch{changed: make(chan string, 1), stop: func() { cancel(); rw.Stop() }}
	a.t.Cleanup(w.stop)
	go func() {
		for ev := range rw.ResultChan() {
			var change string
			switch ev.Type {
			case watch.Added, watch.Deleted:
				change = fmt.Sprintf("node %s %s", ev.Object.(*corev1.Node).Name, strings.ToLower(string(ev.Type)))
			case watch.Modified:
				if n := ev.Object.(*corev1.Node); markedForDeletion(n) && !marked[n.Name] {
					change = "node " + n.Name + " marked for deletion"
				}
			case watch.Error:
				change = "the watch failed: " + apierrors.FromObject(ev.Object).Error()
			}
			if change != "" {
				w.changed <- change
				return
			}
		}
	}()
	return w
}

func markedForDeletion(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.TaintToBeDeleted {
			return true
		}
	}
	return false
}

// steady waits out window and fails the test at the first change the
// watch has seen since it began, so that a node that comes and goes within
// the window fails it as one that stays does.
func (w *nodeWatch) steady(t *testing.T, window time.Duration, what string) {
	t.Helper()
	defer w.stop()
	select {
	case change := <-w.changed:
		t.Errorf("%s: %s; want the nodes unchanged", what, change)
	case <-time.After(window):
	}
}

func (a *scaleEnv) nodeCount() int {
	list, err := a.c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return len(list.Items)
}

// podOf waits for the first pod matching selector.
func (a *scaleEnv) podOf(ns, selector string) corev1.Pod {
	a.t.Helper()
	var pod corev1.Pod
	a.eventually(time.Minute, "a pod "+selector+" in "+ns, func() (bool, error) {
		list, err := a.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		pod = list.Items[0]
		return true, nil
	})
	return pod
}

// event waits for an event with reason on a pod.
func (a *scaleEnv) event(ns, pod, reason string) corev1.Event {
	a.t.Helper()
	var ev corev1.Event
	// What the autoscaler judges the pod by, printed should the wait
	// fail: its first scale-up has been seen not to come, cause unknown.
	defer func() {
		if a.t.Failed() {
			if p, err := a.c.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{}); err == nil {
				a.t.Logf("pod %s/%s: node %q, nominated %q, conditions %+v, tolerations %+v, affinity %+v, labels %v", ns, pod, p.Spec.NodeName, p.Status.NominatedNodeName, p.Status.Conditions, p.Spec.Tolerations, p.Spec.Affinity, p.Labels)
			}
			if list, err := a.c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod}); err == nil {
				for _, e := range list.Items {
					a.t.Logf("event on %s/%s: %s %s (%s, x%d): %s", ns, pod, e.Type, e.Reason, e.Source.Component, e.Count, e.Message)
				}
			}
		}
	}()
	a.eventually(time.Minute, reason+" on pod "+ns+"/"+pod, func() (bool, error) {
		list, err := a.c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",reason=" + reason})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		ev = list.Items[len(list.Items)-1]
		return true, nil
	})
	return ev
}

func (a *scaleEnv) hasNodeEvent(node, reason, substr string) bool {
	list, err := a.c.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=" + reason})
	if err != nil {
		return false
	}
	for _, e := range list.Items {
		if strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

type scaleStatus struct{ act *castatus.Activity }

func (s scaleStatus) pool(name string) *castatus.PoolActivity {
	if s.act == nil {
		return nil
	}
	for i := range s.act.Pools {
		if s.act.Pools[i].Name == name {
			return &s.act.Pools[i]
		}
	}
	return nil
}

func (a *scaleEnv) status() scaleStatus {
	a.t.Helper()
	cm, err := a.c.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(context.Background(), castatus.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	_, act, err := castatus.Read(cm)
	if err != nil {
		a.t.Fatal(err)
	}
	return scaleStatus{act: act}
}
