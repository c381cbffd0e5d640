package simulate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
			makeNode("gpu-0", "zone-1").taint("gpu", "true").obj(),
			makeNode("cpu-0", "zone-1").obj(),
		}},
		pod: makePod("web").obj(),
		want: []string{
			"gpu-0: TaintToleration: node(s) had untolerated taint(s)",
			"cpu-0: fits",
		},
	}, {
		name: "taint tolerated",
		cluster: Cluster{Nodes: []*corev1.Node{
			makeNode("gpu-0", "zone-1").taint("gpu", "true").obj(),
		}},
		pod:  makePod("web").tolerate("gpu").obj(),
		want: []string{"gpu-0: fits"},
	}, {
		name: "node selector matches no label",
		cluster: Cluster{Nodes: []*corev1.Node{
			makeNode("cpu-0", "zone-1").label("agentpool", "cpu").obj(),
			makeNode("mem-0", "zone-1").label("agentpool", "mem").obj(),
		}},
		pod: makePod("web").selector("agentpool", "mem").obj(),
		want: []string{
			"cpu-0: NodeAffinity: node(s) didn't match Pod's node affinity/selector",
			"mem-0: fits",
		},
	}, {
		name: "insufficient GPU",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				makeNode("gpu-0", "zone-1").gpus(1).obj(),
				makeNode("gpu-1", "zone-1").gpus(4).obj(),
				makeNode("cpu-0", "zone-1").obj(),
			},
			Pods: []*corev1.Pod{makePod("busy").request(gpu, "1").on("gpu-1").obj()},
		},
		pod: makePod("train").request(gpu, "2").obj(),
		want: []string{
			"gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu",
			"gpu-1: fits",
			"cpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu",
		},
	}, {
		name: "GPUs taken by bound pods",
		cluster: Cluster{
			Nodes: []*corev1.Node{makeNode("gpu-0", "zone-1").gpus(4).obj()},
			Pods: []*corev1.Pod{
				makePod("a").request(gpu, "2").on("gpu-0").obj(),
				makePod("b").request(gpu, "1").on("gpu-0").obj(),
			},
		},
		pod:  makePod("train").request(gpu, "2").obj(),
		want: []string{"gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu"},
	}, {
		name: "zone spread past maxSkew",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				makeNode("a-0", "zone-a").obj(),
				makeNode("a-1", "zone-a").obj(),
				makeNode("b-0", "zone-b").obj(),
			},
			Pods: []*corev1.Pod{
				makePod("web-1").label("app", "web").on("a-0").obj(),
				makePod("web-2").label("app", "web").on("a-1").obj(),
				makePod("web-3").label("app", "web").on("b-0").obj(),
			},
		},
		pod: makePod("web-4").label("app", "web").spread(corev1.LabelTopologyZone, 1, "web").obj(),
		want: []string{
			"a-0: PodTopologySpread: node(s) didn't match pod topology spread constraints",
			"a-1: PodTopologySpread: node(s) didn't match pod topology spread constraints",
			"b-0: fits",
		},
	}, {
		name: "required anti-affinity on hostname",
		cluster: Cluster{
			Nodes: []*corev1.Node{
				makeNode("n-0", "zone-1").obj(),
				makeNode("n-1", "zone-1").obj(),
			},
			Pods: []*corev1.Pod{makePod("db-1").label("app", "db").antiAffinity(corev1.LabelHostname, "db").on("n-0").obj()},
		},
		pod: makePod("db-2").label("app", "db").antiAffinity(corev1.LabelHostname, "db").obj(),
		want: []string{
			"n-0: InterPodAffinity: node(s) didn't match pod anti-affinity rules",
			"n-1: fits",
		},
	}, {
		name: "unschedulable node",
		cluster: Cluster{Nodes: []*corev1.Node{
			makeNode("n-0", "zone-1").cordoned().obj(),
			makeNode("n-1", "zone-1").obj(),
		}},
		pod: makePod("web").obj(),
		want: []string{
			"n-0: NodeUnschedulable: node(s) were unschedulable",
			"n-1: fits",
		},
	}, {
		name: "finished pods hold nothing",
		cluster: Cluster{
			Nodes: []*corev1.Node{makeNode("gpu-0", "zone-1").gpus(1).obj()},
			Pods: []*corev1.Pod{func() *corev1.Pod {
				p := makePod("done").request(gpu, "1").on("gpu-0").obj()
				p.Status.Phase = corev1.PodSucceeded
				return p
			}()},
		},
		pod:  makePod("train").request(gpu, "1").obj(),
		want: []string{"gpu-0: fits"},
	}, {
		name: "nodeName names another node",
		cluster: Cluster{Nodes: []*corev1.Node{
			makeNode("n-0", "zone-1").obj(),
			makeNode("n-1", "zone-1").obj(),
		}},
		pod: makePod("pinned").on("n-1").obj(),
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
