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
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/pools"
)

var update = flag.Bool("update", false, "rewrite golden files")

var cases = []struct {
	golden string
	o      Options
}{
	{"inference", Options{Kind: Inference, Name: "reco", Team: "team-a"}},
	{"inference-gpu-model", Options{Kind: Inference, Name: "reco", Team: "team-a", GPUs: 1, Model: "reco:4"}},
	{"training", Options{Kind: Training, Name: "finetune", Team: "team-a"}},
	{"training-gpu", Options{Kind: Training, Name: "finetune", Team: "team-a", GPUs: 2}},
	{"batch", Options{Kind: Batch, Name: "embed", Team: "team-b", Class: "batch"}},
	{"batch-queue", Options{Kind: Batch, Name: "embed", Team: "team-b", Queue: "sqs://eu-west-1/embed-jobs"}},
	{"batch-kafka", Options{Kind: Batch, Name: "embed", Team: "team-b", Queue: "kafka://kafka-0.queues:9092,kafka-1.queues:9092/embed-jobs"}},
	{"batch-amqp-keda", Options{Kind: Batch, Name: "embed", Team: "team-b", Queue: "amqp://rabbitmq.queues:5672/embed-jobs", Scaler: ScalerKEDA}},
	{"batch-inference", Options{Kind: Batch, Name: "embed", Team: "team-b", Class: "batch-inference"}},
	{"batch-inference-keda", Options{Kind: Batch, Name: "embed", Team: "team-b", Class: "batch-inference", Scaler: ScalerKEDA}},
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
	bp := blueprint.MustLoadTemplate("retail")
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
	bp := blueprint.MustLoadTemplate("retail")
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
			// The retail design's own finding (its quotas can be held
			// by waiting pods) is the blueprint's, not the scaffold's:
			// audit's TestRetailIsClean counts it.
			o := audit.Options{Ignore: []string{v1alpha1.RuleQuotaHeldWaiting}}
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

// A batch worker gets a class of the team's with a queue when there is
// one, since a worker of a class without one starts at 0 replicas and
// nothing scales it; the scaffold says which class it chose and why.
func TestClassChoice(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	bp.Spec.Teams = append(bp.Spec.Teams, v1alpha1.Team{Name: "etl", Namespaces: []string{"etl"}, Classes: []string{"batch"}})
	for _, c := range []struct {
		name  string
		o     Options
		class string
		why   []string
	}{
		{"batch: the class with a queue", Options{Kind: Batch, Name: "embed", Team: "team-b"}, "batch-inference",
			[]string{"the first General class team team-b may use with a queue (rabbitmq batch-inference), which scales the worker from zero", "batch has none"}},
		{"batch with --queue: a class without one", Options{Kind: Batch, Name: "embed", Team: "team-b", Queue: "sqs://eu-west-1/embed-jobs"}, "batch",
			[]string{"the first General class team team-b may use"}},
		{"batch, no class with a queue", Options{Kind: Batch, Name: "embed", Team: "etl"}, "batch",
			[]string{"the only General class team etl may use", "no class of the team's has a queue, so the worker starts at 0 replicas and nothing scales it"}},
		{"--class", Options{Kind: Batch, Name: "embed", Team: "team-b", Class: "batch"}, "batch", []string{"--class"}},
		{"inference", Options{Kind: Inference, Name: "reco", Team: "team-a"}, "inference", []string{"the only Serving class team team-a may use"}},
		// --gpus 0 rules out the GPU-only class with a queue.
		{"batch with --gpus 0: a class with CPU pools", Options{Kind: Batch, Name: "etl", Team: "team-b", GPUs: 0, GPUsGiven: true}, "batch",
			[]string{"the only General class team team-b may use"}},
		{"batch with --gpus 1: the class with a queue and GPU pools", Options{Kind: Batch, Name: "embed", Team: "team-b", GPUs: 1, GPUsGiven: true}, "batch-inference",
			[]string{"with a queue"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(bp, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if s.Class.Name != c.class {
				t.Errorf("class %s; want %s", s.Class.Name, c.class)
			}
			if c.o.GPUsGiven && gpusOf(s) != c.o.GPUs {
				t.Errorf("the pods ask for %d GPUs; --gpus said %d", gpusOf(s), c.o.GPUs)
			}
			for _, w := range c.why {
				if !strings.Contains(s.Why, w) {
					t.Errorf("why %q does not say %q", s.Why, w)
				}
			}
		})
	}
}

// Refusals name what is wrong and how to fix it.
func TestRefusals(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	// A team held to batch, and a blueprint with no training class.
	bp.Spec.Teams = append(bp.Spec.Teams, v1alpha1.Team{Name: "web", Classes: []string{"batch"}})
	noTraining := blueprint.MustLoadTemplate("retail")
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
		{"gpus without a GPU pool", bp, Options{Kind: Batch, Name: "x", Team: "team-a", Class: "batch", GPUs: 1}, []string{"class batch has no GPU pool", "fix:"}},
		{"--gpus 0 on a GPU-only class", bp, Options{Kind: Batch, Name: "x", Team: "team-b", Class: "batch-inference", GPUsGiven: true}, []string{"class batch-inference has only GPU pools (gpu)", "fix: ask for GPUs"}},
		{"--gpus 0, no class with CPU pools", bp, Options{Kind: Training, Name: "ft", Team: "team-a", GPUsGiven: true}, []string{"no Training class team team-a may use has a pool without GPUs", "training has only GPU pools", "fix:"}},
		{"model on training", bp, Options{Kind: Training, Name: "ft", Team: "team-a", Model: "reco@production"}, []string{"--model is for inference"}},
		{"bad model", bp, Options{Kind: Inference, Name: "reco", Team: "team-a", Model: "reco"}, []string{"want NAME@ALIAS or NAME:VERSION"}},
		{"bad name", bp, Options{Kind: Batch, Name: "Embed_1", Team: "team-a"}, []string{`name "Embed_1"`}},
		{"unknown scaler", bp, Options{Kind: Batch, Name: "x", Team: "team-a", Queue: "sqs://eu-west-1/q", Scaler: "argo"}, []string{`--scaler "argo": want hpa or keda`, "fix:"}},
		{"keda on inference", bp, Options{Kind: Inference, Name: "reco", Team: "team-a", Scaler: ScalerKEDA}, []string{"--scaler keda is for batch workers", "fix:"}},
		{"keda without a queue", bp, Options{Kind: Batch, Name: "x", Team: "team-a", Class: "batch", Scaler: ScalerKEDA}, []string{"class batch has none and no --queue was given", "fix: pass --queue URL"}},
		{"queue beside the class's", bp, Options{Kind: Batch, Name: "x", Team: "team-a", Class: "batch-inference", Queue: "amqp://h/q"}, []string{"class batch-inference drains its own rabbitmq queue (batch-inference)", "fix: drop --queue"}},
		{"queue URL unread", bp, Options{Kind: Batch, Name: "x", Team: "team-a", Queue: "redis://h/q"}, []string{`berth does not know the scheme "redis"`, "fix: pass amqp://HOST/QUEUE"}},
		{"unknown storage class", bp, Options{Kind: Training, Name: "ft", Team: "team-a", StorageClass: "gp3"}, []string{"--storage-class gp3: the blueprint has no such storage class", "fix: use one of standard"}},
		{"storage class on inference", bp, Options{Kind: Inference, Name: "reco", Team: "team-a", StorageClass: "standard"}, []string{"--storage-class is for training's checkpoint claim"}},
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
	bp := blueprint.MustLoadTemplate("retail")
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

// The inference HPA scales on the class's metric: requests per second and
// GPU utilisation as Pods metrics, CPU as a Resource metric; GPU
// utilisation falls back to CPU for a replica without GPUs.
func TestInferenceMetric(t *testing.T) {
	for _, c := range []struct {
		metric v1alpha1.ScalingMetric
		gpus   int
		want   autoscalingv2.MetricSpec
	}{
		{v1alpha1.MetricRPS, 0, podsMetric("requests_per_second", 40)},
		{v1alpha1.MetricGPUUtilization, 1, podsMetric("DCGM_FI_DEV_GPU_UTIL", 40)},
		{v1alpha1.MetricGPUUtilization, 0, cpuMetric(70)},
		{v1alpha1.MetricCPU, 0, cpuMetric(40)},
		{"", 0, cpuMetric(70)},
	} {
		bp := blueprint.MustLoadTemplate("retail")
		bp.Spec.Classes[0].Scaling = &v1alpha1.Scaling{Metric: c.metric, Target: 40, MaxReplicas: 4}
		if c.metric == "" {
			bp.Spec.Classes[0].Scaling = nil
		}
		s, err := New(bp, Options{Kind: Inference, Name: "reco", Team: "team-a", GPUs: c.gpus})
		if err != nil {
			t.Fatal(err)
		}
		h := s.Objects[len(s.Objects)-1].Object.(*autoscalingv2.HorizontalPodAutoscaler)
		if diff := cmp.Diff(c.want, h.Spec.Metrics[0]); diff != "" {
			t.Errorf("class metric %q, %d GPUs: HPA metric (-want +got):\n%s", c.metric, c.gpus, diff)
		}
	}
}

// --queue URLs of each broker, and those berth cannot read.
func TestParseQueueURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		want v1alpha1.Queue
		name string
	}{
		{"amqp://user:pw@rabbit:5672/vhost/jobs", v1alpha1.Queue{Type: v1alpha1.QueueRabbitMQ, QueueName: "jobs", HostSecret: "w-rabbitmq", Target: 5}, "jobs"},
		{"amqps://rabbit/jobs", v1alpha1.Queue{Type: v1alpha1.QueueRabbitMQ, QueueName: "jobs", HostSecret: "w-rabbitmq", Target: 5}, "jobs"},
		{"kafka://k0:9092,k1:9092/events?group=g", v1alpha1.Queue{Type: v1alpha1.QueueKafka, BootstrapServers: "k0:9092,k1:9092", Topic: "events", ConsumerGroup: "g", Target: 5}, "events"},
		{"kafka://k0:9092/events", v1alpha1.Queue{Type: v1alpha1.QueueKafka, BootstrapServers: "k0:9092", Topic: "events", ConsumerGroup: "w", Target: 5}, "events"},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", AWSRegion: "eu-west-1", Target: 5}, "jobs"},
		{"sqs://us-east-2/jobs", v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: "jobs", AWSRegion: "us-east-2", Target: 5}, "jobs"},
	} {
		q, err := parseQueueURL(c.url, "w")
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if diff := cmp.Diff(c.want, *q.Queue); diff != "" || q.name != c.name {
			t.Errorf("%s: name %q (want %q), queue (-want +got):\n%s", c.url, q.name, c.name, diff)
		}
	}
	for _, bad := range []string{"jobs", "amqp://rabbit", "amqp://rabbit/", "kafka://k0:9092/a/b", "sqs://eu-west-1", "https://example.com/q", "https://sqs.eu-west-1.amazonaws.com/jobs", "redis://r/q", "::"} {
		if _, err := parseQueueURL(bad, "w"); err == nil || !strings.Contains(err.Error(), "fix: pass amqp://") {
			t.Errorf("%s: error %v; want one with the URL forms as its fix", bad, err)
		}
	}
}

