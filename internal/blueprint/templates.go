package blueprint

import (
	"embed"
	"fmt"
	"sort"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

//go:embed templates/*.yaml
var templates embed.FS

// DefaultTemplate is the blueprint `berth init` writes and `berth up`
// starts when given no file.
const DefaultTemplate = "retail"

// Template returns the text of a starting blueprint by name.
func Template(name string) ([]byte, error) {
	data, err := templates.ReadFile("templates/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no template %q: the templates are %s", name, strings.Join(TemplateNames(), ", "))
	}
	return data, nil
}

// TemplateNames lists the templates, sorted.
func TemplateNames() []string {
	entries, _ := templates.ReadDir("templates")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// LoadTemplate parses a template as if it were a file named
// "<template NAME>".
func LoadTemplate(name string) (*v1alpha1.Blueprint, error) {
	data, err := Template(name)
	if err != nil {
		return nil, err
	}
	bp, _, err := Parse("<template "+name+">", data)
	return bp, err
}

// MustLoadTemplate is LoadTemplate for a template berth ships, which its
// tests keep valid: it panics on an unknown name or a broken template.
func MustLoadTemplate(name string) *v1alpha1.Blueprint {
	bp, err := LoadTemplate(name)
	if err != nil {
		panic(err)
	}
	return bp
}
