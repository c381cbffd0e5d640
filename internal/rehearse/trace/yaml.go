package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/problem"
)

// The YAML form's apiVersion and kind.
const (
	APIVersion = v1alpha1.GroupVersion
	KindTrace  = "Trace"
)

// document is the YAML form as written.
type document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       spec   `json:"spec"`
}

type spec struct {
	Start  string              `json:"start,omitempty"`
	Jobs   []yamlJob           `json:"jobs"`
	Load   *metricsapi.Profile `json:"load,omitempty"`
	Queues []yamlQueue         `json:"queues,omitempty"`
	// Interruptions and Drains are spec.interruptions and spec.drains:
	// at (an offset) and pool.
	Interruptions []yamlAtPool `json:"interruptions,omitempty"`
	Drains        []yamlAtPool `json:"drains,omitempty"`
}

// yamlJob is a row of the CSV form as a map: its values are read as the
// CSV's are, so both forms accept and refuse the same values.
type yamlJob struct {
	Submit     string `json:"submit"`
	Team       string `json:"team"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Pods       string `json:"pods"`
	GPUs       string `json:"gpus,omitempty"`
	CPU        string `json:"cpu,omitempty"`
	Memory     string `json:"memory,omitempty"`
	Duration   string `json:"duration,omitempty"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Class      string `json:"class,omitempty"`
	Model      string `json:"model,omitempty"`
}

func (j yamlJob) values() [numColumns]string {
	return [numColumns]string{j.Submit, j.Team, j.Kind, j.Name, j.Pods, j.GPUs, j.CPU, j.Memory, j.Duration, j.Checkpoint, j.Class, j.Model}
}

type yamlAtPool struct {
	At   string `json:"at"`
	Pool string `json:"pool"`
}

type yamlQueue struct {
	Name     string          `json:"name"`
	ItemTime metav1.Duration `json:"itemTime"`
	Team     string          `json:"team,omitempty"`
	Class    string          `json:"class,omitempty"`
}

// parseYAML reads the YAML form.
func parseYAML(file string, data []byte) (*Trace, problem.List) {
	root, p := oneDocument(file, data)
	if p != nil {
		return nil, problem.List{*p}
	}
	var doc document
	lines, problems := blueprint.DecodeNode(root, &doc)
	problems = inFile(file, problems)
	decoding := len(problems)
	at := func(field, message, fix string) {
		problems = append(problems, problem.Problem{File: file, Line: lines.Of(field), Field: field, Message: message, Fix: fix})
	}
	if doc.APIVersion != APIVersion {
		at("apiVersion", fmt.Sprintf("must be %s", APIVersion), "set apiVersion: "+APIVersion)
	}
	if doc.Kind != KindTrace {
		at("kind", fmt.Sprintf("must be %s", KindTrace), "set kind: "+KindTrace)
	}
	rs := &rows{file: file, names: map[string]int{}}
	if s := doc.Spec.Start; s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			at("spec.start", fmt.Sprintf("%q is not an RFC 3339 time", s), "write the start like 2026-01-05T00:00:00Z")
		}
		rs.start = t
	}
	if len(doc.Spec.Jobs) == 0 && doc.Spec.Load == nil {
		// A load alone (a queue and its worker) is a workload too.
		at("spec.jobs", "the trace has no jobs and no load", "list them under spec.jobs, each with the CSV form's fields: "+Header)
	}
	for i, j := range doc.Spec.Jobs {
		path := fmt.Sprintf("spec.jobs[%d]", i)
		r := row{values: j.values(), line: lines.Of(path)}
		for c := range r.fields {
			r.fields[c] = path + "." + columns[c]
			r.lines[c] = lines.Of(r.fields[c])
		}
		rs.add(r)
	}
	jobs, start := rs.finish()
	problems = append(problems, rs.problems...)
	t := &Trace{Start: start, Jobs: jobs, Load: doc.Spec.Load, file: file, lines: lines}
	if t.Load != nil {
		if err := metricsapi.CheckProfile(t.Load); err != nil {
			p, _ := problem.As(err)
			at(strings.TrimSuffix("spec.load."+p.Field, "."), p.Message, p.Fix)
		} else {
			problems = append(problems, servicesLoaded(doc.Spec, lines, file)...)
		}
	}
	t.Queues, problems = readQueues(doc.Spec, lines, file, problems)
	t.Interruptions, problems = readAtPool("interruptions", doc.Spec.Interruptions, lines, file, problems)
	var drains []Interruption
	drains, problems = readAtPool("drains", doc.Spec.Drains, lines, file, problems)
	for _, d := range drains {
		t.Drains = append(t.Drains, Drain(d))
	}
	if len(problems) > 0 {
		return nil, undecoded(problems, decoding)
	}
	return t, nil
}

