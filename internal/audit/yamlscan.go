package audit

import (
	"bytes"
	"strconv"
	"strings"
)

// A reader for the block-style YAML that kubectl, Helm and kustomize
// write, just enough to split a List into its items and to read a pod's
// metadata without converting the whole pod. Converting YAML is about ten
// times slower than decoding JSON, and a cluster dump is mostly pods whose
// controller already speaks for them. Anything this reader does not
// expect (flow style, anchors, tags, multi-line scalars where a name
// should be) makes it give up, and the document is converted in full.

// entry is one key of a block mapping.
type entry struct {
	key string
	// value is the text after "key:", trimmed; empty when the value is
	// the block below.
	value string
	// body is the lines below the key that are indented more than it.
	body []byte
	// line is the key's line, counted from 0 at the start of the block.
	line int
}

// entries reads the block mapping whose keys are indented by indent
// spaces. The first line may start with "- " in place of its indent (an
// item of a block sequence). ok is false for anything else.
func entries(block []byte, indent int) (out []entry, ok bool) {
	return entriesUntil(block, indent, nil)
}

// entriesUntil is entries, stopping after the first entry done accepts,
// so that a pod's spec and status need not be read to reach its metadata.
func entriesUntil(block []byte, indent int, done func(entry) bool) (out []entry, ok bool) {
	line := 0
	for i := 0; i < len(block); line++ {
		end := bytes.IndexByte(block[i:], '\n')
		if end < 0 {
			end = len(block) - i
		}
		text := block[i : i+end]
		next := i + end + 1
		i = next
		if isBlank(text) {
			continue
		}
		n := leadingSpaces(text)
		if line == 0 && indent >= 2 && bytes.HasPrefix(text[n:], []byte("- ")) && n == indent-2 {
			n = indent // "- key: value" starts an item
		} else if n != indent {
			if n > indent && len(out) > 0 {
				continue // part of the previous key's body
			}
			return nil, false
		}
		key, value, found := strings.Cut(string(text[n:]), ":")
		if !found || key == "" || strings.ContainsAny(key[:1], "-?[{&*!|>'\"#%@`") || (value != "" && value[0] != ' ') {
			return nil, false
		}
		value = strings.TrimSpace(value)
		e := entry{key: key, value: value, line: line}
		// The body runs until the next line indented no more than the key.
		start := i
		for i < len(block) {
			end := bytes.IndexByte(block[i:], '\n')
			if end < 0 {
				end = len(block) - i
			}
			text := block[i : i+end]
			if !isBlank(text) && leadingSpaces(text) <= indent && !(leadingSpaces(text) == indent && bytes.HasPrefix(text[indent:], []byte("- "))) {
				break
			}
			i += end + 1
			line++
		}
		e.body = block[start:min(i, len(block))]
		out = append(out, e)
		if done != nil && done(e) {
			return out, true
		}
	}
	return out, true
}

// items splits a block sequence of mappings into its items, each with
// the line it starts on and the indent of its keys.
func items(body []byte) (out [][]byte, lines []int, indent int, ok bool) {
	seq := -1
	line := 0
	start := -1
	for i := 0; i < len(body); line++ {
		end := bytes.IndexByte(body[i:], '\n')
		if end < 0 {
			end = len(body) - i
		}
		text := body[i : i+end]
		if !isBlank(text) {
			n := leadingSpaces(text)
			if seq < 0 {
				seq = n
			}
			if n == seq {
				if !bytes.HasPrefix(text[n:], []byte("- ")) {
					return nil, nil, 0, false
				}
				if start >= 0 {
					out = append(out, body[start:i])
				}
				start = i
				lines = append(lines, line)
			} else if n < seq {
				return nil, nil, 0, false
			}
		}
		i += end + 1
	}
	if start >= 0 {
		out = append(out, body[start:])
	}
	return out, lines, seq + 2, true
}

// scalar reads a plain or quoted scalar; ok is false for anything else.
func scalar(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	switch v[0] {
	case '"':
		s, err := strconv.Unquote(v)
		return s, err == nil
	case '\'':
		if len(v) < 2 || v[len(v)-1] != '\'' {
			return "", false
		}
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), true
	case '[', '{', '|', '>', '&', '*', '!', '%', '@', '`':
		return "", false
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, true
}

// dedent returns an item of a block sequence as a document of its own.
func dedent(item []byte, indent int) []byte {
	var out bytes.Buffer
	out.Grow(len(item))
	for i, line := range bytes.SplitAfter(item, []byte("\n")) {
		switch {
		case i == 0:
			out.Write(line[min(indent, len(line)):])
		case len(line) >= indent && isBlank(line[:indent]):
			out.Write(line[indent:])
		default:
			out.Write(bytes.TrimLeft(line, " "))
		}
	}
	return out.Bytes()
}

func leadingSpaces(b []byte) int {
	n := 0
	for n < len(b) && b[n] == ' ' {
		n++
	}
	return n
}

// isBlank reports whether a line holds only spaces or a comment.
func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r':
		case '#':
			return true
		default:
			return false
		}
	}
	return true
}
