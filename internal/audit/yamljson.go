package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"unsafe"

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
	c := blockConv{data: data, out: make([]byte, 0, len(data))}
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
	c := blockConv{data: data, out: make([]byte, 0, 1024), path: path, line: 1, stop: read}
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
	// final (done); the output is then of no use.
	stop, done bool

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
	c.out = append(c.out, '{')
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
			c.out = append(c.out, ',')
		}
		first = false
		c.out = appendString(c.out, key)
		c.out = append(c.out, ':')
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
			c.out = append(c.out, "null"...)
		}
	}
	c.leave(on)
	c.keys = c.keys[:keys]
	c.out = append(c.out, '}')
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
	c.out = append(c.out, '[')
	for n, first := 0, true; !c.done; n, first = n+1, false {
		c.skipBlank()
		if c.indent() != indent || !c.isItem(indent) {
			break
		}
		if !first {
			c.out = append(c.out, ',')
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
	c.out = append(c.out, ']')
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
	if !ok || key == "" || strings.ContainsAny(raw, "# ") || (raw[0] != '"' && raw[0] != '\'' && !plainString(key)) {
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
		c.out = appendString(c.out, s)
		return true
	}
	s, ok := plainOrQuoted(v)
	if !ok {
		return false
	}
	switch s {
	case "true", "false", "null":
		c.out = append(c.out, s...)
		return true
	case "~", "":
		c.out = append(c.out, "null"...)
		return true
	}
	if isDecimal(s) {
		c.out = append(c.out, s...)
		return true
	}
	if !plainString(s) {
		return false
	}
	c.out = appendString(c.out, s)
	return true
}

// plainOrQuoted reads a scalar as scalar does, but a double-quoted one
// only without escapes, which YAML and Go read differently.
func plainOrQuoted(v string) (string, bool) {
	if v != "" && v[0] == '"' && bytes.IndexByte([]byte(v), '\\') >= 0 {
		return "", false
	}
	if v != "" && v[0] == '\'' {
		return singleQuoted(v)
	}
	return scalar(v)
}

// singleQuoted reads a single-quoted scalar that is the whole of v:
// ” is a quote, and a lone quote must end it.
func singleQuoted(v string) (string, bool) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		if v[i] != '\'' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 < len(v) && v[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), i == len(v)-1
	}
	return "", false
}

// isDecimal reports whether s is an integer YAML and JSON write alike.
func isDecimal(s string) bool {
	d := s
	if d != "" && d[0] == '-' {
		d = d[1:]
	}
	if d == "" || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// plainString reports whether a plain scalar is surely a string to YAML
// 1.1 (which sigs.k8s.io/yaml reads): not a number, bool, null or
// timestamp in any of its spellings, nor anything needing more than a
// line. Quantities (8Gi, 500m), IPs and CIDRs are strings.
func plainString(s string) bool {
	switch s[0] {
	case '?', ':', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`', '=', '<', '.', '~':
		return false
	case '-', '+':
		if len(s) == 1 || s[1] == ' ' || s[1] == '.' || s[1] == '_' || ('0' <= s[1] && s[1] <= '9') {
			return false
		}
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if strings.ContainsAny(s, ":_ ") || isDate(s) {
			return false // times, sexagesimal, 1_000 and dates are not strings
		}
		if !numberBytes(s) {
			break // 500m, 8Gi: no spelling of a number (and no parse error to allocate)
		}
		if _, err := strconv.ParseInt(s, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(s, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return false
		}
	}
	if len(s) <= 5 && strings.IndexByte("yYnNoOtTfF", s[0]) >= 0 {
		for _, word := range yaml11Words {
			if strings.EqualFold(s, word) {
				return false
			}
		}
	}
	for i := 0; i < len(s); i++ {
		if !notInPlain[s[i]] {
			continue
		}
		if s[i] != ':' || i+1 == len(s) || s[i+1] == ' ' {
			return false
		}
	}
	return true
}

// notInPlain marks the bytes plainString looks at in a scalar: those that
// end or quote one, and ':', which does when a space or the end follows.
var notInPlain = func() (t [256]bool) {
	for _, c := range "\t\r\"\\{}[]:" {
		t[c] = true
	}
	return t
}()

// numberBytes reports whether s has only bytes a number Go's strconv
// reads may have: digits, hex digits, signs, points, exponents and bases.
func numberBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		case c == '.', c == '+', c == '-', c == '_', c == 'x', c == 'X', c == 'o', c == 'O', c == 'p', c == 'P':
		default:
			return false
		}
	}
	return true
}

// transient is b as a string without a copy, for a string that does not
// outlive the call it is passed to (a key compared, a scalar appended to
// the output). The bytes are a file's contents, never written to.
func transient(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// yaml11Words are the plain scalars YAML 1.1 reads as bools or null, in
// any case.
var yaml11Words = []string{"y", "n", "yes", "no", "on", "off", "true", "false", "null"}

// appendString appends s as a JSON string.
func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// isDate reports whether s starts as a YAML timestamp does: YYYY-.
func isDate(s string) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// printableASCII reports whether data is printable ASCII in lines: what
// blockToJSON reads itself.
func printableASCII(data []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(data) >= 8 {
		// Eight bytes at a time: none has its high bit set, is 0x7f
		// (adding one sets its high bit) or is below 0x20 (subtracting
		// 0x20 borrows into it); a word that may have one, a newline
		// most often, is checked byte by byte.
		w := binary.LittleEndian.Uint64(data)
		if (w|(w+ones)|(w-0x20*ones))&highs != 0 && !printableBytes(data[:8]) {
			return false
		}
		data = data[8:]
	}
	return printableBytes(data)
}

func printableBytes(data []byte) bool {
	for _, b := range data {
		if (b < 0x20 && b != '\n') || b >= 0x7f {
			return false
		}
	}
	return true
}
