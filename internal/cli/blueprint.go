package cli

import (
	"errors"
	"os"
	"strings"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/problem"
)

// defaultBlueprintFile is read when a command is given no -f.
const defaultBlueprintFile = "berth.yaml"

// loadedBlueprint is a blueprint and where it came from.
type loadedBlueprint struct {
	*v1alpha1.Blueprint
	source string // a path, or "<template NAME>"
	// template is the built-in template's name when no file was read.
	template string
	raw      []byte
}

// loadBlueprint reads file, or berth.yaml when file is empty and it
// exists, or else the default template. Warnings go to warn.
func loadBlueprint(file string, warn func(problem.Problem)) (*loadedBlueprint, error) {
	if file == "" {
		if _, err := os.Stat(defaultBlueprintFile); err == nil {
			file = defaultBlueprintFile
		}
	}
	var (
		raw      []byte
		source   = file
		template string
		err      error
	)
	if file == "" {
		template = blueprint.DefaultTemplate
		source = "<template " + template + ">"
		raw, err = blueprint.Template(template)
	} else {
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, problem.Errorf("pass a blueprint file that exists with -f (`berth init FILE` writes one), or leave -f out to use ./berth.yaml or the retail template", "reading blueprint: %w", err)
	}
	bp, warnings, err := blueprint.Parse(source, raw)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		warn(w)
	}
	return &loadedBlueprint{Blueprint: bp, source: source, template: template, raw: raw}, nil
}

func findPool(pools []v1alpha1.Pool, name string) *v1alpha1.Pool {
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i]
		}
	}
	return nil
}

func poolNames(pools []v1alpha1.Pool) string {
	names := make([]string, len(pools))
	for i := range pools {
		names[i] = pools[i].Name
	}
	return strings.Join(names, ", ")
}

// kueueFound says, before a cluster starts, that a blueprint queueing
// with Kueue needs berth-kueue and where berth looked for it, at the
// blueprint's spec.queueing line.
func kueueFound(bp *loadedBlueprint) error {
	if !bp.Spec.UsesKueue() {
		return nil
	}
	if _, err := cluster.KueueBinary(); err != nil {
		var p *problem.Problem
		if errors.As(err, &p) && p.Field != "" {
			at := blueprint.At(bp.source, bp.raw, *p)
			return &at
		}
		return err
	}
	return nil
}
