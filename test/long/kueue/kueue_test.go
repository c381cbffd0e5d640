//go:build long

package kueue_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/test/harness"
)

// Kueue's own controllers on a cluster of their own, started through the
// real command line from testdata/kueue.yaml (queueing: Kueue; what each
// team may borrow and lend is in its comments). Every decision the tests
// look for (suspension, admission, flavor, reclaim) is Kueue's.
func TestKueue(t *testing.T) {
	k, bpFile := startCluster(t, "testdata/kueue.yaml", "kq")

	t.Run("the blueprint's ClusterQueues are active", k.queuesActive)
	t.Run("a team's Job that names no queue gets its team's; one naming another team's is refused, on update too; other namespaces' Jobs are left alone", k.guardrails)
	t.Run("a Job for a full ClusterQueue waits suspended with no pods, and is admitted when a running Job completes", k.suspendedUntilFree)
	t.Run("team-b runs on team-a's unused GPUs, and team-a reclaims them by preemption", k.borrowAndReclaim)
	t.Run("a Job lands on its flavor's pool, and on on-demand only where its class allows", k.flavors)
	t.Run("a team added by berth apply gets its ClusterQueue, LocalQueue and queue guardrails; --prune takes them away", func(t *testing.T) { k.teamAdded(t, bpFile) })
	t.Run("berth down and up: Kueue comes back, its Workloads kept, and admits", func(t *testing.T) { k.resume(t, bpFile) })
	t.Run("started again under ResourceQuota: Kueue's webhooks are gone and Jobs run", func(t *testing.T) { k.withoutKueue(t, bpFile) })
}

// startCluster starts a cluster of its own, named name, from the
// blueprint file, through the command line, and stops it when the test
// ends; it returns the clients and the blueprint's absolute path.
func startCluster(t *testing.T, file, name string) (*kueueEnv, string) {
	t.Helper()
	home := t.TempDir()
	bpFile, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	harness.MustBerth(t, home, "up", "-d", "-f", bpFile, "--name", name)
	t.Cleanup(func() { harness.Berth(t, home, "down", "--name", name, "--purge") })
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-" + name}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &kueueEnv{home: home, c: kubernetes.NewForConfigOrDie(cfg), kq: kueueclient.NewForConfigOrDie(cfg)}, bpFile
}

type kueueEnv struct {
	home string
	c    kubernetes.Interface
	kq   kueueclient.Interface
}

func (k *kueueEnv) queuesActive(t *testing.T) {
	harness.Eventually(t, time.Minute, "every ClusterQueue Active", func() (bool, error) {
		list, err := k.kq.KueueV1beta2().ClusterQueues().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var names []string
		for _, cq := range list.Items {
			if apimeta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive) {
				names = append(names, cq.Name)
			}
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"team-a", "team-b", "team-c", "team-d"}), nil
	})
}

// job is a Job of class in team's namespace that asks for one GPU, in the
// team's LocalQueue, as `berth new training` labels it; its pod runs for
// runFor (the simulated kubelet's berth.io/duration), 0 for at once.
func job(team, name, class string, runFor time.Duration) *batchv1.Job {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelClass: class}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "train", Image: "registry.example.com/" + team + "/" + name + ":0.1.0",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				},
			}},
		},
	}
	if runFor > 0 {
		tmpl.Annotations = map[string]string{v1alpha1.AnnotationDuration: runFor.String()}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team, Labels: map[string]string{
			v1alpha1.LabelClass:              class,
			v1alpha1.LabelKueueQueueName:     team,
			v1alpha1.LabelKueuePriorityClass: "training-low",
		}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](4), Template: tmpl},
	}
}

func (k *kueueEnv) submit(t *testing.T, jobs ...*batchv1.Job) {
	t.Helper()
	for _, j := range jobs {
		if _, err := k.c.BatchV1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("submitting Job %s/%s: %v", j.Namespace, j.Name, err)
		}
	}
}

