package why

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/objtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}

// neverVerdict is a training pod waiting on a full GPU pool at its
// maximum, in a namespace with a quota.
func neverVerdict(t *testing.T) Verdict {
	s := fullGPUs()
	s.Blueprint = testBlueprint(t, "")
	s.ResourceQuotas = []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "team-quota"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("6")},
			Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("3")},
		},
	}}
	s.Events = []corev1.Event{event("Pod", "lab", "train", "FailedScheduling", "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. preemption: not eligible due to preemptionPolicy=Never.")}
	pod := objtest.MakePod("lab", "train").GPU("1").Toleration(tolerateGPU).NodeSelector("berth.io/pool", "gpu").
		Priority("training-low", 1000, corev1.PreemptNever).Owner("Job", "train").
		Unschedulable("0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. preemption: not eligible due to preemptionPolicy=Never.").Obj()
	pod.UID = "Pod/train"
	return Explain(s, pod)
}

func TestRenderText(t *testing.T) {
	v := neverVerdict(t)
	var b bytes.Buffer
	if err := Render(&b, &v); err != nil {
		t.Fatal(err)
	}
	golden(t, "never.txt", b.Bytes())
}

func TestRenderJSON(t *testing.T) {
	v := neverVerdict(t)
	var b bytes.Buffer
	if err := RenderJSON(&b, &v); err != nil {
		t.Fatal(err)
	}
	golden(t, "never.json", b.Bytes())
}

func TestRenderSummary(t *testing.T) {
	s := fullGPUs()
	s.Pods = append(s.Pods, *objtest.MakePod("lab", "train").GPU("1").Toleration(tolerateGPU).Priority("training-low", 1000, corev1.PreemptNever).Obj(),
		*objtest.MakePod("web", "site").NodeSelector("agentpool", "nope").Obj())
	sum := ExplainAll(s, "")
	var b bytes.Buffer
	if err := RenderSummary(&b, &sum); err != nil {
		t.Fatal(err)
	}
	golden(t, "all.txt", b.Bytes())
}
