package compile

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	crdcel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// retailKueue is the retail template queueing with Kueue, edited by
// old, new pairs.
func retailKueue(t *testing.T, pairs ...string) *v1alpha1.Blueprint {
	t.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "  pools:\n", "  queueing: Kueue\n  pools:\n", 1)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(doc, pairs[i]) {
			t.Fatalf("retail template lacks %q", pairs[i])
		}
		doc = strings.Replace(doc, pairs[i], pairs[i+1], 1)
	}
	bp, _, err := blueprint.Parse("retail.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

func refs(objs []Object) []string {
	var out []string
	for _, o := range objs {
		ref := o.GetObjectKind().GroupVersionKind().Kind + " " + o.GetName()
		if o.GetNamespace() != "" {
			ref = o.GetObjectKind().GroupVersionKind().Kind + " " + o.GetNamespace() + "/" + o.GetName()
		}
		out = append(out, ref)
	}
	return out
}

func TestKueueObjects(t *testing.T) {
	bp := retailKueue(t)
	var got []Object
	for _, o := range Objects(bp) {
		if _, ok := o.(*corev1.ResourceQuota); ok || o.GetObjectKind().GroupVersionKind().Group == kueue.GroupVersion.Group {
			got = append(got, o)
		}
	}
	// team-a's quota of GPU, CPU and memory is Kueue's now: no
	// ResourceQuota is left for it but the classes it may not use.
	want := []string{
		"ResourceQuota team-a/team-classes", "ResourceQuota team-b/team-classes",
		"ResourceFlavor default-flavor", "ResourceFlavor gpu", "ResourceFlavor spot-gpu",
		"WorkloadPriorityClass inference-high", "WorkloadPriorityClass training-low",
		"ClusterQueue team-a", "ClusterQueue team-b",
		"LocalQueue team-a/team-a", "LocalQueue team-b/team-b",
	}
	if diff := cmp.Diff(want, refs(got)); diff != "" {
		t.Fatalf("Kueue objects and quotas (-want +got):\n%s", diff)
	}
	for _, o := range got {
		if _, ok := KindOf(o); !ok {
			t.Errorf("%s is not one of the kinds apply and prune know", o.GetName())
		}
	}

	spot := got[4].(*kueue.ResourceFlavor)
	if diff := cmp.Diff(map[string]string{v1alpha1.LabelPool: "spot-gpu"}, spot.Spec.NodeLabels); diff != "" {
		t.Errorf("spot-gpu flavor's node labels (-want +got):\n%s", diff)
	}
	if len(spot.Spec.NodeTaints) != 2 || spot.Spec.NodeTaints[1].Key != "berth.io/capacity" {
		t.Errorf("spot-gpu flavor's taints = %v; want the pool's two", spot.Spec.NodeTaints)
	}

	// team-a: CPU and memory as its quota caps them, never borrowed;
	// its 4 GPUs split by the pools' sizes (4 and 2 GPUs at most):
	// 4×4/6 = 2.67 and 4×2/6 = 1.33, so 2 and 1, the GPU left over to
	// the larger remainder, spot-gpu.
	a := got[7].(*kueue.ClusterQueue)
	type quota struct {
		flavor, resource, nominal string
		borrow, lend              string
	}
	quotas := func(cq *kueue.ClusterQueue) []quota {
		var out []quota
		q := func(p *resource.Quantity) string {
			if p == nil {
				return "-"
			}
			return p.String()
		}
		for _, g := range cq.Spec.ResourceGroups {
			for _, f := range g.Flavors {
				for _, r := range f.Resources {
					out = append(out, quota{string(f.Name), string(r.Name), r.NominalQuota.String(), q(r.BorrowingLimit), q(r.LendingLimit)})
				}
			}
		}
		return out
	}
	if diff := cmp.Diff([]quota{
		{"default-flavor", "cpu", "64", "0", "0"},
		{"default-flavor", "memory", "256Gi", "0", "0"},
		{"spot-gpu", "nvidia.com/gpu", "3", "-", "-"},
		{"gpu", "nvidia.com/gpu", "1", "-", "-"},
	}, quotas(a), cmp.AllowUnexported(quota{})); diff != "" {
		t.Errorf("team-a's quotas (-want +got):\n%s", diff)
	}
	// team-b has no CPU or memory quota: the most the User pools hold
	// (8×16 + 2×24 + 4×24 = 272 CPUs; 8×64 + 2×96 + 4×96 = 1088Gi).
	if diff := cmp.Diff([]quota{
		{"default-flavor", "cpu", "272", "-", "-"},
		{"default-flavor", "memory", "1088Gi", "-", "-"},
		{"spot-gpu", "nvidia.com/gpu", "1", "-", "-"},
		{"gpu", "nvidia.com/gpu", "1", "-", "-"},
	}, quotas(got[8].(*kueue.ClusterQueue)), cmp.AllowUnexported(quota{})); diff != "" {
		t.Errorf("team-b's quotas (-want +got):\n%s", diff)
	}
	if a.Spec.CohortName != "retail-analytics" || a.Spec.NamespaceSelector.MatchLabels[v1alpha1.LabelTeam] != "team-a" {
		t.Errorf("team-a's ClusterQueue: cohort %q, namespaces %v; want the blueprint's cohort and the team's namespaces", a.Spec.CohortName, a.Spec.NamespaceSelector)
	}
	// inference (high, may preempt) above training (low): the team's
	// own lower work may be preempted; what it lent it reclaims.
	if p := a.Spec.Preemption; p.WithinClusterQueue != kueue.PreemptionPolicyLowerPriority || p.ReclaimWithinCohort != kueue.PreemptionPolicyAny {
		t.Errorf("team-a's preemption = %+v; want LowerPriority within, Any to reclaim", p)
	}
	if lq := got[9].(*kueue.LocalQueue); lq.Spec.ClusterQueue != "team-a" {
		t.Errorf("team-a's LocalQueue points at %q", lq.Spec.ClusterQueue)
	}
}

// A team's queue becomes Kueue's limits on each of its GPU flavors; a
// lending limit above a pool's nominal quota is held to it.
func TestKueueBorrowAndLend(t *testing.T) {
	bp := retailKueue(t, "  - name: team-b\n    quota: {gpu: 2}\n",
		"  - name: team-b\n    quota: {gpu: 2}\n    queue: {gpus: [{pool: spot-gpu, count: 2}], borrow: 2, lend: 1}\n")
	var b *kueue.ClusterQueue
	for _, o := range Objects(bp) {
		if cq, ok := o.(*kueue.ClusterQueue); ok && cq.Name == "team-b" {
			b = cq
		}
	}
	if b == nil {
		t.Fatal("no ClusterQueue team-b")
	}
	// spot-gpu as its queue says, then gpu, which its batch-inference
	// class reaches, with none of its own: there it can only borrow.
	type limits struct{ flavor, nominal, borrow, lend string }
	var got []limits
	for _, f := range b.Spec.ResourceGroups[1].Flavors {
		r := f.Resources[0]
		got = append(got, limits{string(f.Name), r.NominalQuota.String(), r.BorrowingLimit.String(), r.LendingLimit.String()})
	}
	if diff := cmp.Diff([]limits{{"spot-gpu", "2", "2", "1"}, {"gpu", "0", "2", "0"}}, got, cmp.AllowUnexported(limits{})); diff != "" {
		t.Errorf("team-b's GPU flavors (-want +got):\n%s", diff)
	}
}

// Under ResourceQuota nothing of Kueue's is written.
func TestNoKueueUnderResourceQuota(t *testing.T) {
	for _, o := range retail(t) {
		if o.GetObjectKind().GroupVersionKind().Group == kueue.GroupVersion.Group {
			t.Errorf("retail under ResourceQuota compiles %s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		}
	}
}

// Every Kueue object berth writes passes the CRD of the Kueue release it
// builds against, as the API server would check it: its OpenAPI schema
// and its CEL rules, after the schema's defaults.
func TestKueueObjectsPassKueuesCRDs(t *testing.T) {
	bp := retailKueue(t, "  - name: team-b\n    quota: {gpu: 2}\n",
		"  - name: team-b\n    quota: {gpu: 2}\n    queue: {borrow: 2, lend: 1}\n")
	checked := map[string]bool{}
	for _, o := range kueueObjects(bp) {
		kind, _ := KindOf(o)
		for _, e := range crdErrors(t, o) {
			t.Errorf("%s %s: %v", kind.Kind, o.GetName(), e)
		}
		checked[kind.Kind] = true
	}
	if len(checked) != len(kueueKinds) {
		t.Errorf("checked %v; want every kind of %v", checked, kueueKinds)
	}
	// The check refuses what Kueue's CRD refuses: a lending limit on a
	// ClusterQueue in no cohort.
	for _, o := range kueueObjects(bp) {
		if cq, ok := o.(*kueue.ClusterQueue); ok && cq.Name == "team-b" {
			cq.Spec.CohortName = ""
			if errs := crdErrors(t, cq); len(errs) == 0 {
				t.Error("a ClusterQueue with a lending limit and no cohort passed the CRD check")
			}
		}
	}
}

// crdErrors checks o against its kind's CRD in the Kueue module berth
// builds against.
func crdErrors(t *testing.T, o Object) field.ErrorList {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/kueue: %v", err)
	}
	kind, _ := KindOf(o)
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "components", "crd", "bases", "kueue.x-k8s.io_"+kind.Resource.Resource+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var schema *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == kueue.GroupVersion.Version {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	if schema == nil {
		t.Fatalf("CRD %s has no version %s", crd.Name, kueue.GroupVersion.Version)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatal(err)
	}
	delete(u, "status")
	delete(u["metadata"].(map[string]any), "creationTimestamp")
	defaulting.Default(u, structural)
	errs := apiservervalidation.ValidateCustomResource(field.NewPath(""), u, validator)
	celErrs, _ := crdcel.NewValidator(structural, true, celconfig.PerCallLimit).Validate(context.Background(), field.NewPath(""), structural, u, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// The version berth's docs and problems name is the module it builds
// against.
func TestKueueVersionIsTheModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/kueue").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/kueue: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != v1alpha1.KueueVersion {
		t.Errorf("sigs.k8s.io/kueue is %s in go.mod; v1alpha1.KueueVersion says %s", got, v1alpha1.KueueVersion)
	}
}

// Under Kueue the queue guardrails come with the others: the mutating
// policy giving a team's Job its queue and the validating one refusing
// another team's, each bound, naming the team namespaces literally; none
// under ResourceQuota or with guardrails off.
func TestQueueGuardrails(t *testing.T) {
	var got []string
	for _, o := range Objects(retailKueue(t)) {
		if o.GetName() == QueuePolicy || o.GetName() == QueueCheckPolicy {
			got = append(got, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetName())
		}
		if p, ok := o.(*admissionv1.MutatingAdmissionPolicy); ok && p.Name == QueuePolicy {
			if c := p.Spec.MatchConditions[0].Expression; !strings.Contains(c, `{"team-a": "team-a", "team-b": "team-b"}`) {
				t.Errorf("the queue policy's condition %q does not name the team namespaces", c)
			}
		}
	}
	want := []string{"MutatingAdmissionPolicy " + QueuePolicy, "MutatingAdmissionPolicyBinding " + QueuePolicy,
		"ValidatingAdmissionPolicy " + QueueCheckPolicy, "ValidatingAdmissionPolicyBinding " + QueueCheckPolicy}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("queue guardrails (-want +got):\n%s", d)
	}
	off := retailKueue(t, "  queueing: Kueue\n", "  queueing: Kueue\n  guardrails: Off\n")
	plain := retailKueue(t, "  queueing: Kueue\n", "")
	for _, bp := range []*v1alpha1.Blueprint{plain, off} {
		if objs := queueGuardrails(bp); len(objs) > 0 {
			t.Errorf("queueing %s, guardrails %s: %d queue guardrails; want none", bp.Spec.Queueing, bp.Spec.Guardrails, len(objs))
		}
	}
}

// Under spec.fairSharing a team's queue.weight is its ClusterQueue's
// fairSharing.weight; a team without one keeps Kueue's default; without
// fair sharing no ClusterQueue has one.
func TestKueueFairSharingWeight(t *testing.T) {
	weights := func(bp *v1alpha1.Blueprint) map[string]string {
		out := map[string]string{}
		for _, o := range Objects(bp) {
			if cq, ok := o.(*kueue.ClusterQueue); ok {
				out[cq.Name] = "-"
				if cq.Spec.FairSharing != nil && cq.Spec.FairSharing.Weight != nil {
					out[cq.Name] = cq.Spec.FairSharing.Weight.String()
				}
			}
		}
		return out
	}
	weighted := "  - name: team-b\n    quota: {gpu: 2}\n"
	withWeight := weighted + "    queue: {weight: 2}\n"
	fair := retailKueue(t, "  queueing: Kueue\n", "  queueing: Kueue\n  fairSharing: true\n", weighted, withWeight)
	if d := cmp.Diff(map[string]string{"team-a": "-", "team-b": "2"}, weights(fair)); d != "" {
		t.Errorf("weights under fair sharing (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"team-a": "-", "team-b": "-"}, weights(retailKueue(t, weighted, withWeight))); d != "" {
		t.Errorf("weights without fair sharing (-want +got):\n%s", d)
	}
}
