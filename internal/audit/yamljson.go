package audit

import (
	"bytes"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// yamlToJSON converts a YAML document to JSON: with blockToJSON when the
// document is in the block style kubectl, Helm and kustomize write, or in
// the flow style people write by hand, else with sigs.k8s.io/yaml, whose
// errors are the ones reported. Converting a bare pod through a generic
// YAML parser costs ten times decoding it. block says which of the two
// converted it.
func yamlToJSON(data []byte) (js []byte, block bool, err error) {
	if js, ok := blockToJSON(data); ok {
		return js, true, nil
	}
	js, err = yaml.YAMLToJSON(data)
	return js, false, err
}

// blockToJSON converts block-style YAML to the JSON yaml.YAMLToJSON
// writes, keys aside: nested mappings and sequences, flow collections in
// them or alone (yamlflow.go), and scalars that are quoted, plain strings,
// true, false, null or decimal integers. Anything else (block scalars,
// anchors, tags, numbers it would have to format, plain multi-line
// scalars, a key written twice, tabs) makes it give up: ok is false.
func blockToJSON(data []byte) (js []byte, ok bool) {
	// keys is sized for a pod's deepest mappings, to grow once at most.
	c := blockConv{data: data, out: make([]byte, 0, len(data)), keys: make([]string, 0, 32)}
	if !c.convert() {
		return nil, false
	}
	return c.out, true
}

// blockLine is the line (from 1) of a path of pathSteps in a document
// blockToJSON reads, found as lineIn finds it in yaml.v3's nodes: the
// line of the deepest key or item of the path the document holds, else
// of the root mapping's first key. ok is false where blockToJSON gives
// up. It costs a conversion (yaml.v3's parse cost six times as much).
// With read (the document is
// known to be one blockToJSON reads whole), it stops as soon as no later
// line can change the answer: at the path's last step, or at the end of
// the deepest node of it the document holds.
func blockLine(data []byte, path []string, read bool) (line int, ok bool) {
	c := blockConv{data: data, path: path, line: 1, stop: read, lines: true}
	if !c.convert() {
		return 0, false
	}
	return c.at, true
}

// convert converts the whole document to c.out.
func (c *blockConv) convert() bool {
	if !c.stop && !printableASCII(c.data) {
		// Other characters, and which of them YAML forbids, are the
		// YAML parser's to judge.
		return false
	}
	c.skipBlank()
	if c.i >= len(c.data) {
		return false // empty or comments: the caller's null
	}
	n := c.indent()
	if n != 0 {
		return false
	}
	if bytes.HasPrefix(c.data[c.i:], []byte("- ")) || bytes.HasPrefix(c.data[c.i:], []byte("---")) {
		return false
	}
	c.at = c.line // the root's line: its first key's, or its "{" or "["
	if b := c.data[c.i]; b == '{' || b == '[' {
		if !c.flowBlock(c.i, 0) {
			return false
		}
	} else if !c.mapping(0, false, 0) {
		return false
	}
	if c.done {
		return true
	}
	c.skipBlank()
	return c.i >= len(c.data)
}

// blockConv is blockToJSON's position in the document and its output.
type blockConv struct {
	data []byte
	i    int // the start of the next line to read
	out  []byte
	// end is lineEnd's answer for the line at endFor-1 (0: none yet).
	end, endFor int

	// With path set (blockLine), the conversion also follows it: line
	// is the document's line at c.i (from 1), matched how many of the
	// path's steps the keys and items read so far have matched, and at
	// the line of the last one matched.
	path        []string
	line        int
	matched, at int
	// stop, for a document blockToJSON read whole before, lets the
	// conversion skip what it checked then and end early once at is
	// final (done).
	stop, done bool
	// lines says only the line is wanted: nothing is written to out.
	lines bool

	// keys are the keys of the mappings being read, innermost last.
	keys []string
}

// newKey records key among those of the innermost mapping, c.keys[from:],
// and reports false when it is there already: sigs.k8s.io/yaml keeps the
// last value of a key written twice, where a JSON decoder merges two
// objects and reports a wrong type in either.
func (c *blockConv) newKey(from int, key string) bool {
	if c.stop {
		return true
	}
	for _, k := range c.keys[from:] {
		if k == key {
			return false
		}
	}
	c.keys = append(c.keys, key)
	return true
}

// skipBlank moves past blank and comment lines.
func (c *blockConv) skipBlank() {
	for c.i < len(c.data) {
		end := c.lineEnd()
		if !isBlank(c.data[c.i:end]) {
			return
		}
		c.nextLine(end)
	}
}

// nextLine moves to the line after the one ending at end.
func (c *blockConv) nextLine(end int) {
	c.i = min(end+1, len(c.data))
	c.line++
}

// follow records that the key or item on the current line is the next
// step of the path, when the node it is in was the last step matched
// (on) and no earlier key has matched this step: the step's value is
// then followed with on+1, anything else with -1.
func (c *blockConv) follow(on int, step func(string) bool) int {
	if on < 0 || on != c.matched || on >= len(c.path) || !step(c.path[on]) {
		return -1
	}
	c.matched, c.at = on+1, c.line
	c.done = c.stop && c.matched == len(c.path)
	return on + 1
}

// leave records the end of a node on (or off, -1) the path: when no key
// or item of it matched the next step, no later line can.
func (c *blockConv) leave(on int) {
	c.done = c.done || (c.stop && on >= 0 && on == c.matched)
}

// lineEnd is where the line at c.i ends. It is asked several times a line
// (indent, isItem, the line itself), so the last answer is kept.
func (c *blockConv) lineEnd() int {
	if c.endFor == c.i+1 {
		return c.end
	}
	c.end = len(c.data)
	if n := bytes.IndexByte(c.data[c.i:], '\n'); n >= 0 {
		c.end = c.i + n
	}
	c.endFor = c.i + 1
	return c.end
}

// indent is the next line's indent, or -1 at the end.
func (c *blockConv) indent() int {
	if c.i >= len(c.data) {
		return -1
	}
	return leadingSpaces(c.data[c.i:c.lineEnd()])
}

// mapping converts the block mapping whose keys are at indent. With
// inItem, its first key follows a "- " already read, at c.i. on is how
// many steps of the path lead to it, or -1 when it is off the path.
func (c *blockConv) mapping(indent int, inItem bool, on int) bool {
	c.emit('{')
	first, keys := true, len(c.keys)
	for !c.done {
		start := c.i + indent
		if inItem && first {
			start = c.i
		} else {
			c.skipBlank()
			if c.indent() != indent {
				break
			}
			start = c.i + indent
		}
		end := c.lineEnd()
		line := c.data[start:end]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		colon := bytes.Index(line, []byte(": "))
		if colon < 0 && len(line) > 0 && line[len(line)-1] == ':' {
			colon = len(line) - 1
		}
		if colon <= 0 || colon > 1024 {
			return false // no key, or longer than YAML allows an implicit one
		}
		key, ok := mappingKey(transient(line[:colon]), c.stop)
		if !ok || !c.newKey(keys, key) {
			return false
		}
		if !first {
			c.emit(',')
		}
		first = false
		c.emitQuoted(key)
		c.emit(':')
		next := c.follow(on, func(step string) bool { return step == key })
		value := bytes.TrimSpace(line[colon+1:])
		if len(value) > 0 && (value[0] == '{' || value[0] == '[') {
			if !c.flowBlock(start+colon+1+leadingSpaces(line[colon+1:]), next) {
				return false
			}
			continue
		}
		c.nextLine(end)
		if len(value) > 0 && value[0] != '#' {
			if !c.scalar(transient(value)) {
				return false
			}
			continue
		}
		// The value is the block below: a mapping indented more, a
		// sequence indented as much or more, a flow collection indented
		// more, or nothing (null).
		c.skipBlank()
		n := c.indent()
		switch {
		case n >= indent && c.isItem(n):
			if !c.sequence(n, next) {
				return false
			}
		case n > indent && (c.data[c.i+n] == '{' || c.data[c.i+n] == '['):
			if !c.flowBlock(c.i+n, next) {
				return false
			}
		case n > indent:
			if !c.mapping(n, false, next) {
				return false
			}
		default:
			c.emitString("null")
		}
	}
	c.leave(on)
	c.keys = c.keys[:keys]
	c.emit('}')
	return true
}

// isItem reports whether the next line, indented n, starts "- " or is "-".
func (c *blockConv) isItem(n int) bool {
	rest := c.data[c.i+n : c.lineEnd()]
	return bytes.HasPrefix(rest, []byte("- ")) || string(bytes.TrimRight(rest, "\r")) == "-"
}

// sequence converts the block sequence whose "- " are at indent; on is
// as for mapping.
func (c *blockConv) sequence(indent int, on int) bool {
	c.emit('[')
	for n, first := 0, true; !c.done; n, first = n+1, false {
		c.skipBlank()
		if c.indent() != indent || !c.isItem(indent) {
			break
		}
		if !first {
			c.emit(',')
		}
		end := c.lineEnd()
		item := c.data[c.i+indent+1 : end]
		lead := len(item) - len(bytes.TrimLeft(item, " "))
		value := bytes.TrimRight(item[lead:], " \r")
		next := c.follow(on, func(step string) bool { i, ok := index(step); return ok && i == n })
		switch {
		case len(value) == 0 || value[0] == '#' || string(value) == "-" || bytes.HasPrefix(value, []byte("- ")):
			return false // a nested block, or a sequence in a sequence
		case value[0] == '{' || value[0] == '[':
			if !c.flowBlock(c.i+indent+1+lead, next) {
				return false
			}
		case isMappingLine(value):
			// "- key: value": a mapping whose keys line up after "- ".
			c.i += indent + 1 + lead
			if !c.mapping(indent+1+lead, true, next) {
				return false
			}
		default:
			c.nextLine(end)
			if !c.scalar(transient(value)) {
				return false
			}
		}
	}
	c.leave(on)
	c.emit(']')
	return true
}

// mappingKey reads a mapping's key, raw as written. Unless trusted (its
// document was read whole before), it must be one sigs.k8s.io/yaml writes
// as the same string: quoted or plain, surely a string, without spaces or
// "#".
func mappingKey(raw string, trusted bool) (string, bool) {
	key, ok := plainOrQuoted(raw)
	if trusted {
		return key, true
	}
	if !ok || key == "" || strings.IndexByte(raw, ' ') >= 0 || strings.IndexByte(raw, '#') >= 0 || (raw[0] != '"' && raw[0] != '\'' && !plainString(key)) {
		return "", false
	}
	return key, true
}

// index reads a path step "[N]" as child does.
func index(step string) (int, bool) {
	i, err := strconv.Atoi(strings.Trim(step, "[]"))
	return i, err == nil && strings.HasPrefix(step, "[")
}

// isMappingLine reports whether a line starts a mapping entry.
func isMappingLine(b []byte) bool {
	if b[0] == '"' || b[0] == '\'' || b[0] == '[' || b[0] == '{' {
		return false
	}
	return bytes.Contains(b, []byte(": ")) || b[len(b)-1] == ':'
}

// scalar appends the JSON for a scalar value on one line (flow
// collections are flowBlock's); in a document read whole before (stop),
// only where it is matters.
func (c *blockConv) scalar(v string) bool {
	if c.stop {
		return true
	}
	switch v[0] {
	case '"', '\'':
		s, ok := plainOrQuoted(v)
		if !ok {
			return false
		}
		c.emitQuoted(s)
		return true
	}
	s, ok := plainOrQuoted(v)
	return ok && c.plain(s)
}

// plain appends the JSON for the plain scalar s, comments left out.
func (c *blockConv) plain(s string) bool {
	switch s {
	case "true", "false", "null":
		c.emitString(s)
		return true
	case "~", "":
		c.emitString("null")
		return true
	}
	if isDecimal(s) {
		c.emitString(s)
		return true
	}
	if !plainString(s) {
		return false
	}
	c.emitQuoted(s)
	return true
}

// emit appends b to the output, unless only lines are wanted.
func (c *blockConv) emit(b byte) {
	if !c.lines {
		c.out = append(c.out, b)
	}
}

// emitString appends s as it is.
func (c *blockConv) emitString(s string) {
	if !c.lines {
		c.out = append(c.out, s...)
	}
}

// emitQuoted appends s as a JSON string.
func (c *blockConv) emitQuoted(s string) {
	if !c.lines {
		c.out = appendString(c.out, s)
	}
}
