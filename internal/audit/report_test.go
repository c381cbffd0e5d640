package audit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/version"
)

// testReport has an error read from a file, an error on a cluster-scoped
// object in a file whose name needs escaping as a URI, and two warnings
// from a live cluster (no file), one on a cluster-scoped object.
func testReport() *Report {
	return &Report{
		Source:  "manifests/",
		Objects: map[string]int{"Deployment": 2, "Namespace": 2, "PriorityClass": 3, "ResourceQuota": 1},
		Findings: []Finding{
			{
				Rule: v1alpha1.RuleGPULimit, Severity: Error,
				Problem: problem.Problem{
					Object:  Object{Kind: "Deployment", Namespace: "team-a", Name: "web"},
					Field:   "spec.template.spec.containers[0].resources",
					Message: `Container "web" tolerates the GPU taint and sets no nvidia.com/gpu limit.`,
					Fix:     `Set resources.limits["nvidia.com/gpu"] on container "web" to the number of GPUs it uses.`,
					File:    "manifests/web.yaml", Line: 14,
				},
			},
			{
				Rule: v1alpha1.RuleGlobalDefault, Severity: Error,
				Problem: problem.Problem{
					Object:  Object{Kind: "PriorityClass", Name: "inference-high"},
					Field:   "globalDefault",
					Message: "PriorityClass inference-high has value 100000 and is the global default.",
					Fix:     "Set globalDefault: false on inference-high, and true on training-low or none.",
					File:    "manifests/priority classes.yaml", Line: 3,
				},
			},
			{
				Rule: v1alpha1.RuleInferencePDB, Severity: Warning,
				Problem: problem.Problem{
					Object:  Object{Kind: "Deployment", Namespace: "team-b", Name: "llm"},
					Message: `Deployment team-b/llm serves inference with 3 replicas and no PodDisruptionBudget selects its pods.`,
					Fix:     "Add a PodDisruptionBudget for app=llm with minAvailable: 2.",
				},
			},
			{
				Rule: v1alpha1.RuleLimitRangeMissing, Severity: Warning,
				Problem: problem.Problem{
					Object:  Object{Kind: "Namespace", Name: "team-b"},
					Message: "Namespace team-b has no LimitRange.",
					Fix:     "Add a LimitRange with container defaults to team-b.",
				},
			},
		},
	}
}

func write(t *testing.T, r *Report, f Format) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r, f); err != nil {
		t.Fatalf("writing %s: %v", f, err)
	}
	return buf.String()
}

// stampVersion makes the SARIF driver's version the same on every build.
func stampVersion(t *testing.T) {
	saved := version.Berth
	version.Berth = "v0.9.0"
	t.Cleanup(func() { version.Berth = saved })
}

// The reports are what users and CI read: each format is pinned by a
// golden file; go test -update rewrites them.
func TestReportGolden(t *testing.T) {
	stampVersion(t)
	ext := map[Format]string{Table: "table", JSON: "json", SARIF: "sarif", JUnit: "junit"}
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			golden(t, "report/"+ext[f]+".golden", write(t, testReport(), f))
		})
	}
}

func TestReportEmpty(t *testing.T) {
	r := &Report{Source: "context kind-berth", Objects: map[string]int{"Namespace": 1}}
	if got, want := write(t, r, Table), "no findings in 1 object (context kind-berth)\n"; got != want {
		t.Errorf("table = %q, want %q", got, want)
	}
	if got := write(t, r, JSON); !strings.Contains(got, `"findings": []`) {
		t.Errorf("JSON has no empty findings list:\n%s", got)
	}
	if got := write(t, r, SARIF); !strings.Contains(got, `"results": []`) {
		t.Errorf("SARIF has no empty results list:\n%s", got)
	}
	if got := write(t, &Report{}, JSON); !strings.Contains(got, `"objects": {}`) {
		t.Errorf("JSON of a zero Report has no empty objects:\n%s", got)
	}
}

