package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/words"
)

// Format is an output format of `berth audit`.
type Format string

const (
	// Table is for people: one block per finding, then a summary line.
	Table Format = "table"
	// JSON is the Report itself, with a summary, for scripts.
	JSON Format = "json"
	// SARIF is a SARIF 2.1.0 log, for code-scanning dashboards.
	SARIF Format = "sarif"
	// JUnit is JUnit XML, one test suite per rule, for CI test reports.
	JUnit Format = "junit"
)

// Formats lists every format in the order `berth audit --help` shows them.
func Formats() []Format {
	return []Format{Table, JSON, SARIF, JUnit}
}

// ParseFormat reads a format name as typed on the command line.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("unknown output format %q; use one of %s", s, strings.Join(names, ", "))
}

// Write renders r in format f. It writes nothing when f is unknown or r
// cannot be rendered, so w never holds half a report: each format is
// rendered whole before it is written, except JSON, whose only step that
// can fail comes before its first write, and which is written as it is
// rendered (200,000 findings are 125 MB).
func Write(w io.Writer, r *Report, f Format) error {
	var buf bytes.Buffer
	var err error
	switch f {
	case Table:
		writeTable(&buf, r)
	case JSON:
		return writeJSON(w, r)
	case SARIF:
		err = writeSARIF(&buf, r)
	case JUnit:
		err = writeJUnit(&buf, r)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// writeTable writes one block per finding, errors first: a line of
// aligned columns (severity, rule, object, field, file:line), then the
// message and the fix indented beneath it; then the summary.
func writeTable(w io.Writer, r *Report) {
	findings := slices.Clone(r.Findings)
	// Reports come sorted, but the table promises errors first whoever
	// built the report; a stable sort keeps the rest of the order.
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Compare(severityRank(a.Severity), severityRank(b.Severity))
	})
	rows := make([][]string, len(findings))
	var widths [4]int // every column but the last, which is not padded
	for i, f := range findings {
		place := ""
		if f.File != "" {
			place = "(" + f.Where() + ")"
		}
		rows[i] = []string{string(f.Severity), f.Rule, f.Object.String(), f.Field, place}
		for c := range widths {
			widths[c] = max(widths[c], utf8.RuneCountInString(rows[i][c]))
		}
	}
	indent := strings.Repeat(" ", widths[0]+2)
	for i, f := range findings {
		var line strings.Builder
		for c, cell := range rows[i] {
			if c < len(widths) && widths[c] == 0 {
				continue // a column no finding fills, such as Field
			}
			line.WriteString(cell)
			if c < len(widths) {
				line.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
		fmt.Fprintln(w, indent+f.Message)
		fmt.Fprintln(w, indent+"fix: "+f.Fix)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, summary(r))
}

// summary is the table's last line: "2 errors, 1 warning in 14 objects
// (manifests/)", or "no findings in 14 objects (manifests/)".
func summary(r *Report) string {
	errors, warnings := severityCounts(r)
	objects := 0
	for _, n := range r.Objects {
		objects += n
	}
	s := "no findings in " + words.Count(objects, "object")
	if len(r.Findings) > 0 {
		s = words.Count(errors, "error") + ", " + words.Count(warnings, "warning") + " in " + words.Count(objects, "object")
	}
	if r.Source != "" {
		s += " (" + r.Source + ")"
	}
	if r.Suppressed > 0 {
		s += fmt.Sprintf("; %s left out by --ignore or %s", words.Count(r.Suppressed, "finding"), v1alpha1.AnnotationAuditIgnore)
	}
	return s
}

// severityCounts returns the number of error and of warning findings.
func severityCounts(r *Report) (errors, warnings int) {
	for _, f := range r.Findings {
		switch f.Severity {
		case Error:
			errors++
		case Warning:
			warnings++
		}
	}
	return errors, warnings
}

// jsonReport is the JSON form: the Report with a summary, its keys in a
// fixed order.
type jsonReport struct {
	Source  string         `json:"source"`
	Objects map[string]int `json:"objects"`
	Summary struct {
		Errors   int `json:"errors"`
		Warnings int `json:"warnings"`
	} `json:"summary"`
	// Findings is never nil, so that a clean audit reads [] and not null.
	Findings   []Finding `json:"findings"`
	Unread     []string  `json:"unread,omitempty"`
	Suppressed int       `json:"suppressed,omitempty"`
}

// newJSONReport is r in its JSON form.
func newJSONReport(r *Report) jsonReport {
	out := jsonReport{Source: r.Source, Objects: r.Objects, Findings: r.Findings, Unread: r.Unread, Suppressed: r.Suppressed}
	if out.Objects == nil {
		out.Objects = map[string]int{}
	}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	out.Summary.Errors, out.Summary.Warnings = severityCounts(r)
	return out
}

// writeJSON writes newJSONReport(r) as encodeJSON would, its findings
// appended by hand.
func writeJSON(w io.Writer, r *Report) error {
	out := newJSONReport(r)
	out.Findings = []Finding{} // written below
	var head bytes.Buffer
	if err := encodeJSON(&head, out); err != nil {
		return err
	}
	if len(r.Findings) == 0 {
		_, err := w.Write(head.Bytes())
		return err
	}
	// The findings are written by appendFindingJSON, not by reflection:
	// 200,000 of them took encoding/json 1.5 s of one core, after
	// everything else. Only this top-level key is two spaces in.
	empty := []byte("\n  \"findings\": []")
	at := bytes.Index(head.Bytes(), empty)
	if at < 0 {
		return fmt.Errorf("audit: no findings key in the JSON report") // a changed jsonReport
	}
	at += len(empty) - 1
	buf := append(make([]byte, 0, 64<<10), head.Bytes()[:at]...)
	for i, f := range r.Findings {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendFindingJSON(buf, f)
		if len(buf) > 48<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "\n  "...)
	buf = append(buf, head.Bytes()[at:]...)
	_, err := w.Write(buf)
	return err
}

// encodeJSON writes v indented by two spaces, leaving <, > and & as they
// are: the output is read by people and tools, never embedded in HTML.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// reportRules is the catalogue, followed by any rule a finding names that
// the catalogue lacks, so that SARIF and JUnit never drop a finding.
func reportRules(r *Report) []Rule {
	rules := slices.Clone(Rules)
	for _, f := range r.Findings {
		if !slices.ContainsFunc(rules, func(rule Rule) bool { return rule.ID == f.Rule }) {
			rules = append(rules, Rule{ID: f.Rule, Severity: f.Severity})
		}
	}
	return rules
}
