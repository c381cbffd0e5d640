package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wellKnown is api/v1alpha1/wellknown.go, where every label, annotation
// and taint key, resource name and field manager berth uses is declared.
const wellKnown = "api/v1alpha1/wellknown.go"

// keys are the string constants of wellknown.go that name something in a
// Kubernetes object's keys: the values with a domain ("berth.io/pool",
// "nvidia.com/gpu"), not the short words a rule or metric is also called.
func keys(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, wellKnown), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, v := range spec.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && strings.Contains(s, "/") && strings.Contains(strings.Split(s, "/")[0], ".") {
				out[s] = spec.Names[i].Name
			}
		}
		return true
	})
	if len(out) < 20 {
		t.Fatalf("%s: found %d keys with a domain; the reading of the file is broken", wellKnown, len(out))
	}
	return out
}

// The claim of ARCHITECTURE.md: a key is written once, in wellknown.go;
// code outside it names the constant. Tests and the hack/ tools (other
// modules, written against upstream's own names) are left out.
func TestKeysAreWrittenOnce(t *testing.T) {
	known := keys(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == "hack" || rel == "test" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == wellKnown {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil {
				if name, ok := known[s]; ok {
					t.Errorf("%s: %q written as a literal; use v1alpha1.%s", fset.Position(lit.Pos()), s, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
