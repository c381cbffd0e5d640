package audit

import (
	"bytes"
	"strconv"
)

// appendFindingJSON appends f as encodeJSON writes it as an item of the
// report's findings: on a line of its own, four spaces in, with its keys
// in Finding's order (its Problem's in place) and the fields problem.Problem
// leaves out when empty left out. A test holds the two to the same bytes,
// and fails when Finding or Problem gains a field.
func appendFindingJSON(b []byte, f Finding) []byte {
	b = append(b, "\n    {\n      \"rule\": "...)
	b = appendJSONString(b, f.Rule)
	b = append(b, ",\n      \"severity\": "...)
	b = appendJSONString(b, string(f.Severity))
	if !f.Object.IsZero() {
		b = append(b, ",\n      \"object\": {\n        \"kind\": "...)
		b = appendJSONString(b, f.Object.Kind)
		if f.Object.Namespace != "" {
			b = append(b, ",\n        \"namespace\": "...)
			b = appendJSONString(b, f.Object.Namespace)
		}
		b = append(b, ",\n        \"name\": "...)
		b = appendJSONString(b, f.Object.Name)
		b = append(b, "\n      }"...)
	}
	if f.Field != "" {
		b = append(b, ",\n      \"field\": "...)
		b = appendJSONString(b, f.Field)
	}
	b = append(b, ",\n      \"message\": "...)
	b = appendJSONString(b, f.Message)
	if f.Fix != "" {
		b = append(b, ",\n      \"fix\": "...)
		b = appendJSONString(b, f.Fix)
	}
	if f.File != "" {
		b = append(b, ",\n      \"file\": "...)
		b = appendJSONString(b, f.File)
	}
	if f.Line != 0 {
		b = append(b, ",\n      \"line\": "...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
	}
	if f.Warning {
		b = append(b, ",\n      \"warning\": true"...)
	}
	return append(b, "\n    }"...)
}

// appendJSONString appends s quoted as encodeJSON quotes it. A string of
// printable ASCII without quotes or backslashes (nearly every one) is
// written as it is; any other goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var q bytes.Buffer
			if err := encodeJSON(&q, s); err != nil { // a string always encodes
				panic(err)
			}
			return append(b, bytes.TrimSuffix(q.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
