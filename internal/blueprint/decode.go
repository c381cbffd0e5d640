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
)

// decoder fills a Go value from a YAML node tree, strictly: an unknown
// field, a duplicate key or a value of the wrong type is a problem, and
// decoding goes on so that every problem is found in one pass. It records
// the line of every field path so later validation errors can point at it.
type decoder struct {
	lines    map[string]int
	problems field.ErrorList
	// values are values of the right type that do not parse, such as a
	// taint without an effect. The rest of the blueprint is sound, so it
	// is validated too and these are reported with what that finds.
	values field.ErrorList
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (d *decoder) fail(path *field.Path, line int, format string, args ...any) {
	e := field.Invalid(path, nil, fmt.Sprintf(format, args...))
	if path == nil {
		e.Field = "" // the whole document; field.Path renders nil as "<nil>"
	}
	d.lines[e.Field] = line
	d.problems = append(d.problems, e)
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
			d.fail(path, n.Line, "expected a list, found %s\nfix: write it as a list, one \"- item\" per line", describe(n))
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
			d.fail(path, n.Line, "expected a map of key: value, found %s\nfix: write it as key: value lines, or {key: value}", describe(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				d.fail(path, k.Line, "a key is %s, not a single value\nfix: write keys as plain words, like tier: gpu", describe(k))
				continue
			}
			kp := path.Key(k.Value)
			d.lines[kp.String()] = k.Line
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.fail(kp, k.Line, "key %q appears twice\nfix: keep one of them", k.Value)
				continue
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, elem, kp)
			m.SetMapIndex(reflect.ValueOf(k.Value), elem)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(path, n.Line, "expected a single value, found %s\nfix: write one value, quoted if in doubt", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int32, reflect.Int64, reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, v.Type().Bits())
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			d.fail(path, n.Line, "expected a whole number, found %s\nfix: write a number without quotes, like 2", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") || err != nil {
			d.fail(path, n.Line, "expected a number, found %s\nfix: write a number without quotes, like 0.5", describe(n))
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			d.fail(path, n.Line, "expected true or false, found %s\nfix: write true or false without quotes", describe(n))
			return
		}
		v.SetBool(b)
	default:
		panic(fmt.Sprintf("blueprint decoder: unsupported kind %s at %s", v.Kind(), path))
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path *field.Path) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n.Line, "expected a map of fields, found %s\nfix: write it as field: value lines, or {field: value}", describe(n))
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
			d.fail(fp, k.Line, "unknown field %q\nfix: %s", k.Value, suggestField(k.Value, fields))
		case seen[k.Value]:
			d.fail(fp, k.Line, "field %q appears twice\nfix: keep one of them", k.Value)
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
		d.fail(path, n.Line, "%v", err)
		return
	}
	data, err := json.Marshal(raw) // fails only for .inf and .nan
	if err == nil {
		err = v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data)
	}
	if err != nil {
		switch v.Type() {
		case reflect.TypeFor[resource.Quantity]():
			d.fail(path, n.Line, "%s is not a quantity\nfix: write a number with an optional unit, like 16, 500m or 64Gi", describe(n))
		case reflect.TypeFor[metav1.Duration]():
			d.fail(path, n.Line, "%s is not a duration\nfix: write a Go duration in quotes if in doubt, like 10s, 90s or 15m", describe(n))
		case reflect.TypeFor[intstr.IntOrString]():
			d.fail(path, n.Line, "%s is neither a whole number nor a percentage\nfix: write a count like 1, or a percentage in quotes like \"50%%\"", describe(n))
		default:
			if p, ok := problem.As(err); ok {
				d.lines[path.String()] = n.Line
				d.values = append(d.values, field.Invalid(path, nil, p.Message+"\nfix: "+p.Fix))
				return
			}
			d.fail(path, n.Line, "%s: %v", describe(n), err)
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
		if dist := editDistance(strings.ToLower(name), strings.ToLower(k)); dist < bestDist {
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

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
