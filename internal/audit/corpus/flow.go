package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Flow style, as people write manifests by hand: {key: value} mappings
// and [a, b] sequences, inline at any depth, on one line or spread over
// several, and mixed with block style the way kubectl users mix them.
// Each pod is written in one of flowStyles in turn.

// flowStyle is one way of writing a document in flow style.
type flowStyle int

const (
	// flowLine is the whole document as one flow mapping on one line.
	flowLine flowStyle = iota
	// flowLines is the whole document as a flow mapping spread over
	// lines, JSON-like: keys and strings quoted, a comment, and a
	// trailing comma.
	flowLines
	// flowTop is block style at the top, each top-level value in flow
	// style on the line of its key.
	flowTop
	// flowItems is block style but for the items of sequences of
	// mappings: "- {name: c, image: ...}".
	flowItems
	// flowLeaves is block style with every mapping or sequence of
	// scalars in flow style (labels: {app: x}, args: [a, b]): the mix
	// kubectl users write most.
	flowLeaves

	flowStyles
)

// yamlNode is an object as an ordered tree, keys in the order the API
// types declare them, as a person would write them.
type yamlNode struct {
	keys  []string    // a mapping's keys; nil for a sequence or a scalar
	kids  []*yamlNode // a mapping's values or a sequence's items
	seq   bool
	value any // a scalar: string, json.Number, bool or nil
	leaf  bool
}

// writeFlow writes obj as one YAML document in style.
func writeFlow(w *bytes.Buffer, obj any, style flowStyle) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	root, err := readNode(dec)
	if err != nil {
		return err
	}
	handWritten(root)
	fw := flowWriter{w: w, style: style}
	switch style {
	case flowLine:
		fw.flow(root, false)
		w.WriteByte('\n')
	case flowLines:
		fw.lines(root, 0, 2)
		w.WriteByte('\n')
	default:
		fw.block(root, 0, 0, false, false)
	}
	return nil
}

// handWritten puts apiVersion before kind and leaves out an empty status,
// as a person writes a manifest.
func handWritten(root *yamlNode) {
	for i := len(root.keys) - 1; i >= 0; i-- {
		if root.keys[i] == "status" && len(root.kids[i].kids) == 0 {
			root.keys = append(root.keys[:i], root.keys[i+1:]...)
			root.kids = append(root.kids[:i], root.kids[i+1:]...)
		}
	}
	if len(root.keys) >= 2 && root.keys[0] == "kind" && root.keys[1] == "apiVersion" {
		root.keys[0], root.keys[1] = root.keys[1], root.keys[0]
		root.kids[0], root.kids[1] = root.kids[1], root.kids[0]
	}
}

// readNode reads the next JSON value of dec as a tree.
func readNode(dec *json.Decoder) (*yamlNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &yamlNode{keys: []string{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.keys, n.kids = append(n.keys, k.(string)), append(n.kids, v)
		}
		_, err = dec.Token()
		return n, err
	case json.Delim('['):
		n := &yamlNode{seq: true}
		for dec.More() {
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, v)
		}
		_, err = dec.Token()
		return n, err
	}
	return &yamlNode{value: tok, leaf: true}, nil
}

// scalars reports whether n is a collection of scalars only.
func (n *yamlNode) scalars() bool {
	for _, k := range n.kids {
		if !k.leaf {
			return false
		}
	}
	return true
}

type flowWriter struct {
	w     *bytes.Buffer
	style flowStyle
}

// inFlow reports whether block style gives way to flow style for the
// collection n, the value of key (or an item of a sequence: key "-").
func (fw flowWriter) inFlow(n *yamlNode, key string, depth int) bool {
	switch fw.style {
	case flowTop:
		return depth >= 1
	case flowItems:
		return key == "-" && !n.seq
	case flowLeaves:
		return n.scalars()
	}
	return false
}

// block writes the mapping n's entries in block style, keys at indent;
// with item, the first key follows a "- " already written. num says n's
// values are quantities.
func (fw flowWriter) block(n *yamlNode, indent, depth int, item, num bool) {
	for i, k := range n.keys {
		if i > 0 || !item {
			fw.w.WriteString(strings.Repeat(" ", indent))
		}
		fw.key(k)
		fw.w.WriteByte(':')
		fw.value(n.kids[i], k, indent, depth+1, num)
	}
}

// value writes the value of key after its colon, and the line's end.
func (fw flowWriter) value(v *yamlNode, key string, indent, depth int, num bool) {
	switch {
	case v.leaf:
		fw.w.WriteByte(' ')
		fw.scalar(v.value, key, num)
		fw.w.WriteByte('\n')
	case len(v.kids) == 0 || fw.inFlow(v, key, depth):
		fw.w.WriteByte(' ')
		fw.flow(v, quantities(key))
		fw.w.WriteByte('\n')
	case v.seq:
		fw.w.WriteByte('\n')
		for _, it := range v.kids {
			fw.w.WriteString(strings.Repeat(" ", indent) + "- ")
			switch {
			case it.leaf:
				fw.scalar(it.value, "-", false)
				fw.w.WriteByte('\n')
			case it.seq || len(it.kids) == 0 || fw.inFlow(it, "-", depth+1):
				fw.flow(it, false)
				fw.w.WriteByte('\n')
			default:
				fw.block(it, indent+2, depth+1, true, false)
			}
		}
	default:
		fw.w.WriteByte('\n')
		fw.block(v, indent+2, depth, false, quantities(key))
	}
}

