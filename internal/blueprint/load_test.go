package blueprint

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/internal/problem"
)

var update = flag.Bool("update", false, "rewrite golden files")

// valid is a small blueprint that loads cleanly; each test case breaks
// it in one place. Its line numbers are part of the expectations.
const valid = `apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata:
  name: t
spec:
  zones: [zone-1, zone-2]
  pools:
  - name: system
    mode: System
    machine: {cpu: 4, memory: 16Gi}
    count: 2
    taints: ["CriticalAddonsOnly=true:NoSchedule"]
  - name: gpu
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
  teams:
  - name: team-a
    quota: {gpu: 2}
  classes:
  - name: training
    pools: [gpu]
`

// edit applies old, new pairs to valid in turn, each once, failing the
// test if an old string is absent.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	return editDoc(t, valid, pairs...)
}

// editDoc is edit on another document.
func editDoc(t *testing.T, doc string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(doc, pairs[i]) {
			t.Fatalf("test fixture lacks %q", pairs[i])
		}
		doc = strings.Replace(doc, pairs[i], pairs[i+1], 1)
	}
	return doc
}

// want is a problem as a test expects it. Message and Fix are substrings
// of the real ones; an empty Fix still demands that there is one.
type want struct {
	Line    int
	Field   string
	Message string
	Fix     string
	Warning bool
}

// match renders got in the shape of wants, replacing a message or fix by
// the expected substring when it contains it, so that cmp.Diff shows only
// what differs.
func match(got problem.List, wants []want) []want {
	out := make([]want, 0, len(got))
	for i, p := range got {
		w := want{Line: p.Line, Field: p.Field, Message: p.Message, Fix: p.Fix, Warning: p.Warning}
		if p.Fix == "" {
			w.Fix = "(no fix)"
		}
		if i < len(wants) {
			if strings.Contains(p.Message, wants[i].Message) {
				w.Message = wants[i].Message
			}
			if p.Fix != "" && strings.Contains(p.Fix, wants[i].Fix) {
				w.Fix = wants[i].Fix
			}
		}
		out = append(out, w)
	}
	return out
}

// parseProblems parses doc as bp.yaml and returns the problems of the
// *Error it must be refused with.
func parseProblems(t *testing.T, doc string) problem.List {
	t.Helper()
	bp, _, err := Parse("bp.yaml", []byte(doc))
	var bad *Error
	if !errors.As(err, &bad) {
		t.Fatalf("Parse accepted the blueprint (error %v); want an *Error", err)
	}
	if bp != nil {
		t.Errorf("Parse returned a blueprint along with its error")
	}
	for _, p := range bad.Problems {
		if p.File != "bp.yaml" {
			t.Errorf("problem %q names file %q, want bp.yaml", p, p.File)
		}
	}
	return bad.Problems
}

// problemCase breaks valid with edits and lists the problems Parse must
// refuse it with.
type problemCase struct {
	name  string
	edits []string // old, new pairs applied to valid
	want  []want
}

