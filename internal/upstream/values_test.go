package upstream

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestValuesAreUpstreams: each value berth copies is what the module it
// came from declares, at the version berth builds against.
func TestValuesAreUpstreams(t *testing.T) {
	for _, v := range []struct {
		pkg, name string
		ours      time.Duration
	}{
		{"k8s.io/kubernetes/pkg/controller/disruption", "stalePodDisruptionTimeout", StalePodDisruptionTimeout},
	} {
		if got := Duration(t, v.pkg, v.name); got != v.ours {
			t.Errorf("%s.%s is %v upstream; berth copies %v", v.pkg, v.name, got, v.ours)
		}
	}
	// A literal in a function's body.
	if got := funcSource(t, "k8s.io/kubernetes/pkg/scheduler/backend/queue", "Run", "PriorityQueue"); !strings.Contains(got, "p.flushUnschedulablePodsLeftover(logger)\n\t}, 30*time.Second, p.stop)") || UnschedulableFlushPeriod != 30*time.Second {
		t.Errorf("PriorityQueue.Run no longer flushes every 30*time.Second as berth's UnschedulableFlushPeriod (%v) says:\n%s", UnschedulableFlushPeriod, got)
	}
}

// funcSource is the source of the function (or method of recv) name in
// the package pkg.
func funcSource(t *testing.T, pkg, name, recv string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, strings.TrimSpace(string(out)), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for fname, f := range p.Files {
			if strings.HasSuffix(fname, "_test.go") {
				continue
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Name.Name != name || (recv == "") != (fn.Recv == nil) {
					continue
				}
				if recv != "" && !strings.Contains(exprString(fn.Recv.List[0].Type), recv) {
					continue
				}
				src, err := os.ReadFile(fname)
				if err != nil {
					t.Fatal(err)
				}
				return string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
			}
		}
	}
	t.Fatalf("%s has no %s", pkg, name)
	return ""
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// Duration reads the duration constant or variable name of the package
// pkg from the module cache: an expression such as 2 * time.Minute,
// time.Second or 10 * time.Second.
func Duration(t *testing.T, pkg, name string) time.Duration {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, strings.TrimSpace(string(out)), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for fname, f := range p.Files {
			if strings.HasSuffix(fname, "_test.go") {
				continue
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, s := range g.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, id := range vs.Names {
						if id.Name == name && i < len(vs.Values) {
							d, ok := evalDuration(vs.Values[i])
							if !ok {
								t.Fatalf("%s.%s: cannot read %T as a duration", pkg, name, vs.Values[i])
							}
							return d
						}
					}
				}
			}
		}
	}
	t.Fatalf("%s declares no %s", pkg, name)
	return 0
}

// evalDuration evaluates the expressions upstream writes durations as:
// integer literals, time's units, and their products.
func evalDuration(e ast.Expr) (time.Duration, bool) {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return evalDuration(x.X)
	case *ast.BasicLit:
		n, err := strconv.ParseInt(x.Value, 0, 64)
		return time.Duration(n), err == nil
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" {
			units := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
			u, ok := units[x.Sel.Name]
			return u, ok
		}
	case *ast.BinaryExpr:
		a, ok1 := evalDuration(x.X)
		b, ok2 := evalDuration(x.Y)
		if ok1 && ok2 && x.Op == token.MUL {
			return a * b, true
		}
	case *ast.CallExpr:
		if len(x.Args) == 1 {
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Duration" {
				return evalDuration(x.Args[0])
			}
		}
	}
	return 0, false
}
