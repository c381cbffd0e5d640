package scaffold

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Render writes the objects as YAML documents, each under its comment.
// Fields the API server fills in (creationTimestamp, status) are left out.
func Render(objs []Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		if o.Comment != "" {
			for _, line := range strings.Split(o.Comment, "\n") {
				buf.WriteString(strings.TrimRight("# "+line, " ") + "\n")
			}
		}
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", o.Object, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		delete(m, "status")
		clean(m)
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// clean drops the empty creationTimestamps at any depth (a pod template
// has one too) and the empty objects left.
func clean(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			if k == "metadata" {
				delete(v, "creationTimestamp")
			}
			clean(v)
			if len(v) == 0 && (k == "resources" || k == "metadata" || k == "strategy") {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if e, ok := e.(map[string]any); ok {
					clean(e)
				}
			}
		}
	}
}

// File is the name a kind's manifests are written to: NAME-KIND.yaml.
func File(o Options) string {
	return o.Name + "-" + string(o.Kind) + ".yaml"
}
