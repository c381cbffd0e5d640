package audit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// The scheduler's matching, where audit's own matched by hand: In and
// Exists only, any term of several, an Equal toleration needing a key.
// Each case below is one the hand-written matcher answered wrongly.
func TestSelectsAsTheScheduler(t *testing.T) {
	node := func(name, pool string, labels ...string) *corev1.Node {
		l := map[string]string{v1alpha1.LabelPool: pool}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	v := &view{
		pools: []*pool{
			{name: "cpu", nodes: []*corev1.Node{node("cpu-0", "cpu")}},
			{name: "gpu", nodes: []*corev1.Node{node("gpu-0", "gpu", v1alpha1.LabelGPUPresent, "true")}, gpu: true},
			{name: "system", nodes: []*corev1.Node{node("system-0", "system")}, system: true},
		},
		gpuPools: map[string]bool{"gpu": true},
	}
	affinity := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, c := range []struct {
		name  string
		spec  corev1.PodSpec
		field string
	}{
		{"NotIn every other pool", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelPool, corev1.NodeSelectorOpNotIn, "cpu", "system"))}, "affinity.nodeAffinity"},
		{"NotIn one pool of two others", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelPool, corev1.NodeSelectorOpNotIn, "cpu"))}, ""},
		{"In gpu, or any term In cpu", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelPool, corev1.NodeSelectorOpIn, "gpu"), expr(v1alpha1.LabelPool, corev1.NodeSelectorOpIn, "cpu"))}, ""},
		{"matchFields on a GPU node", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-0"}}}})}, "affinity.nodeAffinity"},
		{"DoesNotExist a GPU label", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelGPUPresent, corev1.NodeSelectorOpDoesNotExist))}, ""},
		{"nodeSelector on the pool", corev1.PodSpec{NodeSelector: map[string]string{v1alpha1.LabelPool: "gpu"}}, "nodeSelector"},
		{"no selection", corev1.PodSpec{}, ""},
	} {
		if field, _ := v.selectsGPU(&c.spec); field != c.field {
			t.Errorf("%s: selectsGPU says %q, want %q", c.name, field, c.field)
		}
	}

	// Without nodes to ask, each requirement is asked alone: Gt on
	// Karpenter's GPU count picks GPU nodes; NotIn does not.
	bare := &view{}
	for _, c := range []struct {
		name  string
		spec  corev1.PodSpec
		field string
	}{
		{"Gt 0 GPUs", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelKarpenterGPUCount, corev1.NodeSelectorOpGt, "0"))}, "affinity.nodeAffinity"},
		{"Exists", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelGPUPresent, corev1.NodeSelectorOpExists))}, "affinity.nodeAffinity"},
		{"NotIn a product", corev1.PodSpec{Affinity: affinity(expr(v1alpha1.LabelGPUProduct, corev1.NodeSelectorOpNotIn, "NVIDIA-A100"))}, ""},
		{"nodeSelector", corev1.PodSpec{NodeSelector: map[string]string{v1alpha1.LabelGPUPresent: "true"}}, "nodeSelector"},
	} {
		if field, _ := bare.selectsGPU(&c.spec); field != c.field {
			t.Errorf("without nodes, %s: selectsGPU says %q, want %q", c.name, field, c.field)
		}
	}
}

func TestToleratesAsTheScheduler(t *testing.T) {
	gpu := []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	for _, c := range []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"no effect", corev1.Toleration{Key: "gpu", Value: "true"}, true},
		{"Exists without a key", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{"another effect", corev1.Toleration{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoExecute}, false},
		{"another value", corev1.Toleration{Key: "gpu", Value: "false"}, false},
		// The API server refuses an Equal toleration without a key;
		// the scheduler's matching reads it as the value alone.
		{"Equal without a key", corev1.Toleration{Value: "true"}, true},
	} {
		if _, got := tolerates(&corev1.PodSpec{Tolerations: []corev1.Toleration{c.tol}}, gpu); got != c.want {
			t.Errorf("%s: tolerates = %v, want %v", c.name, got, c.want)
		}
	}
}
