package export

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
)

// profiled is base with a non-default autoscaler profile: the priority
// expander chained to least-waste, a 30s unneeded time, and two
// autoscaled pools whose names share a prefix, so that a node group
// expression for one must not match the other.
func profiled(t *testing.T) *v1alpha1.Blueprint {
	t.Helper()
	bp := loadBlueprint(t, base+`  - name: work-spot
    capacity: Spot
    machine: {cpu: 16, memory: 64Gi}
    autoscale: {min: 0, max: 5, priority: 5}
  autoscaler:
    expander: priority,least-waste
    scaleDownUnneededTime: 30s
`)
	bp.Spec.Pools[1].Autoscale.Priority = 10
	return bp
}

// priorities reads a cluster-autoscaler-priority-expander ConfigMap
// strictly, as the API server and the priority expander would.
func priorities(t *testing.T, doc string) map[int][]*regexp.Regexp {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(doc), &cm); err != nil {
		t.Fatalf("ConfigMap does not parse: %v\n%s", err, doc)
	}
	if cm.Name != "cluster-autoscaler-priority-expander" || cm.Namespace != "kube-system" {
		t.Errorf("ConfigMap is %s/%s", cm.Namespace, cm.Name)
	}
	var raw map[int][]string
	if err := yaml.UnmarshalStrict([]byte(cm.Data["priorities"]), &raw); err != nil {
		t.Fatalf("data.priorities does not parse as the priority expander's map: %v\n%s", err, cm.Data["priorities"])
	}
	out := map[int][]*regexp.Regexp{}
	for prio, res := range raw {
		for _, s := range res {
			out[prio] = append(out[prio], regexp.MustCompile(s))
		}
	}
	return out
}

// priorityOf is the priority the expander gives a node group: the
// highest whose expressions match, or -1 when none does.
func priorityOf(prios map[int][]*regexp.Regexp, group string) int {
	best := -1
	for prio, res := range prios {
		for _, re := range res {
			if re.MatchString(group) && prio > best {
				best = prio
			}
		}
	}
	return best
}

func checkPriorities(t *testing.T, target Target, prios map[int][]*regexp.Regexp, groups map[string]int) {
	t.Helper()
	got := map[string]int{}
	for g := range groups {
		got[g] = priorityOf(prios, g)
	}
	if diff := cmp.Diff(groups, got); diff != "" {
		t.Errorf("%s: node group priorities (-want +got):\n%s", target, diff)
	}
}

func TestAutoscalerProfileReachesAKS(t *testing.T) {
	bp := profiled(t)
	script := export(t, bp, AKS)
	calls, stdin, err := runScriptStdin(t, script, "RESOURCE_GROUP=rg")
	if err != nil {
		t.Fatal(err)
	}
	update := callsOf(calls, "aks", "update")
	if len(update) != 1 {
		t.Fatalf("%d az aks update calls:\n%s", len(update), script)
	}
	profile := flagValues(update[0], "--cluster-autoscaler-profile")
	for _, want := range []string{"expander=priority", "scale-down-unneeded-time=1m", "scan-interval=10s", "scale-down-utilization-threshold=0.5"} {
		if !contains(profile, want) {
			t.Errorf("--cluster-autoscaler-profile %q lacks %s", profile, want)
		}
	}
	if got := flagValues(update[0], "--name"); len(got) != 1 || got[0] != "t" {
		t.Errorf("az aks update --name %q", got)
	}
	if kubectl := callsOf(calls, "--context", "t", "apply", "-f", "-"); len(kubectl) != 1 {
		t.Errorf("kubectl calls: %q", calls)
	}
	checkPriorities(t, AKS, priorities(t, stdin), map[string]int{
		"aks-work-12345678-vmss":     10,
		"aks-workspot-12345678-vmss": 5,
		"aks-system-12345678-vmss":   -1, // a fixed pool: not the autoscaler's
		"aks-work-vmss":              -1,
	})
	flatScript := flat(script)
	for _, note := range []string{
		"AKS takes one expander, not a chain: expander priority is the chain's first, and AKS breaks its ties at random where the blueprint breaks them with least-waste.",
		"scaleDownUnneededTime 30s is rounded up to 1m.",
		"AKS has no per-pool priority setting",
		"scaleDownGpuUtilizationThreshold 0.5 is not carried",
	} {
		if !strings.Contains(flatScript, note) {
			t.Errorf("script lacks %q:\n%s", note, script)
		}
	}
}

