package why

import (
	"fmt"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/objtest"
)

// BenchmarkExplain1000Nodes is the analysis and the text alone (no API
// calls): 1,000 nodes in 10 pools, 10 pods on each node, and a pod that
// fits none of them.
func BenchmarkExplain1000Nodes(b *testing.B) {
	var ns []corev1.Node
	var pods []corev1.Pod
	for i := range 1000 {
		name := fmt.Sprintf("n-%d", i)
		ns = append(ns, *poolNode(name, fmt.Sprintf("pool-%d", i%10)).Zone(fmt.Sprintf("zone-%d", i%3)).Obj())
		for j := range 10 {
			pods = append(pods, *objtest.MakePod("ns", fmt.Sprintf("p-%d-%d", i, j)).Label("app", "web").CPU("1").On(name).Obj())
		}
	}
	pod := objtest.MakePod("ns", "big").Label("app", "web").CPU("12").Obj()
	b.ReportAllocs()
	for b.Loop() {
		s := snapshotOf(ns, pods...)
		v := Explain(s, pod)
		if err := Render(io.Discard, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExplainAllReplicas is `why --all` on 1,000 nodes with 1,000
// pending replicas of two Deployments (an image of a cluster whose
// scheduler is behind): the Filter plugins run over the nodes once per
// Deployment, not once per pod.
func BenchmarkExplainAllReplicas(b *testing.B) {
	ns, pods := replicaFixture(1000, 500)
	b.ReportAllocs()
	for b.Loop() {
		s := snapshotOf(ns, pods...)
		if sum := ExplainAll(s, ""); len(sum.Pods) != 1000 {
			b.Fatalf("%d pods explained, want 1000", len(sum.Pods))
		}
	}
}

// replicaFixture is nodes nodes, each running a pod, and perApp pending
// replicas of each of two apps, each with its own token volume.
func replicaFixture(nodes, perApp int) ([]corev1.Node, []corev1.Pod) {
	var ns []corev1.Node
	var pods []corev1.Pod
	for i := range nodes {
		name := fmt.Sprintf("n-%d", i)
		ns = append(ns, *poolNode(name, fmt.Sprintf("pool-%d", i%10)).Zone(fmt.Sprintf("zone-%d", i%3)).Obj())
		pods = append(pods, *objtest.MakePod("ns", fmt.Sprintf("running-%d", i)).Label("app", "db").CPU("1").On(name).Obj())
	}
	for _, app := range []string{"web", "api"} {
		for j := range perApp {
			p := *objtest.MakePod("ns", fmt.Sprintf("%s-%d", app, j)).Label("app", app).CPU("1").Owner("ReplicaSet", app).Obj()
			p.Spec.Volumes = []corev1.Volume{{Name: fmt.Sprintf("kube-api-access-%05d", j), VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: p.Spec.Volumes[0].Name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
			pods = append(pods, p)
		}
	}
	return ns, pods
}
