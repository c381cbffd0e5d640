package audit

import (
	"encoding/xml"
	"io"
	"strings"
)

// The JUnit XML subset that GitLab, Jenkins and GitHub's test reporters
// all read.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string `xml:"name,attr"`
		Classname string `xml:"classname,attr"`
		// Failure is set for an error finding, SystemOut for a warning;
		// neither for a rule without findings.
		Failure   *junitFailure `xml:"failure"`
		SystemOut *junitText    `xml:"system-out"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",cdata"`
	}
	junitText struct {
		Text string `xml:",cdata"`
	}
)

// writeJUnit writes one test suite per rule, in catalogue order, and one
// test case per finding.
//
// Only errors fail: an error finding is a test case with a <failure>, a
// warning is a passing test case whose <system-out> carries the finding.
// Warnings are not <skipped>, which reads as "not checked", and not
// failures, which would fail CI where `berth audit` itself exits 0. A rule
// without findings gets one passing test case, "no findings", so the
// report shows the rule was checked.
func writeJUnit(w io.Writer, r *Report) error {
	byRule := map[string][]Finding{}
	for _, f := range r.Findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	out := junitSuites{Name: "berth audit"}
	for _, rule := range reportRules(r) {
		suite := junitSuite{Name: rule.ID}
		for _, f := range byRule[rule.ID] {
			suite.Cases = append(suite.Cases, junitCaseOf(f))
			if f.Severity == Error {
				suite.Failures++
			}
		}
		if len(suite.Cases) == 0 {
			suite.Cases = []junitCase{{Name: "no findings", Classname: rule.ID}}
		}
		suite.Tests = len(suite.Cases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitCaseOf(f Finding) junitCase {
	name := f.Object.String()
	if f.Field != "" {
		name += " " + f.Field
	}
	c := junitCase{Name: name, Classname: f.Rule}
	if f.Severity == Error {
		c.Failure = &junitFailure{Message: f.Message, Text: junitBody(f)}
	} else {
		c.SystemOut = &junitText{Text: junitBody(f)}
	}
	return c
}

// junitBody says where the finding is, what is wrong and the fix, one
// item a line.
func junitBody(f Finding) string {
	lines := []string{f.Where()}
	if f.Field != "" {
		lines = append(lines, "field: "+f.Field)
	}
	lines = append(lines, f.Message, "fix: "+f.Fix)
	return strings.Join(lines, "\n")
}
