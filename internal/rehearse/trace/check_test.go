package trace

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/internal/blueprint"
)

func TestCheckRetail(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"testdata/retail.csv", "testdata/retail.yaml"} {
		tr, err := Read(file)
		if err != nil {
			t.Fatal(err)
		}
		if problems := tr.Check(bp); len(problems) > 0 {
			t.Errorf("%s on the retail blueprint: %v", file, problems)
		}
	}
	for _, tc := range []struct {
		name, row string
		want      []string // "FIELD message-prefix"
	}{
		{"unknown team", "0s,team-c,training,t,1,1,,,1h,,,", []string{`team no team "team-c" in the blueprint; its teams are team-a, team-b`}},
		{"unknown class", "0s,team-a,training,t,1,1,,,1h,,trainig,", []string{`class no class "trainig" in the blueprint`}},
		{"class of another role", "0s,team-a,training,t,1,1,,,1h,,inference,", []string{"class class inference has role Serving; a training row wants a Training class"}},
		{"default class for inference", "0s,team-a,inference,t,1,1,,,,,,", nil},
		{"GPUs on a class without a GPU pool", "0s,team-a,batch,t,1,1,,,1h,,batch,", []string{"gpus class batch has no GPU pool (its pools: cpu)"}},
		{"no GPUs on a GPU-only class", "0s,team-a,batch,t,1,0,,,1h,,batch-inference,", []string{"gpus class batch-inference has only GPU pools (gpu)"}},
		{"more GPUs than a machine has", "0s,team-a,training,t,1,2,,,1h,,,", []string{"gpus a pod (cpu 4, memory 16Gi, 2 GPUs) fits no machine of class training: pool spot-gpu's nodes have 1 GPU; pool gpu's nodes have 1 GPU"}},
		{"more CPU than a machine has", "0s,team-a,batch,t,1,,20,,1h,,batch,", []string{"cpu a pod (cpu 20, memory 1Gi) fits no machine of class batch: pool cpu's nodes have cpu 16"}},
		{"above the team's GPU quota", "0s,team-b,training,t,1,4,,,1h,,,", []string{"gpus a pod (cpu 4", "gpus a pod asks for 4 GPUs, above team team-b's quota.gpu of 2"}},
		{"above the team's CPU quota", "0s,team-a,inference,t,1,,65,,,,,", []string{"cpu a pod (cpu 65", "cpu a pod asks for cpu 65, above team team-a's quota.cpu of 64", "cpu a pod asks for cpu 65, above team team-a's defaults.cpuMax of 24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Parse("t.csv", []byte(Header+"\n"+tc.row+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			problems := tr.Check(bp)
			if len(problems) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(problems), len(tc.want), problems)
			}
			for i, p := range problems {
				if got := p.Field + " " + p.Message; !strings.HasPrefix(got, tc.want[i]) || p.Where() != "t.csv:2" || p.Fix == "" {
					t.Errorf("problem %d:\n%s\nwant %q at t.csv:2 with a fix", i, p, tc.want[i])
				}
			}
		})
	}
}

