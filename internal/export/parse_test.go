package export

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
)

// documents splits a multi-document export into its YAML documents,
// dropping any that hold only comments.
func documents(out string) []string {
	var docs []string
	for _, d := range strings.Split(out, "\n---\n") {
		body := false
		for _, l := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
				body = true
			}
		}
		if body {
			docs = append(docs, d)
		}
	}
	return docs
}

// TestKarpenterParses reads every exported NodePool with Karpenter's own
// type, strictly, and runs Karpenter's runtime validation (restricted
// labels, requirements, taints).
func TestKarpenterParses(t *testing.T) {
	for _, tb := range testBlueprints(t) {
		user := 0
		for _, p := range tb.bp.Spec.Pools {
			if p.Mode != "System" {
				user++
			}
		}
		docs := documents(export(t, tb.bp, Karpenter))
		if len(docs) != user {
			t.Errorf("%s: %d NodePools, want one per User pool (%d)", tb.name, len(docs), user)
		}
		for _, doc := range docs {
			var np karpv1.NodePool
			if err := yaml.UnmarshalStrict([]byte(doc), &np); err != nil {
				t.Errorf("%s: NodePool does not parse strictly: %v\n%s", tb.name, err, doc)
				continue
			}
			if np.APIVersion != "karpenter.sh/v1" || np.Kind != "NodePool" {
				t.Errorf("%s: apiVersion/kind = %s/%s", tb.name, np.APIVersion, np.Kind)
			}
			if err := np.RuntimeValidate(t.Context()); err != nil {
				t.Errorf("%s: NodePool %s fails Karpenter's validation: %v", tb.name, np.Name, err)
			}
			if np.Spec.Disruption.ConsolidateAfter.Duration == nil {
				t.Errorf("%s: NodePool %s has no consolidateAfter", tb.name, np.Name)
			}
			if ref := np.Spec.Template.Spec.NodeClassRef; ref == nil || ref.Group != nodeClassGroup || ref.Kind != nodeClassKind {
				t.Errorf("%s: NodePool %s nodeClassRef = %+v", tb.name, np.Name, ref)
			}
			if _, ok := np.Spec.Limits[corev1.ResourceCPU]; !ok {
				t.Errorf("%s: NodePool %s has no cpu limit", tb.name, np.Name)
			}
		}
	}
}

var eksctlNameRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

// TestEKSParses reads every exported ClusterConfig strictly into the
// mirror of eksctl's types and checks the rules eksctl's validation
// applies to managed node groups.
func TestEKSParses(t *testing.T) {
	for _, tb := range testBlueprints(t) {
		out := export(t, tb.bp, EKS)
		var cfg eksctlClusterConfig
		if err := yaml.UnmarshalStrict([]byte(out), &cfg); err != nil {
			t.Errorf("%s: ClusterConfig does not parse strictly: %v", tb.name, err)
			continue
		}
		if cfg.APIVersion != "eksctl.io/v1alpha5" || cfg.Kind != "ClusterConfig" {
			t.Errorf("%s: apiVersion/kind = %s/%s", tb.name, cfg.APIVersion, cfg.Kind)
		}
		if cfg.Metadata == nil || cfg.Metadata.Name != tb.bp.Metadata.Name || cfg.Metadata.Region == "" {
			t.Errorf("%s: metadata = %+v", tb.name, cfg.Metadata)
		}
		if n := len(cfg.AvailabilityZones); n == 1 {
			t.Errorf("%s: eksctl needs at least two availabilityZones, got %v", tb.name, cfg.AvailabilityZones)
		}
		if len(cfg.ManagedNodeGroups) != len(tb.bp.Spec.Pools) {
			t.Errorf("%s: %d node groups for %d pools", tb.name, len(cfg.ManagedNodeGroups), len(tb.bp.Spec.Pools))
		}
		for _, ng := range cfg.ManagedNodeGroups {
			checkManagedNodeGroup(t, tb.name, cfg.Metadata.Name, ng)
		}
	}
}

