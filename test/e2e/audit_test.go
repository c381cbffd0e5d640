package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit"
	"berth.io/berth/internal/objtest"
)

// auditJSON runs `berth audit ARGS -o json` and decodes the report.
func auditJSON(t *testing.T, home string, args ...string) (*audit.Report, int) {
	t.Helper()
	out, errOut, code := berthOut(t, home, append([]string{"audit", "-o", "json"}, args...)...)
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("berth audit %v exited %d with no JSON report: %v\n%s%s", args, code, err, errOut, out)
	}
	return &r, code
}

// A cluster made from the retail blueprint, with a node in each GPU pool,
// passes its own audit; a change behind berth's back is reported as drift,
// and the audit then fails.
func TestAuditRetailCluster(t *testing.T) {
	home := t.TempDir()
	bpFile := filepath.Join(home, "retail.yaml")
	mustBerth(t, home, "init", bpFile)
	mustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "audit", "--nodes", "gpu=1", "--nodes", "spot-gpu=1")
	t.Cleanup(func() { berth(t, home, "down", "--name", "audit", "--purge") })

	// Nothing but the one weakness of the design itself, a warning: each
	// team's inference and batch-inference pods can hold its GPU quota
	// while they wait for pool gpu (the rehearsal's finding).
	designOnly := func(r *audit.Report) (others []audit.Finding, held int) {
		for _, f := range r.Findings {
			if f.Rule == v1alpha1.RuleQuotaHeldWaiting {
				held++
			} else {
				others = append(others, f)
			}
		}
		return others, held
	}
	r, code := auditJSON(t, home)
	if code != 0 || r.Errors() != 0 {
		t.Errorf("audit of a fresh retail cluster exited %d with %d error(s): %+v", code, r.Errors(), r.Findings)
	}
	others, held := designOnly(r)
	for _, f := range others {
		t.Errorf("unexpected finding on a fresh retail cluster: %s %s: %s", f.Rule, f.Object, f.Message)
	}
	if held != 4 {
		t.Errorf("%d %s findings on a fresh retail cluster; want 4 (2 teams, 2 classes)", held, v1alpha1.RuleQuotaHeldWaiting)
	}
	if r.Objects["Node"] != 8 || r.Objects["ResourceQuota"] == 0 || r.Objects["PriorityClass"] == 0 {
		t.Errorf("audited %v; want the retail cluster's 8 nodes, quotas and priority classes", r.Objects)
	}
	if r, code := auditJSON(t, home, "-f", bpFile); code != 0 {
		t.Errorf("audit -f of a fresh retail cluster exited %d with findings %+v", code, r.Findings)
	} else if others, held := designOnly(r); len(others) != 0 || held != 4 {
		t.Errorf("audit -f of a fresh retail cluster: %d %s findings (want 4) and others %+v", held, v1alpha1.RuleQuotaHeldWaiting, others)
	}

	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-audit"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	if err := c.CoreV1().LimitRanges("team-a").Delete(context.Background(), "team-defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, code = auditJSON(t, home, "-f", bpFile)
	if code != 1 {
		t.Errorf("audit -f after deleting a LimitRange exited %d, want 1", code)
	}
	var drift, missing bool
	for _, f := range r.Findings {
		drift = drift || (f.Rule == v1alpha1.RuleDrift && f.Object == audit.Object{Kind: "LimitRange", Namespace: "team-a", Name: "team-defaults"} && strings.Contains(f.Fix, "berth apply -f "+bpFile))
		missing = missing || (f.Rule == v1alpha1.RuleLimitRangeMissing && f.Object.Name == "team-a")
	}
	if !drift || !missing {
		t.Errorf("after deleting team-a's LimitRange, want drift and %s findings, got %+v", v1alpha1.RuleLimitRangeMissing, r.Findings)
	}

	// The same audit, for CI: SARIF that tools read, exit 1.
	out, errOut, code := berthOut(t, home, "audit", "-f", bpFile, "-o", "sarif")
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil || code != 1 || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 || len(sarif.Runs[0].Results) != len(r.Findings) {
		t.Errorf("audit -o sarif: exit %d, err %v, want SARIF 2.1.0 with %d results:\n%s%s", code, err, len(r.Findings), errOut, out)
	}
}

// On the suite's cluster, audit -n reads a live namespace: what the
// guardrails cannot refuse (a quota key that is never enforced, a GPU
// max that Kubernetes turns into a default, a budget that blocks every
// drain) is reported with the rule, the object and the fix.
func TestAuditLiveNamespace(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// The pods first: the LimitRange below would give them GPUs. A
	// Deployment's pods are checked through its template; a bare pod is
	// read in full and checked itself.
	createDeployment(t, objtest.MakeDeployment(ns, "web", 2).Obj())
	solo := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "solo", Labels: map[string]string{"app": "solo"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, solo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=web", 2)
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "caps"},
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := intstr.FromInt32(2)
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	home := t.TempDir()
	os.Symlink(kubeconfig, filepath.Join(home, "kubeconfig"))
	r, code := auditJSON(t, home, "-n", ns, "-f", "testdata/e2e.yaml")
	if code != 1 {
		t.Errorf("audit exited %d, want 1", code)
	}
	got := map[string]audit.Finding{}
	var soloFound bool
	for _, f := range r.Findings {
		if f.Object == (audit.Object{Kind: "Pod", Namespace: ns, Name: "solo"}) {
			soloFound = soloFound || (f.Rule == v1alpha1.RulePriorityClassMissing && f.Field == "spec.priorityClassName")
			continue
		}
		if f.Object.Namespace == ns || (f.Object.Kind == "Namespace" && f.Object.Name == ns) {
			got[f.Rule] = f
		}
	}
	if !soloFound {
		t.Errorf("no %s finding on the bare pod %s/solo; got %+v", v1alpha1.RulePriorityClassMissing, ns, r.Findings)
	}
	for rule, want := range map[string]struct{ object, field string }{
		v1alpha1.RuleGPUQuotaKey:          {"ResourceQuota " + ns + "/gpus", `spec.hard["nvidia.com/gpu"]`},
		v1alpha1.RuleLimitRangeGPUDefault: {"LimitRange " + ns + "/caps", `spec.limits[0].default["nvidia.com/gpu"]`},
		v1alpha1.RulePDBBlocksDrain:       {"PodDisruptionBudget " + ns + "/web", "spec.minAvailable"},
		v1alpha1.RulePriorityClassMissing: {"Deployment " + ns + "/web", "spec.template.spec.priorityClassName"},
	} {
		f, ok := got[rule]
		if !ok {
			t.Errorf("no %s finding in %s; got %+v", rule, ns, r.Findings)
			continue
		}
		if f.Object.String() != want.object || f.Field != want.field || f.Fix == "" {
			t.Errorf("%s: got %s %s (fix %q), want %s %s", rule, f.Object, f.Field, f.Fix, want.object, want.field)
		}
		delete(got, rule)
	}
	for rule, f := range got {
		t.Errorf("unexpected %s finding: %s %s", rule, f.Object, f.Message)
	}
	if r.Objects["Pod"] != 3 || r.Objects["Deployment"] != 1 {
		t.Errorf("audited %v, want the namespace's 3 pods and 1 Deployment (and the cluster's nodes)", r.Objects)
	}
}
