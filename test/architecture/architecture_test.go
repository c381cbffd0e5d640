package architecture

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "berth.io/berth/"

// root is the repository's root, two directories above this package.
const root = "../.."

// cell finds the packages in the first cell of a row of ARCHITECTURE.md's
// table: "`internal/model/store`, `internal/model`" lists two, in order.
var cell = regexp.MustCompile("`([a-z0-9/._-]+)`")

// tableOrder reads the packages of ARCHITECTURE.md's table, each with its
// position: a package may import only those with a smaller position.
func tableOrder(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	order := map[string]int{}
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "| package |"):
			in = true
			continue
		case in && !strings.HasPrefix(line, "|"):
			in = false
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			if _, dup := order[m[1]]; dup {
				t.Errorf("ARCHITECTURE.md lists %s twice", m[1])
			}
			order[m[1]] = len(order)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(order) == 0 {
		t.Fatal("ARCHITECTURE.md has no package table (a row starting \"| package |\")")
	}
	return order
}

// packages maps each directory of the module holding Go files (relative,
// slash-separated) to the berth packages its non-test files import: a
// test may import what it likes, as test/e2e imports everything. A
// directory with a go.mod of its own (test/s3, hack/upstream-e2e) is
// another module, and testdata is no package.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		if _, ok := imports[dir]; !ok {
			imports[dir] = nil
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range file.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if p, ok := strings.CutPrefix(p, module); ok && !slices.Contains(imports[dir], p) {
				imports[dir] = append(imports[dir], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}

// TestImportsFollowTheTable fails when a package imports one listed below
// it in ARCHITECTURE.md, or is missing from the table: the order there is
// the order engineers read the code in and add to it.
func TestImportsFollowTheTable(t *testing.T) {
	order := tableOrder(t)
	pkgs := packages(t)
	for dir, imports := range pkgs {
		pos, listed := order[dir]
		if !listed {
			t.Errorf("package %s is missing from ARCHITECTURE.md's package table: add a row where its imports put it", dir)
			continue
		}
		for _, imp := range imports {
			at, ok := order[imp]
			if !ok {
				continue // reported as missing on its own
			}
			if at >= pos {
				t.Errorf("%s imports %s, which ARCHITECTURE.md lists below it: move the row, or the code", dir, imp)
			}
		}
	}
	for p := range order {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("ARCHITECTURE.md lists %s, which is no package of the module: drop or rename the row", p)
		}
	}
}