func testProblems(t *testing.T, cases []problemCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseProblems(t, edit(t, tc.edits...))
			if diff := cmp.Diff(tc.want, match(got, tc.want)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// Each mistake validation catches, at the line and field it concerns.
func TestParseReportsEachProblem(t *testing.T) {
	testProblems(t, []problemCase{
		{
			name:  "negative quantity",
			edits: []string{"cpu: 4,", "cpu: -1,"},
			want:  []want{{Line: 10, Field: "spec.pools[0].machine.cpu", Message: "must be greater than zero", Fix: "cpu: 16"}},
		},
		{
			name:  "duplicate pool names",
			edits: []string{"  - name: gpu\n", "  - name: system\n", "pools: [gpu]", "pools: [system]"},
			want:  []want{{Line: 13, Field: "spec.pools[1].name", Message: `"system" appears more than once`, Fix: "rename or remove one"}},
		},
		{
			name:  "no System pool",
			edits: []string{"    mode: System\n", ""},
			want:  []want{{Line: 7, Field: "spec.pools", Message: "no pool has mode: System", Fix: "set mode: System on one pool"}},
		},
		{
			name:  "mode in lower case",
			edits: []string{"    mode: System\n", "    mode: system\n"},
			want: []want{
				{Line: 7, Field: "spec.pools", Message: "no pool has mode: System"},
				{Line: 9, Field: "spec.pools[0].mode", Message: `"system" is not one of System, User`, Fix: `did you mean "System"?`},
			},
		},
		{
			name:  "Windows System pool",
			edits: []string{"    mode: System\n", "    mode: System\n    os: Windows\n"},
			want:  []want{{Line: 10, Field: "spec.pools[0].os", Message: "a System pool must run Linux", Fix: "set os: Linux, or mode: User"}},
		},
		{
			name:  "System pool of zero nodes",
			edits: []string{"    count: 2\n", "    count: 0\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].count", Message: "a System pool must keep at least one node", Fix: "set it to 1 or more"}},
		},
		{
			name:  "System pool scaling to zero",
			edits: []string{"    count: 2\n", "    autoscale: {min: 0, max: 3}\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].autoscale.min", Message: "a System pool must keep at least one node", Fix: "set it to 1 or more"}},
		},
		{
			name:  "taint key",
			edits: []string{"gpu=true:NoSchedule", "g pu=true:NoSchedule"},
			want:  []want{{Line: 16, Field: "spec.pools[1].taints[0]", Message: `taint key "g pu" is invalid`, Fix: `"example.com/gpu"`}},
		},
		{
			name:  "taint value",
			edits: []string{"gpu=true:NoSchedule", "gpu=tr ue:NoSchedule"},
			want:  []want{{Line: 16, Field: "spec.pools[1].taints[0]", Message: `taint value "tr ue" is invalid`, Fix: `"true"`}},
		},
		{
			name:  "misspelt taint effect",
			edits: []string{"gpu=true:NoSchedule", "gpu=true:NoSchedual"},
			want:  []want{{Line: 16, Field: "spec.pools[1].taints[0]", Message: `effect "NoSchedual" is not one of NoSchedule, PreferNoSchedule, NoExecute`, Fix: `did you mean "NoSchedule"?`}},
		},
		{
			name:  "taint without a colon",
			edits: []string{"gpu=true:NoSchedule", "gpu=true"},
			want:  []want{{Line: 16, Field: "spec.pools[1].taints[0]", Message: `taint "gpu=true" is not KEY[=VALUE]:EFFECT`, Fix: `"gpu=true:NoSchedule"`}},
		},
		{
			name:  "taint twice",
			edits: []string{`["gpu=true:NoSchedule"]`, `["gpu=true:NoSchedule", "gpu=true:NoSchedule"]`},
			want:  []want{{Line: 16, Field: "spec.pools[1].taints[1]", Message: "appears more than once"}},
		},
		{
			name:  "count and autoscale",
			edits: []string{"    autoscale: {min: 0, max: 2}\n", "    count: 1\n    autoscale: {min: 0, max: 2}\n"},
			want:  []want{{Line: 15, Field: "spec.pools[1].count", Message: "count and autoscale cannot both be set", Fix: "remove count, or remove autoscale"}},
		},
		{
			name:  "unknown expander",
			edits: []string{"  teams:\n", "  autoscaler: {expander: least-wasted}\n  teams:\n"},
			want:  []want{{Line: 17, Field: "spec.autoscaler.expander", Message: `"least-wasted" is not one of random, least-waste`, Fix: `did you mean "least-waste"?`}},
		},
		{
			name:  "priority expander without priorities",
			edits: []string{"  teams:\n", "  autoscaler: {expander: \"priority,random\"}\n  teams:\n"},
			want:  []want{{Line: 17, Field: "spec.autoscaler.expander", Message: "no pool has one", Fix: "set autoscale.priority"}},
		},
		{
			name:  "utilization threshold above one",
			edits: []string{"  teams:\n", "  autoscaler: {scaleDownUtilizationThreshold: 50}\n  teams:\n"},
			want:  []want{{Line: 17, Field: "spec.autoscaler.scaleDownUtilizationThreshold", Message: "must be between 0 and 1", Fix: "0.5"}},
		},
		{
			name:  "duration without a unit",
			edits: []string{"  teams:\n", "  autoscaler: {scanInterval: 10}\n  teams:\n"},
			want:  []want{{Line: 17, Field: "spec.autoscaler.scanInterval", Message: "is not a duration", Fix: "10s"}},
		},
		{
			name:  "negative provisioning time",
			edits: []string{"{min: 0, max: 2}", "{min: 0, max: 2, provisioningTime: -1m}"},
			want:  []want{{Line: 15, Field: "spec.pools[1].autoscale.provisioningTime", Message: "must not be negative", Fix: "90s"}},
		},
		{
			name:  "device plugin outside the system namespaces",
			edits: []string{"  teams:\n", "  devicePlugin: {namespace: gpu-operator}\n  teams:\n"},
			want:  []want{{Line: 17, Field: "spec.devicePlugin.namespace", Message: "is not one of the system namespaces", Fix: "spec.systemNamespaces"}},
		},
		{
			name:  "spot settings on an on-demand pool",
			edits: []string{"    autoscale: {min: 0, max: 2}\n", "    autoscale: {min: 0, max: 2}\n    spot: {notice: 2m}\n"},
			want:  []want{{Line: 16, Field: "spec.pools[1].spot", Message: "only Spot capacity is interrupted", Fix: "capacity: Spot"}},
		},
		{
			name:  "a notice of zero",
			edits: []string{"    autoscale: {min: 0, max: 2}\n", "    capacity: Spot\n    autoscale: {min: 0, max: 2}\n    spot: {notice: 0s}\n"},
			want:  []want{{Line: 17, Field: "spec.pools[1].spot.notice", Message: "must be positive", Fix: "2m (AWS)"}},
		},
		{
			name:  "min above max",
			edits: []string{"{min: 0, max: 2}", "{min: 3, max: 2}"},
			want:  []want{{Line: 15, Field: "spec.pools[1].autoscale.min", Message: "min is greater than max (2)", Fix: "set min to at most 2"}},
		},
		{
			name:  "autoscale to no nodes",
			edits: []string{"{min: 0, max: 2}", "{min: 0, max: 0}", "quota: {gpu: 2}", "quota: {cpu: 2}"},
			want:  []want{{Line: 15, Field: "spec.pools[1].autoscale.max", Message: "must be at least 1", Fix: "better removed"}},
		},
		{
			name:  "zone not declared",
			edits: []string{"    count: 2\n", "    count: 2\n    zones: [zone-1, zone-9]\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].zones[1]", Message: `zone "zone-9" is not declared in spec.zones`, Fix: "use one of zone-1, zone-2"}},
		},
		{
			name:  "reserved node label",
			edits: []string{"    count: 2\n", "    count: 2\n    labels: {agentpool: sys}\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].labels[agentpool]", Message: "label agentpool is set by berth", Fix: "remove it"}},
		},
		{
			name:  "GPU without a product",
			edits: []string{"gpu: {count: 1, product: NVIDIA-L4}", "gpu: {count: 1}"},
			want:  []want{{Line: 14, Field: "spec.pools[1].machine.gpu.product", Message: "the GPU model is needed", Fix: "product: NVIDIA-L4"}},
		},
		{
			name:  "class scaling on an unknown metric",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      metric: gpuUtilisation\n      target: 70\n      maxReplicas: 4\n"},
			want:  []want{{Line: 24, Field: "spec.classes[0].scaling.metric", Message: `"gpuUtilisation" is not one of rps, gpuUtilization, cpu`, Fix: `did you mean "gpuUtilization"?`}},
		},
		{
			name:  "class scaling on a percent over 100",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      metric: cpu\n      target: 170\n      maxReplicas: 4\n"},
			want:  []want{{Line: 25, Field: "spec.classes[0].scaling.target", Message: "cpu is a percent, at most 100", Fix: "target: 70"}},
		},
		{
			name:  "class scaling on neither metric nor queue",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      maxReplicas: 4\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].scaling.metric", Message: "a class scales on a metric or a queue", Fix: "metric: rps"}},
		},
		{
			name:  "class scaling to zero without a queue",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      metric: rps\n      target: 20\n      minReplicas: 0\n      maxReplicas: 4\n"},
			want:  []want{{Line: 26, Field: "spec.classes[0].scaling.minReplicas", Message: "only a class with a queue scales to zero", Fix: "minReplicas: 1"}},
		},
		{
			name:  "class scaling with a window in milliseconds",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      metric: rps\n      target: 20\n      maxReplicas: 4\n      scaleDownWindow: 1500ms\n"},
			want:  []want{{Line: 27, Field: "spec.classes[0].scaling.scaleDownWindow", Message: "must be whole seconds", Fix: "10m for GPU inference"}},
		},
		{
			name:  "rabbitmq queue without its queue name",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      maxReplicas: 4\n      queue:\n        type: rabbitmq\n        hostSecret: rabbitmq-host\n"},
			want:  []want{{Line: 25, Field: "spec.classes[0].scaling.queue.queueName", Message: "a rabbitmq queue needs queueName", Fix: "queueName: jobs"}},
		},
		{
			name:  "sqs queue with a kafka topic",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      maxReplicas: 4\n      queue:\n        type: sqs\n        queueURL: https://sqs.eu-west-1.amazonaws.com/1/jobs\n        awsRegion: eu-west-1\n        topic: jobs\n"},
			want:  []want{{Line: 29, Field: "spec.classes[0].scaling.queue.topic", Message: "a sqs queue does not use topic", Fix: "remove it"}},
		},
		{
			name:  "misspelt queue type",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    scaling:\n      maxReplicas: 4\n      queue: {type: kafak}\n"},
			want:  []want{{Line: 25, Field: "spec.classes[0].scaling.queue.type", Message: `"kafak" is not one of rabbitmq, kafka, sqs`, Fix: `did you mean "kafka"?`}},
		},
		{
			name:  "class naming an unknown pool",
			edits: []string{"pools: [gpu]", "pools: [gpus]"},
			want:  []want{{Line: 22, Field: "spec.classes[0].pools[0]", Message: `no pool is named "gpus"`, Fix: "use one of gpu, system"}},
		},
		{
			name:  "class naming no pool",
			edits: []string{"    pools: [gpu]\n", "    priority: high\n"},
			want:  []want{{Line: 21, Field: "spec.classes[0].pools", Message: "a class must name the pools it runs on", Fix: "list some of gpu, system"}},
		},
		{
			name:  "misspelt class priority",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    priority: hihg\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].priority", Message: `"hihg" is not one of high, medium, low`, Fix: `did you mean "high"?`}},
		},
		{
			name:  "disruption with both bounds",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    disruption: {minAvailable: 1, maxUnavailable: 1}\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].disruption", Message: "set exactly one of minAvailable and maxUnavailable"}},
		},
		{
			name:  "class spread in upper case",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    spread: Zone\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].spread", Message: `"Zone" is not one of none, zone`, Fix: `did you mean "zone"?`}},
		},
		{
			name:  "negative disruption budget",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    disruption: {minAvailable: -1}\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].disruption.minAvailable"}},
		},
		{
			name:  "disruption budget that is not a number or percentage",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    disruption: {maxUnavailable: half}\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].disruption.maxUnavailable"}},
		},
		{
			name:  "team naming an unknown class",
			edits: []string{"    quota: {gpu: 2}\n", "    quota: {gpu: 2}\n    classes: [trainign]\n"},
			want:  []want{{Line: 20, Field: "spec.teams[0].classes[0]", Message: `no class is named "trainign"`, Fix: "use one of training"}},
		},
		{
			name:  "team in a Kubernetes namespace",
			edits: []string{"    quota: {gpu: 2}\n", "    quota: {gpu: 2}\n    namespaces: [kube-system]\n"},
			want:  []want{{Line: 20, Field: "spec.teams[0].namespaces[0]", Message: `namespace "kube-system" belongs to Kubernetes itself`}},
		},
		{
			name:  "GPU quota when no pool has GPUs",
			edits: []string{", gpu: {count: 1, product: NVIDIA-L4}", ""},
			want:  []want{{Line: 19, Field: "spec.teams[0].quota.gpu", Message: "no pool provides GPUs, so this quota can never be used", Fix: "add a pool with machine.gpu, or remove the GPU quota"}},
		},
		{
			name:  "fractional GPU quota",
			edits: []string{"quota: {gpu: 2}", "quota: {gpu: 500m}"},
			want:  []want{{Line: 19, Field: "spec.teams[0].quota.gpu", Message: "GPUs are whole devices", Fix: "whole number"}},
		},
		{
			name:  "default request above limit",
			edits: []string{"quota: {gpu: 2}", "defaults: {memoryRequest: 2Gi, memoryLimit: 1Gi}"},
			want:  []want{{Line: 19, Field: "spec.teams[0].defaults.memoryRequest", Message: "default request is above the default limit (1Gi)", Fix: "raise memoryLimit"}},
		},
		{
			name:  "Kubernetes version unquoted and wrong",
			edits: []string{"  zones:", "  kubernetesVersion: v2\n  zones:"},
			want:  []want{{Line: 6, Field: "spec.kubernetesVersion", Message: "is not a Kubernetes version", Fix: `"1.36"`}},
		},
		{
			name: "names that are not DNS-1123 labels",
			edits: []string{
				"  name: t\n", "  name: Retail_Analytics\n",
				"- name: gpu\n", "- name: GPU\n",
				"pools: [gpu]", "pools: [GPU]",
				"- name: team-a\n", "- name: team.a\n",
				"- name: training\n", "- name: -training\n",
			},
			want: []want{
				{Line: 4, Field: "metadata.name", Message: "is not a DNS-1123 label", Fix: `like "retail-analytics"`},
				{Line: 13, Field: "spec.pools[1].name", Message: "is not a DNS-1123 label", Fix: `like "gpu"`},
				{Line: 18, Field: "spec.teams[0].name", Message: "is not a DNS-1123 label", Fix: `like "team-a"`},
				// The team's namespace defaults to its name, so the
				// problem is reported at the team.
				{Line: 18, Field: "spec.teams[0].namespaces[0]", Message: "is not a DNS-1123 label", Fix: `like "team-a"`},
				{Line: 21, Field: "spec.classes[0].name", Message: "is not a DNS-1123 label", Fix: `like "training"`},
			},
		},
		{
			name:  "name missing",
			edits: []string{"  - name: team-a\n    quota", "  - quota"},
			want: []want{
				{Line: 18, Field: "spec.teams[0].name", Message: "a name is required"},
				{Line: 18, Field: "spec.teams[0].namespaces[0]", Message: "a name is required"},
			},
		},
		{
			name:  "wrong apiVersion and kind",
			edits: []string{"berth.io/v1alpha1", "berth.io/v1", "kind: Blueprint", "kind: Cluster"},
			want: []want{
				{Line: 1, Field: "apiVersion", Message: "must be berth.io/v1alpha1", Fix: "set apiVersion: berth.io/v1alpha1"},
				{Line: 2, Field: "kind", Message: "must be Blueprint", Fix: "set kind: Blueprint"},
			},
		},
		{
			name:  "apiVersion and kind missing",
			edits: []string{"apiVersion: berth.io/v1alpha1\nkind: Blueprint\n", ""},
			want: []want{
				{Line: 0, Field: "apiVersion", Message: "must be berth.io/v1alpha1"},
				{Line: 0, Field: "kind", Message: "must be Blueprint"},
			},
		},
	})
}