// readQueues reads spec.queues: each a queue the load fills, once, with
// an item time above zero.
func readQueues(s spec, lines blueprint.Lines, file string, problems problem.List) ([]Queue, problem.List) {
	filled := map[string]bool{}
	if s.Load != nil {
		for _, step := range s.Load.Steps {
			for q := range step.Queues {
				filled[q] = true
			}
		}
	}
	var out []Queue
	seen := map[string]bool{}
	for i, q := range s.Queues {
		fail := func(field, message, fix string) {
			field = fmt.Sprintf("spec.queues[%d].%s", i, field)
			problems = append(problems, problem.Problem{File: file, Line: lines.Of(field), Field: field, Message: message, Fix: fix})
		}
		switch {
		case q.Name == "":
			fail("name", "a queue's name is required", "name a queue spec.load's steps fill")
		case seen[q.Name]:
			fail("name", fmt.Sprintf("queue %s is listed twice", q.Name), "keep one of them")
		case !filled[q.Name]:
			fail("name", fmt.Sprintf("no step of spec.load fills queue %s", q.Name), "name a queue the steps' queues: set, or add it to them")
		}
		seen[q.Name] = true
		if q.ItemTime.Duration <= 0 {
			fail("itemTime", "an item's processing time must be more than zero", "write how long one worker takes over one item, like 30s")
		}
		if q.Class != "" && q.Team == "" {
			fail("team", fmt.Sprintf("queue %s names its worker's class and no team", q.Name), "add the team whose worker drains it, or drop class")
		}
		out = append(out, Queue{Name: q.Name, ItemTime: q.ItemTime.Duration, Team: q.Team, Class: q.Class, Line: lines.Of(fmt.Sprintf("spec.queues[%d]", i))})
	}
	return out, problems
}

// readAtPool reads spec.interruptions or spec.drains (key): each at an
// offset from the start (a Go duration, not a time) and in order, on a
// pool the check against the blueprint confirms.
func readAtPool(key string, entries []yamlAtPool, lines blueprint.Lines, file string, problems problem.List) ([]Interruption, problem.List) {
	var out []Interruption
	var last time.Duration
	for i, y := range entries {
		path := fmt.Sprintf("spec.%s[%d]", key, i)
		fail := func(field, message, fix string) {
			field = path + "." + field
			problems = append(problems, problem.Problem{File: file, Line: lines.Of(field), Field: field, Message: message, Fix: fix})
		}
		at, err := time.ParseDuration(y.At)
		switch {
		case y.At == "":
			fail("at", "the time is required", "write when, as an offset from the trace's start, like 40m")
		case err != nil || at < 0:
			fail("at", fmt.Sprintf("%q is not an offset from the trace's start", y.At), "write a Go duration from the start, like 40m or 2h30m")
		case at < last:
			fail("at", fmt.Sprintf("%s comes before the entry above it", at), "list spec."+key+" in order of time")
		}
		last = max(last, at)
		if y.Pool == "" {
			fail("pool", "the pool is required", "name the blueprint's pool whose nodes go")
		}
		out = append(out, Interruption{At: at, Pool: y.Pool, Line: lines.Of(path)})
	}
	return out, problems
}

// servicesLoaded checks that the load's workloads are the trace's own
// services: inference rows, which run as Deployments. Their namespaces
// are the teams', which Check knows.
func servicesLoaded(s spec, lines blueprint.Lines, file string) problem.List {
	services := map[string]bool{}
	for _, j := range s.Jobs {
		if j.Kind == string(Inference) {
			services[j.Name] = true
		}
	}
	var problems problem.List
	for i, step := range s.Load.Steps {
		for k, w := range step.Workloads {
			field := fmt.Sprintf("spec.load.steps[%d].workloads[%d]", i, k)
			switch {
			case w.Kind != "Deployment":
				field += ".kind"
				problems = append(problems, problem.Problem{File: file, Line: lines.Of(field), Field: field, Message: fmt.Sprintf("a trace's services run as Deployments, not a %s", w.Kind), Fix: "leave kind out"})
			case !services[w.Name]:
				field += ".name"
				problems = append(problems, problem.Problem{File: file, Line: lines.Of(field), Field: field, Message: fmt.Sprintf("no inference row of the trace is named %s", w.Name), Fix: "name an inference row of spec.jobs (in its team's first namespace)"})
			}
		}
	}
	return problems
}

// oneDocument is the one YAML document in data.
func oneDocument(file string, data []byte) (*yaml.Node, *problem.Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &problem.Problem{File: file, Message: "the file is empty", Fix: "write a trace: the CSV header and a row per job, or a YAML Trace"}
		}
		p := blueprint.SyntaxProblem(file, err)
		return nil, &p
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &problem.Problem{File: file, Line: extra.Line, Message: "a trace file holds one document, found a second", Fix: `remove the "---" and what follows, or split the file`}
	} else if !errors.Is(err, io.EOF) {
		p := blueprint.SyntaxProblem(file, err)
		return nil, &p
	}
	if len(doc.Content) == 0 {
		return nil, &problem.Problem{File: file, Message: "the file is empty", Fix: "write a trace: the CSV header and a row per job, or a YAML Trace"}
	}
	return doc.Content[0], nil
}

// undecoded drops, of the problems after the first n (those of
// decoding), any with a field decoding found at fault: a value that did
// not decode was left empty, and the decoder has said what is wrong.
func undecoded(problems problem.List, n int) problem.List {
	bad := map[string]bool{}
	for _, p := range problems[:n] {
		bad[p.Field] = true
	}
	return append(problems[:n], slices.DeleteFunc(problems[n:], func(p problem.Problem) bool { return bad[p.Field] })...)
}

func inFile(file string, ps problem.List) problem.List {
	for i := range ps {
		ps[i].File = file
	}
	return ps
}