// Following an alias leaves the version unpinned until berth model
// promote pins it: audit says so, and says nothing else.
func TestAliasIsUnpinnedOnly(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
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

// gpusOf is the GPUs the first container of s's pod template asks for.
func gpusOf(s *Scaffold) int {
	for _, obj := range s.Objects {
		var spec *corev1.PodSpec
		switch o := obj.Object.(type) {
		case *appsv1.Deployment:
			spec = &o.Spec.Template.Spec
		case *batchv1.Job:
			spec = &o.Spec.Template.Spec
		default:
			continue
		}
		n := 0
		for name, q := range spec.Containers[0].Resources.Limits {
			if strings.HasSuffix(string(name), "/gpu") {
				n += int(q.Value())
			}
		}
		return n
	}
	return -1
}

// The checkpoint claim names the class asked for, else the blueprint's
// default.
func TestCheckpointClaimClass(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	bp.Spec.Storage.Classes = append(bp.Spec.Storage.Classes, v1alpha1.StorageClass{Name: "fast", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}})
	for _, c := range []struct{ asked, want string }{{"", "standard"}, {"fast", "fast"}} {
		s, err := New(bp, Options{Kind: Training, Name: "ft", Team: "team-a", StorageClass: c.asked})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, o := range s.Objects {
			if pvc, ok := o.Object.(*corev1.PersistentVolumeClaim); ok && pvc.Spec.StorageClassName != nil {
				got = *pvc.Spec.StorageClassName
			}
		}
		if got != c.want {
			t.Errorf("--storage-class %q: the claim's class is %q; want %q", c.asked, got, c.want)
		}
	}
}

