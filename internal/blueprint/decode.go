package blueprint

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// decoder fills a Go value from a YAML node tree, strictly: an unknown
// field, a duplicate key or a value of the wrong type is a problem, and
// decoding goes on so that every problem is found in one pass. It records
// the line of every field path so later validation errors can point at it.
type decoder struct {
	lines    Lines
	problems problem.List
	// values are values of the right type that do not parse, such as a
	// taint without an effect. The rest of the blueprint is sound, so it
	// is validated too and these are reported with what that finds.
	values problem.List
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// DecodeNode fills v, a pointer to a struct with JSON tags, from the YAML
// node n as Parse fills a blueprint: strictly (an unknown field, a
// duplicate key or a value of the wrong type is a problem; quantities and
// durations read as Kubernetes reads them), every problem found in one
// pass, each with its field path and line. It is for berth's other YAML
// files, which name the file in the problems. Lines finds the line of a
// problem found after decoding.
func DecodeNode(n *yaml.Node, v any) (Lines, problem.List) {
	d := &decoder{lines: Lines{}}
	d.decode(n, reflect.ValueOf(v).Elem(), nil)
	return d.lines, append(d.problems, d.values...)
}

// Lines are the lines a YAML document spells out each field path on
// ("spec.pools[2].taints[0]").
type Lines map[string]int

// Of is the line of path, or of the nearest path above it that the
// document spells out; 0 when there is none.
func (l Lines) Of(path string) int {
	for {
		if n, ok := l[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

// fail records a problem at path, read from line: what is wrong, and the
// fix.
func (d *decoder) fail(path *field.Path, line int, message, fix string) {
	p := problem.Problem{Line: line, Message: message, Fix: fix}
	if path != nil { // nil is the whole document, which field.Path writes as "<nil>"
		p.Field = path.String()
	}
	d.problems = append(d.problems, p)
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path *field.Path) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, seen := d.lines[path.String()]; !seen {
		d.lines[path.String()] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	if v.Addr().Type().Implements(jsonUnmarshaler) {
		d.decodeJSON(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n.Line, fmt.Sprintf("expected a list, found %s", describe(n)), "write it as a list, one \"- item\" per line")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.lines[path.Index(i).String()] = item.Line
			d.decode(item, s.Index(i), path.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.fail(path, n.Line, fmt.Sprintf("expected a map of key: value, found %s", describe(n)), "write it as key: value lines, or {key: value}")
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				d.fail(path, k.Line, fmt.Sprintf("a key is %s, not a single value", describe(k)), "write keys as plain words, like tier: gpu")
				continue
			}
			kp := path.Key(k.Value)
			d.lines[kp.String()] = k.Line
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.fail(kp, k.Line, fmt.Sprintf("key %q appears twice", k.Value), "keep one of them")
				continue
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, elem, kp)
			m.SetMapIndex(reflect.ValueOf(k.Value), elem)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(path, n.Line, fmt.Sprintf("expected a single value, found %s", describe(n)), "write one value, quoted if in doubt")
			return
		}
		v.SetString(n.Value)
	case reflect.Int32, reflect.Int64, reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, v.Type().Bits())
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			d.fail(path, n.Line, fmt.Sprintf("expected a whole number, found %s", describe(n)), "write a number without quotes, like 2")
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") || err != nil {
			d.fail(path, n.Line, fmt.Sprintf("expected a number, found %s", describe(n)), "write a number without quotes, like 0.5")
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			d.fail(path, n.Line, fmt.Sprintf("expected true or false, found %s", describe(n)), "write true or false without quotes")
			return
		}
		v.SetBool(b)
	default:
		panic(fmt.Sprintf("blueprint decoder: unsupported kind %s at %s", v.Kind(), path))
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path *field.Path) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, fmt.Sprintf("expected a map of fields, found %s", describe(n)), "write it as field: value lines, or {field: value}")
		return
	}
	fields := jsonFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		var fp *field.Path
		if path == nil {
			fp = field.NewPath(k.Value)
		} else {
			fp = path.Child(k.Value)
		}
		idx, known := fields[k.Value]
		switch {
		case !known:
			d.fail(fp, k.Line, fmt.Sprintf("unknown field %q", k.Value), suggestField(k.Value, fields))
		case seen[k.Value]:
			d.fail(fp, k.Line, fmt.Sprintf("field %q appears twice", k.Value), "keep one of them")
		default:
			seen[k.Value] = true
			d.lines[fp.String()] = k.Line
			d.decode(val, v.Field(idx), fp)
		}
	}
}

// decodeJSON hands a node to a type's own JSON decoding (resource
// quantities, int-or-string), so those read exactly as Kubernetes reads them.
func (d *decoder) decodeJSON(n *yaml.Node, v reflect.Value, path *field.Path) {
	var raw any
	if err := n.Decode(&raw); err != nil {
		d.fail(path, n.Line, err.Error(), "")
		return
	}
	data, err := json.Marshal(raw) // fails only for .inf and .nan
	if err == nil {
		err = v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	}
	if err != nil {
		switch v.Type() {
		case reflect.TypeFor[resource.Quantity]():
			d.fail(path, n.Line, fmt.Sprintf("%s is not a quantity", describe(n)), "write a number with an optional unit, like 16, 500m or 64Gi")
		case reflect.TypeFor[metav1.Duration]():
			d.fail(path, n.Line, fmt.Sprintf("%s is not a duration", describe(n)), "write a Go duration in quotes if in doubt, like 10s, 90s or 15m")
		case reflect.TypeFor[intstr.IntOrString]():
			d.fail(path, n.Line, fmt.Sprintf("%s is neither a whole number nor a percentage", describe(n)), "write a count like 1, or a percentage in quotes like \"50%\"")
		default:
			if p, ok := problem.As(err); ok {
				v := *p
				v.Field, v.Line = path.String(), n.Line
				d.values = append(d.values, v)
				return
			}
			d.fail(path, n.Line, fmt.Sprintf("%s: %v", describe(n), err), "")
		}
	}
}

// jsonFields maps each JSON field name of a struct to its field index.
func jsonFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = i
		}
	}
	return out
}

func suggestField(name string, fields map[string]int) string {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	sort.Strings(known)
	best, bestDist := "", 3
	for _, k := range known {
		if dist := words.EditDistance(strings.ToLower(name), strings.ToLower(k)); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "remove it; the fields here are " + strings.Join(known, ", ")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	default:
		return strconv.Quote(n.Value)
	}
}
