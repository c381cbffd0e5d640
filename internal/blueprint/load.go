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

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Error is returned when a blueprint cannot be used. It carries every
// problem found, warnings included, each with the file it was read from.
type Error struct {
	Problems problem.List
}

// Error writes "FILE has N problems:" (warnings not counted), then every
// problem, one after another.
func (e *Error) Error() string {
	n := len(e.Problems.Errors())
	noun := "problems"
	if n == 1 {
		noun = "problem"
	}
	file := ""
	if len(e.Problems) > 0 {
		file = e.Problems[0].File
	}
	return fmt.Sprintf("%s has %d %s:\n%s", file, n, noun, e.Problems.Error())
}

// Load reads, defaults and validates the blueprint at path. Warnings are
// returned alongside a usable blueprint; errors come back as *Error.
func Load(path string) (*v1alpha1.Blueprint, problem.List, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, problem.Errorf("pass a blueprint file that exists (`berth init FILE` writes one)", "reading blueprint: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load for a blueprint already in memory; file names it in
// problems.
func Parse(file string, data []byte) (*v1alpha1.Blueprint, problem.List, error) {
	root, err := parseYAML(data)
	if err != nil {
		return nil, nil, &Error{Problems: problem.List{SyntaxProblem(file, err)}}
	}
	bp := &v1alpha1.Blueprint{}
	d := &decoder{lines: Lines{}}
	d.decode(root, reflect.ValueOf(bp).Elem(), nil)
	if len(d.problems) > 0 {
		return nil, nil, &Error{Problems: inFile(file, append(d.problems, d.values...))}
	}
	v1alpha1.SetDefaults(bp)
	errs, warnings := v1alpha1.Validate(bp)
	// A value that did not parse was left zero: what Validate says of
	// its field is said better by the parse.
	errs = slices.DeleteFunc(errs, func(e problem.Problem) bool {
		return slices.ContainsFunc(d.values, func(v problem.Problem) bool { return v.Field == e.Field })
	})
	locate(d.lines, errs)
	locate(d.lines, warnings)
	errs = append(d.values, errs...)
	problems := inFile(file, append(errs, warnings...))
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

// At is p, a problem with a field of the blueprint read from file as
// data, placed at the line that spells out its field (p.Field).
func At(file string, data []byte, p problem.Problem) problem.Problem {
	p.File = file
	if root, err := parseYAML(data); err == nil {
		d := &decoder{lines: Lines{}}
		d.decode(root, reflect.ValueOf(&v1alpha1.Blueprint{}).Elem(), nil)
		p.Line = d.lines.Of(p.Field)
	}
	return p
}

// parseYAML returns the one document in data. A file with none, or with
// more than one, is a *problem.Problem; anything else is yaml.v3's error.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, emptyFile
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &problem.Problem{Line: extra.Line, Message: "a blueprint file holds one document, found a second", Fix: `remove the "---" and what follows, or split the file`}
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, emptyFile
	}
	return doc.Content[0], nil
}

// emptyFile is parseYAML's problem with a file that holds no document.
var emptyFile = problem.New("run `berth init` for a starting blueprint", "the file is empty")

// SyntaxProblem is what a YAML parse error says of file: parseYAML's own
// problem (an empty file, a second document), or yaml.v3's syntax error
// with the line it names. Readers of berth's other YAML files use it for
// yaml.v3's errors.
func SyntaxProblem(file string, err error) problem.Problem {
	if own, ok := problem.As(err); ok {
		p := *own
		p.File = file
		return p
	}
	p := problem.Problem{File: file}
	// yaml.v3 writes "yaml: line N: message", or "yaml: message" when it
	// has no line.
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
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

// locate gives each problem the line of the nearest field path the file
// spells out.
func locate(lines Lines, ps problem.List) {
	for i := range ps {
		ps[i].Line = lines.Of(ps[i].Field)
	}
}

// inFile names file as where each problem was read from.
func inFile(file string, ps problem.List) problem.List {
	for i := range ps {
		ps[i].File = file
	}
	return ps
}