func TestAutoscalerProfileReachesEKS(t *testing.T) {
	bp := profiled(t)
	out := export(t, bp, EKS)
	for _, want := range []string{
		"#   --expander=priority,least-waste\n",
		"#   --scale-down-unneeded-time=30s\n",
		"#   --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/t\n",
		"#   sed -n 's/^#| //p' cluster.yaml | kubectl apply -f -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
	var cm []string
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "#| "); ok {
			cm = append(cm, s)
		}
	}
	uuid := "-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
	checkPriorities(t, EKS, priorities(t, strings.Join(cm, "\n")), map[string]int{
		"eks-work" + uuid:      10,
		"eks-work-spot" + uuid: 5,
		"eks-system" + uuid:    -1,
		"eks" + uuid:           -1,
	})
	// The ConfigMap lines stay comments: the file is still one
	// ClusterConfig that parses strictly.
	var cfg eksctlClusterConfig
	if err := yaml.UnmarshalStrict([]byte(out), &cfg); err != nil || len(cfg.ManagedNodeGroups) != 3 {
		t.Errorf("ClusterConfig: %v, %d node groups", err, len(cfg.ManagedNodeGroups))
	}
}

func TestAutoscalerProfileReachesGKE(t *testing.T) {
	bp := profiled(t)
	script := export(t, bp, GKE)
	calls, err := runScript(t, script, "LOCATION=europe-west4")
	if err != nil {
		t.Fatal(err)
	}
	update := callsOf(calls, "container", "clusters", "update", "t")
	if len(update) != 1 {
		t.Fatalf("%d gcloud container clusters update calls:\n%s", len(update), script)
	}
	if got := flagValues(update[0], "--autoscaling-profile"); !cmp.Equal(got, []string{"optimize-utilization"}) {
		t.Errorf("--autoscaling-profile %q, want optimize-utilization for a 30s unneeded time", got)
	}
	for _, args := range callsOf(calls, "container", "node-pools", "create") {
		if got := flagValues(args, "--location-policy"); contains(args, "--enable-autoscaling") && !cmp.Equal(got, []string{"BALANCED"}) {
			t.Errorf("pool %s: --location-policy %q", args[3], got)
		}
	}
	flatScript := flat(script)
	for _, note := range []string{
		"sooner than cluster-autoscaler's defaults (scaleDownUnneededTime 30s)",
		"the pools' priorities (work 10, work-spot 5) are not carried",
		"expander priority,least-waste",
	} {
		if !strings.Contains(flatScript, note) {
			t.Errorf("script lacks %q:\n%s", note, script)
		}
	}

	// cluster-autoscaler's defaults are GKE's balanced profile.
	bp = loadBlueprint(t, base)
	calls, err = runScript(t, export(t, bp, GKE), "LOCATION=europe-west4")
	if err != nil {
		t.Fatal(err)
	}
	if update := callsOf(calls, "container", "clusters", "update"); len(update) != 1 || !cmp.Equal(flagValues(update[0], "--autoscaling-profile"), []string{"balanced"}) {
		t.Errorf("default profile: clusters update calls %q, want --autoscaling-profile balanced", update)
	}
}

