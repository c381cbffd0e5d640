package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"berth.io/berth/internal/problem"
)

// LoadFiles reads the manifests in paths: files of multi-document YAML or
// JSON (a List, such as `kubectl get -o json` writes, or a stream of
// objects), and directories, walked for *.yaml, *.yml and *.json. "-" is
// stdin. Rendered Helm and kustomize output are plain multi-document
// YAML. Documents without a kind (a chart's values.yaml) are skipped;
// documents that cannot be read are all reported, each as FILE:LINE, and
// nothing is audited.
func LoadFiles(paths []string, stdin io.Reader) (*Inventory, error) {
	names, err := expand(paths)
	if err != nil {
		return nil, err
	}
	// Read and split the files on every core: splitting a JSON List
	// scans all of it.
	perFile := make([][]doc, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(names); i = int(next.Add(1)) - 1 {
				perFile[i], errs[i] = readDocs(names[i], stdin)
			}
		})
	}
	wg.Wait()
	var docs []doc
	var problems []string
	for i := range names {
		var bad *badObject
		switch {
		case errors.As(errs[i], &bad):
			problems = append(problems, bad.msg)
		case errs[i] != nil:
			return nil, errs[i]
		}
		docs = append(docs, perFile[i]...)
	}
	inv, more := decodeAll(docs)
	problems = append(problems, more...)
	problems = append(problems, inv.resolvePods()...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, problem.New("correct them, or leave them out of the paths audited",
			fmt.Sprintf("%d manifest(s) could not be read:\n%s", len(problems), strings.Join(problems, "\n")))
	}
	return inv, nil
}

// readDocs reads a file and splits it into documents. A file that
// cannot be split is a *badObject; one that cannot be read, an error.
func readDocs(name string, stdin io.Reader) ([]doc, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	f := &file{name: name, data: data}
	docs, err := f.docs()
	if err != nil {
		return nil, &badObject{err.Error()}
	}
	return docs, nil
}

// expand lists the files named by paths, walking directories.
func expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, problem.Errorf("name files or directories of manifests that exist", "%w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					out = append(out, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// file is one file's contents, and how many lines come before each block
// of it, worked out only when a finding needs a line number.
type file struct {
	name string
	data []byte

	once   sync.Once
	before []int // newlines before each lineBlock bytes of data
}

// lineBlock is how many bytes of a file one entry of file.before covers.
// An entry per line would be 50 million of them for a gigabyte of
// indented JSON, and building it a second of one core; an entry per 4 KiB
// is 2 MiB, counted in 0.1 s, and finding a line counts at most 4 KiB.
const lineBlock = 4096

// lineAt is the 1-based line of the byte at offset.
func (f *file) lineAt(offset int) int {
	f.once.Do(func() {
		f.before = make([]int, 0, len(f.data)/lineBlock+1)
		n := 0
		for i := 0; i < len(f.data); i += lineBlock {
			f.before = append(f.before, n)
			n += bytes.Count(f.data[i:min(i+lineBlock, len(f.data))], []byte{'\n'})
		}
	})
	offset = min(max(offset, 0), len(f.data))
	if len(f.before) == 0 {
		return 1 // an empty file
	}
	b := min(offset/lineBlock, len(f.before)-1)
	return 1 + f.before[b] + bytes.Count(f.data[b*lineBlock:offset], []byte{'\n'})
}

// offsetOf is where sub, a slice of f.data, starts in it.
func (f *file) offsetOf(sub []byte) int { return cap(f.data) - cap(sub) }

// doc is one document of a file.
type doc struct {
	file *file
	// line is the document's first line, for YAML; JSON documents are
	// slices of the file and find their line from their offset.
	line int
	data []byte
	yaml bool
	// indent, for an item of a YAML List, is the indent of its keys; its
	// data starts at the item's "- ".
	indent int
}

// yamlData is the YAML document, an item of a List made a document of
// its own.
func (d doc) yamlData() []byte {
	if d.indent > 0 {
		return dedent(d.data, d.indent)
	}
	return d.data
}

// docs splits f into documents: JSON values, or YAML separated by ---.
func (f *file) docs() ([]doc, error) {
	first := skipSpace(f.data, 0)
	if first < len(f.data) && (f.data[first] == '{' || f.data[first] == '[') {
		return f.jsonDocs(first)
	}
	var out []doc
	start, startLine, line := 0, 1, 1
	for i := 0; i <= len(f.data); {
		end := bytes.IndexByte(f.data[i:], '\n')
		if end < 0 {
			end = len(f.data) - i
		}
		text := f.data[i : i+end]
		if isSeparator(text) {
			out = appendYAML(out, f, f.data[start:i], startLine)
			start, startLine = i+end+1, line+1
		}
		i += end + 1
		line++
	}
	if start < len(f.data) {
		out = appendYAML(out, f, f.data[start:], startLine)
	}
	return out, nil
}

// jsonDocs splits a JSON file: an object, a List (whose items are the
// documents), an array of objects, or a stream of any of those.
func (f *file) jsonDocs(i int) ([]doc, error) {
	var out []doc
	for ; i < len(f.data); i = skipSpace(f.data, i) {
		var (
			end   int
			items [][]byte
			kind  string
			err   error
		)
		if f.data[i] == '[' {
			items, end, err = elementsEnd(f.data, i)
		} else {
			end, kind, items, err = document(f.data, i)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not valid JSON: %w", f.name, f.lineAt(i), err)
		}
		if f.data[i] == '{' && !strings.HasSuffix(kind, "List") {
			out = append(out, doc{file: f, data: f.data[i:end]})
		} else {
			for _, it := range items {
				out = append(out, doc{file: f, data: it})
			}
		}
		i = end
	}
	return out, nil
}

func isSeparator(line []byte) bool {
	line = bytes.TrimRight(line, "\r")
	return bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '#')
}