// removeJobs deletes every Job of the teams, and waits for their pods and
// Workloads to go, so the next test starts with the quota free.
func (k *kueueEnv) removeJobs(t *testing.T, teams ...string) {
	t.Helper()
	for _, ns := range teams {
		err := k.c.BatchV1().Jobs(ns).DeleteCollection(context.Background(),
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 2*time.Minute, "the teams' pods and Workloads gone", func() (bool, error) {
		for _, ns := range teams {
			pods, err := k.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			wls, err := k.kq.KueueV1beta2().Workloads(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(pods.Items)+len(wls.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// workload is the Workload Kueue made for the Job ns/name, or nil.
func (k *kueueEnv) workload(ns, name string) (*kueue.Workload, error) {
	list, err := k.kq.KueueV1beta2().Workloads(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, o := range list.Items[i].OwnerReferences {
			if o.Kind == "Job" && o.Name == name {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

func (k *kueueEnv) admitted(ns, name string) (bool, error) {
	wl, err := k.workload(ns, name)
	if wl == nil || err != nil {
		return false, err
	}
	return apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted), nil
}

// waiting reports whether the Job ns/name is held by Kueue: suspended, no
// pod of its own, its Workload without quota. It returns the Workload's
// reason for waiting.
func (k *kueueEnv) waiting(ns, name string) (bool, string, error) {
	j, err := k.c.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	if !ptr.Deref(j.Spec.Suspend, false) {
		return false, "the Job is not suspended", nil
	}
	pods, err := k.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return false, "", err
	}
	if len(pods.Items) > 0 {
		return false, "the Job has pods", nil
	}
	wl, err := k.workload(ns, name)
	if wl == nil || err != nil {
		return false, "no Workload yet", err
	}
	c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false, "no QuotaReserved=False condition", nil
	}
	return true, c.Message, nil
}

// running is the node the Job's pod runs on, "" while none does.
func (k *kueueEnv) running(ns, name string) (string, error) {
	pods, err := k.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			return p.Spec.NodeName, nil
		}
	}
	return "", nil
}

func (k *kueueEnv) poolOf(node string) (string, error) {
	n, err := k.c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return n.Labels[v1alpha1.LabelPool], nil
}

func (k *kueueEnv) complete(ns, name string) (bool, error) {
	j, err := k.c.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// team-c has one GPU and borrows none: its second Job waits suspended,
// holding nothing (a ResourceQuota would count a Pending pod), until the
// first completes.
func (k *kueueEnv) suspendedUntilFree(t *testing.T) {
	defer k.removeJobs(t, "team-c")
	k.submit(t, job("team-c", "first", "training", 40*time.Second))
	harness.Eventually(t, 2*time.Minute, "team-c's first Job running", func() (bool, error) {
		node, err := k.running("team-c", "first")
		return node != "", err
	})
	k.submit(t, job("team-c", "second", "training", 0))
	var why string
	harness.Holds(t, 10*time.Second, "team-c's second Job suspended, with no pods and no quota", func() (bool, error) {
		ok, reason, err := k.waiting("team-c", "second")
		why = reason
		return ok, err
	})
	if !strings.Contains(why, "insufficient unused quota") {
		t.Errorf("the waiting Workload's reason is %q; want Kueue's insufficient quota", why)
	}
	// berth why says so, in Kueue's words, with its place in the queue
	// (Kueue's visibility API, through the aggregator) and the fix;
	// --all lists it beside the Pending pods.
	out, _ := harness.Berth(t, k.home, "why", "job/second", "-n", "team-c", "--context", "berth-kq")
	for _, want := range []string{"waits suspended in LocalQueue team-c (1st of 1 waiting in the LocalQueue, 1st in its ClusterQueue), holding no quota", "insufficient unused quota", "raise the team's quota.gpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth why job/second does not say %q:\n%s", want, out)
		}
	}
	if out, _ := harness.Berth(t, k.home, "why", "--all", "-n", "team-c", "--context", "berth-kq"); !strings.Contains(out, "job/team-c/second") {
		t.Errorf("berth why --all does not list the suspended Job:\n%s", out)
	}
	harness.Eventually(t, 2*time.Minute, "team-c's first Job complete and its second admitted and complete", func() (bool, error) {
		first, err := k.complete("team-c", "first")
		if !first || err != nil {
			return false, err
		}
		return k.complete("team-c", "second")
	})
}

// team-b's four Jobs run on its two GPUs and two of team-a's it borrows;
// team-a's two Jobs then reclaim team-a's quota: Kueue preempts two of
// team-b's borrowing Jobs, which wait suspended again.
func (k *kueueEnv) borrowAndReclaim(t *testing.T) {
	defer k.removeJobs(t, "team-a", "team-b")
	names := []string{"b1", "b2", "b3", "b4"}
	for _, n := range names {
		k.submit(t, job("team-b", n, "training", time.Hour))
	}
	harness.Eventually(t, 2*time.Minute, "team-b's four Jobs running", func() (bool, error) {
		for _, n := range names {
			if node, err := k.running("team-b", n); node == "" || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	cq, err := k.kq.KueueV1beta2().ClusterQueues().Get(context.Background(), "team-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := borrowedGPUs(cq); got != 2 {
		t.Errorf("team-b's ClusterQueue borrows %d GPUs; want 2 (its status: %+v)", got, cq.Status.FlavorsUsage)
	}
	harness.Eventually(t, 30*time.Second, "berth status showing team-b's borrowing", func() (bool, error) {
		st, _ := harness.Berth(t, k.home, "status", "--context", "berth-kq")
		return strings.Contains(st, "spot-gpu 2/1 (1 borrowed), gpu 2/1 (1 borrowed)"), nil
	})

	k.submit(t, job("team-a", "a1", "training", time.Hour), job("team-a", "a2", "training", time.Hour))
	harness.Eventually(t, 2*time.Minute, "team-a's Jobs admitted and two of team-b's preempted", func() (bool, error) {
		for _, n := range []string{"a1", "a2"} {
			if ok, err := k.admitted("team-a", n); !ok || err != nil {
				return false, err
			}
		}
		preempted, err := k.preempted(t, "team-b", names, kueue.InCohortReclamationReason)
		if err != nil {
			return false, err
		}
		return preempted == 2, nil
	})
	harness.Eventually(t, time.Minute, "two of team-b's Jobs waiting suspended again", func() (bool, error) {
		suspended := 0
		for _, n := range names {
			ok, _, err := k.waiting("team-b", n)
			if err != nil {
				return false, err
			}
			if ok {
				suspended++
			}
		}
		return suspended == 2, nil
	})
	for _, n := range names {
		if ok, _, err := k.waiting("team-b", n); err != nil || !ok {
			continue
		}
		out, _ := harness.Berth(t, k.home, "why", "job/"+n, "-n", "team-b", "--context", "berth-kq")
		for _, want := range []string{"Kueue preempted job/team-b/" + n, kueue.InCohortReclamationReason, "queue.borrow: 0"} {
			if !strings.Contains(out, want) {
				t.Errorf("berth why job/%s does not say %q:\n%s", n, want, out)
			}
		}
	}
}

func borrowedGPUs(cq *kueue.ClusterQueue) int64 {
	var n int64
	for _, f := range cq.Status.FlavorsUsage {
		for _, r := range f.Resources {
			if r.Name == "nvidia.com/gpu" {
				n += r.Borrowed.Value()
			}
		}
	}
	return n
}

// team-d has one spot GPU and one on-demand: its first training Job is
// admitted on the spot flavor (the class's first pool) and lands on the
// spot pool; the second on on-demand, which the class also reaches; a
// spot-training Job, whose class reaches spot alone, waits.
func (k *kueueEnv) flavors(t *testing.T) {
	defer k.removeJobs(t, "team-d")
	want := map[string]string{"d1": "spot-gpu", "d2": "gpu"}
	for _, n := range []string{"d1", "d2"} {
		k.submit(t, job("team-d", n, "training", time.Hour))
		harness.Eventually(t, 2*time.Minute, "team-d's "+n+" running", func() (bool, error) {
			node, err := k.running("team-d", n)
			return node != "", err
		})
		wl, err := k.workload("team-d", n)
		if err != nil || wl == nil || wl.Status.Admission == nil || len(wl.Status.Admission.PodSetAssignments) == 0 {
			t.Fatalf("team-d's %s runs, but its Workload is not admitted: %+v (%v)", n, wl, err)
		}
		if got := wl.Status.Admission.PodSetAssignments[0].Flavors["nvidia.com/gpu"]; string(got) != want[n] {
			t.Errorf("%s admitted on flavor %s; want %s", n, got, want[n])
		}
		node, err := k.running("team-d", n)
		if err != nil {
			t.Fatal(err)
		}
		if pool, err := k.poolOf(node); err != nil || pool != want[n] {
			t.Errorf("%s runs on %s, of pool %q (%v); want pool %s", n, node, pool, err, want[n])
		}
	}
	k.submit(t, job("team-d", "d3", "spot-training", time.Hour))
	harness.Holds(t, 10*time.Second, "team-d's spot-training Job waiting", func() (bool, error) {
		ok, _, err := k.waiting("team-d", "d3")
		return ok, err
	})
}

// The guardrails: a Job in a team namespace that names no queue gets its
// team's LocalQueue on admission, early enough for Kueue's webhook to
// suspend it at creation (it never has a pod before Kueue admits it);
// one naming another team's queue is refused, saying which and the fix,
// whether created so or relabelled; a Job outside the team namespaces
// (default, kube-system) is left as it is.
func (k *kueueEnv) guardrails(t *testing.T) {
	defer k.removeJobs(t, "team-c")
	bare := job("team-c", "bare", "training", 0)
	delete(bare.Labels, v1alpha1.LabelKueueQueueName)
	got, err := k.c.BatchV1().Jobs("team-c").Create(context.Background(), bare, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Labels[v1alpha1.LabelKueueQueueName]; q != "team-c" {
		t.Errorf("a Job that named no queue came back in queue %q; want team-c", q)
	}
	if !ptr.Deref(got.Spec.Suspend, false) {
		t.Error("the Job came back unsuspended: Kueue's webhook did not see the queue berth gave it")
	}
	harness.Eventually(t, 2*time.Minute, "the Job admitted by Kueue and complete", func() (bool, error) {
		return k.complete("team-c", "bare")
	})

	other := job("team-c", "elsewhere", "training", 0)
	other.Labels[v1alpha1.LabelKueueQueueName] = "team-a"
	_, err = k.c.BatchV1().Jobs("team-c").Create(context.Background(), other, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a Job in team-c naming team-a's queue was admitted")
	}
	for _, want := range []string{v1alpha1.RuleTeamQueue, "names LocalQueue team-a", "whose LocalQueue is team-c", "Fix: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}

	// An update is held to the same rule: the finished Job, relabelled
	// to team-a's queue (a dry run: admission decides, nothing is kept).
	done, err := k.c.BatchV1().Jobs("team-c").Get(context.Background(), "bare", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done.Labels[v1alpha1.LabelKueueQueueName] = "team-a"
	_, err = k.c.BatchV1().Jobs("team-c").Update(context.Background(), done, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), v1alpha1.RuleTeamQueue) {
		t.Errorf("relabelling team-c's Job to team-a's queue: %v; want refused by %s", err, v1alpha1.RuleTeamQueue)
	}

	// Outside the team namespaces a Job is not Kueue's unless it says
	// so: given no queue, not suspended.
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		plain := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.example.com/tools:1"}},
			}}},
		}
		got, err := k.c.BatchV1().Jobs(ns).Create(context.Background(), plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("a Job in %s: %v; want admitted as it is", ns, err)
			continue
		}
		if q, ok := got.Labels[v1alpha1.LabelKueueQueueName]; ok || ptr.Deref(got.Spec.Suspend, false) {
			t.Errorf("a Job in %s came back in queue %q, suspended %v; want no queue and not suspended", ns, q, ptr.Deref(got.Spec.Suspend, false))
		}
	}
}

// A team added to the blueprint later, through berth apply, is queued as
// the first ones are: its ClusterQueue joins the cohort, its namespace
// gets a LocalQueue, and the guardrails, which name the blueprint's team
// namespaces literally, are written again to hold its namespace too: a
// Job there that names no queue gets team-e's and Kueue admits it; one
// naming team-a's is refused. apply --prune with the first blueprint
// removes the team's queues again.
func (k *kueueEnv) teamAdded(t *testing.T, bpFile string) {
	raw, err := os.ReadFile(bpFile)
	if err != nil {
		t.Fatal(err)
	}
	const teamE = `  - name: team-e
    quota: {gpu: 1}
    queue:
      gpus: [{pool: spot-gpu, count: 1}, {pool: gpu, count: 0}]
      borrow: 0
      lend: 0
  classes:
`
	doc := strings.Replace(string(raw), "  classes:\n", teamE, 1)
	added := filepath.Join(t.TempDir(), "team-e.yaml")
	if err := os.WriteFile(added, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	harness.MustBerth(t, k.home, "apply", "-f", added, "--context", "berth-kq")
	harness.Eventually(t, time.Minute, "team-e's ClusterQueue Active", func() (bool, error) {
		cq, err := k.kq.KueueV1beta2().ClusterQueues().Get(context.Background(), "team-e", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && apimeta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive), err
	})

	bare := job("team-e", "bare", "spot-training", 0)
	delete(bare.Labels, v1alpha1.LabelKueueQueueName)
	got, err := k.c.BatchV1().Jobs("team-e").Create(context.Background(), bare, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Labels[v1alpha1.LabelKueueQueueName]; q != "team-e" || !ptr.Deref(got.Spec.Suspend, false) {
		t.Errorf("a Job in team-e that named no queue came back in queue %q, suspended %v; want team-e's, suspended", q, ptr.Deref(got.Spec.Suspend, false))
	}
	harness.Eventually(t, 2*time.Minute, "team-e's Job admitted by Kueue and complete", func() (bool, error) {
		return k.complete("team-e", "bare")
	})
	other := job("team-e", "elsewhere", "spot-training", 0)
	other.Labels[v1alpha1.LabelKueueQueueName] = "team-a"
	_, err = k.c.BatchV1().Jobs("team-e").Create(context.Background(), other, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "whose LocalQueue is team-e") {
		t.Errorf("a Job in team-e naming team-a's queue: %v; want refused by %s, naming team-e's queue", err, v1alpha1.RuleTeamQueue)
	}
	k.removeJobs(t, "team-e")

	harness.MustBerth(t, k.home, "apply", "-f", bpFile, "--prune", "--context", "berth-kq")
	// Kueue holds a ClusterQueue in use by its finalizer until its last
	// Workload is gone; removeJobs waited for those.
	harness.Eventually(t, time.Minute, "team-e's ClusterQueue and LocalQueue gone after apply --prune without the team", func() (bool, error) {
		_, cqErr := k.kq.KueueV1beta2().ClusterQueues().Get(context.Background(), "team-e", metav1.GetOptions{})
		_, lqErr := k.kq.KueueV1beta2().LocalQueues("team-e").Get(context.Background(), "team-e", metav1.GetOptions{})
		for _, err := range []error{cqErr, lqErr} {
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// A cluster stopped and started again runs Kueue again, on a new
// webhook port and certificate: an admitted Job's Workload is kept, and a
// Job submitted after the restart is suspended by the webhook and
// admitted.
func (k *kueueEnv) resume(t *testing.T, bpFile string) {
	defer k.removeJobs(t, "team-d")
	k.submit(t, job("team-d", "before", "training", time.Hour))
	harness.Eventually(t, 2*time.Minute, "team-d's Job admitted before the restart", func() (bool, error) {
		return k.admitted("team-d", "before")
	})
	harness.MustBerth(t, k.home, "down", "--name", "kq")
	harness.MustBerth(t, k.home, "up", "-d", "-f", bpFile, "--name", "kq")
	if ok, err := k.admitted("team-d", "before"); err != nil || !ok {
		t.Errorf("team-d's Job is no longer admitted after the restart (%v)", err)
	}
	after := job("team-d", "after", "training", time.Hour)
	got, err := k.c.BatchV1().Jobs("team-d").Create(context.Background(), after, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("submitting a Job after the restart: %v", err)
	}
	if !ptr.Deref(got.Spec.Suspend, false) {
		t.Error("a Job submitted after the restart came back unsuspended: Kueue's webhook is not registered again")
	}
	harness.Eventually(t, 2*time.Minute, "the Job submitted after the restart admitted", func() (bool, error) {
		return k.admitted("team-d", "after")
	})
}

// The same cluster started again from the blueprint under ResourceQuota
// runs no Kueue: the webhooks it registered, which fail closed, are
// removed, so a Job is admitted and runs.
func (k *kueueEnv) withoutKueue(t *testing.T, bpFile string) {
	raw, err := os.ReadFile(bpFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "  queueing: Kueue\n", "", 1)
	doc = regexp.MustCompile(`(?m)^    queue:\n(      .*\n)+`).ReplaceAllString(doc, "")
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	harness.MustBerth(t, k.home, "down", "--name", "kq")
	harness.MustBerth(t, k.home, "up", "-d", "-f", plain, "--name", "kq")
	hooks := k.c.AdmissionregistrationV1()
	if _, err := hooks.MutatingWebhookConfigurations().Get(context.Background(), v1alpha1.KueueMutatingWebhooks, metav1.GetOptions{}); err == nil {
		t.Errorf("%s is still registered", v1alpha1.KueueMutatingWebhooks)
	}
	if _, err := hooks.ValidatingWebhookConfigurations().Get(context.Background(), v1alpha1.KueueValidatingWebhooks, metav1.GetOptions{}); err == nil {
		t.Errorf("%s is still registered", v1alpha1.KueueValidatingWebhooks)
	}
	// Nor its visibility API, which would fail every client's discovery.
	for _, name := range v1alpha1.KueueVisibilityAPIServices {
		path := "/apis/apiregistration.k8s.io/v1/apiservices/" + name
		if _, err := k.c.Discovery().RESTClient().Get().AbsPath(path).DoRaw(context.Background()); !apierrors.IsNotFound(err) {
			t.Errorf("APIService %s is still registered (or unreadable: %v)", name, err)
		}
	}
	if _, err := k.c.Discovery().ServerGroups(); err != nil {
		t.Errorf("discovering the cluster's APIs without Kueue: %v", err)
	}
	j := job("team-c", "plain", "training", 0)
	delete(j.Labels, v1alpha1.LabelKueueQueueName)
	delete(j.Labels, v1alpha1.LabelKueuePriorityClass)
	k.submit(t, j)
	harness.Eventually(t, 2*time.Minute, "a Job under ResourceQuota complete", func() (bool, error) {
		return k.complete("team-c", "plain")
	})
}

// preempted counts the Jobs of ns among names whose Workload Kueue
// preempted, and fails the test for one preempted for another reason than
// want.
func (k *kueueEnv) preempted(t *testing.T, ns string, names []string, want string) (int, error) {
	t.Helper()
	n := 0
	for _, name := range names {
		wl, err := k.workload(ns, name)
		if wl == nil || err != nil {
			return 0, err
		}
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadPreempted); c != nil && c.Status == metav1.ConditionTrue {
			if c.Reason != want {
				t.Errorf("%s's %s was preempted for %s (%s); want %s", ns, name, c.Reason, c.Message, want)
			}
			n++
		}
	}
	return n, nil
}
