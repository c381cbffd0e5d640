// Package blueprint reads blueprint files: strict decoding, defaulting and
// validation, with every problem reported as FILE:LINE: field: message and
// a fix.
package blueprint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/api/v1alpha1"
)

// Problem is one thing wrong with a blueprint, located in its file.
type Problem struct {
	File    string
	Line    int // 0 when the problem has no line, such as a missing field
	Field   string
	Message string
	Fix     string // what to change; may be empty
	Warning bool
}

// String renders the problem as FILE:LINE: field: message, with the fix on
// a line of its own.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString("\n    fix: " + p.Fix)
	}
	return b.String()
}

// Error is returned when a blueprint cannot be used. It carries every
// problem found, warnings included.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Problems)+1)
	n := 0
	for _, p := range e.Problems {
		lines = append(lines, p.String())
		if !p.Warning {
			n++
		}
	}
	noun := "problems"
	if n == 1 {
		noun = "problem"
	}
	file := ""
	if len(e.Problems) > 0 {
		file = e.Problems[0].File
	}
	return fmt.Sprintf("%s has %d %s:\n%s", file, n, noun, strings.Join(lines, "\n"))
}

// Load reads, defaults and validates the blueprint at path. Warnings are
// returned alongside a usable blueprint; errors come back as *Error.
func Load(path string) (*v1alpha1.Blueprint, []Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading blueprint: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load for a blueprint already in memory; file names it in
// problems.
func Parse(file string, data []byte) (*v1alpha1.Blueprint, []Problem, error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, nil, &Error{Problems: []Problem{syntaxProblem(file, err)}}
	}
	bp := &v1alpha1.Blueprint{}
	d := &decoder{lines: map[string]int{}}
	d.decode(root, reflect.ValueOf(bp).Elem(), nil)
	if len(d.problems) > 0 {
		return nil, nil, &Error{Problems: locate(file, d.lines, append(d.problems, d.values...), false)}
	}
	v1alpha1.SetDefaults(bp)
	errs, warnings := v1alpha1.Validate(bp)
	// A value that did not parse was left zero: what Validate says of
	// its field is said better by the parse.
	errs = append(d.values, slices.DeleteFunc(errs, func(e *field.Error) bool {
		return slices.ContainsFunc(d.values, func(v *field.Error) bool { return v.Field == e.Field })
	})...)
	problems := append(locate(file, d.lines, errs, false), locate(file, d.lines, warnings, true)...)
	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Warning != problems[j].Warning {
			return !problems[i].Warning
		}
		return problems[i].Line < problems[j].Line
	})
	if len(errs) > 0 {
		return nil, nil, &Error{Problems: problems}
	}
	return bp, problems, nil
}

// parseYAML returns the one document in data.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file is empty\nfix: run `berth init` for a starting blueprint")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &structureError{line: extra.Line, msg: "a blueprint file holds one document, found a second", fix: `remove the "---" and what follows, or split the file`}
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("the file is empty\nfix: run `berth init` for a starting blueprint")
	}
	return doc.Content[0], nil
}

// structureError is a well-formed YAML file that is not one blueprint.
type structureError struct {
	line     int
	msg, fix string
}

func (e *structureError) Error() string { return e.msg }

func syntaxProblem(file string, err error) Problem {
	if se, ok := err.(*structureError); ok {
		return Problem{File: file, Line: se.line, Message: se.msg, Fix: se.fix}
	}
	msg, fix, _ := strings.Cut(err.Error(), "\nfix: ")
	p := Problem{File: file, Message: msg, Fix: fix}
	if fix != "" {
		return p // one of ours, such as the empty file
	}
	// yaml.v3 writes "yaml: line N: message", or "yaml: message" when it
	// has no line.
	msg = strings.TrimPrefix(msg, "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		_, msg, _ = strings.Cut(msg, ": ")
		// yaml.v3 numbers the lines of parser errors ("did not find
		// expected ...") from 0 and those of scanner errors from 1
		// (go-yaml/yaml#205); either way the number is then the line
		// where the broken part begins.
		if strings.HasPrefix(msg, "did not find expected") {
			line++
		}
		p.Line = line
	}
	p.Message = "invalid YAML: " + msg
	p.Fix = "check the quoting, brackets and indentation from this line on"
	if p.Line == 0 {
		p.Fix = "check the file's quoting, brackets, anchors and indentation"
	}
	return p
}

// locate turns field errors into problems with the line of the nearest
// field path the file spells out.
func locate(file string, lines map[string]int, errs field.ErrorList, warning bool) []Problem {
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		detail := e.Detail
		if detail == "" {
			detail = e.ErrorBody()
		}
		msg, fix, _ := strings.Cut(detail, "\nfix: ")
		out = append(out, Problem{
			File: file, Line: lineOf(lines, e.Field), Field: e.Field,
			Message: msg, Fix: fix, Warning: warning,
		})
	}
	return out
}

func lineOf(lines map[string]int, path string) int {
	for {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}
