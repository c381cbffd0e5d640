package export

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML targets build their documents from the structs below (field
// order is the order written), turn them into yaml.v3 nodes, and hang
// comments on the nodes: that is how a NodePool or node group carries the
// notes about what its target cannot express.

func toNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	return &n, nil
}

func writeNode(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	return enc.Close()
}

// mapValue is the node under key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// mapKey is the key node of key in mapping n, or nil.
func mapKey(n *yaml.Node, k string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i]
		}
	}
	return nil
}

// commentText wraps lines for a node comment; yaml.v3 adds the "# ".
func commentText(lines []string) string {
	var out []string
	for _, l := range lines {
		out = append(out, wrap(l, 76)...)
	}
	return strings.Join(out, "\n")
}