// appendYAML adds a YAML document unless it holds only comments. A List
// (what `kubectl get -o yaml` writes) becomes its items, so that they are
// decoded on every core.
func appendYAML(docs []doc, f *file, data []byte, line int) []doc {
	for rest := data; ; {
		line, more, found := bytes.Cut(rest, []byte("\n"))
		if !isBlank(line) {
			break
		}
		if !found {
			return docs // only comments
		}
		rest = more
	}
	if bytes.HasPrefix(data, []byte("items:")) || bytes.Contains(data, []byte("\nitems:")) {
		if ents, ok := entries(data, 0); ok {
			var kind string
			var list *entry
			for i := range ents {
				switch ents[i].key {
				case "kind":
					kind, _ = scalar(ents[i].value)
				case "items":
					list = &ents[i]
				}
			}
			if strings.HasSuffix(kind, "List") && list != nil && list.value == "" {
				if its, lines, indent, ok := items(list.body); ok {
					for i, it := range its {
						docs = append(docs, doc{file: f, line: line + list.line + 1 + lines[i], data: it, yaml: true, indent: indent})
					}
					return docs
				}
			}
		}
	}
	return append(docs, doc{file: f, line: line, data: data, yaml: true})
}

// decodeAll decodes docs on every core, each worker into an inventory
// of its own, merged at the end.
func decodeAll(docs []doc) (*Inventory, []string) {
	workers := runtime.GOMAXPROCS(0)
	chunk := max(1, min(256, len(docs)/(8*workers)))
	var next atomic.Int64
	invs := make([]*Inventory, workers)
	problems := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		invs[w] = &Inventory{sources: map[Object]source{}}
		wg.Go(func() {
			for {
				from := int(next.Add(int64(chunk))) - chunk
				if from >= len(docs) {
					return
				}
				for _, d := range docs[from:min(from+chunk, len(docs))] {
					if err := d.decode(invs[w]); err != nil {
						problems[w] = append(problems[w], err.Error())
					}
				}
			}
		})
	}
	wg.Wait()
	inv := invs[0]
	var all []string
	for w := range workers {
		if w > 0 {
			inv.merge(invs[w])
		}
		all = append(all, problems[w]...)
	}
	return inv, all
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// decode adds the document's objects to inv.
func (d doc) decode(inv *Inventory) error {
	src := source{file: d.file, line: d.line, doc: d.data, yaml: d.yaml}
	js := d.data
	if d.yaml {
		if p, ok := peekYAMLPod(d, src); ok {
			inv.pending = append(inv.pending, p)
			return nil
		}
		data := d.yamlData()
		src.doc = data
		var err error
		if js, src.block, err = yamlToJSON(data); err != nil {
			// Report the line in the file, not in the document.
			msg := yamlLine.ReplaceAllStringFunc(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), func(m string) string {
				n, _ := strconv.Atoi(m[len("line "):])
				return "line " + strconv.Itoa(n+d.line-1)
			})
			return fmt.Errorf("%s:%d: not valid YAML: %s", d.file.name, d.line, msg)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			return nil
		}
	} else {
		src.offset = d.file.offsetOf(d.data)
		src.doc = nil // JSON fields are found from the document's line only
	}
	err := decodeObject(js, src, inv)
	var bad *badObject
	if errors.As(err, &bad) {
		return fmt.Errorf("%s: %s", src, bad.msg)
	}
	return err
}
