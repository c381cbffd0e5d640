package simulate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/objtest"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		cluster Cluster
		pod     *corev1.Pod
		// want is each node's verdict as Verdict.String writes it.
		want []string
	}{{
		name: "taint not tolerated",
		cluster: Cluster{Nodes: []*corev1.Node{
			objtest.MakeNode("gpu-0").Zone("zone-1").Taint("gpu=true:NoSchedule").Obj(),
			objtest.MakeNode("cpu-0").Zone("zone-1").Obj(),
		}},
		pod: objtest.MakePod("team-a", "web").Obj(),
		want: []string{
			"gpu-0: TaintToleration: node(s) had untolerated taint(s)",
			"cpu-0: fits",
		},
	}, {
		name: "taint tolerated",
		cluster: Cluster{Nodes: []*corev1.Node{
			objtest.MakeNode("gpu-0").Zone("zone-1").Taint("gpu=true:NoSchedule").Obj(),
		}},
		pod:  objtest.MakePod("team-a", "web").Tolerate("gpu").Obj(),
		want: []string{"gpu-0: fits"},
	}, {
		name: "node selector matches no label",
		cluster: Cluster{Nodes: []*corev1.Node{
			objtest.MakeNode("cpu-0").Zone("zone-1").Label("agentpool", "cpu").Obj(),
			objtest.MakeNode("mem-0").Zone("zone-1").Label("agentpool", "mem").Obj(),
		}},
		pod: objtest.MakePod("team-a", "web").NodeSelector("agentpool", "mem").Obj(),
		want: []string{
			"cpu-0: NodeAffinity: node(s) didn't match Pod's node affinity/selector",
			"mem-0: fits",
		},
	}, {
		name: "insufficient GPU",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				objtest.MakeNode("gpu-0").Zone("zone-1").GPUs("1").Obj(),
				objtest.MakeNode("gpu-1").Zone("zone-1").GPUs("4").Obj(),
				objtest.MakeNode("cpu-0").Zone("zone-1").Obj(),
			},
			Pods: []*corev1.Pod{objtest.MakePod("team-a", "busy").GPU("1").On("gpu-1").Obj()},
		},
		pod: objtest.MakePod("team-a", "train").GPU("2").Obj(),
		want: []string{
			"gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu",
			"gpu-1: fits",
			"cpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu",
		},
	}, {
		name: "GPUs taken by bound pods",
		cluster: Cluster{
			Nodes: []*corev1.Node{objtest.MakeNode("gpu-0").Zone("zone-1").GPUs("4").Obj()},
			Pods: []*corev1.Pod{
				objtest.MakePod("team-a", "a").GPU("2").On("gpu-0").Obj(),
				objtest.MakePod("team-a", "b").GPU("1").On("gpu-0").Obj(),
			},
		},
		pod:  objtest.MakePod("team-a", "train").GPU("2").Obj(),
		want: []string{"gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu"},
	}, {
		name: "zone spread past maxSkew",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				objtest.MakeNode("a-0").Zone("zone-a").Obj(),
				objtest.MakeNode("a-1").Zone("zone-a").Obj(),
				objtest.MakeNode("b-0").Zone("zone-b").Obj(),
			},
			Pods: []*corev1.Pod{
				objtest.MakePod("team-a", "web-1").Label("app", "web").On("a-0").Obj(),
				objtest.MakePod("team-a", "web-2").Label("app", "web").On("a-1").Obj(),
				objtest.MakePod("team-a", "web-3").Label("app", "web").On("b-0").Obj(),
			},
		},
		pod: objtest.MakePod("team-a", "web-4").Label("app", "web").Spread(corev1.LabelTopologyZone, 1, "web").Obj(),
		want: []string{
			"a-0: PodTopologySpread: node(s) didn't match pod topology spread constraints",
			"a-1: PodTopologySpread: node(s) didn't match pod topology spread constraints",
			"b-0: fits",
		},
	}, {
		name: "required anti-affinity on hostname",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				objtest.MakeNode("n-0").Zone("zone-1").Obj(),
				objtest.MakeNode("n-1").Zone("zone-1").Obj(),
			},
			Pods: []*corev1.Pod{objtest.MakePod("team-a", "db-1").Label("app", "db").AntiAffinity(corev1.LabelHostname, "db").On("n-0").Obj()},
		},
		pod: objtest.MakePod("team-a", "db-2").Label("app", "db").AntiAffinity(corev1.LabelHostname, "db").Obj(),
		want: []string{
			"n-0: InterPodAffinity: node(s) didn't match pod anti-affinity rules",
			"n-1: fits",
		},
	}, {
		name: "unschedulable node",
		cluster: Cluster{Nodes: []*corev1.Node{
			objtest.MakeNode("n-0").Zone("zone-1").Cordon().Obj(),
			objtest.MakeNode("n-1").Zone("zone-1").Obj(),
		}},
		pod: objtest.MakePod("team-a", "web").Obj(),
		want: []string{
			"n-0: NodeUnschedulable: node(s) were unschedulable",
			"n-1: fits",
		},
	}, {
		name: "finished pods hold nothing",
		cluster: Cluster{
			Nodes: []*corev1.Node{objtest.MakeNode("gpu-0").Zone("zone-1").GPUs("1").Obj()},
			Pods: []*corev1.Pod{func() *corev1.Pod {
				p := objtest.MakePod("team-a", "done").GPU("1").On("gpu-0").Obj()
				p.Status.Phase = corev1.PodSucceeded
				return p
			}()},
		},
		pod:  objtest.MakePod("team-a", "train").GPU("1").Obj(),
		want: []string{"gpu-0: fits"},
	}, {
		name: "nodeName names another node",
		cluster: Cluster{Nodes: []*corev1.Node{
			objtest.MakeNode("n-0").Zone("zone-1").Obj(),
			objtest.MakeNode("n-1").Zone("zone-1").Obj(),
		}},
		pod: objtest.MakePod("team-a", "pinned").On("n-1").Obj(),
		want: []string{
			"n-0: NodeName: node(s) didn't match the requested node name",
			"n-1: fits",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := New(ctx, tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Check(ctx, tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range res.Nodes {
				got = append(got, v.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
