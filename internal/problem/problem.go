// Package problem is berth's one shape for something wrong that a person
// must act on: what is wrong, where (a file and line, a field, an
// object), and the fix. Validation, the loaders, apply, audit, why, the
// autoscaler's reasons, scaffolds and the model registry all report
// through it, so every problem reads the same in a terminal and in JSON.
//
// A Problem is an error. Render it with String (the terminal) or
// encoding/json (its fields' tags); nothing else formats one, and nothing
// takes a fix back out of a message's text.
package problem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Problem is one thing wrong, where it is, and what to do about it.
type Problem struct {
	// Object is the Kubernetes object at fault. The zero Object means
	// none: the problem is in a file, a flag or a command's input.
	Object Object `json:"object,omitzero"`
	// Field is the path of the field at fault, as kubectl explain
	// writes it ("spec.pools[2].taints[0]"). Empty when the object or
	// file as a whole is at fault.
	Field string `json:"field,omitempty"`
	// Message says what is wrong, in a sentence without the fix.
	Message string `json:"message"`
	// Fix says what to change. Empty when there is nothing to do.
	Fix string `json:"fix,omitempty"`
	// File and Line say where the problem was read from: empty and 0
	// when it was not read from a file, or its line is unknown.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Warning marks a problem that does not stop the command.
	Warning bool `json:"warning,omitempty"`
	// Err is the error underneath, if any, for errors.Is and errors.As.
	// Message already says what it means; it is never rendered.
	Err error `json:"-"`
}

// New returns a problem with a fix and a message: the fix first, as
// Errorf takes it.
func New(fix, message string) *Problem {
	return &Problem{Message: message, Fix: fix}
}

// Errorf returns a problem with a fix and a formatted message: the fix
// first, as New takes it; a %w verb wraps its operand as the problem's
// Err.
func Errorf(fix, format string, args ...any) *Problem {
	err := fmt.Errorf(format, args...)
	return &Problem{Message: err.Error(), Fix: fix, Err: errors.Unwrap(err)}
}

// Error is the terminal rendering: the problem as String writes it.
func (p *Problem) Error() string { return p.String() }

// Unwrap is the error underneath.
func (p *Problem) Unwrap() error { return p.Err }

// String writes the problem for a terminal: where it is, what is wrong,
// and the fix on a line of its own.
//
//	cluster.yaml:14: spec.pools[2].taints[0]: effect "NoSchedual" is not one of NoSchedule, PreferNoSchedule, NoExecute
//	    fix: did you mean "NoSchedule"?
//
// A problem that is nowhere in particular starts with its message, and
// its fix is not indented:
//
//	no cluster is running at context berth-local
//	fix: start one with `berth up`
func (p Problem) String() string {
	var b strings.Builder
	where := p.Where()
	if where != "" {
		b.WriteString(where + ": ")
	}
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		if where != "" || p.Field != "" {
			b.WriteString("\n    fix: ")
		} else {
			b.WriteString("\nfix: ")
		}
		b.WriteString(p.Fix)
	}
	return b.String()
}

// Where is the problem's place for people: FILE:LINE, FILE, the object,
// or "" when it has none.
func (p Problem) Where() string {
	switch {
	case p.File != "" && p.Line > 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	case p.File != "":
		return p.File
	case !p.Object.IsZero():
		return p.Object.String()
	}
	return ""
}

// Object names a Kubernetes object.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IsZero reports whether o names no object.
func (o Object) IsZero() bool { return o == Object{} }

// String is "Kind namespace/name", or "Kind/name" for a cluster-scoped
// object.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// List is several problems, errors and warnings together, in the order
// they should be read.
type List []Problem

// Error writes each problem as String does, one after another.
func (l List) Error() string {
	lines := make([]string, len(l))
	for i, p := range l {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Errors are the problems that are not warnings.
func (l List) Errors() List { return l.filter(false) }

// Warnings are the problems that are warnings.
func (l List) Warnings() List { return l.filter(true) }

func (l List) filter(warning bool) List {
	var out List
	for _, p := range l {
		if p.Warning == warning {
			out = append(out, p)
		}
	}
	return out
}

// As finds the first Problem in err's chain.
func As(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}