// Under queueing: Kueue a training Job names its team's LocalQueue and
// its class's WorkloadPriorityClass, the names compile gives them, and
// says it waits suspended.
func TestTrainingJobUnderKueue(t *testing.T) {
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	bp, _, err := blueprint.Parse("retail.yaml", []byte(strings.Replace(string(raw), "  pools:\n", "  queueing: Kueue\n  pools:\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(bp, Options{Kind: Training, Name: "finetune", Team: "team-b", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	for _, o := range s.Objects {
		if j, ok := o.Object.(*batchv1.Job); ok {
			job = j
			if !strings.Contains(o.Comment, "waits suspended, holding no quota, in LocalQueue team-b") {
				t.Errorf("the Job's comment does not say it is queued:\n%s", o.Comment)
			}
		}
	}
	if job == nil {
		t.Fatal("no Job")
	}
	if q, pc := job.Labels[v1alpha1.LabelKueueQueueName], job.Labels[v1alpha1.LabelKueuePriorityClass]; q != "team-b" || pc != "training-low" {
		t.Errorf("Job labels: queue %q, priority class %q; want team-b, training-low", q, pc)
	}
	// Under ResourceQuota it names no queue.
	if got := string(render(t, blueprint.MustLoadTemplate("retail"), Options{Kind: Training, Name: "finetune", Team: "team-b", GPUs: 1})); strings.Contains(got, "kueue.x-k8s.io") {
		t.Errorf("a training Job under ResourceQuota names Kueue:\n%s", got)
	}
}