func checkManagedNodeGroup(t *testing.T, bp, cluster string, ng *eksctlManagedNodeGroup) {
	t.Helper()
	where := bp + ": node group " + ng.Name
	if !eksctlNameRE.MatchString(ng.Name) {
		t.Errorf("%s: invalid name", where)
	}
	if !eksctlAMIFamilies[ng.AMIFamily] {
		t.Errorf("%s: amiFamily %q is not one eksctl knows", where, ng.AMIFamily)
	}
	if (ng.InstanceType == "") == (len(ng.InstanceTypes) == 0) {
		t.Errorf("%s: set exactly one of instanceType (%q) and instanceTypes (%v)", where, ng.InstanceType, ng.InstanceTypes)
	}
	if ng.Spot && len(ng.InstanceTypes) == 0 {
		t.Errorf("%s: a Spot node group names its types in instanceTypes", where)
	}
	sc := ng.ScalingConfig
	if sc == nil || sc.MinSize == nil || sc.MaxSize == nil || sc.DesiredCapacity == nil {
		t.Fatalf("%s: scaling config incomplete: %+v", where, sc)
	}
	if !(*sc.MinSize <= *sc.DesiredCapacity && *sc.DesiredCapacity <= *sc.MaxSize) {
		t.Errorf("%s: want minSize <= desiredCapacity <= maxSize, got %d, %d, %d", where, *sc.MinSize, *sc.DesiredCapacity, *sc.MaxSize)
	}
	if ng.MaxPodsPerNode <= 0 {
		t.Errorf("%s: maxPodsPerNode = %d", where, ng.MaxPodsPerNode)
	}
	for _, taint := range ng.Taints {
		switch corev1.TaintEffect(taint.Effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			t.Errorf("%s: taint effect %q is not eksctl's spelling", where, taint.Effect)
		}
	}
	if *sc.MinSize == *sc.MaxSize {
		return // a fixed group: Cluster Autoscaler has nothing to do
	}
	// What Cluster Autoscaler needs to scale the group up from zero.
	want := map[string]string{
		"k8s.io/cluster-autoscaler/enabled":    "true",
		"k8s.io/cluster-autoscaler/" + cluster: "owned",
	}
	for k, v := range ng.Labels {
		want["k8s.io/cluster-autoscaler/node-template/label/"+k] = v
	}
	for _, taint := range ng.Taints {
		want["k8s.io/cluster-autoscaler/node-template/taint/"+taint.Key] = taint.Value + ":" + taint.Effect
	}
	if c, ok := ng.Labels[v1alpha1.LabelGPUCount]; ok {
		if _, err := strconv.Atoi(c); err != nil {
			t.Errorf("%s: GPU count label %q", where, c)
		}
		want["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] = c
	}
	for k, v := range want {
		if ng.Tags[k] != v {
			t.Errorf("%s: tag %s = %q, want %q", where, k, ng.Tags[k], v)
		}
	}
	if ng.PropagateASGTags == nil || !*ng.PropagateASGTags {
		t.Errorf("%s: propagateASGTags is not true", where)
	}
	if ng.IAM == nil || ng.IAM.WithAddonPolicies.AutoScaler == nil || !*ng.IAM.WithAddonPolicies.AutoScaler {
		t.Errorf("%s: no autoScaler IAM policy", where)
	}
}

var topLevelStatus = regexp.MustCompile(`(?m)^status:`)

// TestManifestsParse decodes every exported object strictly through
// client-go's scheme and compares it with what compile.Objects made.
func TestManifestsParse(t *testing.T) {
	// client-go's kinds and Kueue's, which a blueprint under queueing:
	// Kueue writes.
	all := runtime.NewScheme()
	if err := scheme.AddToScheme(all); err != nil {
		t.Fatal(err)
	}
	if err := kueue.AddToScheme(all); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(all, serializer.EnableStrict).UniversalDeserializer()
	for _, tb := range testBlueprints(t) {
		out := export(t, tb.bp, Manifests)
		// An object's status is a top-level key; "status:" inside a
		// policy's CEL (a Job's podFailurePolicy pattern) is not one.
		if strings.Contains(out, "creationTimestamp") || topLevelStatus.MatchString(out) {
			t.Errorf("%s: manifests carry creationTimestamp or status:\n%s", tb.name, out)
		}
		docs := documents(out)
		want := compile.Objects(tb.bp)
		if len(docs) != len(want) {
			t.Fatalf("%s: %d documents for %d objects", tb.name, len(docs), len(want))
		}
		for i, doc := range docs {
			got, gvk, err := decoder.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s: document %d does not decode strictly: %v\n%s", tb.name, i, err, doc)
				continue
			}
			wantGVK := want[i].GetObjectKind().GroupVersionKind()
			if *gvk != wantGVK {
				t.Errorf("%s: document %d is a %v, want %v", tb.name, i, gvk, wantGVK)
			}
			got.GetObjectKind().SetGroupVersionKind(wantGVK)
			if !equality.Semantic.DeepEqual(got, want[i]) {
				t.Errorf("%s: document %d differs from the compiled object:\n got %s\nwant %s", tb.name, i, fmt.Sprint(got), fmt.Sprint(want[i]))
			}
		}
	}
}
