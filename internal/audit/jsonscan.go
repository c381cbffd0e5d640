package audit

import (
	"encoding/json"
	"fmt"
)

// A small scanner for JSON that finds an object's top-level values and an
// array's elements without decoding them. Decoding a 150,000-pod List
// into typed objects is the audit's main cost; this lets that work be
// split across cores, and lets a document's kind be read without a
// second full decode.

// topLevel returns the raw values of keys in the JSON object doc (nil for
// a key that is absent).
func topLevel(doc []byte, keys ...string) ([][]byte, error) {
	out := make([][]byte, len(keys))
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
			if string(key) == want {
				out[k] = doc[i:end]
			}
		}
		i = skipSpace(doc, end)
		if i < len(doc) && doc[i] == ',' {
			i++
		}
	}
}

// elements splits the JSON array raw into its elements.
func elements(raw []byte) ([][]byte, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, fmt.Errorf("not a JSON array")
	}
	var out [][]byte
	i++
	for {
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ']' {
			return out, nil
		}
		end, err := skipValue(raw, i)
		if err != nil {
			return nil, err
		}
		out = append(out, raw[i:end])
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i++
		}
	}
}

// values splits a stream of JSON values (one file holding several
// objects, as `kubectl get -o json` piped together writes) into each.
func values(data []byte) ([][]byte, error) {
	var out [][]byte
	for i := skipSpace(data, 0); i < len(data); i = skipSpace(data, i) {
		end, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		out = append(out, data[i:end])
		i = end
	}
	return out, nil
}

// skipValue returns the index just past the JSON value starting at i.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("unexpected end of JSON")
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at byte %d", i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
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
