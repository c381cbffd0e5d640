package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"unsafe"
)

// The scalars and bytes blockToJSON reads: which plain scalars are surely
// strings to YAML 1.1 as sigs.k8s.io/yaml reads it, quoted scalars, JSON
// strings, and the printable ASCII it reads itself.

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
