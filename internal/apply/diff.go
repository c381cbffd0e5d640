package apply

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldChange is one field's old and new value, as text. From is empty
// for a field being added, To for one being removed.
type FieldChange struct {
	Path     string
	From, To string
}

// serverFields are set by the API server on every object; they are never
// part of a change.
var serverFields = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "uid"},
	{"metadata", "creationTimestamp"},
	{"metadata", "selfLink"},
	{"status"},
}

// diff lists the fields whose values differ between two versions of an
// object, in path order.
func diff(from, to *unstructured.Unstructured) []FieldChange {
	a, b := flatten(clean(from)), flatten(clean(to))
	var out []FieldChange
	for p, v := range b {
		if w, ok := a[p]; !ok || w != v {
			out = append(out, FieldChange{Path: p, From: a[p], To: v})
		}
	}
	for p, v := range a {
		if _, ok := b[p]; !ok {
			out = append(out, FieldChange{Path: p, From: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// fields lists every field an object sets, for a create.
func fields(obj *unstructured.Unstructured) []FieldChange {
	flat := flatten(clean(obj))
	out := make([]FieldChange, 0, len(flat))
	for p, v := range flat {
		switch p {
		case "apiVersion", "kind", "metadata.name", "metadata.namespace":
			continue
		}
		if v == "{}" {
			continue // an empty struct the type always has, such as a Namespace's spec
		}
		out = append(out, FieldChange{Path: p, To: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// clean drops what the server sets from a copy of obj.
func clean(obj *unstructured.Unstructured) map[string]any {
	if obj == nil {
		return nil
	}
	c := obj.DeepCopy()
	for _, f := range serverFields {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	return c.Object
}

// flatten maps each leaf of a JSON-like value to its path:
// spec.hard["requests.nvidia.com/gpu"] → "4". Empty maps and lists are
// leaves too, so that adding one shows.
func flatten(v map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 && path != "" {
				out[path] = "{}"
			}
			for k, e := range t {
				walk(joinKey(path, k), e)
			}
		case []any:
			if len(t) == 0 {
				out[path] = "[]"
			}
			for i, e := range t {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		case string:
			out[path] = t
		case nil:
			out[path] = "null"
		default:
			b, err := json.Marshal(t)
			if err != nil {
				out[path] = fmt.Sprint(t)
			} else {
				out[path] = string(b)
			}
		}
	}
	walk("", v)
	return out
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func joinKey(path, k string) string {
	if !plainKey.MatchString(k) {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}