func TestAutoscalerProfileReachesKarpenter(t *testing.T) {
	bp := profiled(t)
	out := export(t, bp, Karpenter)
	got := map[string]string{}
	for _, doc := range documents(out) {
		var np karpv1.NodePool
		if err := yaml.UnmarshalStrict([]byte(doc), &np); err != nil {
			t.Fatalf("NodePool does not parse: %v\n%s", err, doc)
		}
		w := "none"
		if np.Spec.Weight != nil {
			w = fmt.Sprint(*np.Spec.Weight)
		}
		got[np.Name] = np.Spec.Disruption.ConsolidateAfter.String() + " " + string(np.Spec.Disruption.ConsolidationPolicy) + " weight " + w
	}
	want := map[string]string{
		"work":      "30s WhenEmptyOrUnderutilized weight 10",
		"work-spot": "30s WhenEmptyOrUnderutilized weight 5",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodePools (-want +got):\n%s\n%s", diff, out)
	}
	flatOut := flat(out)
	for _, note := range []string{
		"Karpenter has no expander, so expander priority,least-waste is not carried",
		"The priority expander's pool priorities become spec.weight",
		"so scaleDownUtilizationThreshold 0.5 and scaleDownGpuUtilizationThreshold 0.5 are not carried",
	} {
		if !strings.Contains(flatOut, note) {
			t.Errorf("export lacks %q:\n%s", note, out)
		}
	}
}

// TestKarpenterWeightsRanked: priorities above Karpenter's maximum weight
// keep their order as ranks.
func TestKarpenterWeightsRanked(t *testing.T) {
	bp := profiled(t)
	bp.Spec.Pools[1].Autoscale.Priority = 1000
	bp.Spec.Pools[2].Autoscale.Priority = 200
	out := export(t, bp, Karpenter)
	if !strings.Contains(out, "  weight: 2\n") || !strings.Contains(out, "  weight: 1\n") {
		t.Errorf("weights are not the ranks 2 and 1:\n%s", out)
	}
	if !strings.Contains(flat(out), "become their rank, in the same order: work 1000→2, work-spot 200→1.") {
		t.Errorf("no note on the ranking:\n%s", out)
	}
}

func TestScaleDownDisabled(t *testing.T) {
	bp := profiled(t)
	bp.Spec.Autoscaler.ScaleDownEnabled = ptr.To(false)
	if out := export(t, bp, Karpenter); !strings.Contains(out, "consolidateAfter: Never\n") {
		t.Errorf("Karpenter consolidates with scale-down off:\n%s", out)
	}
	for _, target := range []Target{AKS, GKE} {
		if out := flat(export(t, bp, target)); !strings.Contains(out, "scaleDownEnabled false is not carried") {
			t.Errorf("%s names no fix for scale-down off:\n%s", target, out)
		}
	}
	if out := export(t, bp, EKS); !strings.Contains(out, "#   --scale-down-enabled=false\n") {
		t.Errorf("EKS lacks --scale-down-enabled=false:\n%s", out)
	}
}

// TestAKSDurations: AKS's formats, and a note whenever a value had to be
// rounded to fit one.
func TestAKSDurations(t *testing.T) {
	bp := profiled(t)
	a := bp.Spec.Autoscaler
	a.ScanInterval = &metav1.Duration{Duration: 1500 * time.Millisecond}
	a.ScaleDownDelayAfterDelete = &metav1.Duration{Duration: 2 * time.Minute}
	a.NewPodScaleUpDelay = &metav1.Duration{Duration: 2 * time.Minute}
	a.MaxNodeProvisionTime = &metav1.Duration{Duration: 20*time.Minute + time.Second}
	out := export(t, bp, AKS)
	for _, want := range []string{"scan-interval=2s ", "scale-down-delay-after-delete=2m ", "new-pod-scale-up-delay=2m ", "max-node-provision-time=21m "} {
		if !strings.Contains(out, want) {
			t.Errorf("profile lacks %q:\n%s", want, out)
		}
	}
	for _, note := range []string{"scanInterval 1.5s is rounded up to 2s", "maxNodeProvisionTime 20m1s is rounded up to 21m"} {
		if !strings.Contains(flat(out), note) {
			t.Errorf("no note %q:\n%s", note, out)
		}
	}
}
