// Package export writes a blueprint as the artifacts a cloud's own tools
// consume: `az aks nodepool add` commands for AKS, an eksctl ClusterConfig
// for EKS, `gcloud container node-pools create` commands for GKE,
// Karpenter NodePools, and the Kubernetes objects berth compiles (for
// GitOps).
//
// Each pool's machine becomes an instance type: the one the blueprint names
// in machine.instanceTypes, else the smallest one in berth's catalog (see
// catalog.go) that has the machine's shape. The node autoscaler's profile
// (spec.autoscaler) goes wherever the target takes it (see autoscaler.go):
// AKS's cluster autoscaler profile, Cluster Autoscaler's arguments and
// priority ConfigMap on EKS, GKE's autoscaling profile, Karpenter's
// disruption and weights. Whatever a target cannot express is never
// dropped silently: it is either refused with a Problem that names the
// pool, the field and the fix, or explained in a comment in the output.
// The output depends only on the blueprint: the same blueprint always
// gives the same bytes.
package export

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Target is an artifact kind berth exports to.
type Target string

const (
	// AKS is a bash script of `az aks nodepool add` commands, then `az aks
	// update --cluster-autoscaler-profile`.
	AKS Target = "aks"
	// EKS is an eksctl ClusterConfig with one managed node group per pool.
	EKS Target = "eks"
	// GKE is a bash script of `gcloud container node-pools create`
	// commands, then `gcloud container clusters update
	// --autoscaling-profile`.
	GKE Target = "gke"
	// Karpenter is one karpenter.sh/v1 NodePool per User pool.
	Karpenter Target = "karpenter"
	// Manifests is every Kubernetes object berth compiles from the
	// blueprint, as multi-document YAML.
	Manifests Target = "manifests"
)

// Targets lists every target in the order `berth export --help` shows
// them.
func Targets() []Target {
	return []Target{AKS, EKS, GKE, Karpenter, Manifests}
}

// ParseTarget reads a target name as typed on the command line.
func ParseTarget(s string) (Target, error) {
	for _, t := range Targets() {
		if strings.EqualFold(s, string(t)) {
			return t, nil
		}
	}
	names := make([]string, 0, len(Targets()))
	for _, t := range Targets() {
		names = append(names, string(t))
	}
	return "", problem.Errorf(fmt.Sprintf("use one of %s", strings.Join(names, ", ")), "unknown export target %q", s)
}

// Export writes the artifacts for target. bp must be defaulted and valid,
// as blueprint.Load returns it. When the target cannot express the
// blueprint, Export writes nothing and returns an *Error listing every
// problem.
func Export(w io.Writer, bp *v1alpha1.Blueprint, target Target) error {
	var buf bytes.Buffer
	var err error
	switch target {
	case AKS:
		err = writeAKS(&buf, bp)
	case EKS:
		err = writeEKS(&buf, bp)
	case GKE:
		err = writeGKE(&buf, bp)
	case Karpenter:
		err = writeKarpenter(&buf, bp)
	case Manifests:
		err = writeManifests(&buf, bp)
	default:
		_, err = ParseTarget(string(target))
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing %s export, %w", target, err)
	}
	return nil
}

// Problem is one thing in a blueprint that a target cannot express.
type Problem struct {
	// Pool names the pool concerned; empty for the blueprint as a whole.
	Pool string
	// Field is the blueprint field path, e.g. spec.pools[2].machine.
	Field string
	// Message says what is wrong; Fix says what to change.
	Message string
	Fix     string
}

// String renders the problem as `pool NAME: FIELD: MESSAGE` with the fix
// on a line of its own, the way blueprint problems are rendered.
func (p Problem) String() string {
	var b strings.Builder
	if p.Pool != "" {
		b.WriteString("pool " + p.Pool + ": ")
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

// Error is returned when a target cannot express a blueprint. It carries
// every problem found, in pool order.
type Error struct {
	Blueprint string
	Target    Target
	Problems  []Problem
}

func (e *Error) Error() string {
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	lines := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	return fmt.Sprintf("cannot export blueprint %s to %s, %d %s:\n%s", e.Blueprint, e.Target, len(e.Problems), noun, strings.Join(lines, "\n"))
}

// problems collects a target's problems as it walks the pools.
type problems struct {
	bp     *v1alpha1.Blueprint
	target Target
	list   []Problem
}

func (ps *problems) add(pool, field, message, fix string) {
	ps.list = append(ps.list, Problem{Pool: pool, Field: field, Message: message, Fix: fix})
}

// err is nil when nothing was added.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Blueprint: ps.bp.Metadata.Name, Target: ps.target, Problems: ps.list}
}

// header is the comment every output starts with, without the comment
// markers.
func header(bp *v1alpha1.Blueprint, target Target) []string {
	return []string{
		fmt.Sprintf("Generated by berth from blueprint %s. Do not edit by hand:", bp.Metadata.Name),
		fmt.Sprintf("regenerate with `berth export --target %s`.", target),
	}
}

// writeComment writes lines as # comments, wrapping long ones at about 78
// columns; an empty line gives a bare "#".
func writeComment(w io.Writer, indent string, lines ...string) {
	for _, l := range lines {
		for _, wrapped := range wrap(l, 78-len(indent)-2) {
			if wrapped == "" {
				fmt.Fprintf(w, "%s#\n", indent)
				continue
			}
			fmt.Fprintf(w, "%s# %s\n", indent, wrapped)
		}
	}
}

// wrap breaks s into lines of at most width columns at spaces; a word
// longer than width gets a line of its own.
func wrap(s string, width int) []string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	line := words[0]
	for _, w := range words[1:] {
		if len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		line += " " + w
	}
	return append(lines, line)
}
