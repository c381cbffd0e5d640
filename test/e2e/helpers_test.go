package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/test/harness"
)

// namespace creates a namespace for one test, deleted when it ends, and
// waits for its default ServiceAccount (pods are refused until then).
func namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + fmt.Sprint(time.Now().UnixNano()%100000)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	eventually(t, time.Minute, "default ServiceAccount in "+name, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

// The command line and waits, as every test package on a cluster has
// them (test/harness).
var (
	berth      = harness.Berth
	berthIn    = harness.BerthIn
	berthOut   = harness.BerthOut
	mustBerth  = harness.MustBerth
	eventually = harness.Eventually
)

// createDeployment creates d on the suite's cluster.
func createDeployment(t *testing.T, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	created, err := client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating deployment %s: %v", d.Name, err)
	}
	return created
}

// gpuPod is a pod that tolerates the GPU taint and asks for one GPU.
func gpuPod(ns, name string) *corev1.Pod {
	return objtest.MakePod(ns, name).GPU("1").Toleration(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}).Obj()
}

// runningPods waits until the selected pods number want and are all
// Running, and returns them.
func runningPods(t *testing.T, ns, selector string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, fmt.Sprintf("%d running pods %s in %s", want, selector, ns), func() (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = list.Items
		if len(pods) != want {
			return false, nil
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	return pods
}

// poolOf maps node names to their berth.io/pool, and to their zone.
func nodeLabels(t *testing.T) map[string]map[string]string {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.Labels
	}
	return out
}

// countBy counts pods by a label of the node each runs on.
func countBy(t *testing.T, pods []corev1.Pod, label string) map[string]int {
	t.Helper()
	nodes := nodeLabels(t)
	out := map[string]int{}
	for _, p := range pods {
		out[nodes[p.Spec.NodeName][label]]++
	}
	return out
}

func decodeFile[T any](t *testing.T, path string, into *T) {
	t.Helper()
	data, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

var poolLabel = v1alpha1.LabelPool