func TestReportSummary(t *testing.T) {
	one := Finding{Rule: v1alpha1.RuleGPULimit, Severity: Error}
	warn := Finding{Rule: v1alpha1.RuleInferencePDB, Severity: Warning}
	for _, tc := range []struct {
		report *Report
		want   string
	}{
		{&Report{}, "no findings in 0 objects"},
		{&Report{Findings: []Finding{one}, Objects: map[string]int{"Pod": 1}, Source: "x.yaml"}, "1 error, 0 warnings in 1 object (x.yaml)"},
		{&Report{Findings: []Finding{one, one, warn}, Objects: map[string]int{"Pod": 2, "Namespace": 1}}, "2 errors, 1 warning in 3 objects"},
		{&Report{Findings: []Finding{warn, warn}, Objects: map[string]int{"Pod": 2}}, "0 errors, 2 warnings in 2 objects"},
	} {
		if got := summary(tc.report); got != tc.want {
			t.Errorf("summary = %q, want %q", got, tc.want)
		}
	}
}

// The table puts errors first even when a report comes unsorted.
func TestReportTableErrorsFirst(t *testing.T) {
	r := testReport()
	r.Findings = append(r.Findings[2:], r.Findings[:2]...)
	var severities []string
	for line := range strings.Lines(write(t, r, Table)) {
		if sev, _, ok := strings.Cut(line, " "); ok && (sev == "error" || sev == "warning") {
			severities = append(severities, sev)
		}
	}
	if diff := cmp.Diff([]string{"error", "error", "warning", "warning"}, severities); diff != "" {
		t.Errorf("severities in table order (-want +got):\n%s", diff)
	}
}

