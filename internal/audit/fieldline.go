package audit

import (
	"fmt"
	"strconv"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
)

// lineOf is the line of field in the object's document: the deepest part
// of the path the YAML holds, else the document's first line. Only
// findings ask, so documents are parsed again only for them.
func (s source) lineOf(field string) int {
	return s.lineIn(nil, field)
}

// lastDoc is the YAML document lineIn read last, kept for the next
// finding: a bare pod's findings come one after another. A document in
// the block style blockToJSON reads is not parsed: blockLine follows each
// finding's path through it, for a fraction of a parse. Any other is parsed
// once with yaml.v3 for all its findings.
type lastDoc struct {
	at     *byte
	parsed bool         // not block style: root is the parse
	root   *goyaml.Node // nil when the document did not parse
}

// lineIn is lineOf, reusing last (nil keeps nothing).
func (s source) lineIn(last *lastDoc, field string) int {
	if !s.yaml {
		return s.file.lineAt(s.offset)
	}
	if len(s.doc) == 0 {
		return s.line
	}
	if last == nil {
		last = new(lastDoc)
	}
	steps := pathSteps(field)
	if last.at != &s.doc[0] {
		last.at, last.parsed, last.root = &s.doc[0], false, nil
	}
	if !last.parsed {
		if line, ok := blockLine(s.doc, steps, s.block); ok {
			return s.line + line - 1
		}
		last.parsed, last.root = true, new(goyaml.Node)
		if err := goyaml.Unmarshal(s.doc, last.root); err != nil || len(last.root.Content) == 0 {
			last.root = nil
		}
	}
	if last.root == nil {
		return s.line
	}
	return s.line + nodeLine(last.root, steps) - 1
}

// nodeLine is the line of steps in a parsed document: of the deepest key
// or item of them it holds, else of its root.
func nodeLine(root *goyaml.Node, steps []string) int {
	node := root.Content[0]
	line := node.Line
	for _, step := range steps {
		at, next := child(node, step)
		if next == nil {
			break
		}
		node, line = next, at
	}
	return line
}

// String is FILE:LINE.
func (s source) String() string { return fmt.Sprintf("%s:%d", s.file.name, s.lineOf("")) }

// pathSteps splits "spec.hard[\"nvidia.com/gpu\"]" or "containers[0].args"
// into keys and indexes.
func pathSteps(path string) []string {
	var out []string
	for path != "" {
		switch {
		case strings.HasPrefix(path, "[\""):
			end := strings.Index(path, "\"]")
			if end < 0 {
				return out
			}
			key, err := strconv.Unquote(path[1 : end+1])
			if err != nil {
				return out
			}
			out = append(out, key)
			path = path[end+2:]
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return out
			}
			out = append(out, path[:end+1])
			path = path[end+1:]
		case path[0] == '.':
			path = path[1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[:end])
			path = path[end:]
		}
	}
	return out
}

// child is a mapping's value at key, or a sequence's element at "[N]",
// and the line it is written on: the key's, for a mapping.
func child(n *goyaml.Node, step string) (int, *goyaml.Node) {
	switch n.Kind {
	case goyaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == step {
				return n.Content[i].Line, n.Content[i+1]
			}
		}
	case goyaml.SequenceNode:
		if i, ok := index(step); ok && i < len(n.Content) {
			return n.Content[i].Line, n.Content[i]
		}
	}
	return 0, nil
}
