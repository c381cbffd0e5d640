package stages

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"

	"berth.io/berth/api/v1alpha1"
)

// berth's node stages are KWOK's with one selector added: the kubelet is
// not stopped.
func TestNodeStagesAreKWOKsWithTheStoppedSelector(t *testing.T) {
	for _, tc := range []struct{ ours, theirs string }{
		{NodeInitialize, nodefast.DefaultNodeInit},
		{NodeHeartbeat, nodeheartbeat.DefaultNodeHeartbeatWithLease},
	} {
		ours, theirs := parse(t, tc.ours), parse(t, tc.theirs)
		var kept []internalversion.MatchExpression
		found := false
		for _, e := range ours.Spec.Selector.MatchExpressions {
			if e.JQ != nil && e.JQ.Key == `.metadata.annotations["`+v1alpha1.AnnotationKubeletStopped+`"]` && e.JQ.Operator == internalversion.SelectorOpDoesNotExist {
				found = true
				continue
			}
			kept = append(kept, e)
		}
		if !found {
			t.Errorf("%s lacks the stopped-kubelet selector", ours.Name)
		}
		ours.Spec.Selector.MatchExpressions = kept
		if d := cmp.Diff(theirs, ours); d != "" {
			t.Errorf("%s differs from KWOK's beyond the selector (-kwok +berth):\n%s", ours.Name, d)
		}
	}
}

// A node marked NotReady by the node lifecycle controller is made Ready
// again by its kubelet, unless the kubelet is stopped; a Ready node
// heartbeats unless stopped.
func TestStoppedNodes(t *testing.T) {
	lc, err := lifecycle.NewLifecycle([]*internalversion.Stage{parse(t, NodeInitialize), parse(t, NodeHeartbeat)})
	if err != nil {
		t.Fatal(err)
	}
	node := func(ready corev1.ConditionStatus, stopped bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{}}}
		n.Status.Phase = corev1.NodeRunning
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		if stopped {
			n.Annotations[v1alpha1.AnnotationKubeletStopped] = "2026-11-23T12:00:00Z"
		}
		return n
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want []string
	}{
		{"an unready node is initialized", node(corev1.ConditionUnknown, false), []string{"node-initialize"}},
		{"a ready node heartbeats", node(corev1.ConditionTrue, false), []string{"node-heartbeat-with-lease"}},
		{"a stopped node stays Unknown", node(corev1.ConditionUnknown, true), nil},
		{"a stopped node does not heartbeat", node(corev1.ConditionTrue, true), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := &lifecycle.Event{Labels: tc.node.Labels, Annotations: tc.node.Annotations, Data: tc.node}
			matched, err := lc.ListAllPossible(context.Background(), event)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range matched {
				names = append(names, s.Name())
			}
			if d := cmp.Diff(tc.want, names); d != "" {
				t.Errorf("matching stages (-want +got):\n%s", d)
			}
		})
	}
}
