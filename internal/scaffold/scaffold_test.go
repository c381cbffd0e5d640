package scaffold

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/pools"
)

var update = flag.Bool("update", false, "rewrite golden files")

func retail(t *testing.T) *v1alpha1.Blueprint {
	t.Helper()
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

var cases = []struct {
	golden string
	o      Options
}{
	{"inference", Options{Kind: Inference, Name: "reco", Team: "team-a"}},
	{"inference-gpu-model", Options{Kind: Inference, Name: "reco", Team: "team-a", GPUs: 1, Model: "reco:4"}},
	{"training", Options{Kind: Training, Name: "finetune", Team: "team-a"}},
	{"training-gpu", Options{Kind: Training, Name: "finetune", Team: "team-a", GPUs: 2}},
	{"batch", Options{Kind: Batch, Name: "embed", Team: "team-b"}},
	{"batch-queue", Options{Kind: Batch, Name: "embed", Team: "team-b", Queue: "sqs://eu-west-1/embed-jobs"}},
}

func render(t *testing.T, bp *v1alpha1.Blueprint, o Options) []byte {
	t.Helper()
	s, err := New(bp, o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Render(s.Objects)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The scaffolds are the product: pinned by golden files
// (go test ./internal/scaffold -update rewrites them).
func TestGolden(t *testing.T) {
	bp := retail(t)
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			got := render(t, bp, c.o)
			path := filepath.Join("testdata", c.golden+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs (-want +got); rewrite with -update if intended:\n%s", path, diff)
			}
		})
	}
}

// Each scaffold, beside the retail blueprint's manifests and nodes of
// each of its pools, passes berth audit with no findings at all.
func TestAuditClean(t *testing.T) {
	bp := retail(t)
	var manifests, nodes bytes.Buffer
	if err := export.Export(&manifests, bp, export.Manifests); err != nil {
		t.Fatal(err)
	}
	for i := range bp.Spec.Pools {
		for n := range 2 {
			node := pools.NewNode(bp, &bp.Spec.Pools[i], n)
			node.APIVersion, node.Kind = "v1", "Node"
			b, _ := json.Marshal(node)
			nodes.Write(b)
		}
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "manifests.yaml"), manifests.Bytes())
			write(t, filepath.Join(dir, "nodes.json"), nodes.Bytes())
			write(t, filepath.Join(dir, File(c.o)), render(t, bp, c.o))
			inv, err := audit.LoadFiles([]string{dir}, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := audit.Options{}
			o.UseBlueprint(bp)
			r := audit.Check(inv, o)
			for _, f := range r.Findings {
				t.Errorf("%s %s %s: %s", f.Where(), f.Rule, f.Field, f.Message)
			}
		})
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Refusals name what is wrong and how to fix it.
func TestRefusals(t *testing.T) {
	bp := retail(t)
	// A team held to batch, and a blueprint with no training class.
	bp.Spec.Teams = append(bp.Spec.Teams, v1alpha1.Team{Name: "web", Classes: []string{"batch"}})
	noTraining := retail(t)
	noTraining.Spec.Classes = []v1alpha1.Class{noTraining.Spec.Classes[0], noTraining.Spec.Classes[2]}
	for _, c := range []struct {
		name string
		bp   *v1alpha1.Blueprint
		o    Options
		want []string
	}{
		{"team may not", bp, Options{Kind: Inference, Name: "reco", Team: "web"}, []string{"team web may not use a Serving class: inference is", "fix: add one of them to team web's classes"}},
		{"no class of the role", noTraining, Options{Kind: Training, Name: "ft", Team: "team-a"}, []string{"the blueprint has no Training class", "fix: add one to spec.classes"}},
		{"unknown team", bp, Options{Kind: Batch, Name: "x", Team: "nobody"}, []string{`no team "nobody"`, "fix:"}},
		{"class forbidden", bp, Options{Kind: Training, Name: "ft", Team: "web", Class: "training"}, []string{"team web may not use class training", "fix:"}},
		{"class of another role", bp, Options{Kind: Training, Name: "ft", Team: "team-a", Class: "batch"}, []string{"class batch has role General", "fix:"}},
		{"gpus without a GPU pool", bp, Options{Kind: Batch, Name: "x", Team: "team-a", GPUs: 1}, []string{"class batch has no GPU pool", "fix:"}},
		{"model on training", bp, Options{Kind: Training, Name: "ft", Team: "team-a", Model: "reco@production"}, []string{"--model is for inference"}},
		{"bad model", bp, Options{Kind: Inference, Name: "reco", Team: "team-a", Model: "reco"}, []string{"want NAME@ALIAS or NAME:VERSION"}},
		{"bad name", bp, Options{Kind: Batch, Name: "Embed_1", Team: "team-a"}, []string{`name "Embed_1"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.bp, c.o)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A class's scaling shapes the HPA: its replicas, its CPU target and a
// longer scale-down window.
func TestClassScaling(t *testing.T) {
	bp := retail(t)
	bp.Spec.Classes[0].Scaling = &v1alpha1.Scaling{Metric: v1alpha1.MetricCPU, Target: 60, MinReplicas: ptr.To[int32](3), MaxReplicas: 20,
		ScaleDownWindow: &metav1.Duration{Duration: 15 * time.Minute}}
	s, err := New(bp, Options{Kind: Inference, Name: "reco", Team: "team-a", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range s.Objects {
		h, ok := o.Object.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			continue
		}
		got := []int32{*h.Spec.MinReplicas, h.Spec.MaxReplicas, *h.Spec.Metrics[0].Resource.Target.AverageUtilization, *h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds}
		if want := []int32{3, 20, 60, 900}; !slices.Equal(got, want) {
			t.Errorf("HPA min, max, target, window = %v; want %v", got, want)
		}
		return
	}
	t.Error("no HPA")
}

// Following an alias leaves the version unpinned until berth model
// promote pins it: audit says so, and says nothing else.
func TestAliasIsUnpinnedOnly(t *testing.T) {
	bp := retail(t)
	s, err := New(bp, Options{Kind: Inference, Name: "reco", Team: "team-a", GPUs: 1, Model: "reco@production"})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Objects[0].Object
	data, _ := json.Marshal(d)
	if !strings.Contains(string(data), `"berth.io/model":"reco@production"`) || strings.Contains(string(data), "model-ref") {
		t.Errorf("the Deployment should follow the alias, unpinned: %s", data)
	}
}