// sarifRead is the part of a SARIF log the tests check, declared apart
// from the writer's types so that a field the writer misnames shows.
type sarifRead struct {
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name  string `json:"name"`
				Rules []struct {
					ID string `json:"id"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex int    `json:"ruleIndex"`
			Level     string `json:"level"`
		} `json:"results"`
	} `json:"runs"`
}

func TestReportSARIFRuleIndex(t *testing.T) {
	r := testReport()
	// A rule the catalogue lacks still gets a descriptor and an index.
	r.Findings = append(r.Findings, Finding{Rule: "berth/future", Severity: Warning, Problem: problem.Problem{Object: Object{Kind: "Pod", Name: "p"}}})
	var log sarifRead
	if err := json.Unmarshal([]byte(write(t, r, SARIF)), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 {
		t.Fatalf("version %q with %d runs, want 2.1.0 with 1", log.Version, len(log.Runs))
	}
	run := log.Runs[0]
	if got, want := len(run.Tool.Driver.Rules), len(Rules)+1; got != want {
		t.Errorf("%d rules, want %d", got, want)
	}
	for i, rule := range Rules {
		if got := run.Tool.Driver.Rules[i].ID; got != rule.ID {
			t.Errorf("rules[%d] = %s, want %s", i, got, rule.ID)
		}
	}
	if len(run.Results) != len(r.Findings) {
		t.Fatalf("%d results, want %d", len(run.Results), len(r.Findings))
	}
	for i, res := range run.Results {
		if res.RuleIndex < 0 || res.RuleIndex >= len(run.Tool.Driver.Rules) {
			t.Errorf("result %d: ruleIndex %d out of range", i, res.RuleIndex)
			continue
		}
		if got := run.Tool.Driver.Rules[res.RuleIndex].ID; got != res.RuleID {
			t.Errorf("result %d: ruleId %s, but ruleIndex %d is %s", i, res.RuleID, res.RuleIndex, got)
		}
		if want := string(r.Findings[i].Severity); res.Level != want {
			t.Errorf("result %d: level %q, want %q", i, res.Level, want)
		}
	}
}

func TestReportRuleName(t *testing.T) {
	for id, want := range map[string]string{
		v1alpha1.RuleGPULimit:    "GpuLimit",
		v1alpha1.RuleModelInMain: "ModelPullMainContainer",
		v1alpha1.RuleDrift:       "Drift",
		"berth/x--y-":            "XY",
	} {
		if got := ruleName(id); got != want {
			t.Errorf("ruleName(%q) = %q, want %q", id, got, want)
		}
	}
}

// junitRead is the part of a JUnit report the tests check.
type junitRead struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			SystemOut *string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestReportJUnitFailures(t *testing.T) {
	r := testReport()
	var report junitRead
	if err := xml.Unmarshal([]byte(write(t, r, JUnit)), &report); err != nil {
		t.Fatal(err)
	}
	if report.Failures != r.Errors() {
		t.Errorf("testsuites failures = %d, want %d", report.Failures, r.Errors())
	}
	if len(report.Suites) != len(Rules) {
		t.Fatalf("%d test suites, want one per rule (%d)", len(report.Suites), len(Rules))
	}
	tests, failures, outs := 0, 0, 0
	for i, suite := range report.Suites {
		if suite.Name != Rules[i].ID {
			t.Errorf("suite %d is %s, want %s", i, suite.Name, Rules[i].ID)
		}
		if suite.Tests != len(suite.Cases) {
			t.Errorf("suite %s: tests = %d, but it has %d test cases", suite.Name, suite.Tests, len(suite.Cases))
		}
		tests += len(suite.Cases)
		suiteFailures := 0
		for _, c := range suite.Cases {
			if c.Failure != nil {
				suiteFailures++
				if !strings.Contains(c.Failure.Text, "fix: ") {
					t.Errorf("failure of %s has no fix:\n%s", c.Name, c.Failure.Text)
				}
			}
			if c.SystemOut != nil {
				outs++
			}
		}
		if suite.Failures != suiteFailures {
			t.Errorf("suite %s: failures = %d, but %d test cases fail", suite.Name, suite.Failures, suiteFailures)
		}
		failures += suiteFailures
	}
	if failures != r.Errors() {
		t.Errorf("%d failing test cases, want one per error finding (%d)", failures, r.Errors())
	}
	if want := len(r.Findings) - r.Errors(); outs != want {
		t.Errorf("%d test cases carry output, want one per warning (%d)", outs, want)
	}
	if report.Tests != tests {
		t.Errorf("testsuites tests = %d, but there are %d test cases", report.Tests, tests)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats() {
		got, err := ParseFormat(strings.ToUpper(string(f)))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", strings.ToUpper(string(f)), got, err, f)
		}
	}
	_, err := ParseFormat("xml")
	want := `unknown output format "xml"; use one of table, json, sarif, junit`
	if err == nil || err.Error() != want {
		t.Errorf("ParseFormat(xml) error = %v, want %s", err, want)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, testReport(), "yaml"); err == nil {
		t.Error("Write accepted format yaml")
	}
	if buf.Len() != 0 {
		t.Errorf("Write wrote %q for an unknown format", buf.String())
	}
}

// The JSON report writes its findings by hand; it must write the bytes
// encoding/json writes for the same report, whatever the strings hold
// and whichever fields are empty.
func TestReportJSONAsEncodingJSON(t *testing.T) {
	if n := reflect.TypeFor[Finding]().NumField(); n != 3 {
		t.Fatalf("Finding has %d fields; appendFindingJSON writes 3: teach it the new one", n)
	}
	if n := reflect.TypeFor[problem.Problem]().NumField(); n != 8 {
		t.Fatalf("problem.Problem has %d fields; appendFindingJSON writes 7 and leaves out Err: teach it the new one", n)
	}
	if n := reflect.TypeFor[Object]().NumField(); n != 3 {
		t.Fatalf("Object has %d fields; appendFindingJSON writes 3: teach it the new one", n)
	}
	odd := []string{"", "plain", `a "quote"`, `back\slash`, "<html> & co", "tab\tnew\nline\rcr\b\f\x01\x1f", "é ü 日本", "\u2028\u2029", "bad \xff utf-8", "\x7f del"}
	r := testReport()
	r.Objects["findings"] = 2 // a kind that looks like the key
	r.Unread = []string{`nodes (forbidden) "x"`}
	r.Suppressed = 3
	for i, s := range odd {
		r.Findings = append(r.Findings,
			Finding{Rule: s, Severity: Severity(s), Problem: problem.Problem{Object: Object{Kind: s, Namespace: s, Name: s}, Field: s, Message: s, Fix: s, File: s, Line: i, Warning: i%2 == 0, Err: errors.New(s)}},
			Finding{Rule: "r", Severity: Warning, Problem: problem.Problem{Object: Object{Kind: "Pod", Name: s}, Message: s, Line: -i}},
			Finding{Rule: "r", Severity: Error, Problem: problem.Problem{Message: s, Fix: s, Warning: true}})
	}
	for _, rep := range []*Report{r, {Source: "empty"}, {Findings: r.Findings[:1]}} {
		var want, got bytes.Buffer
		if err := encodeJSON(&want, newJSONReport(rep)); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(&got, rep); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("report of %d findings (-encoding/json +writeJSON):\n%s", len(rep.Findings), diff)
		}
	}
}