// An interruption takes away a Spot pool of the blueprint, a drain
// empties any pool; each is placed at its line.
func TestCheckInterruptions(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, "testdata/retail.yaml")
	for _, tc := range []struct{ pool, want string }{
		{"gpu", "pool gpu is OnDemand capacity: only spot capacity is taken away"},
		{"spot", `no pool "spot" in the blueprint; its Spot pools are spot-gpu`},
	} {
		tr, err := Parse("retail.yaml", []byte(strings.Replace(data, "pool: spot-gpu}", "pool: "+tc.pool+"}", 1)))
		if err != nil {
			t.Fatal(err)
		}
		problems := tr.Check(bp)
		if len(problems) != 1 || problems[0].Message != tc.want || problems[0].Where() != "retail.yaml:35" || problems[0].Fix == "" {
			t.Errorf("pool %s: %v; want one problem at retail.yaml:35, %q, with a fix", tc.pool, problems, tc.want)
		}
	}
	// A drain empties any pool of the blueprint.
	tr, err := Parse("retail.yaml", []byte(strings.Replace(data, "{at: 2h, pool: cpu}", "{at: 2h, pool: cpus}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if problems := tr.Check(bp); len(problems) != 1 || problems[0].Message != `no pool "cpus" in the blueprint` || problems[0].Where() != "retail.yaml:37" {
		t.Errorf("a drain of pool cpus: %v; want one problem at retail.yaml:37", problems)
	}
}

// A queue's worker is one `berth new batch` writes: on a class that
// drains its own queue, that queue; on another, an HPA on the trace's
// queue.
func TestCheckQueueWorkers(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, "testdata/retail.yaml")
	for _, tc := range []struct{ queue, worker, want string }{
		{"batch-inference", "team: team-b, class: batch-inference", ""},
		{"batch-inference", "team: team-b", ""}, // berth new picks the class with the queue
		{"images", "team: team-a, class: batch", ""},
		{"images", "team: team-b, class: batch-inference", "queue images's worker: class batch-inference drains its own queue batch-inference, not images"},
		{"batch-inference", "team: team-c", `queue batch-inference's worker: no team "team-c"`},
		{"batch-inference", "team: team-a, class: training", "queue batch-inference's worker: class training"},
	} {
		y := strings.Replace(data, "{name: batch-inference, itemTime: 30s}", "{name: "+tc.queue+", itemTime: 30s, "+tc.worker+"}", 1)
		y = strings.Replace(y, "queues: {batch-inference: 100}", "queues: {"+tc.queue+": 100}", 1)
		tr, err := Parse("retail.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		problems := tr.Check(bp)
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s, %s: %v; want none", tc.queue, tc.worker, problems)
		case tc.want != "" && (len(problems) != 1 || !strings.HasPrefix(problems[0].Message, tc.want) || problems[0].Where() != "retail.yaml:33" || problems[0].Fix == ""):
			t.Errorf("%s, %s: %v; want one problem at retail.yaml:33, %q, with a fix", tc.queue, tc.worker, problems, tc.want)
		}
		if w, err := QueueWorker(bp, tr.Queues[0]); tc.want == "" && (err != nil || w.Namespace == "") {
			t.Errorf("%s, %s: QueueWorker: %v", tc.queue, tc.worker, err)
		}
	}
}

// The load's services are the trace's inference rows, in their teams'
// first namespaces.
func TestCheckLoadNamespaces(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	data := strings.Replace(readFile(t, "testdata/retail.yaml"), "{namespace: team-a, name: recommender, rps: 10}", "{namespace: team-b, name: recommender, rps: 10}", 1)
	tr, err := Parse("retail.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	problems := tr.Check(bp)
	if len(problems) != 1 || problems[0].Where() != "retail.yaml:31" || problems[0].Field != "spec.load.steps[2].workloads[0].namespace" ||
		!strings.Contains(problems[0].Message, "service recommender runs in team-a, not team-b") {
		t.Errorf("Check = %v, want recommender's namespace at retail.yaml:31", problems)
	}
}

// A team limited to some classes may name only those, and gets only
// those from `berth new`'s choice.
func TestCheckTeamClasses(t *testing.T) {
	src, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(src), "quota: {gpu: 2}", "quota: {gpu: 2}\n    classes: [training]", 1)
	bp, _, err := blueprint.Parse("retail.yaml", []byte(limited))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Parse("t.csv", []byte(Header+"\n0s,team-b,batch,a,1,,,,1h,,batch,\n0s,team-b,inference,b,1,,,,,,,\n0s,team-b,training,c,1,1,,,1h,,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range tr.Check(bp) {
		got = append(got, p.Where()+" "+p.Message)
	}
	want := []string{
		"t.csv:2 team team-b may not use class batch (its classes: training)",
		"t.csv:3 team team-b may not use a Serving class: inference is, and the team's classes are training",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check (-want +got):\n%s", diff)
	}
}
