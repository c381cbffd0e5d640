package job

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSignatureMatchesUpstream: a linkname binds by name alone, so a
// change of upstream's parameters would reach the controller with the
// wrong arguments at run time. The parameter and result types here must
// be upstream's, as written, in the version berth builds against.
func TestSignatureMatchesUpstream(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "k8s.io/kubernetes/pkg/controller/job").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	upstream := signature(t, filepath.Join(dir, "job_controller.go"), "newControllerWithClock", "k8s.io/kubernetes/pkg/controller/job")
	ours := signature(t, "job.go", "newControllerWithClock", "")
	if len(upstream) == 0 {
		t.Fatal("upstream has no newControllerWithClock")
	}
	if !slices.Equal(ours, upstream) {
		t.Errorf("newControllerWithClock takes %v upstream, and berth declares %v", upstream, ours)
	}
}

// signature lists the parameter and result types of the function name in
// file, one entry per parameter, each package named by its import path;
// self is the file's own package's path, for its own types.
func signature(t *testing.T, file, name, self string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		alias := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			alias = imp.Name.Name
		}
		paths[alias] = path
	}
	var types []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Recv != nil {
			continue
		}
		for _, list := range []*ast.FieldList{fn.Type.Params, fn.Type.Results} {
			for _, field := range list.List {
				qualify(field.Type, paths, self)
				var b bytes.Buffer
				printer.Fprint(&b, fset, field.Type)
				for range max(len(field.Names), 1) {
					types = append(types, b.String())
				}
			}
			types = append(types, "|")
		}
	}
	return types
}

// qualify rewrites the package names in a type expression to their import
// paths, and a bare name of the file's own package to self.Name.
func qualify(e ast.Expr, paths map[string]string, self string) {
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				if p, ok := paths[id.Name]; ok {
					id.Name = strconv.Quote(p)
				}
			}
			return false
		case *ast.StarExpr:
			if id, ok := x.X.(*ast.Ident); ok && self != "" && ast.IsExported(id.Name) {
				x.X = &ast.SelectorExpr{X: ast.NewIdent(strconv.Quote(self)), Sel: id}
			}
		}
		return true
	})
}
