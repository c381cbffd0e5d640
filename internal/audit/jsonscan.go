package audit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// A small scanner for JSON that finds an object's top-level values and an
// array's elements without decoding them. Decoding a 150,000-pod List
// into typed objects is the audit's main cost; this lets that work be
// split across cores, and lets a document's kind be read without a
// second full decode.

// topLevel returns the raw values of keys in the JSON object doc (nil for
// a key that is absent). It stops reading once every key is found, so the
// keys a document starts with (apiVersion, kind, metadata) cost little.
func topLevel(doc []byte, keys ...string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	found := 0
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	i++
	for {
		i = skipSpace(doc, i)
		if i < len(doc) && doc[i] == '}' {
			return out, nil
		}
		if i >= len(doc) || doc[i] != '"' {
			return nil, fmt.Errorf("malformed JSON object at byte %d", i)
		}
		end, err := skipValue(doc, i)
		if err != nil {
			return nil, err
		}
		key := doc[i+1 : end-1]
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return nil, fmt.Errorf("malformed JSON object at byte %d", i)
		}
		i = skipSpace(doc, i+1)
		end, err = skipValue(doc, i)
		if err != nil {
			return nil, err
		}
		for k, want := range keys {
			if out[k] == nil && string(key) == want {
				out[k] = doc[i:end]
				if found++; found == len(keys) {
					return out, nil
				}
			}
		}
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i++
		}
	}
}

// valueAt is where the value of a top-level key of the JSON object doc
// starts, found without reading the value itself; -1 when it is absent.
// The value runs to its own end: a caller that reads it as an object
// (topLevel stops at its closing brace) need not know where that is.
func valueAt(doc []byte, key string) int {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return -1
	}
	i++
	for {
		i = skipSpace(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return -1
		}
		end, err := skipString(doc, i)
		if err != nil {
			return -1
		}
		k := doc[i+1 : end-1]
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return -1
		}
		i = skipSpace(doc, i+1)
		if string(k) == key {
			return i
		}
		if i, err = skipValue(doc, i); err != nil {
			return -1
		}
		i = skipSpace(doc, i)
		if i < len(doc) && doc[i] == ',' {
			i++
		}
	}
}

// elements splits the JSON array raw into its elements.
func elements(raw []byte) ([][]byte, error) {
	out, _, err := elementsEnd(raw, 0)
	return out, err
}

// elementsEnd splits the JSON array starting at i, and says where it ends.
func elementsEnd(b []byte, i int) ([][]byte, int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return nil, 0, fmt.Errorf("not a JSON array")
	}
	var out [][]byte
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ']' {
			return out, i + 1, nil
		}
		end, err := skipValue(b, i)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// document reads the JSON object starting at i in one pass: where it
// ends, its kind, and, for a List, its items.
func document(b []byte, i int) (end int, kind string, items [][]byte, err error) {
	if b[i] != '{' {
		return 0, "", nil, fmt.Errorf("not a JSON object")
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return i + 1, kind, items, nil
		}
		if i >= len(b) || b[i] != '"' {
			return 0, "", nil, fmt.Errorf("malformed JSON object at byte %d", i)
		}
		keyEnd, err := skipString(b, i)
		if err != nil {
			return 0, "", nil, err
		}
		key := string(b[i+1 : keyEnd-1])
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, "", nil, fmt.Errorf("malformed JSON object at byte %d", i)
		}
		i = skipSpace(b, i+1)
		var valEnd int
		if key == "items" && i < len(b) && b[i] == '[' {
			items, valEnd, err = elementsEnd(b, i)
		} else {
			valEnd, err = skipValue(b, i)
		}
		if err != nil {
			return 0, "", nil, err
		}
		if key == "kind" {
			kind = unquote(b[i:valEnd])
		}
		i = skipSpace(b, valEnd)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// skipValue returns the index just past the JSON value starting at i.
// It checks only what it must to find the end: brackets outside strings.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("unexpected end of JSON")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			j = nextStructural(b, j)
			if j == len(b) {
				break
			}
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unterminated JSON value at byte %d", i)
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && !isSpace(b[j]) {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("unexpected %q at byte %d", b[i], i)
		}
		return j, nil
	}
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// hasByte reports whether any of the eight bytes in x is c.
func hasByte(x uint64, c byte) bool {
	v := x ^ (ones * uint64(c))
	return (v-ones)&^v&highs != 0
}

// structural marks the bytes skipValue stops at inside an object or array.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// nextStructural is the index of the first structural byte at or after
// j, or len(b). Outside strings, a dump is mostly indentation; eight
// bytes are checked at a time. (x|0x20 maps '[' to '{' and ']' to '}'.)
func nextStructural(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		y := x | ones*0x20
		if hasByte(x, '"') || hasByte(y, '{') || hasByte(y, '}') {
			break
		}
	}
	for j < len(b) && !structural[b[j]] {
		j++
	}
	return j
}

// skipString returns the index just past the string starting at i. Most
// strings in a dump are short keys, so it checks eight bytes at a time
// rather than calling out per string.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		// Find the next eight bytes holding a quote or a backslash, then
		// read those one by one.
		for ; j+8 <= len(b); j += 8 {
			x := binary.LittleEndian.Uint64(b[j:])
			if hasByte(x, '"') || hasByte(x, '\\') {
				break
			}
		}
		end := min(j+8, len(b))
		for ; j < end; j++ {
			switch b[j] {
			case '\\':
				j++ // the escaped byte, wherever it is
			case '"':
				return j + 1, nil
			}
		}
		if j >= len(b) {
			return 0, fmt.Errorf("unterminated string at byte %d", i)
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// unquote reads a raw JSON string; anything else is "".
func unquote(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' {
			var s string
			json.Unmarshal(raw, &s)
			return s
		}
	}
	return string(raw[1 : len(raw)-1])
}
