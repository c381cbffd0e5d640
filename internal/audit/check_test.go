package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit/corpus"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/pools"
)

func loadAndCheck(t *testing.T, o Options, paths ...string) *Report {
	t.Helper()
	inv, err := LoadFiles(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Check(inv, o)
}

// The broken set breaks every rule of the catalogue (drift needs a
// cluster), and each output format reports each rule.
func TestBrokenManifests(t *testing.T) {
	stampVersion(t)
	r := loadAndCheck(t, Options{Source: "testdata/broken", Classes: brokenClasses, StorageClasses: brokenStorage, Teams: brokenTeams, Pools: brokenPools}, "testdata/broken")
	seen := map[string]bool{}
	for _, f := range r.Findings {
		seen[f.Rule] = true
		if f.Message == "" || f.Fix == "" || f.File == "" || f.Line == 0 {
			t.Errorf("finding lacks a message, fix or place: %+v", f)
		}
	}
	for _, rule := range Rules {
		if rule.ID != v1alpha1.RuleDrift && !seen[rule.ID] {
			t.Errorf("no finding of %s in the broken set", rule.ID)
		}
	}
	for _, format := range Formats() {
		out := write(t, r, format)
		golden(t, "broken/report."+string(format), out)
		for _, rule := range Rules {
			if rule.ID != v1alpha1.RuleDrift && !strings.Contains(out, rule.ID) {
				t.Errorf("%s output lacks %s", format, rule.ID)
			}
		}
	}
	if r.Errors() == 0 {
		t.Error("no errors in the broken set")
	}
}

// brokenStorage are the blueprint storage classes the broken set is
// audited with (a blueprint's defaults): testdata/broken/storage.yaml's
// claims break them.
var brokenStorage = []v1alpha1.StorageClass{{Name: "standard", Default: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}

// brokenClasses are the blueprint classes the broken set is audited
// with: testdata/broken/scaling.yaml breaks their scaling.
var brokenClasses = []v1alpha1.Class{
	{Name: "chat", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{Metric: v1alpha1.MetricRPS, Target: 20, MaxReplicas: 4}},
	{Name: "transcribe", Pools: []string{"gpu"}, Scaling: &v1alpha1.Scaling{MaxReplicas: 4,
		Queue: &v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/audio", AWSRegion: "eu-west-1"}}},
	{Name: "finetune", Pools: []string{"spot-gpu", "gpu"}},
}

// brokenTeams and brokenPools are the blueprint's teams and pools the
// broken set is audited with: team lab's quota in
// testdata/broken/policy.yaml is larger than pool gpu, the only pool
// class chat reaches, while the team's other class also reaches
// spot-gpu.
var (
	brokenTeams = []v1alpha1.Team{{Name: "lab", Namespaces: []string{"lab"}, Classes: []string{"chat", "finetune"}}}
	brokenPools = []v1alpha1.Pool{
		{Name: "gpu", Mode: v1alpha1.ModeUser, Autoscale: &v1alpha1.Autoscale{Max: 2}, Machine: v1alpha1.Machine{GPU: &v1alpha1.GPU{Count: 1}}},
		{Name: "spot-gpu", Mode: v1alpha1.ModeUser, Capacity: v1alpha1.Spot, Autoscale: &v1alpha1.Autoscale{Max: 4}, Machine: v1alpha1.Machine{GPU: &v1alpha1.GPU{Count: 1}}},
	}
)

// A finding points at the field's line, not just the document's.
func TestFindingLines(t *testing.T) {
	r := loadAndCheck(t, Options{}, "testdata/broken")
	want := map[string]string{
		v1alpha1.RuleGPULimit + " Job ml/finetune":               "testdata/broken/training.yaml:18", // resources: limits is absent
		v1alpha1.RuleGPUQuotaKey + " ResourceQuota ml/gpus":      "testdata/broken/policy.yaml:11",
		v1alpha1.RuleModelInMain + " Deployment ml/llm":          "testdata/broken/serving.yaml:16",
		v1alpha1.RuleGPUPoolTaint + " Node/gpu-1":                "testdata/broken/nodes.yaml:3",
		v1alpha1.RuleGPUPoolTaint + " NodePool/a100":             "testdata/broken/karpenter.yaml:8",
		v1alpha1.RuleGPUQuotaMissing + " Namespace/sandbox":      "testdata/broken/training.yaml:23", // the namespace: that names it
		v1alpha1.RuleSystemPoolTaint + " NodePool/addons-system": "testdata/broken/karpenter.yaml:20",
		v1alpha1.RuleGPUPoolTaint + " ClusterConfig/ml":          "testdata/broken/eksctl.yaml:8",
		v1alpha1.RuleSystemPoolTaint + " ClusterConfig/ml":       "testdata/broken/eksctl.yaml:15",
	}
	for _, f := range r.Findings {
		key := f.Rule + " " + f.Object.String()
		if w, ok := want[key]; ok {
			if f.Where() != w {
				t.Errorf("%s at %s, want %s", key, f.Where(), w)
			}
			delete(want, key)
		}
	}
	for key := range want {
		t.Errorf("no %s finding", key)
	}
}

// What berth itself makes passes its own audit: the retail blueprint's
// exported manifests, Karpenter NodePools and eksctl config, nodes of
// each of its pools
// as berth simulates them, and workloads written to the design.
func TestRetailIsClean(t *testing.T) {
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	bp, _, err := blueprint.Parse("retail", raw)
	if err != nil {
		t.Fatal(err)
	}
	var manifests, nodePools, eksctl bytes.Buffer
	if err := export.Export(&manifests, bp, export.Manifests); err != nil {
		t.Fatal(err)
	}
	if err := export.Export(&nodePools, bp, export.Karpenter); err != nil {
		t.Fatal(err)
	}
	if err := export.Export(&eksctl, bp, export.EKS); err != nil {
		t.Fatal(err)
	}
	var nodes bytes.Buffer
	for i := range bp.Spec.Pools {
		for n := range 2 {
			node := pools.NewNode(bp, &bp.Spec.Pools[i], n)
			node.APIVersion, node.Kind = "v1", "Node"
			b, _ := json.Marshal(node)
			nodes.Write(b)
		}
	}
	dir := t.TempDir()
	writeFile(t, dir+"/manifests.yaml", manifests.Bytes())
	writeFile(t, dir+"/nodes.json", nodes.Bytes())
	writeFile(t, dir+"/karpenter.yaml", nodePools.Bytes())
	writeFile(t, dir+"/eksctl.yaml", eksctl.Bytes())
	o := Options{}
	o.UseBlueprint(bp)
	r := loadAndCheck(t, o, dir, "testdata/clean")
	// Except the one weakness of the design berth's own rehearsal found:
	// each team's inference and batch-inference pods wait only for pool
	// gpu, which the other team's use too, and hold the team's GPU quota
	// while they wait, so its training cannot start on spot-gpu.
	var held []string
	for _, f := range r.Findings {
		if f.Rule == v1alpha1.RuleQuotaHeldWaiting {
			held = append(held, f.Object.Namespace+" "+strings.Fields(strings.SplitAfter(f.Message, "of class ")[1])[0])
			continue
		}
		t.Errorf("%s %s %s: %s", f.Where(), f.Rule, f.Field, f.Message)
	}
	if want := []string{"team-a batch-inference", "team-a inference", "team-b batch-inference", "team-b inference"}; !cmp.Equal(held, want) {
		t.Errorf("%s findings on the retail template: %q; want %q", v1alpha1.RuleQuotaHeldWaiting, held, want)
	}
	if r.Objects["Node"] != 2*len(bp.Spec.Pools) || r.Objects["NodePool"] != len(bp.Spec.Pools)-1 || r.Objects["ClusterConfig"] != 1 || r.Objects["Deployment"] != 1 || r.Objects["ResourceQuota"] == 0 {
		t.Errorf("audited %v; the manifests, nodes or workloads were not all read", r.Objects)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocsRules keeps the rule table of docs/reference/audit-rules.md in
// step with the catalogue: each rule has a row with its severity.
func TestDocsRules(t *testing.T) {
	const page = "docs/reference/audit-rules.md"
	text, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		row := fmt.Sprintf("| `%s` | %s |", r.ID, r.Severity)
		if !strings.Contains(string(text), row) {
			t.Errorf("%s has no row starting %q", page, row)
		}
	}
}

// A dump read as JSON and as YAML gives the same report: the YAML reader
// that splits Lists and peeks at pods agrees with a full conversion.
func TestJSONAndYAMLAgree(t *testing.T) {
	reports := map[bool]*Report{}
	for _, asYAML := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := corpus.Write(dir, corpus.Spec{Nodes: 40, Pods: 2000, PodsPerWorkload: 20, YAML: asYAML}); err != nil {
			t.Fatal(err)
		}
		r := loadAndCheck(t, Options{}, dir)
		for i := range r.Findings {
			r.Findings[i].File, r.Findings[i].Line = "", 0
		}
		sortFindings(r.Findings)
		reports[asYAML] = r
	}
	if diff := cmp.Diff(reports[false], reports[true]); diff != "" {
		t.Errorf("JSON and YAML reports differ (-json +yaml):\n%s", diff)
	}
	if len(reports[false].Findings) == 0 || reports[false].Objects["Pod"] != 2000 {
		t.Errorf("the corpus gave %d findings over %v; want some, and 2000 pods", len(reports[false].Findings), reports[false].Objects)
	}
}

// Exemptions: --ignore leaves a rule out everywhere, the annotation
// leaves rules out for one object, and the report counts what was left.
func TestIgnore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llm.yaml")
	writeFile(t, path, []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
  namespace: ml
  annotations: {audit.berth.io/ignore: "berth/inference-replicas, berth/inference-pdb"}
spec:
  replicas: 1
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec:
      containers:
      - {name: server, image: vllm/vllm-openai, resources: {limits: {nvidia.com/gpu: 1}}}
`))
	rules := func(r *Report) []string {
		var out []string
		for _, f := range r.Findings {
			out = append(out, f.Rule)
		}
		return out
	}
	r := loadAndCheck(t, Options{}, path)
	want := []string{v1alpha1.RuleGPUQuotaMissing, v1alpha1.RuleInferenceSpread, v1alpha1.RuleLimitRangeMissing, v1alpha1.RulePriorityClassMissing}
	if diff := cmp.Diff(want, sortedCopy(rules(r))); diff != "" || r.Suppressed != 2 {
		t.Errorf("with the annotation: %d suppressed, findings (-want +got):\n%s", r.Suppressed, diff)
	}
	r = loadAndCheck(t, Options{Ignore: []string{v1alpha1.RuleLimitRangeMissing, v1alpha1.RuleInferenceSpread}}, path)
	if diff := cmp.Diff([]string{v1alpha1.RuleGPUQuotaMissing, v1alpha1.RulePriorityClassMissing}, sortedCopy(rules(r))); diff != "" || r.Suppressed != 4 {
		t.Errorf("with --ignore too: %d suppressed, findings (-want +got):\n%s", r.Suppressed, diff)
	}
	if out := write(t, r, Table); !strings.Contains(out, "4 findings left out by --ignore or "+v1alpha1.AnnotationAuditIgnore) {
		t.Errorf("the table does not say what was left out:\n%s", out)
	}
}