// flow writes n in flow style on one line. num says n (or, for a
// collection, its scalars) are quantities, which people write as numbers
// where they can (cpu: 2).
func (fw flowWriter) flow(n *yamlNode, num bool) { fw.flowValue(n, "", num) }

// flowValue is flow for the value of key.
func (fw flowWriter) flowValue(n *yamlNode, key string, num bool) {
	if n.leaf {
		fw.scalar(n.value, key, num)
		return
	}
	open, close := byte('{'), byte('}')
	if n.seq {
		open, close = '[', ']'
	}
	fw.w.WriteByte(open)
	for i, v := range n.kids {
		if i > 0 {
			fw.w.WriteString(", ")
		}
		if n.seq {
			fw.flow(v, num && v.leaf)
			continue
		}
		fw.key(n.keys[i])
		fw.w.WriteString(": ")
		fw.flowValue(v, n.keys[i], num && v.leaf || quantities(n.keys[i]))
	}
	fw.w.WriteByte(close)
}

// lines writes n in flow style with each entry on a line of its own, down
// to levels deep, quoting every key and string as JSON does.
func (fw flowWriter) lines(n *yamlNode, indent, levels int) {
	if levels == 0 || n.leaf || len(n.kids) == 0 {
		fw.flow(n, false)
		return
	}
	open, close := "{", "}"
	if n.seq {
		open, close = "[", "]"
	}
	pad := strings.Repeat(" ", indent+2)
	fw.w.WriteString(open + "\n")
	if indent == 0 {
		fw.w.WriteString(pad + "# written by hand\n")
	}
	for i, v := range n.kids {
		fw.w.WriteString(pad)
		if !n.seq {
			fw.key(n.keys[i])
			fw.w.WriteString(": ")
		}
		fw.lines(v, indent+2, levels-1)
		if i < len(n.kids)-1 || indent == 0 {
			fw.w.WriteByte(',') // a trailing comma after the last, at the top
		}
		fw.w.WriteByte('\n')
	}
	fw.w.WriteString(strings.Repeat(" ", indent) + close)
}

// key writes a mapping key: quoted in flowLines, else plain.
func (fw flowWriter) key(k string) {
	if fw.style == flowLines || !plainSafe(k) {
		fw.w.WriteString(strconv.Quote(k))
		return
	}
	fw.w.WriteString(k)
}

// scalar writes a scalar; strings are plain where YAML reads them back as
// the same string, else double-quoted, and in flowLines always quoted;
// with num, integer quantities are written as numbers.
// Images are single-quoted in flowItems, as some people write them.
func (fw flowWriter) scalar(v any, key string, num bool) {
	switch v := v.(type) {
	case nil:
		fw.w.WriteString("null")
	case bool:
		fw.w.WriteString(strconv.FormatBool(v))
	case json.Number:
		fw.w.WriteString(v.String())
	case string:
		switch {
		case num && isInteger(v) && fw.style != flowLines:
			fw.w.WriteString(v)
		case fw.style == flowItems && key == "image":
			fw.w.WriteString("'" + strings.ReplaceAll(v, "'", "''") + "'")
		case fw.style == flowLines || !plainSafe(v):
			fw.w.WriteString(strconv.Quote(v))
		default:
			fw.w.WriteString(v)
		}
	default:
		panic(fmt.Sprintf("corpus: a %T in JSON", v))
	}
}

// quantities reports whether the values under key are resource
// quantities, which people write as numbers where they can.
func quantities(key string) bool { return key == "requests" || key == "limits" }

// plainSafe reports whether s, written plain in flow style, reads back as
// the string s: letters, digits and "./_:-", starting with a letter, "/",
// "--" or a quantity's digits (8Gi), and no YAML 1.1 bool or null.
func plainSafe(s string) bool {
	if s == "" || s[len(s)-1] == ':' {
		return false
	}
	switch c := s[0]; {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '/':
	case c == '-':
		if len(s) < 2 || s[1] != '-' {
			return false
		}
	case '0' <= c && c <= '9':
		// 8Gi, 500m: digits then letters are strings.
		i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if i < 0 || !isLetters(s[i:]) || strings.ContainsAny(s[i:], "eExXoObB") {
			return false
		}
	default:
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case strings.ContainsRune("./_:-", r):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// isLetters reports whether s is ASCII letters only.
func isLetters(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// isInteger reports whether s is a positive integer written as YAML and
// JSON write it.
func isInteger(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && !strings.HasPrefix(s, "0") && !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-")
}