// One file with many mistakes is refused once, with all of them, in the
// order of their lines.
func TestParseReportsAllProblemsAtOnce(t *testing.T) {
	doc := edit(t,
		"kind: Blueprint", "kind: blueprint",
		"    count: 2\n", "    count: 0\n",
		"gpu=true:NoSchedule", "gpu=true:NoSchedual",
		"{min: 0, max: 2}", "{min: 3, max: 2}",
		"- name: team-a\n", "- name: Team-A\n",
		"pools: [gpu]", "pools: [gpu, cpu]",
		"quota: {gpu: 2}", "quota: {gpu: 8}",
	)
	got := parseProblems(t, doc)
	wants := []want{
		{Line: 2, Field: "kind", Message: "must be Blueprint"},
		{Line: 11, Field: "spec.pools[0].count", Message: "at least one node"},
		{Line: 15, Field: "spec.pools[1].autoscale.min", Message: "min is greater than max"},
		{Line: 16, Field: "spec.pools[1].taints[0]", Message: `effect "NoSchedual"`, Fix: `did you mean "NoSchedule"?`},
		{Line: 18, Field: "spec.teams[0].name", Message: "is not a DNS-1123 label"},
		{Line: 18, Field: "spec.teams[0].namespaces[0]", Message: "is not a DNS-1123 label"},
		{Line: 22, Field: "spec.classes[0].pools[1]", Message: `no pool is named "cpu"`},
		// Warnings come last, whatever their line.
		{Line: 19, Field: "spec.teams[0].quota.gpu", Message: "the pools can never hold more than 2 GPUs", Warning: true},
	}
	if diff := cmp.Diff(wants, match(got, wants)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestParseWarnsButAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []string
		want  []want
	}{
		{
			name:  "GPU quota beyond what the pools hold",
			edits: []string{"quota: {gpu: 2}", "quota: {gpu: 8}"},
			want: []want{{Line: 19, Field: "spec.teams[0].quota.gpu", Warning: true,
				Message: "the pools can never hold more than 2 GPUs, so this quota cannot be reached", Fix: "lower it to 2, or raise the GPU pools' max"}},
		},
		{
			name:  "Spot pool without taints",
			edits: []string{"  - name: gpu\n", "  - name: gpu\n    capacity: Spot\n", `    taints: ["gpu=true:NoSchedule"]` + "\n", ""},
			want: []want{{Line: 13, Field: "spec.pools[1].taints", Warning: true,
				Message: "a Spot pool without taints takes any pod", Fix: "berth.io/capacity=spot:NoSchedule"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bp, got, err := Parse("bp.yaml", []byte(edit(t, tc.edits...)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if bp == nil {
				t.Fatal("Parse returned no blueprint")
			}
			if diff := cmp.Diff(tc.want, match(got, tc.want)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	bp, warnings, err := Parse("bp.yaml", []byte(valid))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Parse(valid) = %v, %v", warnings, err)
	}
	// Parse hands back a defaulted blueprint.
	if got := bp.Spec.Pools[1].Zones; !cmp.Equal(got, []string{"zone-1", "zone-2"}) {
		t.Errorf("gpu pool zones = %q, want both of spec.zones", got)
	}
	if got := bp.Spec.Teams[0].Namespaces; !cmp.Equal(got, []string{"team-a"}) {
		t.Errorf("team-a namespaces = %q, want [team-a]", got)
	}
}

func TestProblemString(t *testing.T) {
	for _, tc := range []struct {
		p    problem.Problem
		want string
	}{
		{problem.Problem{File: "a.yaml", Line: 3, Field: "spec.zones", Message: "bad", Fix: "mend it"}, "a.yaml:3: spec.zones: bad\n    fix: mend it"},
		{problem.Problem{File: "a.yaml", Field: "kind", Message: "bad"}, "a.yaml: kind: bad"},
		{problem.Problem{File: "a.yaml", Line: 1, Message: "bad", Warning: true}, "a.yaml:1: warning: bad"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.p, got, tc.want)
		}
	}
	err := &Error{Problems: problem.List{
		{File: "a.yaml", Line: 1, Message: "bad"},
		{File: "a.yaml", Line: 2, Message: "odd", Warning: true},
	}}
	if got, want := err.Error(), "a.yaml has 1 problem:\na.yaml:1: bad\na.yaml:2: warning: odd"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	if _, _, err := Load("testdata/no-such-file.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want an error wrapping os.ErrNotExist", err)
	}
	_, _, err := Load("testdata/broken.yaml")
	var bad *Error
	if !errors.As(err, &bad) || bad.Problems[0].File != "testdata/broken.yaml" {
		t.Errorf("Load(testdata/broken.yaml) = %v, want an *Error naming the file", err)
	}
}

// The rendered error for a file with many problems is what users read; it
// is pinned by a golden file that go test -update rewrites.
func TestBrokenGolden(t *testing.T) {
	_, _, err := Load("testdata/broken.yaml")
	if err == nil {
		t.Fatal("testdata/broken.yaml loaded without error")
	}
	got := err.Error() + "\n"
	const golden = "testdata/broken.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("rendered problems differ from %s (-want +got):\n%s", golden, diff)
	}
}
